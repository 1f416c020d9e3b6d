/*
 * bench-launch [--open N] REPORT PROGRAM [ARGUMENT...]
 *
 * Runs PROGRAM as a child of this small process, waits for it, and writes one line to the file REPORT:
 *
 *     <wall seconds> <user CPU seconds> <system CPU seconds> <peak RSS KiB> <exit status>
 *
 * Why a separate process: Linux carries the parent's peak RSS into `ru_maxrss` across exec. A child started
 * straight from courier-bench would report at least courier-bench's own peak (about 28 MiB), whatever it used
 * itself. A child of this process inherits this process's peak instead, about 5 MiB, below every client measured.
 *
 * With --open N (W7: N transfers meant to be open at once, each over its own connection), it also watches the child
 * every 20 ms and adds four figures to the line:
 *
 *     <seconds until all N were open> <RSS KiB while open> <CPU seconds per second while open> <descriptors>
 *
 * "Open" is the machine's count of TCP sockets (`/proc/net/sockstat`, `inuse`) 2N above its count before the start
 * (read once it has held still, the previous run's connections closed): both ends of N connections on loopback, the
 * server's end made when the handshake completes. The RSS is the most seen, the CPU rate (`/proc/PID/stat`) is
 * measured, and the descriptors (`/proc/PID/fd`) counted, over the 4 s that start 2 s after that (the last
 * responses handled); each is -1 when the child never had all N open. Reading the count costs this process a few
 * microseconds a sample; the child's descriptors are listed once.
 *
 * The exit status is PROGRAM's, or 128 + the signal that killed it; 127 if it could not be started.
 * Standard input, output and error are inherited.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double seconds(struct timeval value) { return (double)value.tv_sec + (double)value.tv_usec * 1e-6; }

static double since(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) * 1e-9;
}

/* The machine's TCP sockets in use (IPv4), or -1. */
static long tcp_sockets(void) {
    FILE *file = fopen("/proc/net/sockstat", "r");
    if (file == NULL)
        return -1;
    char line[256];
    long count = -1;
    while (fgets(line, sizeof line, file) != NULL) {
        if (sscanf(line, "TCP: inuse %ld", &count) == 1)
            break;
    }
    fclose(file);
    return count;
}

/* The child's user plus system CPU time in seconds, its ended threads' included (`stat`'s, in clock ticks: 10 ms
 * here, hence the 4 s window), or -1. */
static double cpu_seconds(pid_t pid) {
    char path[64], buffer[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *file = fopen(path, "r");
    if (file == NULL)
        return -1;
    size_t length = fread(buffer, 1, sizeof buffer - 1, file);
    fclose(file);
    buffer[length] = 0;
    char *fields = strrchr(buffer, ')'); /* the command name may hold spaces */
    unsigned long user = 0, system = 0;
    const char *format = "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu"; /* fields 3-15: utime, stime */
    if (fields == NULL || sscanf(fields + 2, format, &user, &system) != 2)
        return -1;
    return (double)(user + system) / (double)sysconf(_SC_CLK_TCK);
}

/* The machine's TCP sockets in use once their count has held still for 150 ms (at most 10 s): the previous run's
 * connections are closed by then (its server ends close some time after its client exits), so that they do not
 * hide this run's. */
static long settled_tcp_sockets(void) {
    long count = tcp_sockets();
    int still = 0;
    for (int samples = 0; samples < 200 && still < 3; samples++) {
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
        long now = tcp_sockets();
        still = now == count ? still + 1 : 0;
        count = now;
    }
    return count;
}

/* The child's resident set in KiB, or -1. */
static long rss_kib(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    FILE *file = fopen(path, "r");
    if (file == NULL)
        return -1;
    long size = 0, resident = -1;
    if (fscanf(file, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(file);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The child's open descriptors, or -1. */
static long descriptors(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *folder = opendir(path);
    if (folder == NULL)
        return -1;
    long count = 0;
    for (struct dirent *entry; (entry = readdir(folder)) != NULL;)
        count += entry->d_name[0] != '.';
    closedir(folder);
    return count;
}

/* What --open reports (see the top of this file). */
typedef struct {
    double open_seconds;
    long rss_kib;
    double cpu_per_second;
    long descriptors;
} open_figures;

/* Waits for the child like wait4, sampling it every 20 ms for --open's figures. */
static pid_t watch(pid_t pid, long open_count, long sockets_before, const struct timespec *started, int *status,
                   struct rusage *usage, open_figures *figures) {
    double window_start = -1;
    double cpu_before = -1;
    int window_done = 0;
    *figures = (open_figures){-1, -1, -1, -1};
    for (;;) {
        pid_t ended = wait4(pid, status, WNOHANG, usage);
        if (ended < 0 && errno == EINTR)
            continue;
        if (ended != 0)
            return ended;
        double now = since(started);
        if (figures->open_seconds < 0) {
            long sockets = tcp_sockets();
            if (sockets >= 0 && sockets_before >= 0 && sockets - sockets_before >= 2 * open_count)
                figures->open_seconds = now;
        } else if (window_start < 0 && now >= figures->open_seconds + 2.0) {
            window_start = now;
            cpu_before = cpu_seconds(pid);
            figures->descriptors = descriptors(pid);
        }
        if (window_start >= 0 && !window_done) {
            long rss = rss_kib(pid);
            if (rss > figures->rss_kib)
                figures->rss_kib = rss;
            if (now >= window_start + 4.0) {
                double cpu = cpu_seconds(pid);
                if (cpu >= 0 && cpu_before >= 0)
                    figures->cpu_per_second = (cpu - cpu_before) / (since(started) - window_start);
                window_done = 1;
            }
        }
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

int main(int argc, char **argv) {
    long open_count = 0;
    if (argc >= 3 && strcmp(argv[1], "--open") == 0) {
        open_count = atol(argv[2]);
        argc -= 2;
        argv += 2;
    }
    if (argc < 3 || open_count < 0) {
        fprintf(stderr, "usage: bench-launch [--open N] REPORT PROGRAM [ARGUMENT...]\n");
        return 2;
    }
    long sockets_before = open_count > 0 ? settled_tcp_sockets() : -1;
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
    open_figures figures;
    for (;;) {
        pid_t ended_pid = open_count > 0
                              ? watch(pid, open_count, sockets_before, &started, &status, &usage, &figures)
                              : wait4(pid, &status, 0, &usage);
        if (ended_pid == pid)
            break;
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
    fprintf(report, "%.6f %.6f %.6f %ld %d", wall, seconds(usage.ru_utime), seconds(usage.ru_stime),
            usage.ru_maxrss, code);
    if (open_count > 0)
        fprintf(report, " %.3f %ld %.4f %ld", figures.open_seconds, figures.rss_kib, figures.cpu_per_second,
                figures.descriptors);
    fprintf(report, "\n");
    fclose(report);
    return code;
}
