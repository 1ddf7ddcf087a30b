/* interp/string.c — placeholder until the family lands. */
#include "interp/interp.h"
const struct interp_family interp_family_string[] = { { 0, NULL } };
