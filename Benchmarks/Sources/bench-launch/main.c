/*
 * bench-launch REPORT PROGRAM [ARGUMENT...]
 *
 * Runs PROGRAM as a child of this small process, waits for it, and writes one line to the file REPORT:
 *
 *     <wall seconds> <user CPU seconds> <system CPU seconds> <peak RSS KiB> <exit status>
 *
 * Why a separate process: Linux carries the parent's peak RSS into `ru_maxrss` across exec. A child started
 * straight from courier-bench would report at least courier-bench's own peak (about 28 MiB), whatever it used
 * itself. A child of this process inherits this process's peak instead, about 5 MiB, below every client measured.
 *
 * The exit status is PROGRAM's, or 128 + the signal that killed it; 127 if it could not be started.
 * Standard input, output and error are inherited.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static double seconds(struct timeval value) { return (double)value.tv_sec + (double)value.tv_usec * 1e-6; }

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench-launch REPORT PROGRAM [ARGUMENT...]\n");
        return 2;
    }
    struct timespec started, ended;
    clock_gettime(CLOCK_MONOTONIC, &started);
    pid_t pid;
    int failed = posix_spawnp(&pid, argv[2], NULL, NULL, argv + 2, environ);
    if (failed) {
        fprintf(stderr, "bench-launch: cannot start %s: %s\n", argv[2], strerror(failed));
        return 127;
    }
    int status = 0;
    struct rusage usage;
    while (wait4(pid, &status, 0, &usage) < 0) {
        if (errno != EINTR) {
            perror("bench-launch: wait4");
            return 127;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &ended);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

    FILE *report = fopen(argv[1], "w");
    if (report == NULL) {
        fprintf(stderr, "bench-launch: cannot write %s: %s\n", argv[1], strerror(errno));
        return 127;
    }
    double wall = (double)(ended.tv_sec - started.tv_sec) + (double)(ended.tv_nsec - started.tv_nsec) * 1e-9;
    fprintf(report, "%.6f %.6f %.6f %ld %d\n", wall, seconds(usage.ru_utime), seconds(usage.ru_stime),
            usage.ru_maxrss, code);
    fclose(report);
    return code;
}
