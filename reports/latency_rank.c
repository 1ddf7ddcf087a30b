/*
 * latency_rank.c — loads ranked by estimated stall (latency_rank.h says what the
 * estimate is). One pass over the model's hotlists: the first latency
 * hotlist of each load (LATENCY, value = binned cycles; else
 * ADDR_LATENCY, aux = the bin) gives its distribution; the image file
 * gives the straight-line code after it, whose PC samples are its time.
 *
 * Workload: a few hundred loads at most, each decoded over at most
 * LAT_SPAN instructions. Single-threaded.
 */
#include "reports/latency_rank.h"

#include <Zydis/Zydis.h>
#include <stdlib.h>
#include <string.h>

#define LAT_SPAN 16            /* instructions after a load looked at */
#define LAT_INTERRUPTED 8      /* x the slowest level: not a memory latency */

const char report_lat_estimator[] =
	"time: PC samples at the load and at the instructions after it, up to the "
	"first branch and before the next load (an interrupt lands after the "
	"instruction that took the time); stall: the part of that time beyond "
	"the first calibrated level, by the load's latency cycles";

static int by_est(const void *a, const void *b)
{
	const struct report_lat_bin *x = a, *y = b;
	if (x->est != y->est)
		return x->est > y->est ? -1 : 1;
	return (x->cycles > y->cycles) - (x->cycles < y->cycles);
}

static int by_stall(const void *a, const void *b)
{
	const struct report_lat_row *x = a, *y = b;
	if (x->stall != y->stall)
		return x->stall > y->stall ? -1 : 1;
	if (x->time != y->time)
		return x->time > y->time ? -1 : 1;
	if (x->est != y->est)
		return x->est > y->est ? -1 : 1;
	if (x->v->image != y->v->image)
		return x->v->image < y->v->image ? -1 : 1;
	return (x->v->vaddr > y->v->vaddr) - (x->v->vaddr < y->v->vaddr);
}

/* The distribution of one latency hotlist, bins summed (ADDR_LATENCY
 * holds one entry per (address, bin)), commonest first. */
static void distribution(struct report_value_model *vm, const struct report_value_hot *v, struct report_lat_row *l)
{
	double cyc = 0;
	memset(l, 0, sizeof(*l));
	l->v = v;
	for (uint32_t e = 0; e < v->h.n; e++) {
		uint64_t c = v->kind == SPOOL_VK_LATENCY ? v->h.e[e].value : v->h.e[e].aux;
		double est = spool_hot_estimate(&v->h, (int)e);
		int b = 0;
		while (b < l->nbins && l->bins[b].cycles != c)
			b++;
		if (b == l->nbins)
			l->bins[l->nbins++] = (struct report_lat_bin){ c, 0, report_value_level_of(vm, c) };
		l->bins[b].est += est;
		l->est += est;
		cyc += est * (double)c;
	}
	l->mean = l->est > 0 ? cyc / l->est : 0;
	qsort(l->bins, (size_t)l->nbins, sizeof(l->bins[0]), by_est);
}

/* Does the decoded instruction read memory (a load of its own)? */
static int reads_memory(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
	for (int i = 0; i < in->operand_count; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.type != ZYDIS_MEMOP_TYPE_AGEN &&
		    (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_READ))
			return 1;
	return 0;
}

static int is_branch(const ZydisDecodedInstruction *in)
{
	switch (in->meta.category) {
	case ZYDIS_CATEGORY_COND_BR: case ZYDIS_CATEGORY_UNCOND_BR: case ZYDIS_CATEGORY_CALL:
	case ZYDIS_CATEGORY_RET: case ZYDIS_CATEGORY_SYSCALL: case ZYDIS_CATEGORY_INTERRUPT:
		return 1;
	default:
		return 0;
	}
}

/* PC samples of the load and of the straight-line code after it (see
 * latency_rank.h): the count, and in *span how many instructions; -1 when the
 * load cannot be decoded. */
static long samples_after(struct report_value_model *vm, const struct report_value_hot *v, int *span)
{
	uint8_t code[LAT_SPAN * ZYDIS_MAX_INSTRUCTION_LENGTH];
	long got = report_value_read_code(vm, v->image, v->vaddr, code, sizeof(code));
	uint64_t end = v->w.size ? v->w.start + v->w.size : UINT64_MAX;
	ZydisDecoder dec;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	long sum = 0, off = 0;
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	*span = 0;
	while (*span < LAT_SPAN && off < got && v->vaddr + (uint64_t)off < end) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code + off, (ZyanUSize)(got - off), &in, ops)))
			break;
		if (*span && reads_memory(&in, ops))
			break;
		sum += (long)report_value_pc_samples(vm, v->image, v->vaddr + (uint64_t)off);
		(*span)++;
		off += in.length;
		if (is_branch(&in))
			break;
	}
	return *span ? sum : -1;
}

/* The median of the level's bins (estimates as weights): its typical
 * latency for this load, which a few preempted loads do not move. */
static double level_median(const struct report_lat_row *l, const char *level, double est)
{
	uint64_t c[SPOOL_HOT_N];
	double w[SPOOL_HOT_N], acc = 0;
	int n = 0;
	for (int b = 0; b < l->nbins; b++)
		if (l->bins[b].level == level) {
			int k = n++;
			while (k && c[k - 1] > l->bins[b].cycles) {   /* insertion, by cycles */
				c[k] = c[k - 1];
				w[k] = w[k - 1];
				k--;
			}
			c[k] = l->bins[b].cycles;
			w[k] = l->bins[b].est;
		}
	for (int k = 0; k < n; k++)
		if ((acc += w[k]) >= est / 2)
			return (double)c[k];
	return n ? (double)c[n - 1] : 0;
}

