/* Why: the safetensors reader and writer live in separate files but must
 * agree on the format's dtype tags and limits; those shared facts are here. */
#ifndef FMLP_MODEL_SAFETENSORS_H
#define FMLP_MODEL_SAFETENSORS_H

#include "fmlp.h"

/* The reference implementation refuses headers above 100 MB; so do we, so a
 * corrupt length cannot make us parse gigabytes. */
#define FMLP_ST_MAX_HEADER ((uint64_t)100000000)
/* Ranks above FMLP_ST_MAX_RANK (fmlp.h) are refused at open (no model
 * tensor comes close). */

/* The tag a file stores for `d`: "F32", "BF16", "F16". */
const char *fmlp_st_dtype_tag(fmlp_dtype d);

/* What the public calls flatten away, for loaders that must check it. */
const char *fmlp_st_path(const fmlp_st_file *f);
/* Whether `name` exists (any dtype); sets no error. */
bool fmlp_st_has(const fmlp_st_file *f, const char *name);
/* "[768, 3072]" into buf. */
void fmlp_st_format_shape(int rank, const int64_t *shape, char *buf, size_t cap);

#endif
