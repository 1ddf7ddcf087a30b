/* tests/unit/spool_values_v1.c — spools written before the shared value
 * area grew from 4096 to 16384 lists (2026-11-23) are still read: a spool
 * with values is made by this vprof (its values in the thread tables),
 * rewritten to the older layout (version 2: the value record log that
 * follows VALUES dropped, then VALUES's shared area cut to
 * SPOOL_VALUE_SHARED_V1 lists, the head, section table, file size and
 * checksum to match), then
 * opened: every thread-table hotlist is visited with its value samples,
 * and a section of any third size is refused. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include "merge/spool_read.h"
#include "spool/hotlist.h"
#include "tests/unit/check.h"

static uint64_t g_seen_vtot;
static int g_seen_lists;

static int visit(const struct spool_hotlist *h, void *arg)
{
	(void)arg;
	g_seen_vtot += h->vtot;
	g_seen_lists++;
	return 0;
}

/* Rewrite the spool at path as version 2 with its shared value area cut
 * to `shared` lists: the VLOG section (the file's last, after VALUES) is
 * dropped, which leaves VALUES last. */
static int relayout(const char *path, uint32_t shared)
{
	int fd = open(path, O_RDWR);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return -1;
	uint8_t *b = malloc((size_t)st.st_size);
	if (pread(fd, b, (size_t)st.st_size, 0) != st.st_size)
		return -1;
	struct spool_static *s = (struct spool_static *)b;
	struct spool_section *v = &s->section[3];
	struct spool_values_head *h = (struct spool_values_head *)(b + v->offset);
	if (s->nsections == 5 && s->section[4].kind == SPOOL_SEC_VLOG &&
	    s->section[4].offset + s->section[4].size == s->file_size) {
		s->file_size -= s->section[4].size;
		memset(&s->section[4], 0, sizeof(s->section[4]));
		s->nsections = 4;
		s->version = SPOOL_VERSION;
	}
	if (v->kind != SPOOL_SEC_VALUES || v->offset + v->size != s->file_size)
		return -1;
	uint64_t cut = (uint64_t)(h->shared - shared) * sizeof(struct spool_hotlist);
	h->shared = shared;
	v->size -= cut;
	s->file_size -= cut;
	s->checksum = XXH64(s, offsetof(struct spool_static, checksum), 0);
	int rc = pwrite(fd, b, (size_t)s->file_size, 0) == (ssize_t)s->file_size &&
		 ftruncate(fd, (off_t)s->file_size) == 0 ? 0 : -1;
	close(fd);
	free(b);
	return rc;
}

int main(void)
{
	char dir[] = "/tmp/vprof-spoolv1.XXXXXX", path[600], why[256];
	struct spool sp, r;
	struct spool_params p = { .event = UPCALL_EV_TASK_CLOCK, .backend = UPCALL_EV_TASK_CLOCK,
					.period = 1000000, .exe = "x", .cmdline = "x", .values = 1 };
	uint64_t rng = 1;

	if (!mkdtemp(dir) || spool_create(&sp, dir, &p) < 0) {
		printf("FAIL cannot create a spool with values in /tmp\n");
		return 1;
	}
	CHECK(sp.vshared == SPOOL_VALUE_SHARED, "a new spool has the %u-list shared area (%u)",
	      SPOOL_VALUE_SHARED, sp.vshared);
	sp.vlog_limit = 0;   /* the values in the thread table, as older spools had them */
	struct spool_thread_slot *sl = spool_claim_slot(&sp, 1234);
	for (int i = 0; i < 3000; i++)
		spool_value(&sp, sl, SPOOL_HOT_KEY(SPOOL_VK_RESULT, 0x1000 + 4 * (i % 50)),
			    (uint64_t)(i % 7), 0, &rng);
	snprintf(path, sizeof path, "%s", sp.path);
	spool_forget(&sp);

	CHECK(relayout(path, SPOOL_VALUE_SHARED_V1) == 0, "rewritten to the %u-list layout",
	      SPOOL_VALUE_SHARED_V1);
	int rc = merge_spool_open(&r, path, why, sizeof why);
	CHECK(rc == 0, "the older layout opens (%s)", rc ? why : "ok");
	if (rc == 0) {
		uint64_t bad = 0;
		CHECK(r.vshared == SPOOL_VALUE_SHARED_V1, "its shared area read as %u lists (%u)",
		      SPOOL_VALUE_SHARED_V1, r.vshared);
		merge_spool_values(&r, visit, NULL, &bad);
		CHECK(g_seen_lists == 50 && g_seen_vtot == 3000 && bad == 0,
		      "its 50 hotlists and 3000 value samples read (%d, %llu, %llu bad)", g_seen_lists,
		      (unsigned long long)g_seen_vtot, (unsigned long long)bad);
		merge_spool_close(&r);
	}
	CHECK(relayout(path, 1000) == 0, "rewritten to a 1000-list shared area");
	rc = merge_spool_open(&r, path, why, sizeof why);
	CHECK(rc < 0, "a shared area of another size is refused (%s)", rc < 0 ? why : "opened");
	if (rc == 0)
		merge_spool_close(&r);
	unlink(path);
	rmdir(dir);
	return g_fail;
}
