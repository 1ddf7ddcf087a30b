/*
 * exec and spawn: what the kernel does to SIGPROF across them (handled
 * signals reset to SIG_DFL, ignored ones kept ignored), done so that the
 * program's view of SIGPROF survives, and the ring drained before exec
 * discards it. Normal context.
 */
#include "preload/sigprof.h"
#include "preload/sandbox.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>

/* ---- posix_spawn, system, popen ----
 * Their children start with SIGPROF at SIG_DFL (our handler is reset),
 * where the program meant SIG_IGN. While a program that ignores SIGPROF
 * spawns, the real disposition is SIG_IGN too (samples of that window are
 * lost, uncounted: only programs that ignore SIGPROF pay it). glibc's
 * system() and popen() spawn internally, so they are interposed too. */
static int prog_ignores(void)
{
	return g_sigprof.installed && !preload_sandbox_stopped() && !preload_sigprof_handled(&g_sigprof.prog) && g_sigprof.prog.sa_handler == SIG_IGN;
}

static void ignore_window(int open)
{
	if (open) {
		struct sigaction ign;
		memset(&ign, 0, sizeof(ign));
		ign.sa_handler = SIG_IGN;
		preload_real_sigaction(UPCALL_SIGNAL, &ign, NULL);
	} else {
		int saved = errno;
		preload_sigprof_sync_restart();
		errno = saved;
	}
}

typedef int spawn_fn(pid_t *, const char *, const posix_spawn_file_actions_t *,
		     const posix_spawnattr_t *, char *const[], char *const[]);

__attribute__((visibility("default")))
int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
	REAL(posix_spawn, spawn_fn);
	int ign = prog_ignores();
	if (ign)
		ignore_window(1);
	int rc = real_posix_spawn(pid, path, fa, at, argv, envp);
	if (ign)
		ignore_window(0);
	return rc;
}

__attribute__((visibility("default")))
int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
		 const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
	REAL(posix_spawnp, spawn_fn);
	int ign = prog_ignores();
	if (ign)
		ignore_window(1);
	int rc = real_posix_spawnp(pid, file, fa, at, argv, envp);
	if (ign)
		ignore_window(0);
	return rc;
}

__attribute__((visibility("default")))
int system(const char *cmd)
{
	typedef int fn(const char *);
	REAL(system, fn);
	int ign = prog_ignores();
	if (ign)
		ignore_window(1);
	int rc = real_system(cmd);
	if (ign)
		ignore_window(0);
	return rc;
}

__attribute__((visibility("default")))
FILE *popen(const char *cmd, const char *mode)
{
	typedef FILE *fn(const char *, const char *);
	REAL(popen, fn);
	int ign = prog_ignores();
	if (ign)
		ignore_window(1);
	FILE *f = real_popen(cmd, mode);
	if (ign)
		ignore_window(0);
	return f;
}

/* ---- exec ----
 * At exec the kernel resets handled signals to SIG_DFL but keeps ignored
 * ones ignored. SIGPROF is handled by us, so a program that ignores it
 * would hand its exec'd child a SIGPROF at default (terminate) instead of
 * ignored. Just before exec, the real disposition becomes the program's
 * SIG_IGN (and a process-wide itimer is stopped: it would survive exec);
 * if exec fails, both come back. glibc's exec functions call its internal
 * execve, so each is interposed. posix_spawn is not: its child resets our
 * handler to SIG_DFL, which differs only for a program ignoring SIGPROF. */
