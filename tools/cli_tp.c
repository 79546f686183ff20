/* Why: `fmlp mlp --device cuda --tp N` shows tensor parallelism the way
 * the one-GPU run shows the modes: the MLP sharded over N GPUs that this
 * one process drives (fmlp_tp_init_all), each rank's plan with its
 * all-reduce, the forward over all ranks timed as one step, and a profile
 * per rank whose traces land in one folder per run, as Holistic Trace
 * Analysis and `fmlp trace summarize DIR` read them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "cli_io.h"
#include "cli_model.h"
#include "cli_profile.h"
#include "cli_run.h"
#include "cli_timing.h"

bool cli_tp_check_flags(const cli_run_opts *r)
{
    if (r->linear)
        cli_error(r->cmd, "--tp %d shards an MLP's hidden features; `fmlp linear` runs one Linear: use `fmlp mlp`", r->tp);
    else if (r->model.device != FMLP_DEVICE_CUDA)
        cli_error(r->cmd, "--tp %d runs one rank per GPU: add --device cuda", r->tp);
    else if (r->model.host_io)
        cli_error(r->cmd, "--tp %d keeps each rank's y on its GPU for the all-reduce: drop --host-io", r->tp);
    else
        return true;
    return false;
}

bool cli_tp_check_machine(const cli_run_opts *r)
{
    int version = 0;
    if (!fmlp_tp_available(&version)) {
        cli_error(r->cmd, "--tp %d needs NCCL, and this fmlp was built without it: install NCCL (or pip's nvidia-nccl "
                          "and set NCCL_ROOT to its folder), then configure and build again",
                  r->tp);
        return false;
    }
    const int gpus = fmlp_cuda_device_count();
    if (r->tp <= gpus) return true;
    if (gpus == 0)
        cli_error(r->cmd, "--tp %d needs %d GPUs and none is visible; run on a machine with NVIDIA GPUs (and check "
                          "CUDA_VISIBLE_DEVICES)",
                  r->tp, r->tp);
    else
        cli_error(r->cmd, "--tp %d needs %d GPUs but %d %s visible; use --tp %d or fewer (CUDA_VISIBLE_DEVICES "
                          "chooses which)",
                  r->tp, r->tp, gpus, gpus == 1 ? "is" : "are", gpus);
    return false;
}

/* Every rank's context, shard, communicator and tensors. */
typedef struct {
    int n;
    fmlp_ctx *ctx[CLI_TP_MAX_RANKS];
    fmlp_mlp *shard[CLI_TP_MAX_RANKS];
    fmlp_tp *tp[CLI_TP_MAX_RANKS];
    cli_io io[CLI_TP_MAX_RANKS];
    fmlp_tensor x[CLI_TP_MAX_RANKS], y[CLI_TP_MAX_RANKS];
    fmlp_mode mode;
} ranks;

static void ranks_free(ranks *k)
{
    for (int i = 0; i < k->n; i++) {
        cli_io_free(&k->io[i]);
        fmlp_tp_destroy(k->tp[i]);
        fmlp_mlp_destroy(k->shard[i]);
        fmlp_ctx_destroy(k->ctx[i]);
    }
}

/* Rank i on GPU i with its slice of `full`; then the communicator of all. */
static fmlp_status ranks_make(const cli_run_opts *r, const fmlp_mlp *full, ranks *k)
{
    fmlp_status s = FMLP_OK;
    for (int i = 0; i < r->tp && s == FMLP_OK; i++) {
        fmlp_ctx_options co = fmlp_ctx_options_default();
        co.device = FMLP_DEVICE_CUDA;
        co.device_index = i;
        s = fmlp_ctx_create(&co, &k->ctx[i]);
        k->n = i + (s == FMLP_OK);
        if (s == FMLP_OK) s = fmlp_mlp_shard(full, k->ctx[i], i, r->tp, &k->shard[i]);
        if (s == FMLP_OK && r->model.graph) s = fmlp_mlp_set_graph(k->shard[i], true);
        if (s != FMLP_OK) cli_error(r->cmd, "rank %d on GPU %d: %s", i, i, fmlp_last_error());
    }
    if (s == FMLP_OK && (s = fmlp_tp_init_all(k->ctx, k->n, k->tp)) != FMLP_OK)
        cli_error(r->cmd, "joining %d GPUs over NCCL: %s", k->n, fmlp_last_error());
    return s;
}

/* x on every rank (the same rows: --input, or drawn from --seed). */
static fmlp_status ranks_tensors(const cli_run_opts *r, const fmlp_mlp *full, ranks *k)
{
    const int64_t rows = r->model.batch * r->model.seq;
    fmlp_status s = FMLP_OK;
    for (int i = 0; i < k->n && s == FMLP_OK; i++) {
        s = cli_io_alloc(k->ctx[i], r->dtype, rows, r->model.desc.dim, fmlp_mlp_out_dim(full), false, &k->io[i]);
        if (s != FMLP_OK) return s;
        s = r->input ? cli_run_load_input(r->cmd, r->input, &k->io[i].hx) : cli_fill_random(&k->io[i].hx, r->model.seed);
        if (s != FMLP_OK) return s;
        if ((s = cli_io_upload(&k->io[i])) != FMLP_OK)
            cli_error(r->cmd, "copying x to GPU %d: %s", i, fmlp_last_error());
        k->x[i] = cli_io_x(&k->io[i]);
        k->y[i] = cli_io_y(&k->io[i]);
    }
    return s;
}