/* Where the load waits most, weighed by cycles, and the part of its
 * cycles beyond the first level. Latencies over LAT_INTERRUPTED times
 * the slowest level's are a load whose thread was interrupted or
 * preempted while it was timed (20000 ticks, in a DRAM chase on a loaded
 * machine): they are counted in the shares but not weighed by their
 * cycles. */
static void levels(struct report_value_model *vm, struct report_lat_row *l)
{
	double cyc_all = 0, cyc_beyond = 0, best = -1;
	uint64_t cap = vm->nlevels ? LAT_INTERRUPTED * vm->levels[vm->nlevels - 1].typical : UINT64_MAX;
	for (int b = 0; b < l->nbins; b++) {
		double c = l->bins[b].est * (double)l->bins[b].cycles;
		if (l->bins[b].cycles > cap)
			continue;
		cyc_all += c;
		if (vm->nlevels >= 2 && l->bins[b].cycles > vm->levels[0].upto)
			cyc_beyond += c;
	}
	l->beyond = vm->nlevels < 2 ? 1.0 : cyc_all > 0 ? cyc_beyond / cyc_all : 0.0;
	for (int i = 0; i < vm->nlevels; i++) {
		double est = 0, cyc = 0;
		for (int b = 0; b < l->nbins; b++)
			if (l->bins[b].level == vm->levels[i].name) {
				est += l->bins[b].est;
				if (l->bins[b].cycles <= cap)
					cyc += l->bins[b].est * (double)l->bins[b].cycles;
			}
		if (est > 0 && cyc > best) {
			best = cyc;
			l->level = vm->levels[i].name;
			l->level_share = l->est > 0 ? est / l->est : 0;
			l->level_cycles = level_median(l, l->level, est);
		}
	}
}

/* A share as a person reads it: "97%", "0.4%", and "99.6%" rather than
 * a rounded "100%" that the estimate does not say. */
static const char *pct(double f, char *buf, size_t cap)
{
	snprintf(buf, cap, (f >= 0.095 && f < 0.995) || f == 0 || f >= 1 ? "%.0f%%" : "%.1f%%", 100 * f);
	return buf;
}

/* Where a load is, as a person names it: "chase.c:16" (the file's base
 * name), or "chase+0x10" without a line. */
static const char *place(const struct report_value_hot *v, char *buf, size_t cap)
{
	if (!v->w.file) {
		snprintf(buf, cap, "%s+%#llx", v->w.proc, (unsigned long long)(v->vaddr - v->w.start));
		return buf;
	}
	const char *s = strrchr(report_value_source(&v->w, buf, cap), '/');
	if (s)
		memmove(buf, s + 1, strlen(s + 1) + 1);
	return buf;
}

/* "the load at chase.c:16 in chase() waits on DRAM (~451 cycles) in 99%
 * of its samples: 98% of the time". */
static void sentence(struct report_value_model *vm, struct report_lat_row *l)
{
	char out[1200], sb[600], tb[32], sh[32], what[200];
	const struct report_value_hot *v = l->v;
	const char *paren = strchr(v->w.proc, '(') ? "" : "()";
	pct(l->time, tb, sizeof(tb));
	if (l->level) {
		int first = !strcmp(l->level, vm->levels[0].name);
		snprintf(what, sizeof(what), "%s %s (~%.0f cycles) in %s of its samples",
			 first ? "is served by" : "waits on", l->level, l->level_cycles,
			 pct(l->level_share, sh, sizeof(sh)));
	} else if (l->nbins) {
		snprintf(what, sizeof(what), "takes ~%.0f cycles on average (%llu in %s of its samples)", l->mean,
			 (unsigned long long)l->bins[0].cycles, pct(l->bins[0].est / l->est, sh, sizeof(sh)));
	} else {
		snprintf(what, sizeof(what), "has no latency samples");
	}
	snprintf(out, sizeof(out), "the load at %s in %s%s %s: %s of the time",
		 place(v, sb, sizeof(sb)), v->w.proc, paren, what, tb);
	l->sentence = report_value_own(vm, strdup(out));
}

int report_lat_rank(struct report_value_model *vm, struct report_lat_result *r)
{
	memset(r, 0, sizeof(*r));
	r->calibrated = vm->nlevels >= 2;
	r->rows = calloc(vm->nhot + 1, sizeof(*r->rows));
	if (!r->rows) {
		perror("vprof");
		exit(1);
	}
	/* Sorted by place then kind: LATENCY (5) before ADDR_LATENCY (12), so
	 * the first latency hotlist of an address is the one to take. */
	for (size_t i = 0; i < vm->nhot; i++) {
		const struct report_value_hot *v = &vm->hot[i];
		if (!report_value_kind_is_latency(v->kind) || !v->h.n)
			continue;
		if (r->n && r->rows[r->n - 1].v->image == v->image && r->rows[r->n - 1].v->vaddr == v->vaddr)
			continue;
		struct report_lat_row *l = &r->rows[r->n++];
		distribution(vm, v, l);
		l->samples = report_value_pc_samples(vm, v->image, v->vaddr);
		long s = samples_after(vm, v, &l->span);
		l->time_samples = s >= 0 ? (uint64_t)s : report_value_line_samples(vm, v);
		l->time = vm->total ? (double)l->time_samples / (double)vm->total : 0;
		levels(vm, l);
		l->stall = l->time * l->beyond;
	}
	qsort(r->rows, r->n, sizeof(*r->rows), by_stall);
	for (size_t i = 0; i < r->n; i++)
		sentence(vm, &r->rows[i]);
	return 0;
}

void report_lat_result_free(struct report_lat_result *r)
{
	free(r->rows);
	memset(r, 0, sizeof(*r));
}