static void before_exec(void)
{
	/* A thread stopped at a seccomp sandbox: nothing of ours to drain,
	 * and no call to make that the sandbox may forbid. */
	if (!g_sigprof.installed || preload_sandbox_stopped())
		return;
	/* exec discards the ring with the process image: drain it first. Not
	 * in a vfork child (gcc's driver runs cc1 and as so): it shares our
	 * memory but is another task, and the ring is its parent's, whose
	 * drains run on the parent's own thread. */
	if (getpid() == g_vprof.pid)
		preload_drain();
	upcall_process_stop(g_vprof.backend);
	if (g_thread.prog_blocked) {   /* the exec'd image inherits the mask */
		sigset_t one;
		sigemptyset(&one);
		sigaddset(&one, UPCALL_SIGNAL);
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &one, NULL, sizeof(long));
	}
	if (!preload_sigprof_handled(&g_sigprof.prog) && g_sigprof.prog.sa_handler == SIG_IGN) {
		struct sigaction ign;
		memset(&ign, 0, sizeof(ign));
		ign.sa_handler = SIG_IGN;
		preload_real_sigaction(UPCALL_SIGNAL, &ign, NULL);
	}
}

static void after_failed_exec(void)
{
	int saved = errno;
	if (g_sigprof.installed && !preload_sandbox_stopped()) {
		sigset_t one;
		sigemptyset(&one);
		sigaddset(&one, UPCALL_SIGNAL);
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &one, NULL, sizeof(long));
		preload_sigprof_sync_restart();
		if (g_vprof.active)
			upcall_process_start(g_vprof.backend, g_vprof.period);
	}
	errno = saved;
}


typedef int execve_fn(const char *, char *const[], char *const[]);
typedef int execv_fn(const char *, char *const[]);
typedef int fexecve_fn(int, char *const[], char *const[]);

__attribute__((visibility("default")))
int execve(const char *path, char *const argv[], char *const envp[])
{
	REAL(execve, execve_fn);
	before_exec();
	int rc = real_execve(path, argv, envp);
	after_failed_exec();
	return rc;
}

__attribute__((visibility("default")))
int execv(const char *path, char *const argv[])
{
	REAL(execv, execv_fn);
	before_exec();
	int rc = real_execv(path, argv);
	after_failed_exec();
	return rc;
}

__attribute__((visibility("default")))
int execvp(const char *file, char *const argv[])
{
	REAL(execvp, execv_fn);
	before_exec();
	int rc = real_execvp(file, argv);
	after_failed_exec();
	return rc;
}

__attribute__((visibility("default")))
int execvpe(const char *file, char *const argv[], char *const envp[])
{
	REAL(execvpe, execve_fn);
	before_exec();
	int rc = real_execvpe(file, argv, envp);
	after_failed_exec();
	return rc;
}

__attribute__((visibility("default")))
int fexecve(int fd, char *const argv[], char *const envp[])
{
	REAL(fexecve, fexecve_fn);
	before_exec();
	int rc = real_fexecve(fd, argv, envp);
	after_failed_exec();
	return rc;
}

/* The execl family: gather the variadic arguments and take the path above. */
static int count_args(const char *arg0, va_list ap)
{
	int n = 1;
	if (!arg0)
		return 0;
	while (va_arg(ap, const char *))
		n++;
	return n;
}

#define GATHER(arg0, argv)                                   \
	va_list ap;                                          \
	va_start(ap, arg0);                                  \
	int n_ = count_args(arg0, ap);                       \
	va_end(ap);                                          \
	const char *argv[n_ + 1];                            \
	va_start(ap, arg0);                                  \
	argv[0] = arg0;                                      \
	for (int i_ = 1; i_ <= n_; i_++)                     \
		argv[i_] = va_arg(ap, const char *);         \
	if (n_ == 0)                                         \
		argv[0] = NULL

__attribute__((visibility("default")))
int execl(const char *path, const char *arg0, ...)
{
	GATHER(arg0, argv);
	va_end(ap);
	return execv(path, (char *const *)argv);
}

__attribute__((visibility("default")))
int execlp(const char *file, const char *arg0, ...)
{
	GATHER(arg0, argv);
	va_end(ap);
	return execvp(file, (char *const *)argv);
}

__attribute__((visibility("default")))
int execle(const char *path, const char *arg0, ...)
{
	GATHER(arg0, argv);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, (char *const *)argv, envp);
}
