/*
 * Call stacks in the spool and in the epoch's stacks file (merge/stacks.c):
 *
 *  - the handler's writer: equal stacks share an entry, a full table
 *    counts what it drops (samples = recorded + dropped, nothing silent);
 *  - the merge: frames of two processes with other load addresses (ASLR)
 *    come out as the same (image, offset), so their stacks are one record;
 *  - merging is associative and commutative: (a + b) + c and a + (c + b)
 *    hold the same stacks whatever order images were met in;
 *  - the file: a write/read round trip keeps everything, a flipped byte is
 *    refused.
 */
#include "merge/stacks.h"
#include "merge/spool_read.h"
#include "merge/profile.h"
#include "tests/unit/check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static struct spool_image_record g_im[2];
static size_t g_nim;
static int take_image(const struct spool_image_record *r, void *arg)
{
	g_im[g_nim++] = *r;
	return g_nim >= 2;
}

static uint64_t g_recorded;
static int add_count(const struct spool_stack_entry *en, void *arg)
{
	g_recorded += en->count;
	return 0;
}

/* A canonical text of a stacks object: one line per record, frames as
 * build-id:offset, sorted. Equal texts, equal contents. */
static char *canon(const struct merge_stacks *s)
{
	size_t cap = 1 << 20, n = 0;
	char *out = calloc(1, cap), **lines = calloc(s->n + 1, sizeof(char *));
	for (size_t i = 0; i < s->n; i++) {
		char *l = calloc(1, 4096);
		int o = snprintf(l, 4096, "%llu", (unsigned long long)s->rec[i].count);
		for (uint32_t j = 0; j < s->rec[i].depth; j++) {
			uint64_t f = s->frames[s->rec[i].at + j];
			uint32_t im = MERGE_FRAME_IMG(f);
			o += snprintf(l + o, 4096 - o, " %s:%llx", im < s->nimg ? s->img[im].path : "?",
				      (unsigned long long)MERGE_FRAME_OFF(f));
		}
		lines[i] = l;
	}
	qsort(lines, s->n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < s->n; i++) {
		n += (size_t)snprintf(out + n, cap - n, "%s\n", lines[i]);
		free(lines[i]);
	}
	free(lines);
	return out;
}

static void image(struct spool *sp, uint64_t bias, const char *path, uint8_t id)
{
	uint8_t bid[20];
	memset(bid, id, sizeof(bid));
	spool_image(sp, SPOOL_IMG_MAP, bias, bias + 0x1000, bias + 0x9000, bid, 20, path);
}

/* One process: images at these biases, a few stacks. */
static void process(const char *dir, uint64_t exe_bias, uint64_t lib_bias, uint64_t mult,
		    struct merge_stacks *out)
{
	struct spool sp;
	struct spool_params p = { .event = UPCALL_EV_TASK_CLOCK, .backend = UPCALL_EV_TASK_CLOCK,
					.period = 1000000, .exe = "x", .cmdline = "x",
					.stack_depth = 32, .stack_method = SPOOL_STACK_M_UNWIND };
	CHECK(spool_create(&sp, dir, &p) == 0, "spool with STACKS created");
	image(&sp, exe_bias, "/bin/exe", 1);
	image(&sp, lib_bias, "/lib/libc", 2);
	uint64_t s1[3] = { exe_bias + 0x1100, exe_bias + 0x1205, lib_bias + 0x2000 };
	uint64_t s2[3] = { exe_bias + 0x1100, exe_bias + 0x1305, lib_bias + 0x2000 };
	for (uint64_t i = 0; i < 3 * mult; i++)
		spool_stack(&sp, s1, 3, sp.gen, 0, 1);
	spool_stack(&sp, s2, 3, sp.gen, 0, 2 * mult);
	char path[600];
	snprintf(path, sizeof(path), "%s", sp.path);
	spool_forget(&sp);
	struct spool rd;
	char why[200];
	int rc = merge_spool_open(&rd, path, why, sizeof(why));
	CHECK(rc == 0, "spool version 3 reopens (%s)", rc == 0 ? "ok" : why);
	if (rc < 0)
		return;
	g_nim = 0;
	spool_images(&rd, take_image, NULL);
	uint64_t bad = 1;
	CHECK(merge_stacks_from_spool(out, &rd, g_im, g_nim, &bad) == 0 && bad == 0,
	      "spool stacks translated (bad %llu)", (unsigned long long)bad);
	merge_spool_close(&rd);
	unlink(path);
}

