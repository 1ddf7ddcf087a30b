/* interp/shift.c — placeholder until the family lands. */
#include "interp/interp.h"
const struct interp_family interp_family_shift[] = { { 0, NULL } };
