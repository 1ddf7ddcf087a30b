/*
 * latency: load latencies binned at this machine's levels, as `vprof
 * calibrate` measured them (DB/calibration: "level NAME TYPICAL UPTO
 * FROM_BYTES TO_BYTES" lines, fastest first, UPTO increasing; see
 * reports/value_model.c). Loads only, timed with rdtscp; no unwinding.
 *
 * A load of L ticks goes to the first level with L <= UPTO, else the last
 * one, and is recorded as that level's TYPICAL latency (kind LATENCY, and
 * ADDR_LATENCY with its address): one hotlist entry per level, so a
 * load's whole distribution fits in its hotlist, and the reports name
 * each bin by its level ("45 cycles (L1)", "280 cycles (DRAM)": a
 * TYPICAL lies between its level's thresholds). The file is read once, at module init in
 * libvprof.so's constructor, never in the handler. Without a calibration
 * the module falls back to vprof's own bins (exact below 16 ticks, four
 * per power of two) and says so once.
 */
#include <vprof-module.h>

#include <stdio.h>
#include <string.h>

#define LEVELS 8

static uint64_t g_upto[LEVELS], g_typical[LEVELS];
static int g_n;

static int init(const struct vprof_module_host *h, char *why, size_t whylen)
{
	char path[600], line[256];
	snprintf(path, sizeof(path), "%s/calibration", h->db);
	FILE *f = fopen(path, "r");
	g_n = 0;
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char name[16];
			unsigned long long med, upto, from, to;
			if (line[0] == '#' || !strncmp(line, "overhead ", 9))
				continue;
			if (sscanf(line, "level %15s %llu %llu %llu %llu", name, &med, &upto, &from, &to) != 5 ||
			    g_n == LEVELS || (g_n && upto <= g_upto[g_n - 1])) {
				snprintf(why, whylen, "%s is malformed (run vprof calibrate again)", path);
				fclose(f);
				return -1;
			}
			g_typical[g_n] = med;
			g_upto[g_n++] = upto;
		}
		fclose(f);
	}
	if (!g_n && !h->quiet) {
		char msg[700];
		snprintf(msg, sizeof(msg), "no calibration in %s (run `vprof calibrate --db %s` first); "
			 "latencies binned by powers of two", h->db, h->db);
		h->say(h, msg);
	}
	return 0;
}

static uint64_t bin(uint64_t c)
{
	if (g_n) {
		for (int i = 0; i < g_n - 1; i++)
			if (c <= g_upto[i])
				return g_typical[i];
		return g_typical[g_n - 1];
	}
	if (c < 16)
		return c;
	int top = 63 - __builtin_clzll(c);
	return c & ~((1ull << (top - 2)) - 1);
}

static void sequence(const struct vprof_sequence *s)
{
	for (uint32_t i = 0; i < s->n; i++) {
		const struct vprof_tuple *t = &s->tuple[i];
		for (unsigned k = 0; k < t->naccess; k++)
			if (!t->access[k].write && t->access[k].latency) {
				uint64_t b = bin(t->access[k].latency);
				s->emit(s, VPROF_KIND_LATENCY, t->pc, b, 0);
				s->emit(s, VPROF_KIND_ADDR_LATENCY, t->pc, t->access[k].addr, b);
				break;
			}
	}
}

VPROF_MODULE_EXPORT const struct vprof_module vprof_module = {
	.api_version = VPROF_MODULE_API_VERSION,
	.name = "latency",
	.capture = VPROF_CAP_LOADS | VPROF_CAP_ADDRESSES | VPROF_CAP_LATENCY,
	.init = init,
	.sequence = sequence,
};
