/*
 * Heap blocks by allocation site (preload/heap.c), kept with --cachesim
 * from what libvprof-heap.so's interposers report.
 */
#ifndef VPROF_PRELOAD_HEAP_H
#define VPROF_PRELOAD_HEAP_H

#include <stddef.h>
#include <stdint.h>

/* Maps the table when cache simulation is on (the constructor). */
void preload_heap_init(void);
/* The kept block holding addr: 1 with its [lo, hi) and allocation site,
 * 0 when none holds it, -1 when the table was changing (unknown).
 * Async-signal-safe. */
int preload_heap_find(uint64_t addr, uint64_t *lo, uint64_t *hi, uint64_t *site);
/* The interposers' calls (exported): a block of size bytes at p,
 * allocated by a call returning to ra from the frame whose CFA is cfa;
 * a block freed (len 0) or a range unmapped, by a call returning to ra.
 * Calls from libvprof.so itself are ignored. */
void vprof_heap_alloc(void *p, size_t size, void *ra, void *cfa);
void vprof_heap_free(void *p, size_t len, void *ra);

#endif
