/* interp/muldiv.c — placeholder until the family lands. */
#include "interp/interp.h"
const struct interp_family interp_family_muldiv[] = { { 0, NULL } };
