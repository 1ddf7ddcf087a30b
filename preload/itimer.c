/*
 * ITIMER_PROF. With the itimer backend, vprof's sampling timer is the
 * process's one ITIMER_PROF; the program keeps its own view of it.
 * Normal context.
 */
#include "preload/sigprof.h"

#include <string.h>

/* Said once per process: while the program's timer runs, samples come
 * at its rate, not at the rate asked; the summary's "achieved" rate
 * shows it, and this says why. */
static void say_shared(const struct itimerval *nv)
{
	static int said;
	/* Under a signalfd reader our timer is off already: masks.c said so. */
	if (said++ || !g_vprof.active || g_sigprof.signalfd_tid)
		return;
	const struct timeval *iv = nv->it_interval.tv_sec || nv->it_interval.tv_usec ? &nv->it_interval
										 : &nv->it_value;
	double secs = (double)iv->tv_sec + (double)iv->tv_usec / 1e6;
	double asked = g_vprof.period ? 1e9 / (double)g_vprof.period : 0;
	if (nv->it_interval.tv_sec || nv->it_interval.tv_usec)
		preload_say("the program armed its own ITIMER_PROF at %.0f Hz, and --event itimer samples "
			    "on the process's one ITIMER_PROF: while the program's runs, samples come at "
			    "its %.0f Hz, not the %.0f Hz asked (another --event samples apart from it)",
			    1 / secs, 1 / secs, asked);
	else
		preload_say("the program armed its own ITIMER_PROF for one expiry, and --event itimer "
			    "samples on the process's one ITIMER_PROF: until it expires, after %.3f "
			    "CPU-s, no sample is taken (another --event samples apart from it)", secs);
}

/* ---- ITIMER_PROF ----
 * With the itimer backend, vprof's sampling timer is the process's one
 * ITIMER_PROF. A program that arms its own takes it over: the timer runs
 * at the program's setting, every tick is both a sample and the program's
 * SIGPROF (and the rate asked is not the rate had: said once,
 * say_shared); when the program disarms it, or its one expiry comes
 * (handler.c), ours comes back. The program reads back its own setting,
 * never ours. */
typedef int setitimer_fn(__itimer_which_t, const struct itimerval *, struct itimerval *);
typedef int getitimer_fn(__itimer_which_t, struct itimerval *);

__attribute__((visibility("default")))
int setitimer(__itimer_which_t which, const struct itimerval *nv, struct itimerval *ov)
{
	REAL(setitimer, setitimer_fn);
	if (which != ITIMER_PROF || !g_sigprof.installed || g_vprof.backend != UPCALL_EV_ITIMER)
		return real_setitimer(which, nv, ov);
	struct itimerval cur;
	if (ov) {
		if (g_sigprof.prog_itimer) {
			real_setitimer(which, NULL, &cur);      /* live remaining time */
			cur.it_interval = g_sigprof.prog_itv.it_interval;
		} else {
			memset(&cur, 0, sizeof(cur));
		}
	}
	int rc = 0;
	if (nv) {
		int on = nv->it_value.tv_sec || nv->it_value.tv_usec;
		g_sigprof.prog_itv = *nv;
		g_sigprof.prog_itimer = on;
		if (on) {
			if ((rc = real_setitimer(which, nv, NULL)) == 0)
				say_shared(nv);
		} else if (g_vprof.active && !g_sigprof.signalfd_tid)
			rc = upcall_process_start(g_vprof.backend, g_vprof.period) < 0 ? -1 : 0;
		else     /* ours stays off under a signalfd reader (masks.c) */
			rc = real_setitimer(which, nv, NULL);
	}
	if (rc == 0 && ov)
		*ov = cur;
	return rc;
}

__attribute__((visibility("default")))
int getitimer(__itimer_which_t which, struct itimerval *v)
{
	REAL(getitimer, getitimer_fn);
	if (which != ITIMER_PROF || !g_sigprof.installed || g_vprof.backend != UPCALL_EV_ITIMER)
		return real_getitimer(which, v);
	if (!g_sigprof.prog_itimer) {
		memset(v, 0, sizeof(*v));
		return 0;
	}
	int rc = real_getitimer(which, v);
	v->it_interval = g_sigprof.prog_itv.it_interval;
	return rc;
}
