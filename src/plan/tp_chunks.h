/* Why: a tensor-parallel forward may cut its down GEMM and the all-reduce
 * of y into row chunks, so that each chunk's all-reduce runs while the
 * next chunk is computed. Every rank must issue the same all-reduces (the
 * same chunks of the same rows) or NCCL hangs, so how many chunks and
 * which rows each holds are decided here from nothing but what all ranks
 * share: y's shape and dtype, the world size and the count asked for. No
 * NCCL here, so the arithmetic is tested on any machine. */
#ifndef FMLP_PLAN_TP_CHUNKS_H
#define FMLP_PLAN_TP_CHUNKS_H

#include <stddef.h>

#include "fmlp.h"

/* Chunk boundaries fall on multiples of this many rows (a GEMM tile's
 * height) where every chunk can have that many. */
#define FMLP_TP_CHUNK_ALIGN 128
/* The rule chunks only where each chunk keeps at least this many rows and
 * bytes of y: fewer rows leave the GEMM's tiles too few to fill the GPU,
 * fewer bytes make each all-reduce latency-bound, when splitting it only
 * adds latencies. */
#define FMLP_TP_RULE_MIN_ROWS 2048
#define FMLP_TP_RULE_MIN_BYTES ((int64_t)4 << 20)
/* The most chunks the rule picks. */
#define FMLP_TP_RULE_MAX_CHUNKS 4

/* The chunk count asked for through FMLP_TP_CHUNKS: *out = -1 when it is
 * unset or empty, else 0..FMLP_TP_MAX_CHUNKS; fails naming a bad value. */
fmlp_status fmlp_tp_chunks_env(int *out);

/* The chunks a forward of y (rows x cols of dt) over `world` ranks cuts
 * into: `asked` (0: the rule), at most one per row. `why` says how the
 * count came about; a count asked for is named after `source`
 * ("FMLP_TP_CHUNKS=", "chunks set to "). */
int fmlp_tp_chunks_pick(int asked, const char *source, int world, int64_t rows, int64_t cols, fmlp_dtype dt, char *why,
                        size_t why_len);

/* Rows [*begin, *begin + *count) of chunk c of `chunks` (1 <= chunks <=
 * rows): as even as FMLP_TP_CHUNK_ALIGN allows, never empty. */
void fmlp_tp_chunk_range(int64_t rows, int chunks, int c, int64_t *begin, int64_t *count);

#endif