static fmlp_status forward_all(void *arg)
{
    ranks *k = arg;
    return fmlp_tp_forward_all(k->tp, k->shard, k->mode, k->x, k->y, k->n);
}

static fmlp_status wait_all(void *arg)
{
    ranks *k = arg;
    fmlp_status s = FMLP_OK;
    for (int i = 0; i < k->n && s == FMLP_OK; i++) s = fmlp_ctx_synchronize(k->ctx[i]);
    return s;
}

static fmlp_status forward_all_synced(void *arg)
{
    fmlp_status s = forward_all(arg);
    return s == FMLP_OK ? wait_all(arg) : s;
}

/* Every rank's plan; *flops gets the work of all of them. */
static int print_plans(const cli_run_opts *r, const ranks *k, fmlp_mode mode, int64_t *flops)
{
    const int64_t rows = r->model.batch * r->model.seq;
    *flops = 0;
    for (int i = 0; i < k->n; i++) {
        fmlp_tp_plan_info p;
        if (fmlp_tp_plan(k->tp[i], k->shard[i], mode, rows, &p) != FMLP_OK) {
            cli_error(r->cmd, "rank %d: %s", i, fmlp_last_error());
            return 1;
        }
        printf("\n");
        fmlp_tp_plan_print(&p, stdout);
        *flops += p.plan.flops;
    }
    return 0;
}

/* For each mode: the plans, then (unless explaining) timing and profiling. */
static int run_modes(const cli_run_opts *r, ranks *k, const char *shape)
{
    const cli_prof_opts *po = &r->prof;
    const cli_timed timed = {forward_all, wait_all, k, true};
    cli_mode_result results[4];
    int n_results = 0;
    for (int mi = 0; mi < r->n_modes; mi++) {
        const fmlp_mode mode = r->modes[mi];
        int64_t flops = 0;
        if (print_plans(r, k, mode, &flops) != 0) return 1;
        if (r->explain) continue;
        k->mode = mode;
        char run_name[160];
        snprintf(run_name, sizeof run_name, "%s_%s_tp%d_%s_%s", shape, fmlp_dtype_name(r->dtype), k->n,
                 po->cold ? "cold" : "warm", fmlp_mode_name(mode));
        if (po->enabled && po->cold &&
            cli_prof_run_ranks(k->ctx, k->n, po, r->cmd, run_name, forward_all_synced, k, stdout) != 0)
            return 1;
        cli_timing t = {0};
        if (cli_time_of(&timed, po->cold ? 0 : 1, r->iters, r->budget, &t) != FMLP_OK) {
            cli_error(r->cmd, "%s forward over %d GPUs failed: %s", fmlp_mode_name(mode), k->n, fmlp_last_error());
            return 1;
        }
        if (po->enabled && !po->cold &&
            cli_prof_run_ranks(k->ctx, k->n, po, r->cmd, run_name, forward_all_synced, k, stdout) != 0)
            return 1;
        char tb[32], how[96], rate[32];
        cli_fmt_time(t.median_s, tb, sizeof tb);
        cli_fmt_samples(&t, how, sizeof how);
        const double per_s = (double)flops / t.median_s;
        printf("%s: %s per forward over %d GPUs, all-reduce included (%s), %s\n", fmlp_mode_name(mode), tb, k->n, how,
               fmlp_si_format(per_s, "FLOP/s", rate, sizeof rate));
        if (po->enabled && po->trace_dir)
            printf("  per-rank traces: fmlp trace summarize %s/%s\n", po->trace_dir, run_name);
        results[n_results++] = (cli_mode_result){mode, t.median_s, per_s};
    }
    if (r->explain || n_results == 0) return 0;
    cli_run_print_summary(results, n_results);
    if (!r->output) {
        cli_io_print(&k->io[0], stdout);
        return 0;
    }
    return cli_run_save_output(r, &k->io[0], results[n_results - 1].mode);
}

int cli_tp_run(const cli_run_opts *r, const fmlp_mlp *full, const char *shape)
{
    ranks *k = calloc(1, sizeof *k);
    if (!k) {
        cli_error(r->cmd, "out of memory for %d ranks", r->tp);
        return 1;
    }
    int status = ranks_make(r, full, k) == FMLP_OK ? 0 : 1;
    if (status == 0 && !r->explain && ranks_tensors(r, full, k) != FMLP_OK) status = 1;
    int version = 0;
    fmlp_tp_available(&version);
    printf("fmlp %s: %s, %s, %lld rows, tensor parallel over %d GPU%s (0..%d) driven by this process, NCCL %d.%d.%d, "
           "x and y on every GPU\n",
           r->cmd, shape, fmlp_dtype_name(r->dtype), (long long)(r->model.batch * r->model.seq), r->tp,
           r->tp == 1 ? "" : "s", r->tp - 1, version / 10000, version / 100 % 100, version % 100);
    if (status == 0) status = run_modes(r, k, shape);
    ranks_free(k);
    free(k);
    return status;
}
