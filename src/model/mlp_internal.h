/* Why: what the plan executor and reference need of an MLP beyond the
 * public API. */
#ifndef FMLP_MODEL_MLP_INTERNAL_H
#define FMLP_MODEL_MLP_INTERNAL_H

#include "core/internal.h"

/* The block, widths and layer count of `d` in range (the rest of
 * fmlp_mlp_create's checks need a context). */
fmlp_status fmlp_mlp_desc_check_shape(const fmlp_mlp_desc *d);

/* Makes the host weights (drawn from the seed) unless they exist; every
 * reader and writer of layers[].w and .b calls it first. Safe from
 * concurrent forwards. */
fmlp_status fmlp_mlp_materialize(const fmlp_mlp *m);

/* Builds the backend packings if a weight changed since the last forward
 * (making the weights first); safe to call from concurrent forwards. */
fmlp_status fmlp_mlp_ensure_packed(fmlp_mlp *m);

/* Frees the cached plans (none may be in use: weights change only between
 * forwards). */
void fmlp_mlp_drop_plans(fmlp_mlp *m);

#endif
