/*
 * The value reports on a database with planted hotlists: a spool written
 * with the handler's API (as merge_model.c does) for the fixture
 * tests/fixtures/values_fix.c (non-PIE, -g, so ELF vaddr = run-time
 * address), merged, then `vprof list`, `invariants`, `latency`, `report`
 * and `calibrate` run on it and their text and --json output checked
 * against what was planted. Bad input must give one message and a
 * non-zero exit.
 *
 *   build/tests/values_reports     (from the repository root, or $VPROF_TOP)
 */
#include "merge/profile.h"
#include "merge/spool_read.h"
#include "reports/symbolize.h"
#include "tests/unit/check.h"
#include "tests/unit/shell.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char g_top[512], g_tmp[64], g_fix[600], g_db[600];
static uint64_t g_scale, g_site_a, g_site_b;


static void offer(struct spool *sp, unsigned kind, uint64_t pc, uint64_t value, uint64_t aux, int times)
{
	static uint64_t rng = 12345;
	for (int i = 0; i < times; i++)
		spool_value(sp, NULL, SPOOL_HOT_KEY(kind, SPOOL_GPC(sp->gen, pc)), value, aux, &rng);
}

/* The planted profile (percentages are of each hotlist's vtot):
 *   800 PC samples at scale's first instruction, 200 at site A;
 *   scale: src1@site 3 from site A 180x, 5 from site A 20x, 7 from site B 30x
 *          src2 3 in 60% (below the by-site candidate's score)
 * (at most 16 values per hotlist: p stays 1 and the shares are exact)
 *          latency: 40 cycles 70%, 300 cycles 30%
 *          result: 10 samples only (below --min-vtot 20: skipped)
 *   site A (in main): result 42 in 55%. */
static int make_db(void)
{
	char why[300], sdir[700];
	uint8_t bid[SPOOL_BUILD_ID_MAX];
	struct merge_db db;
	struct spool sp;
	struct merge_result res;
	int len = report_read_build_id(g_fix, bid, sizeof(bid));
	struct spool_params p = { .event = UPCALL_EV_TASK_CLOCK, .backend = UPCALL_EV_TASK_CLOCK,
					.period = 4000000, .exe = g_fix, .cmdline = "values_fix", .values = 1 };
	snprintf(sdir, sizeof(sdir), "%s/spool", g_db);
	if (len <= 0 || merge_db_open(&db, g_db, 1, why, sizeof(why)) < 0 || spool_create(&sp, sdir, &p) < 0)
		return -1;
	spool_image(&sp, SPOOL_IMG_MAP, 0, 0x400000, 0x800000, bid, (uint32_t)len, g_fix);
	for (int i = 0; i < 1000; i++) {
		sp.hdr->live.samples++;
		spool_count(&sp, NULL, SPOOL_KEY(UPCALL_EV_TASK_CLOCK,
						 SPOOL_GPC(sp.gen, i < 800 ? g_scale : g_site_a)));
	}
	offer(&sp, SPOOL_VK_SRC1_BY_SITE, g_scale, 3, g_site_a, 180);
	offer(&sp, SPOOL_VK_SRC1_BY_SITE, g_scale, 5, g_site_a, 20);
	offer(&sp, SPOOL_VK_SRC1_BY_SITE, g_scale, 7, g_site_b, 30);
	offer(&sp, SPOOL_VK_SRC2, g_scale, 3, 0, 60);
	for (uint64_t v = 100; v < 110; v++)
		offer(&sp, SPOOL_VK_SRC2, g_scale, v, 0, 4);
	offer(&sp, SPOOL_VK_LATENCY, g_scale, 40, 0, 70);
	offer(&sp, SPOOL_VK_LATENCY, g_scale, 300, 0, 30);
	offer(&sp, SPOOL_VK_RESULT, g_scale, 9, 0, 10);
	offer(&sp, SPOOL_VK_RESULT, g_site_a, 42, 0, 55);
	for (uint64_t v = 1000; v < 1015; v++)
		offer(&sp, SPOOL_VK_RESULT, g_site_a, v, 0, 3);
	spool_interp(&sp, 12, 1);
	spool_interp(&sp, 3, 2);
	sp.hdr->live.exited = 1;
	spool_forget(&sp);
	int rc = merge_db_merge(&db, &res, stdout);
	merge_db_close(&db);
	return rc;
}

