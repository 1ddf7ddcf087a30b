/*
 * VPROF_* configuration. Each variable maps onto a `vprof run` flag (see
 * docs/commands.md, "vprof run"). A bad value is reported once, naming the
 * accepted values, and the program then runs unprofiled.
 *
 * Runs once, in the constructor; not signal-safe.
 */
#include "preload/preload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Is the variable set (to something: empty is unset, as the parsers
 * below take it)? */
static int given(const char *name)
{
	const char *s = getenv(name);
	return s && *s;
}

static int parse_u64(const char *name, uint64_t lo, uint64_t hi, uint64_t *out, char *why,
		     size_t whylen)
{
	const char *s = getenv(name);
	char *end;
	if (!given(name))
		return 0;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi || *s == '-') {
		snprintf(why, whylen, "%s=%s: expected an integer from %llu to %llu", name, s,
			 (unsigned long long)lo, (unsigned long long)hi);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_bool(const char *name, int *out, char *why, size_t whylen)
{
	const char *s = getenv(name);
	if (!given(name))
		return 0;
	if (!strcmp(s, "1") || !strcmp(s, "on") || !strcmp(s, "yes"))
		*out = 1;
	else if (!strcmp(s, "0") || !strcmp(s, "off") || !strcmp(s, "no"))
		*out = 0;
	else {
		snprintf(why, whylen, "%s=%s: expected one of on, off, 1, 0", name, s);
		return -EINVAL;
	}
	return 0;
}

int preload_config_parse(struct preload_config *c, char *why, size_t whylen)
{
	const char *s;
	uint64_t v;
	int rc;

	memset(c, 0, sizeof(*c));
	c->interp_len = 4;
	c->ring = 1;
	c->python = 1;
	c->lua = 1;
	/* Every sample interprets: value sampling takes a signal per sample
	 * anyway, and a window costs a few us against the signal's ~30. */
	c->interp_every = 1;
	s = getenv("VPROF_DB");
	snprintf(c->db, sizeof(c->db), "%s", s && *s ? s : "vprof.db");
	if (s && strlen(s) >= sizeof(c->db)) {
		snprintf(why, whylen, "VPROF_DB: path longer than %zu bytes", sizeof(c->db) - 1);
		return -EINVAL;
	}
	s = getenv("VPROF_EVENT");
	if (s && *s && strcmp(s, "auto") != 0) {
		c->event = upcall_event_parse(s);
		if (c->event < 0) {
			snprintf(why, whylen, "VPROF_EVENT=%s: expected one of auto, cycles, "
				 "instructions, task-clock, cpu-timer, itimer", s);
			return -EINVAL;
		}
	}
	if ((rc = parse_u64("VPROF_PERIOD", UPCALL_MIN_PERIOD_NS, 1ull << 40, &c->period, why, whylen)) < 0)
		return rc;
	if ((rc = parse_u64("VPROF_FREQ", 1, 1000000000ull / UPCALL_MIN_PERIOD_NS, &c->freq, why, whylen)) < 0)
		return rc;
	if (c->period && c->freq) {
		snprintf(why, whylen, "VPROF_PERIOD and VPROF_FREQ: set one, not both");
		return -EINVAL;
	}
	if ((rc = parse_bool("VPROF_VALUES", &c->values, why, whylen)) < 0 ||
	    (rc = parse_bool("VPROF_BRANCHES", &c->branches, why, whylen)) < 0 ||
	    (rc = parse_bool("VPROF_CACHESIM", &c->cachesim, why, whylen)) < 0 ||
	    (rc = parse_bool("VPROF_HAZARDS", &c->hazards, why, whylen)) < 0 ||
	    (rc = parse_bool("VPROF_STACKS", &c->stacks, why, whylen)) < 0 ||
	    (rc = parse_bool("VPROF_PYTHON", &c->python, why, whylen)) < 0 ||
	    (rc = parse_bool("VPROF_LUA", &c->lua, why, whylen)) < 0 ||
	    (rc = parse_bool("VPROF_OPCODES", &c->opcodes, why, whylen)) < 0 ||
	    (rc = parse_bool("VPROF_VERIFY", &c->verify, why, whylen)) < 0 ||
	    (rc = parse_bool("VPROF_BENCH_EMPTY", &c->bench_empty, why, whylen)) < 0 ||
	    (rc = parse_bool("VPROF_RING", &c->ring, why, whylen)) < 0)
		return rc;
	/* The bound on vprof's own cost (selflimit.c), and its test-only
	 * knob: that many microseconds of busy work per sample. */
	v = 25;
	if ((rc = parse_u64("VPROF_MAX_COST", 0, 100, &v, why, whylen)) < 0)
		return rc;
	c->max_cost = (int)v;
	if ((rc = parse_u64("VPROF_TEST_HANDLER_WORK", 0, 1000000, &c->test_handler_work, why, whylen)) < 0)
		return rc;
	if ((rc = parse_u64("VPROF_BENCH_ALT", 0, 1000000, &c->bench_alt, why, whylen)) < 0)
		return rc;
	c->test_vlog_chunks = UINT64_MAX;
	if ((rc = parse_u64("VPROF_TEST_VLOG_CHUNKS", 0, 1000000, &c->test_vlog_chunks, why, whylen)) < 0)
		return rc;
	v = (uint64_t)c->interp_len;
	if ((rc = parse_u64("VPROF_INTERP_LEN", 1, 4096, &v, why, whylen)) < 0)
		return rc;
	c->interp_len = (int)v;
	/* How far a value window may run past its VPROF_INTERP_LEN recorded
	 * instructions to come back around its loop or into a call
	 * (preload/window.h). */
	v = 64;
	if ((rc = parse_u64("VPROF_INTERP_REACH", 0, 4096, &v, why, whylen)) < 0)
		return rc;
	c->interp_reach = (int)v;
	v = (uint64_t)c->interp_every;
	if ((rc = parse_u64("VPROF_INTERP_EVERY", 1, 1000000, &v, why, whylen)) < 0)
		return rc;
	c->interp_every = (int)v;
	v = 0;
	if ((rc = parse_u64("VPROF_SKEW_SKIP", 0, 64, &v, why, whylen)) < 0)
		return rc;
	c->skew_skip = (int)v;
	/* Continuous mode (rotate.c): a new spool every S seconds. */
	if ((rc = parse_u64("VPROF_EPOCH_SECS", 1, 100000000ull, &c->epoch_secs, why, whylen)) < 0)
		return rc;
	/* Call stacks (preload/stack_sample.c): a depth implies them, as a module
	 * implies values; they need a signal per sample (no ring: the kernel's
	 * callchain needs frame pointers, which Debian's code has not). */
	s = getenv("VPROF_STACK_DEPTH");
	if (s && *s) {
		const char *ss = getenv("VPROF_STACKS");
		if (ss && *ss && !c->stacks) {
			snprintf(why, whylen, "VPROF_STACK_DEPTH=%s records call stacks, which "
				 "VPROF_STACKS=%s turns off: unset one", s, ss);
			return -EINVAL;
		}
		c->stacks = 1;
	}
	v = 32;
	if ((rc = parse_u64("VPROF_STACK_DEPTH", 1, SPOOL_STACK_MAX, &v, why, whylen)) < 0)
		return rc;
	c->stack_depth = (int)v;
	c->stack_method = SPOOL_STACK_M_CFI;
	s = getenv("VPROF_STACK_METHOD");
	if (s && *s) {
		if (!strcmp(s, "cfi"))
			c->stack_method = SPOOL_STACK_M_CFI;
		else if (!strcmp(s, "unwind"))
			c->stack_method = SPOOL_STACK_M_UNWIND;
		else if (!strcmp(s, "fp"))
			c->stack_method = SPOOL_STACK_M_FP;
		else if (!strcmp(s, "cursor"))
			c->stack_method = SPOOL_STACK_M_CURSOR;
		else {
			snprintf(why, whylen, "VPROF_STACK_METHOD=%s: expected one of cfi, unwind, fp, cursor", s);
			return -EINVAL;
		}
	}
	if (c->stacks)
		c->ring = 0;
	/* A customization module (module.c checks and loads it): implies
	 * value sampling, which it customizes. */
	s = getenv("VPROF_MODULE");
	if (s && *s) {
		const char *vs = getenv("VPROF_VALUES");
		if (strlen(s) >= sizeof(c->module)) {
			snprintf(why, whylen, "VPROF_MODULE: path longer than %zu bytes", sizeof(c->module) - 1);
			return -EINVAL;
		}
		if (vs && *vs && !c->values) {
			snprintf(why, whylen, "VPROF_MODULE=%s customizes value sampling, which "
				 "VPROF_VALUES=%s turns off: unset one", s, vs);
			return -EINVAL;
		}
		snprintf(c->module, sizeof(c->module), "%s", s);
		c->values = 1;
	}
	/* Branch outcomes come from the same windows: VPROF_BRANCHES alone
	 * runs them for branches only (no operand or argument hotlists). */
	c->operands = c->values;
	if (c->branches)
		c->values = 1;
	/* Windows for branch records alone run 4096 instructions at every
	 * 16th sample (unless a reach or a rate is given): a window starts
	 * where time went, after a costly instruction, and covers what runs
	 * after it, so code that runs after slow code is covered more; a long
	 * window averages that over many regions of the program (a 100-trip
	 * loop's body read 62 trips a call with windows of 256 at every
	 * sample, 100.6 with 4096 at every 16th, at about the same cost). */
	if (c->branches && !c->operands && !c->module[0]) {
		if (!given("VPROF_INTERP_REACH"))
			c->interp_reach = 4096 - c->interp_len;
		if (!given("VPROF_INTERP_EVERY"))
			c->interp_every = 16;
	}
	/* Cache simulation and hazards: MemSpy's trace samples, long
	 * windows that run their whole length (preload/cachesim.c,
	 * preload/hazards.c). */
	v = 50000;
	if ((rc = parse_u64("VPROF_CACHESIM_LEN", 1000, 1000000, &v, why, whylen)) < 0)
		return rc;
	c->cachesim_len = (int)v;
	/* The geometry (sysfs reads) only for a process that simulates. */
	if (c->cachesim) {
		spool_cache_geom_machine(&c->cache);
		if ((s = getenv("VPROF_CACHE")) && *s) {
			char w[200];
			if (spool_cache_geom_parse(s, &c->cache, w, sizeof(w)) < 0) {
				snprintf(why, whylen, "VPROF_CACHE=%s", w);
				return -EINVAL;
			}
		}
	}
	if ((c->cachesim || c->hazards) && c->module[0]) {
		snprintf(why, whylen, "VPROF_%s and VPROF_MODULE: a module's windows are its own; set one",
			 c->cachesim ? "CACHESIM" : "HAZARDS");
		return -EINVAL;
	}
	if (c->cachesim || c->hazards) {
		/* Windows of 50,000 at every 4th sample (or rarer, as branch
		 * windows alone ask): ~45 ns an instruction with the simulation,
		 * ~14% of the CPU at any rate. */
		if (!given("VPROF_INTERP_EVERY") && c->interp_every < 4)
			c->interp_every = 4;
		c->values = 1;
		if (c->cachesim_len > c->interp_len + c->interp_reach)
			c->interp_reach = c->cachesim_len - c->interp_len;
	}
	return 0;
}

void preload_config_interpreted(struct preload_config *c)
{
	if (!given("VPROF_STACK_DEPTH"))
		c->stack_depth = SPOOL_STACK_MAX;
	if (!given("VPROF_STACKS")) {
		c->stacks = 1;
		c->ring = 0;
	}
}
