/* Why: see tp_chunks.h. The rule is a first guess, not yet measured on a
 * host with several GPUs (docs/tensor_parallel.md says so): chunking pays
 * where the all-reduce is long enough to hide and each chunk's GEMM still
 * fills the device. */
#include "plan/tp_chunks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"

fmlp_status fmlp_tp_chunks_env(int *out)
{
    const char *v = getenv("FMLP_TP_CHUNKS");
    *out = -1;
    if (!v || !*v) return FMLP_OK;
    char *end = NULL;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || n < 0 || n > FMLP_TP_MAX_CHUNKS)
        return fmlp_fail(FMLP_ERR_INVALID_ARGUMENT,
                         "FMLP_TP_CHUNKS=\"%.40s\" is not a chunk count; give 0 (chosen by rule), 1 (no chunks) up to %d, "
                         "or unset it",
                         v, FMLP_TP_MAX_CHUNKS);
    *out = (int)n;
    return FMLP_OK;
}

/* The rule: the most chunks, up to FMLP_TP_RULE_MAX_CHUNKS, that each keep
 * FMLP_TP_RULE_MIN_ROWS rows and FMLP_TP_RULE_MIN_BYTES of y. */
static int rule(int world, int64_t rows, int64_t cols, fmlp_dtype dt, char *why, size_t why_len)
{
    if (world < 2) {
        snprintf(why, why_len, "by rule: one rank has no all-reduce worth hiding");
        return 1;
    }
    const int64_t row_bytes = cols * (int64_t)fmlp_dtype_size(dt);
    for (int n = FMLP_TP_RULE_MAX_CHUNKS; n > 1; n--) {
        const int64_t per = rows / n;
        if (per >= FMLP_TP_RULE_MIN_ROWS && per * row_bytes >= FMLP_TP_RULE_MIN_BYTES) {
            snprintf(why, why_len, "by rule: %d chunks keep at least %d rows and %lld MiB of y each", n,
                     FMLP_TP_RULE_MIN_ROWS, (long long)(FMLP_TP_RULE_MIN_BYTES >> 20));
            return n;
        }
    }
    snprintf(why, why_len, "by rule: %lld rows of y are too few to split into chunks of at least %d rows and %lld MiB",
             (long long)rows, FMLP_TP_RULE_MIN_ROWS, (long long)(FMLP_TP_RULE_MIN_BYTES >> 20));
    return 1;
}

int fmlp_tp_chunks_pick(int asked, const char *source, int world, int64_t rows, int64_t cols, fmlp_dtype dt, char *why,
                        size_t why_len)
{
    if (asked == 0) return rule(world, rows, cols, dt, why, why_len);
    if (asked > rows) {
        snprintf(why, why_len, "%s%d, one chunk per row of y's %lld", source, asked, (long long)rows);
        return (int)rows;
    }
    snprintf(why, why_len, "%s%d", source, asked);
    return asked;
}

/* floor(units * c / chunks) without the product. */
static int64_t share(int64_t units, int chunks, int c) { return units / chunks * c + units % chunks * c / chunks; }

void fmlp_tp_chunk_range(int64_t rows, int chunks, int c, int64_t *begin, int64_t *count)
{
    const int64_t g = rows >= (int64_t)FMLP_TP_CHUNK_ALIGN * chunks ? FMLP_TP_CHUNK_ALIGN : 1;
    const int64_t units = (rows + g - 1) / g;
    const int64_t b = share(units, chunks, c) * g, e = share(units, chunks, c + 1) * g;
    *begin = b;
    *count = (e < rows ? e : rows) - b;
}