int main(void)
{
	char dir[] = "/tmp/vprof-stk.XXXXXX";
	if (!mkdtemp(dir))
		return 1;

	/* Two processes with other load addresses: the same two stacks. */
	struct merge_stacks a, b, c, ab, ab_c, cb, a_cb;
	merge_stacks_init(&a);
	merge_stacks_init(&b);
	merge_stacks_init(&c);
	process(dir, 0x555555554000, 0x7ffff7a00000, 1, &a);
	process(dir, 0x561234560000, 0x7f0011200000, 2, &b);
	merge_stacks_compact(&a);
	merge_stacks_compact(&b);
	CHECK(a.n == 2 && a.samples == 5, "process a: 2 stacks, 5 samples (%zu, %llu)", a.n,
	      (unsigned long long)a.samples);
	/* c meets the images in the other order. */
	merge_stacks_image(&c, (const uint8_t *)"\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2", 20, "/lib/libc");
	long e = merge_stacks_image(&c, (const uint8_t *)"\1\1\1\1\1\1\1\1\1\1\1\1\1\1\1\1\1\1\1\1", 20, "/bin/exe");
	uint64_t f[2] = { MERGE_FRAME(e, 0x1100), MERGE_FRAME(0, 0x2000) };
	merge_stacks_add(&c, f, 2, 7);

	merge_stacks_init(&ab);
	merge_stacks_merge(&ab, &a);
	merge_stacks_merge(&ab, &b);
	CHECK(ab.n == 2, "ASLR: the same stacks of two processes are one record each (%zu)", ab.n);
	merge_stacks_init(&ab_c);
	merge_stacks_merge(&ab_c, &ab);
	merge_stacks_merge(&ab_c, &c);
	merge_stacks_init(&cb);
	merge_stacks_merge(&cb, &c);
	merge_stacks_merge(&cb, &b);
	merge_stacks_init(&a_cb);
	merge_stacks_merge(&a_cb, &a);
	merge_stacks_merge(&a_cb, &cb);
	char *x = canon(&ab_c), *y = canon(&a_cb);
	CHECK(!strcmp(x, y) && ab_c.samples == 5 + 10 + 7,
	      "merge is associative and commutative: (a+b)+c == a+(c+b), %llu samples",
	      (unsigned long long)ab_c.samples);

	/* File round trip and corruption. */
	char path[600];
	snprintf(path, sizeof(path), "%s/stacks.task-clock.stk", dir);
	CHECK(merge_stacks_write(path, &ab_c, UPCALL_EV_TASK_CLOCK) == 0, "stacks file written");
	struct merge_stacks rd;
	char why[200] = "";
	int rc = merge_stacks_read(path, &rd, why, sizeof(why));
	char *z = rc == 0 ? canon(&rd) : strdup("");
	CHECK(rc == 0 && !strcmp(x, z), "stacks file reads back the same (%s)", why);
	if (rc == 0)
		merge_stacks_free(&rd);
	int fd = open(path, O_RDWR);
	char byte;
	pread(fd, &byte, 1, 900);
	byte ^= 1;
	pwrite(fd, &byte, 1, 900);
	close(fd);
	rc = merge_stacks_read(path, &rd, why, sizeof(why));
	CHECK(rc == -EBADMSG, "a flipped byte is refused: %s", why);

	/* A full table counts what it drops. */
	struct spool sp;
	struct spool_params p = { .event = UPCALL_EV_TASK_CLOCK, .backend = UPCALL_EV_TASK_CLOCK,
					.period = 1000000, .exe = "x", .cmdline = "x",
					.stack_depth = 8, .stack_method = SPOOL_STACK_M_FP };
	spool_create(&sp, dir, &p);
	uint64_t n = 3 * SPOOL_STACK_ENTRIES;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t st[2] = { 0x400000 + i * 16, 0x401000 };
		spool_stack(&sp, st, 2, 0, i & 1, 1);
	}
	const struct spool_stacks_head *h = (const void *)sp.stacks;
	uint64_t bad = 0;
	g_recorded = 0;
	merge_spool_stacks(&sp, add_count, NULL, &bad);
	uint64_t recorded = g_recorded;
	CHECK(h->samples == n && h->dropped > 0 && recorded + h->dropped == n && h->used == SPOOL_STACK_ENTRIES,
	      "full table: %llu offered = %llu recorded + %llu dropped, %llu entries used",
	      (unsigned long long)h->samples, (unsigned long long)recorded,
	      (unsigned long long)h->dropped, (unsigned long long)h->used);
	CHECK(h->truncated == n / 2, "truncated stacks counted (%llu)", (unsigned long long)h->truncated);
	unlink(sp.path);
	spool_forget(&sp);
	free(x);
	free(y);
	free(z);
	merge_stacks_free(&a);
	merge_stacks_free(&b);
	merge_stacks_free(&c);
	merge_stacks_free(&ab);
	merge_stacks_free(&ab_c);
	merge_stacks_free(&cb);
	merge_stacks_free(&a_cb);
	rmdir(dir);
	return g_fail;
}
