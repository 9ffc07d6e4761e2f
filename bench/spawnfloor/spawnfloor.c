/*
 * spawnfloor: the parallel-spawn baseline with a C parent. LOOPS threads,
 * each starting `sh -c true` with posix_spawn and waiting for it, one after
 * another, JOBS in all; the children's stdin, stdout and stderr are
 * /dev/null, as os/exec gives a command with none set.
 *
 * It prints, tab-separated: jobs/s, and this process's own CPU per spawn in
 * ms (user + system from getrusage(RUSAGE_SELF), which leaves out the
 * children): what starting and reaping a child costs a parent with no
 * runtime of its own, the floor under any worker's own CPU per shell job.
 * bench/compare reports it beside queuectl's figures and the same loops
 * written in Go (queuectl bench's parallel-spawn baseline).
 *
 * Usage: spawnfloor JOBS LOOPS
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static atomic_long next_job;
static long jobs;
static posix_spawn_file_actions_t devnull;

static void *loop(void *arg) {
	char *argv[] = {"sh", "-c", "true", NULL};
	(void)arg;
	while (atomic_fetch_add(&next_job, 1) < jobs) {
		pid_t pid;
		int st, err = posix_spawnp(&pid, "sh", &devnull, NULL, argv, environ);
		if (err != 0) {
			fprintf(stderr, "spawnfloor: posix_spawnp sh: %s\n", strerror(err));
			exit(1);
		}
		while (waitpid(pid, &st, 0) < 0) {
			if (errno != EINTR) {
				perror("spawnfloor: waitpid");
				exit(1);
			}
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "spawnfloor: sh -c true failed (wait status %d)\n", st);
			exit(1);
		}
	}
	return NULL;
}

static double seconds(struct timeval tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

int main(int argc, char **argv) {
	if (argc != 3 || (jobs = atol(argv[1])) <= 0 || atoi(argv[2]) <= 0 || atoi(argv[2]) > 256) {
		fprintf(stderr, "usage: spawnfloor JOBS LOOPS (LOOPS at most 256)\n");
		return 2;
	}
	int loops = atoi(argv[2]);
	posix_spawn_file_actions_init(&devnull);
	for (int fd = 0; fd <= 2; fd++)
		posix_spawn_file_actions_addopen(&devnull, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);

	struct rusage r0, r1;
	struct timespec t0, t1;
	pthread_t threads[256];
	getrusage(RUSAGE_SELF, &r0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < loops; i++) {
		if (pthread_create(&threads[i], NULL, loop, NULL) != 0) {
			fprintf(stderr, "spawnfloor: pthread_create failed\n");
			return 1;
		}
	}
	for (int i = 0; i < loops; i++)
		pthread_join(threads[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &r1);

	double elapsed = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	double own = seconds(r1.ru_utime) - seconds(r0.ru_utime) + seconds(r1.ru_stime) - seconds(r0.ru_stime);
	printf("%.1f\t%.4f\n", jobs / elapsed, own * 1000 / jobs);
	return 0;
}
