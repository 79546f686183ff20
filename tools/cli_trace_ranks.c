/* Why: a tensor-parallel run leaves one trace per rank in one folder (the
 * layout Holistic Trace Analysis reads); `fmlp trace summarize DIR` reads
 * them all, in rank order, and says per rank and over all ranks how much
 * of each step went to communication, how much to computation, and how
 * much of the communication the computation hid. */
#include "cli_trace_ranks.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANK_FILES 1024

typedef struct {
    char *path;
    fmlp_trace *t;
    fmlp_trace_info info;
} rank_file;

static bool is_trace_name(const char *n)
{
    size_t len = strlen(n);
    return (len > 5 && strcmp(n + len - 5, ".json") == 0) || (len > 8 && strcmp(n + len - 8, ".json.gz") == 0);
}

static int by_rank(const void *a, const void *b)
{
    const rank_file *x = a, *y = b;
    if (x->info.rank != y->info.rank) return x->info.rank < y->info.rank ? -1 : 1;
    return strcmp(x->path, y->path);
}

static void free_files(rank_file *f, int n)
{
    for (int i = 0; i < n; i++) {
        fmlp_trace_close(f[i].t);
        free(f[i].path);
    }
    free(f);
}

/* The traces of `dir`, opened, in rank order; NULL after a message. */
static rank_file *open_all(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return NULL;
    }
    rank_file *f = calloc(MAX_RANK_FILES, sizeof *f);
    int n = 0;
    bool ok = f != NULL;
    for (struct dirent *e; ok && (e = readdir(d));) {
        if (!is_trace_name(e->d_name)) continue;
        if (n == MAX_RANK_FILES) {
            fprintf(stderr, "fmlp trace: %s holds more than %d traces; summarize fewer at once\n", dir, MAX_RANK_FILES);
            ok = false;
            break;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        f[n].path = malloc(len);
        if (!f[n].path) {
            ok = false;
            break;
        }
        snprintf(f[n].path, len, "%s/%s", dir, e->d_name);
        if (fmlp_trace_open(f[n].path, &f[n].t) != FMLP_OK || fmlp_trace_get_info(f[n].t, &f[n].info) != FMLP_OK) {
            fprintf(stderr, "fmlp trace: %s\n", fmlp_last_error());
            n++;
            ok = false;
            break;
        }
        n++;
    }
    closedir(d);
    if (!f) fprintf(stderr, "fmlp trace: out of memory listing %s\n", dir);
    if (ok && n == 0) {
        fprintf(stderr, "fmlp trace: %s holds no .json or .json.gz traces\n", dir);
        ok = false;
    }
    if (!ok) {
        if (f) free_files(f, n);
        return NULL;
    }
    qsort(f, (size_t)n, sizeof *f, by_rank);
    *count = n;
    return f;
}

static double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

int cli_trace_summarize_ranks(const char *dir)
{
    int n = 0;
    rank_file *f = open_all(dir, &n);
    if (!f) return 1;
    const int world = f[0].info.world_size;
    int status = 0;
    double sum_comm = 0, sum_comp = 0, sum_both = 0;
    int measured = 0;
    printf("%s: %d trace%s, world size %d (%s)\n", dir, n, n == 1 ? "" : "s", world, f[0].info.dist_backend);
    for (int i = 0; i < n; i++) {
        const fmlp_trace_info *in = &f[i].info;
        if (in->world_size != world)
            printf("  warning: %s says world size %d, %s says %d\n", in->path, in->world_size, f[0].info.path, world);
        if (i > 0 && in->rank == f[i - 1].info.rank && world > 0)
            printf("  warning: rank %d appears twice (%s, %s)\n", in->rank, f[i - 1].info.path, in->path);
        fmlp_trace_comm c;
        fmlp_profile_summary s;
        if (fmlp_trace_comm_info(f[i].t, -1, &c) != FMLP_OK) {
            fprintf(stderr, "fmlp trace: %s\n", fmlp_last_error());
            status = 1;
            continue;
        }
        const int steps = in->steps > 0 ? in->steps : 1;
        const double comm = c.comm_us / steps, comp = c.compute_us / steps, both = c.overlap_us / steps;
        printf("rank %d: %s: %d step%s; %s %.1f us communicating (%d collective kernel%s), %.1f us computing, "
               "%.1f us both at once (%.0f%% of the communication hidden)\n",
               in->rank, in->path, in->steps, in->steps == 1 ? "" : "s", in->steps > 0 ? "per step" : "in all", comm,
               c.comm_kernels, c.comm_kernels == 1 ? "" : "s", comp, both, pct(both, comm));
        if (fmlp_trace_summary(f[i].t, &s) == FMLP_OK) printf("  %s\n", s.reason);
        sum_comm += comm;
        sum_comp += comp;
        sum_both += both;
        measured++;
    }
    if (world > 0 && n != world) printf("  warning: %d traces for a world of %d ranks\n", n, world);
    if (measured)
        printf("all ranks, mean per step: %.1f us communicating, %.1f us computing, %.1f us both at once (%.0f%% of "
               "the communication hidden)\n",
               sum_comm / measured, sum_comp / measured, sum_both / measured, pct(sum_both, sum_comm));
    free_files(f, n);
    return status;
}
