/*
 * firsttouch: what the first store to each page of a spool-like mapping
 * costs (a MAP_SHARED file, allocated, and backed in advance with
 * MADV_POPULATE_WRITE as spool/writer.c backs its pages, or not), against
 * a second store to the same pages. The value record log is written a
 * page after another, so each new page's first store lands in a handler.
 *
 *   firsttouch FILE POPULATE    (POPULATE: 1 backs the pages first, 0 not)
 *
 * Build: gcc -O2 -o firsttouch bench/workloads/firsttouch.c
 *
 * prints: populate=P first_store_median=C first_store_p90=C
 *         second_store_median=C second_store_p90=C   (TSC cycles)
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <x86intrin.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define PAGES 2048

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* One store at offset off of each page, each timed. */
static void stores(char *m, size_t off, uint64_t *t)
{
	for (size_t i = 0; i < PAGES; i++) {
		uint64_t a = __rdtsc();
		*(volatile uint64_t *)(m + i * 4096 + off) = i;
		t[i] = __rdtsc() - a;
	}
	qsort(t, PAGES, sizeof(*t), cmp);
}

int main(int argc, char **argv)
{
	static uint64_t first[PAGES], second[PAGES];
	size_t sz = (size_t)PAGES * 4096;
	if (argc != 3) {
		fprintf(stderr, "usage: firsttouch FILE POPULATE\n");
		return 2;
	}
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)sz) < 0 || posix_fallocate(fd, 0, (off_t)sz) != 0) {
		perror(argv[1]);
		return 1;
	}
	char *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	int populate = atoi(argv[2]);
	if (populate && madvise(m, sz, MADV_POPULATE_WRITE) < 0) {
		perror("madvise(MADV_POPULATE_WRITE)");
		return 1;
	}
	stores(m, 64, first);
	stores(m, 128, second);
	printf("populate=%d first_store_median=%llu first_store_p90=%llu "
	       "second_store_median=%llu second_store_p90=%llu\n", populate,
	       (unsigned long long)first[PAGES / 2], (unsigned long long)first[PAGES * 9 / 10],
	       (unsigned long long)second[PAGES / 2], (unsigned long long)second[PAGES * 9 / 10]);
	unlink(argv[1]);
	return 0;
}