/* Does every line of out parse as JSON, and does the Python expression
 * `check` (over rows, a list of dicts) hold? */
static int json_ok(const char *cmd, const char *check)
{
	char buf[4096];
	setenv("VALUES_CHECK", check, 1);
	int rc = shell_run(buf, sizeof(buf),
		     "%s | /usr/bin/python3 -c 'import json,os,sys\n"
		     "rows=[json.loads(l) for l in sys.stdin if l.strip()]\n"
		     "ok=eval(os.environ[\"VALUES_CHECK\"])\n"
		     "ok or print(\"rows:\", rows)\n"
		     "sys.exit(0 if ok else 1)' 2>&1", cmd);
	if (rc)
		printf("  %s: %s", cmd, buf);
	return rc == 0;
}

int main(void)
{
	static char out[1 << 16];
	const char *top = getenv("VPROF_TOP");
	char cmd[2048], vprof[700];
	int rc;
	snprintf(g_top, sizeof(g_top), "%s", top && *top ? top : ".");
	snprintf(vprof, sizeof(vprof), "%s/build/vprof", g_top);
	snprintf(g_tmp, sizeof(g_tmp), "/tmp/vprof-values.XXXXXX");
	if (!mkdtemp(g_tmp))
		return 1;
	snprintf(g_fix, sizeof(g_fix), "%s/values_fix", g_tmp);
	snprintf(g_db, sizeof(g_db), "%s/db", g_tmp);
	rc = shell_run(out, sizeof(out), "cc -g -O1 -no-pie -fno-pie -Wl,--build-id -o %s %s/tests/fixtures/values_fix.c 2>&1 && %s",
		 g_fix, g_top, g_fix);
	if (rc != 0 || sscanf(out, "%lx %lx %lx", &g_scale, &g_site_a, &g_site_b) != 3) {
		printf("FAIL fixture builds and runs: %s\n", out);
		return 1;
	}
	CHECK(make_db() == 0, "a database with planted hotlists is written and merged");

	/* A calibration file of our own, so labels are deterministic. */
	snprintf(cmd, sizeof(cmd), "printf 'overhead 39\\nlevel L1/L2 42 59 4096 4194304\\n"
		 "level LLC 84 160 8388608 16777216\\nlevel DRAM 308 18446744073709551615 33554432 268435456\\n' > %s/calibration", g_db);
	CHECK(system(cmd) == 0, "calibration file planted");

	rc = shell_run(out, sizeof(out), "%s list scale --db %s 2>&1", vprof, g_db);
	CHECK(rc == 0 && strstr(out, "src2") && strstr(out, "3 (0x3) 60.0%") && strstr(out, "values_fix.c:") &&
	      strstr(out, "imul") , "list shows scale's disassembly, source lines and the planted src2 value 3 at 60%% (rc %d)", rc);
	CHECK(strstr(out, "3 (0x3) 78.3% from ") && strstr(out, "values_fix.c:24"),
	      "list shows src1@site: 3 from the call at values_fix.c:24");
	CHECK(strstr(out, "40 cycles (L1/L2) 70.0%") && strstr(out, "300 cycles (DRAM) 30.0%"),
	      "list labels latency bins with the calibration's levels");
	snprintf(cmd, sizeof(cmd), "%s list scale --db %s --json", vprof, g_db);
	snprintf(out, sizeof(out), "any(r['pc']=='%#lx' and r['samples']==800 and r['procedure']=='scale' and "
		 "'values_fix.c:' in r['source'] and any(h['kind']=='src2' and h['top'][0]['value']==3 and "
		 "abs(h['top'][0]['share']-0.6)<0.001 for h in r['values']) for r in rows) and "
		 "all(k in r for r in rows for k in ('procedure','pc','image','source','value','share','samples'))",
		 g_scale);
	CHECK(json_ok(cmd, out), "list --json parses, has the row fields and the planted value at scale");

	rc = shell_run(out, sizeof(out), "%s invariants --db %s 2>&1", vprof, g_db);
	char *row1 = strstr(out, " suggestion\n"), *nl = row1 ? strchr(row1 + 12, '\n') : NULL;
	CHECK(rc == 0 && nl && (strstr(row1, "x (argument 1 of scale) of `") || strstr(row1, "the first operand of `")) &&
	      strstr(out, " is 3 (0x3) in 90% (") && strstr(out, "of its time from ") &&
	      strstr(out, "values_fix.c:24") && strstr(nl + 1, "src1@site at scale"),
	      "invariants ranks scale's src1 = 3 from values_fix.c:24 first, "
	      "its share with an interval (rc %d):\n%s", rc, out);
	CHECK(strstr(out, "skipped 1 hotlists or call sites with fewer than 20 value samples"),
	      "invariants says it skipped the hotlist with 10 value samples");
	snprintf(cmd, sizeof(cmd), "%s invariants --db %s --json", vprof, g_db);
	CHECK(json_ok(cmd, "rows[0].get('summary') and rows[0]['skipped']==1 and "
		      "set(rows[0]['hidden'])=={'constant','frame','position'} and "
		      "rows[1]['kind']=='src1@site' and rows[1]['value']==3 and rows[1]['class']=='data' and "
		      "rows[1]['argument'] in (1, None) and rows[1]['argument_name'] in ('x', None) and "
		      "rows[1]['site'].endswith('values_fix.c:24') and abs(rows[1]['share']-0.9)<0.001 and "
		      "rows[1]['share_low']<0.9<rows[1]['share_high'] and rows[1]['value_type'].startswith('int') and "
		      "any(r.get('kind')=='src2' for r in rows) and "
		      "any(r.get('kind')=='src1@site' and r['value']==7 and r['site'].endswith('values_fix.c:25') for r in rows[1:]) and "
		      "all(k in r for r in rows[1:] for k in ('procedure','pc','image','source','value','share','samples','weight'))"),
	      "invariants --json: a summary first, then the planted invariant, with its call site and type");

	rc = shell_run(out, sizeof(out), "%s latency --db %s 2>&1", vprof, g_db);
	CHECK(rc == 0 && strstr(out, "40 (L1/L2) 70%") && strstr(out, "300 (DRAM) 30%") && strstr(out, " 118 ") &&
		      strstr(out, "values_fix.c:12 in scale() waits on DRAM (~300 cycles) in 30% of its samples: 80% of the time"),
	      "latency shows scale's load as a sentence: DRAM in 30% of its samples, 80% of the time; mean 118 "
	      "cycles, bins by level (rc %d)", rc);
	/* time: 800 of 1000 samples; the part of its cycles beyond L1/L2:
	 * 0.3 x 300 / (0.7 x 40 + 0.3 x 300) = 90 / 118 */
	snprintf(cmd, sizeof(cmd), "%s latency --db %s --json", vprof, g_db);
	CHECK(json_ok(cmd, "len(rows)==1 and rows[0]['procedure']=='scale' and rows[0]['time_samples']==800 and "
		      "abs(rows[0]['time']-0.8)<1e-6 and abs(rows[0]['beyond']-90/118)<1e-4 and "
		      "abs(rows[0]['stall']-0.8*90/118)<1e-4 and abs(rows[0]['mean']-118)<0.01 and "
		      "rows[0]['level']=='DRAM' and abs(rows[0]['level_share']-0.3)<1e-4 and "
		      "rows[0]['value']==40 and [b['level'] for b in rows[0]['bins']]==['L1/L2','DRAM']"),
	      "latency --json: time = the load's samples' share, stall = time x the cycles' part beyond L1/L2, "
	      "level where it waits most, bins labelled");

	rc = shell_run(out, sizeof(out), "%s report --db %s 2>&1", vprof, g_db);
	CHECK(rc == 0 && strstr(out, "value samples 540") && strstr(out, "interpretation runs 2") &&
	      strstr(out, "limit 1") && strstr(out, "unsupported 1"),
	      "report shows value samples and interpretation stops by reason");
	snprintf(cmd, sizeof(cmd), "%s report --db %s --json", vprof, g_db);
	CHECK(json_ok(cmd, "rows[0]['interp_runs']==2 and rows[0]['interp_stops']=={'limit':1,'unsupported':1}"),
	      "report --json has the interpretation stats");

	/* Bad input: one clear message, non-zero exit. */
	rc = shell_run(out, sizeof(out), "%s list no_such_fn --db %s 2>&1 >/dev/null", vprof, g_db);
	CHECK(rc == 1 && strstr(out, "no procedure 'no_such_fn'") && !strchr(out, '\n')[1],
	      "list of an unknown function: one message, exit 1 (%d)", rc);
	rc = shell_run(out, sizeof(out), "%s list scale --db %s/none 2>&1 >/dev/null", vprof, g_tmp);
	CHECK(rc != 0 && strstr(out, "database") && !strchr(out, '\n')[1], "list without a database: one message, exit %d", rc);
	rc = shell_run(out, sizeof(out), "%s list scale --db %s --epoch 7 2>&1 >/dev/null", vprof, g_db);
	CHECK(rc != 0 && strstr(out, "epoch 7") && !strchr(out, '\n')[1], "list of an empty epoch: one message, exit %d", rc);
	rc = shell_run(out, sizeof(out), "%s invariants --db %s --min-share x 2>&1 >/dev/null", vprof, g_db);
	CHECK(rc == 2 && !strchr(out, '\n')[1], "invariants --min-share x: usage message, exit 2");

	/* calibrate measures the machine as it is now: on a loaded one its
	 * sampled step can merge cache and memory into one level (CI: 1 level
	 * once). A failed try is measured again once, and the line says so
	 * (docs/testing.md, "Timing checks"). */
	const char *cal_ok = "len(rows)>=2 and all(rows[i]['upto']<rows[i+1]['upto'] for i in range(len(rows)-2)) and "
			     "rows[-1]['upto'] is None and all(rows[i]['typical']<rows[i+1]['typical'] for i in range(len(rows)-1))";
	int first = -1, ok, levels = 0;
	for (int try = 1; try <= 2; try++) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s/cal && %s calibrate --db %s/cal --json", g_tmp, vprof, g_tmp);
		ok = json_ok(cmd, cal_ok);
		snprintf(cmd, sizeof(cmd), "grep -c '^level ' %s/cal/calibration", g_tmp);
		rc = shell_run(out, sizeof(out), "%s", cmd);
		levels = rc == 0 ? atoi(out) : 0;
		ok = ok && levels >= 2;
		if (ok || try == 2)
			break;
		first = levels;
		printf("retrying once: calibrate found %d levels\n", levels);
	}
	char again[96] = "";
	if (first >= 0)
		snprintf(again, sizeof(again), "%s %d level%s", ok ? ", on the second try, first:" : "; first try:",
			 first, first == 1 ? "" : "s");
	CHECK(ok, "calibrate finds at least 2 levels with increasing thresholds and writes them to DB/calibration "
	      "(%d levels)%s", levels, again);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_tmp);
	if (system(cmd) != 0)
		printf("(could not remove %s)\n", g_tmp);
	return g_fail;
}
