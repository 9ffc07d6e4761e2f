/*
 * spawnfloor: the parallel-spawn baseline with a C parent. LOOPS threads,
 * each starting `sh -c true` with posix_spawn and waiting for it, one after
 * another, JOBS in all. Per spawn the parent does what os/exec does in a
 * Go parent for a command with no stdio set: it finds `sh` on PATH, opens
 * /dev/null and gives it to the child as stdin, stdout and stderr.
 *
 * It prints, tab-separated: jobs/s, and this process's own CPU per spawn in
 * ms (user + system from getrusage(RUSAGE_SELF), which leaves out the
 * children): what starting and reaping a child costs a parent with no
 * language runtime, the floor under a worker's own CPU per shell job.
 * bench/compare reports it beside queuectl's figures and the same loops
 * written in Go (queuectl bench's parallel-spawn baseline).
 *
 * Usage: spawnfloor JOBS LOOPS
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static atomic_long next_job;
static long jobs;

static void fail(const char *what, int err) {
	fprintf(stderr, "spawnfloor: %s: %s\n", what, strerror(err));
	exit(1);
}

/* lookpath finds an executable sh on PATH, as Go's exec.LookPath does. */
static void lookpath(char *out, size_t n) {
	const char *path = getenv("PATH");
	if (path == NULL || *path == '\0')
		path = "/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");
		if (len > 0 && (size_t)snprintf(out, n, "%.*s/sh", (int)len, path) < n && access(out, X_OK) == 0)
			return;
		path += len;
		if (*path == ':')
			path++;
	}
	fail("find sh on PATH", ENOENT);
}

static void spawn_one(void) {
	char sh[PATH_MAX];
	char *argv[] = {"sh", "-c", "true", NULL};
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st, err;

	lookpath(sh, sizeof sh);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0)
		fail("open /dev/null", errno);
	if ((err = posix_spawn_file_actions_init(&fa)) != 0)
		fail("posix_spawn_file_actions_init", err);
	for (int fd = 0; fd <= 2; fd++)
		if ((err = posix_spawn_file_actions_adddup2(&fa, null, fd)) != 0)
			fail("posix_spawn_file_actions_adddup2", err);
	if ((err = posix_spawn(&pid, sh, &fa, NULL, argv, environ)) != 0)
		fail("posix_spawn sh", err);
	posix_spawn_file_actions_destroy(&fa);
	close(null);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			fail("waitpid", errno);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "spawnfloor: sh -c true failed (wait status %d)\n", st);
		exit(1);
	}
}

static void *loop(void *arg) {
	(void)arg;
	while (atomic_fetch_add(&next_job, 1) < jobs)
		spawn_one();
	return NULL;
}

/* count parses a positive decimal integer of at most max, or returns -1. */
static long count(const char *s, long max) {
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v <= 0 || v > max)
		return -1;
	return v;
}

static double seconds(struct timeval tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

int main(int argc, char **argv) {
	long loops;
	if (argc != 3 || (jobs = count(argv[1], 1000000000L)) < 0 || (loops = count(argv[2], 256)) < 0) {
		fprintf(stderr, "usage: spawnfloor JOBS LOOPS (JOBS 1 to 10^9, LOOPS 1 to 256)\n");
		return 2;
	}
	struct rusage r0, r1;
	struct timespec t0, t1;
	pthread_t threads[256];
	getrusage(RUSAGE_SELF, &r0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < loops; i++) {
		int err = pthread_create(&threads[i], NULL, loop, NULL);
		if (err != 0)
			fail("pthread_create", err);
	}
	for (long i = 0; i < loops; i++)
		pthread_join(threads[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &r1);

	double elapsed = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	double own = seconds(r1.ru_utime) - seconds(r0.ru_utime) + seconds(r1.ru_stime) - seconds(r0.ru_stime);
	printf("%.1f\t%.4f\n", jobs / elapsed, own * 1000 / jobs);
	return 0;
}
