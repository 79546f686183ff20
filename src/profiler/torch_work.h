/* Why: torch.profiler's Kineto traces carry no FLOP counts, only each op's
 * "Input Dims" and "Input type" (with record_shapes). To judge a torch run
 * against the machine's ceilings as we judge our own, the FLOPs and minimum
 * bytes of the ops that matter (GEMMs and binary pointwise ops) are derived
 * from those shapes, with the same formulas torch's own FLOP counter uses.
 * The trace reader streams, so what the formulas need is gathered from the
 * args as they go by, before the op's name may even be known. */
#ifndef FMLP_PROFILER_TORCH_WORK_H
#define FMLP_PROFILER_TORCH_WORK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/json_pull.h"

/* An op's shapes, as far as the formulas look: "Input Dims" (its entry
 * count and, of its first three entries, the first three sizes and, for an
 * array, the product of all) and the element size of "Input type"[0]. */
typedef struct {
    bool array;
    double d[3], numel;
} pe_torch_dims;

typedef struct {
    bool have_dims, have_type;
    uint64_t n_dims;
    pe_torch_dims in[3];
    int64_t elem_size;
} pe_torch_args;

/* Read the value of "Input Dims" / "Input type" whose first token is t;
 * false after a parse error. */
bool pe_torch_read_dims(jp_parser *p, jp_token t, pe_torch_args *a);
bool pe_torch_read_type(jp_parser *p, jp_token t, pe_torch_args *a);

/* FLOPs and bytes of op `name` from its args; false when it is not such an
 * op or its shapes do not say. */
bool pe_torch_work(const char *name, const pe_torch_args *a, int64_t *flops, int64_t *bytes);

#endif
