/*
 * Writes the spool seeds of fuzz/corpus/spool_fuzz/: a real spool is made
 * with the writer's own API (spool_create, counts through a thread
 * slot and the shared table, image records, value hotlists), then copied
 * into a small layout the reader accepts (one slot, 16 shared entries, the
 * records used), because a full spool is 2 MB and fuzzes slowly, with the
 * layout helpers of spool/spool.h. Each seed starts with the fuzz target's
 * mode byte (1: fix the checksum).
 *
 *   build/fuzz/mkseed OUTDIR
 */
#include "merge/spool_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static int write_seed(const char *dir, const char *name, const uint8_t *b, size_t n)
{
	char p[600];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "wb");
	uint8_t mode = 1;
	if (!f || fwrite(&mode, 1, 1, f) != 1 || fwrite(b, 1, n, f) != n || fclose(f) != 0)
		return -1;
	return 0;
}

/* Copy sp into a buffer with one slot, `shared` shared entries, nimg
 * image records and (if it has values) a one-slot VALUES section. */
static uint8_t *compact(const struct spool *sp, uint32_t shared, uint32_t nimg, size_t *n)
{
	const struct spool_static *s0 = &sp->hdr->s;
	int vals = sp->values != NULL;
	uint64_t hdr = s0->header_size, t_sz = s0->slot_size,
		 sh_sz = shared * sizeof(struct spool_entry),
		 im_sz = nimg * sizeof(struct spool_image_record), v_sz = vals ? spool_values_bytes(1, sp->vshared) : 0;
	uint64_t t_off = hdr, sh_off = t_off + t_sz, im_off = sh_off + sh_sz, v_off = im_off + im_sz;
	size_t size = v_off + v_sz;
	uint8_t *b = calloc(1, size);
	memcpy(b, sp->hdr, hdr);
	struct spool_static *s = (struct spool_static *)b;
	s->file_size = size;
	s->nslots = 1;
	s->shared_entries = shared;
	s->image_records = nimg;
	s->section[0] = (struct spool_section){ SPOOL_SEC_THREADS, 0, t_off, t_sz };
	s->section[1] = (struct spool_section){ SPOOL_SEC_SHARED, 0, sh_off, sh_sz };
	s->section[2] = (struct spool_section){ SPOOL_SEC_IMAGES, 0, im_off, im_sz };
	memcpy(b + t_off, sp->threads, t_sz);
	/* The shared entries in use, packed to the front. */
	struct spool_entry *e = (struct spool_entry *)(b + sh_off);
	for (uint32_t i = 0, j = 0; i < s0->shared_entries && j < shared; i++)
		if (sp->shared[i].key)
			e[j++] = sp->shared[i];
	memcpy(b + im_off, sp->images, im_sz);
	if (vals) {
		s->section[3] = (struct spool_section){ SPOOL_SEC_VALUES, 0, v_off, v_sz };
		spool_values_geometry((struct spool_values_head *)(b + v_off), 1, sp->vshared);
		memcpy(b + v_off + sizeof(struct spool_values_head), spool_value_table_at(sp, 0),
		       spool_value_table_bytes());
		memcpy(b + v_off + sizeof(struct spool_values_head) + spool_value_table_bytes(),
		       spool_value_shared(sp), (size_t)sp->vshared * sizeof(struct spool_hotlist));
	}
	s->checksum = XXH64(s, offsetof(struct spool_static, checksum), 0);
	*n = size;
	return b;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/vprof-mkseed.XXXXXX";
	if (argc != 2 || !mkdtemp(dir))
		return 2;
	int rc = 0;
	for (int values = 0; values <= 1; values++) {
		struct spool sp;
		struct spool_params p = { .event = UPCALL_EV_TASK_CLOCK, .backend = UPCALL_EV_TASK_CLOCK,
						.period = 1000000, .exe = "/usr/bin/seed",
						.cmdline = "seed --fuzz", .values = values };
		if (spool_create(&sp, dir, &p) < 0)
			return 1;
		static const uint8_t id[20] = { 0xe0, 0xab, 0x47, 0x9f };
		spool_image(&sp, SPOOL_IMG_MAP, 0x400000, 0x401000, 0x402000, id, 20, "/usr/bin/seed");
		spool_image(&sp, SPOOL_IMG_MAP, 0x7f0000000000, 0x7f0000001000, 0x7f0000100000,
			    NULL, 0, "/lib/libseed.so");
		struct spool_thread_slot *slot = spool_claim_slot(&sp, 4242);
		uint64_t rng = 88172645463325252ull;
		for (int i = 0; i < 60; i++)
			spool_count(&sp, i < 40 ? slot : NULL,
				    SPOOL_KEY(UPCALL_EV_TASK_CLOCK, 0x401000 + 16 * (i % 23)));
		for (int i = 0; values && i < 200; i++)
			spool_value(&sp, i % 3 ? slot : NULL,
				    SPOOL_HOT_KEY(SPOOL_VK_RESULT, 0x401000 + 16 * (i % 5)),
				    (uint64_t)(i % 7), 0, &rng);
		size_t n;
		uint8_t *b = compact(&sp, 16, 2, &n);
		/* The reader must accept what we made. */
		char t[600], why[160];
		struct spool rd;
		snprintf(t, sizeof(t), "%s/check", dir);
		FILE *f = fopen(t, "wb");
		if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0)
			return 1;
		if (merge_spool_open(&rd, t, why, sizeof(why)) < 0) {
			fprintf(stderr, "mkseed: the compact spool is rejected: %s\n", why);
			rc = 1;
		} else {
			merge_spool_close(&rd);
		}
		unlink(t);
		/* A VALUES section is ~1.8 MB whatever the slots (its shared
		 * area): too big to fuzz well; only the plain seed is kept. */
		if (!values)
			rc |= write_seed(argv[1], "plain", b, n);
		free(b);
		unlink(sp.path);
		spool_forget(&sp);
	}
	rmdir(dir);
	return rc;
}
