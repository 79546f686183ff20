/* Why: error messages that reject a value offer the valid ones ("use none,
 * gelu, ... or relu"); the lists come from fmlp.h's tables so a new row
 * shows up in every message without editing it. */
#ifndef FMLP_CORE_NAMES_H
#define FMLP_CORE_NAMES_H

#include <stddef.h>

#include "fmlp.h"

/* Every name of the vocabulary in value order, "a, b or c", written into
 * buf (truncated to len); returns buf. */
const char *fmlp_dtype_choices(char *buf, size_t len);
const char *fmlp_mode_choices(char *buf, size_t len);
const char *fmlp_act_choices(char *buf, size_t len);

#endif
