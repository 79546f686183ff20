/* Why: what the plan executor and reference need of an MLP beyond the
 * public API. */
#ifndef FMLP_MODEL_MLP_INTERNAL_H
#define FMLP_MODEL_MLP_INTERNAL_H

#include "core/internal.h"

/* Builds the backend packings if a weight changed since the last forward;
 * safe to call from concurrent forwards. */
fmlp_status fmlp_mlp_ensure_packed(fmlp_mlp *m);

/* Frees the cached plans (none may be in use: weights change only between
 * forwards). */
void fmlp_mlp_drop_plans(fmlp_mlp *m);

#endif
