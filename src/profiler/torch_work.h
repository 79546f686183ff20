/* Why: torch.profiler's Kineto traces carry no FLOP counts, only each op's
 * "Input Dims" and "Input type" (with record_shapes). To judge a torch run
 * against the machine's ceilings as we judge our own, the FLOPs and minimum
 * bytes of the ops that matter (GEMMs and binary pointwise ops) are derived
 * from those shapes, with the same formulas torch's own FLOP counter uses. */
#ifndef FMLP_PROFILER_TORCH_WORK_H
#define FMLP_PROFILER_TORCH_WORK_H

#include "core/json.h"
#include "profiler/events.h"

/* Sets e->flops and e->bytes from `args` when e is such an op. */
void pe_torch_work(pe_event *e, const json_value *args);

#endif
