/* interp/bit.c — placeholder until the family lands. */
#include "interp/interp.h"
const struct interp_family interp_family_bit[] = { { 0, NULL } };
