// courier_io: an LD_PRELOAD library for the reliability tests (docs/reliability.md). Not part of Courier: the tests
// compile it with the toolchain's clang (`clang -shared -fPIC -o courier_io.so courier_io.c -ldl -lpthread`) and
// start courierd, or the `courier` tool, with it preloaded.
//
// It does two things, for files under one directory (COURIER_IO_ROOT; nothing else is touched):
//
// - **Records** (COURIER_IO_TRACE=<file>): every call that changes what a power cut would leave — open (with the
//   path), write / pwrite / sendfile (with the bytes), ftruncate, fsync / fdatasync (of a file or a directory),
//   sync / syncfs, rename, link, unlink, rmdir, mkdir, dup / dup2 / dup3 (not fcntl's F_DUPFD), close — appended
//   to the trace as it returns, in the order the calls took effect (one lock around the call and its record).
//   Calls glibc makes inside itself (stdio's writes) do not pass through here; courierd makes none on its files. Another process may append markers to the same
//   file (`M`). Record: a header line `<op> <fd> <a> <b> <length>\n`, then `length` bytes (a path, two paths joined
//   by NUL, or the bytes written). Tests/CourierDaemonTests/IOTrace.swift reads it.
// - **Fails** (COURIER_IO_FAULT=<rule>[;<rule>…], rule `<call>:<errno>:<from>:<count>:<path part>`): the calls of a
//   kind (`write`: write, pwrite, sendfile; `sync`: fsync, fdatasync; `rename`; `open`: an open that creates) on
//   files whose path contains `path part`, counted from 1, fail with `errno` (ENOSPC, EIO, EDQUOT) from the
//   `from`-th on, `count` times (0: for ever). A failed call changes nothing and is not recorded.
//
// LD_PRELOAD is removed from the environment at load, so the processes courierd starts do not inherit it.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FDS 65536
#define MAX_RULES 8

enum call_kind { CALL_WRITE, CALL_SYNC, CALL_RENAME, CALL_OPEN, CALL_KINDS };

struct fault_rule {
    enum call_kind kind;
    int error;
    long from;
    long count;
    char part[256];
    long seen;
};

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    int trace;
    char root[PATH_MAX];
    size_t root_length;
    char *paths[MAX_FDS];
    struct fault_rule rules[MAX_RULES];
    int rule_count;

    int (*open)(const char *, int, ...);
    int (*open64)(const char *, int, ...);
    int (*openat)(int, const char *, int, ...);
    int (*openat64)(int, const char *, int, ...);
    int (*creat)(const char *, mode_t);
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*pwrite)(int, const void *, size_t, off_t);
    ssize_t (*pwrite64)(int, const void *, size_t, off_t);
    ssize_t (*sendfile)(int, int, off_t *, size_t);
    int (*ftruncate)(int, off_t);
    int (*ftruncate64)(int, off_t);
    int (*fsync)(int);
    int (*fdatasync)(int);
    int (*syncfs)(int);
    void (*sync)(void);
    int (*rename)(const char *, const char *);
    int (*renameat)(int, const char *, int, const char *);
    int (*renameat2)(int, const char *, int, const char *, unsigned int);
    int (*link)(const char *, const char *);
    int (*linkat)(int, const char *, int, const char *, int);
    int (*unlink)(const char *);
    int (*unlinkat)(int, const char *, int);
    int (*rmdir)(const char *);
    int (*mkdir)(const char *, mode_t);
    int (*mkdirat)(int, const char *, mode_t);
    int (*dup)(int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    int (*close)(int);
} io = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER, .trace = -1};

#define REAL(name) io.name = (__typeof__(io.name))dlsym(RTLD_NEXT, #name)

static int error_named(const char *name) {
    if (strcmp(name, "ENOSPC") == 0) return ENOSPC;
    if (strcmp(name, "EIO") == 0) return EIO;
    if (strcmp(name, "EDQUOT") == 0) return EDQUOT;
    if (strcmp(name, "EROFS") == 0) return EROFS;
    return atoi(name);
}

static void parse_rules(const char *text) {
    char copy[2048];
    snprintf(copy, sizeof copy, "%s", text);
    char *save = NULL;
    for (char *rule = strtok_r(copy, ";", &save); rule && io.rule_count < MAX_RULES;
         rule = strtok_r(NULL, ";", &save)) {
        char call[32] = "", error[32] = "";
        long from = 1, count = 0;
        int consumed = 0;
        if (sscanf(rule, "%31[^:]:%31[^:]:%ld:%ld:%n", call, error, &from, &count, &consumed) < 4) {
            continue;
        }
        struct fault_rule *made = &io.rules[io.rule_count];
        made->kind = strcmp(call, "write") == 0    ? CALL_WRITE
                     : strcmp(call, "sync") == 0   ? CALL_SYNC
                     : strcmp(call, "rename") == 0 ? CALL_RENAME
                     : strcmp(call, "open") == 0   ? CALL_OPEN
                                                   : CALL_KINDS;
        if (made->kind == CALL_KINDS) {
            continue;
        }
        made->error = error_named(error);
        made->from = from;
        made->count = count;
        snprintf(made->part, sizeof made->part, "%s", consumed > 0 ? rule + consumed : "");
        io.rule_count += 1;
    }
}

static void load(void) {
    REAL(open); REAL(open64); REAL(openat); REAL(openat64); REAL(creat);
    REAL(write); REAL(pwrite); REAL(pwrite64); REAL(sendfile);
    REAL(ftruncate); REAL(ftruncate64); REAL(fsync); REAL(fdatasync); REAL(syncfs); REAL(sync);
    REAL(rename); REAL(renameat); REAL(renameat2); REAL(link); REAL(linkat);
    REAL(unlink); REAL(unlinkat); REAL(rmdir); REAL(mkdir); REAL(mkdirat); REAL(dup); REAL(dup2); REAL(dup3); REAL(close);
    const char *root = getenv("COURIER_IO_ROOT");
    if (root && *root) {
        snprintf(io.root, sizeof io.root, "%s", root);
        io.root_length = strlen(io.root);
    }
    const char *trace = getenv("COURIER_IO_TRACE");
    if (trace && *trace && io.root_length > 0) {
        int descriptor = io.open(trace, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (descriptor >= 0) {
            // Out of the way of the descriptors the process counts on.
            int high = fcntl(descriptor, F_DUPFD_CLOEXEC, 200);
            if (high >= 0) {
                io.close(descriptor);
                descriptor = high;
            }
            io.trace = descriptor;
        }
    }
    const char *rules = getenv("COURIER_IO_FAULT");
    if (rules && io.root_length > 0) {
        parse_rules(rules);
    }
}

__attribute__((constructor)) static void loaded(void) {
    pthread_once(&io.once, load);
    unsetenv("LD_PRELOAD");
}

static void ready(void) { pthread_once(&io.once, load); }

// The absolute path `path` names, relative to `directory` (AT_FDCWD or a descriptor), into `out`.
static void absolute(int directory, const char *path, char *out) {
    if (path[0] == '/') {
        snprintf(out, PATH_MAX, "%s", path);
        return;
    }
    char base[PATH_MAX] = "";
    if (directory == AT_FDCWD) {
        if (!getcwd(base, sizeof base)) base[0] = 0;
    } else if (directory >= 0 && directory < MAX_FDS && io.paths[directory]) {
        snprintf(base, sizeof base, "%s", io.paths[directory]);
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", directory);
        ssize_t length = readlink(link, base, sizeof base - 1);
        base[length > 0 ? length : 0] = 0;
    }
    snprintf(out, PATH_MAX, "%s/%s", base, path);
}

static int under_root(const char *path) {
    return io.root_length > 0 && strncmp(path, io.root, io.root_length) == 0 &&
           (path[io.root_length] == '/' || path[io.root_length] == 0);
}

static const char *traced(int fd) { return fd >= 0 && fd < MAX_FDS ? io.paths[fd] : NULL; }

static void record(char op, long fd, long long a, long long b, const void *payload, size_t length) {
    if (io.trace < 0) return;
    char header[128];
    int header_length = snprintf(header, sizeof header, "%c %ld %lld %lld %zu\n", op, fd, a, b, length);
    struct iovec parts[2] = {{header, (size_t)header_length}, {(void *)payload, length}};
    ssize_t ignored = writev(io.trace, parts, length > 0 ? 2 : 1);
    (void)ignored;
}

static void record_paths(char op, const char *first, const char *second) {
    char joined[2 * PATH_MAX + 1];
    size_t first_length = strlen(first);
    memcpy(joined, first, first_length + 1);
    size_t length = first_length;
    if (second) {
        size_t second_length = strlen(second);
        memcpy(joined + first_length + 1, second, second_length);
        length = first_length + 1 + second_length;
    }
    record(op, -1, 0, 0, joined, length);
}

// Whether this call fails by a rule; sets errno when it does. Called with the lock held.
static int injected(enum call_kind kind, const char *path) {
    for (int index = 0; index < io.rule_count; index++) {
        struct fault_rule *rule = &io.rules[index];
        if (rule->kind != kind || !path || !strstr(path, rule->part)) continue;
        rule->seen += 1;
        if (rule->seen >= rule->from && (rule->count == 0 || rule->seen < rule->from + rule->count)) {
            errno = rule->error;
            return 1;
        }
    }
    return 0;
}

static void remember(int fd, const char *path) {
    if (fd < 0 || fd >= MAX_FDS) return;
    free(io.paths[fd]);
    io.paths[fd] = path ? strdup(path) : NULL;
}

// MARK: opening

static int opened(int directory, const char *path, int flags, mode_t mode,
                  int (*call)(int, const char *, int, ...)) {
    ready();
    char full[PATH_MAX];
    absolute(directory, path, full);
    if (!under_root(full)) {
        int fd = call(directory, path, flags, mode);
        if (fd >= 0) {
            pthread_mutex_lock(&io.lock);
            remember(fd, NULL);
            pthread_mutex_unlock(&io.lock);
        }
        return fd;
    }
    pthread_mutex_lock(&io.lock);
    struct stat before;
    int creates = (flags & O_CREAT) && stat(full, &before) != 0;
    int fd;
    if (creates && injected(CALL_OPEN, full)) {
        fd = -1;
    } else {
        fd = call(directory, path, flags, mode);
    }
    int saved = errno;
    if (fd >= 0) {
        remember(fd, full);
        record('O', fd, flags, creates, full, strlen(full));
    }
    pthread_mutex_unlock(&io.lock);
    errno = saved;
    return fd;
}

static mode_t mode_of(int flags, va_list arguments) {
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(arguments, int) : 0;
}

int open(const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_of(flags, arguments);
    va_end(arguments);
    ready();
    return opened(AT_FDCWD, path, flags, mode, io.openat);
}

int open64(const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_of(flags, arguments);
    va_end(arguments);
    ready();
    return opened(AT_FDCWD, path, flags, mode, io.openat64 ? io.openat64 : io.openat);
}

int openat(int directory, const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_of(flags, arguments);
    va_end(arguments);
    ready();
    return opened(directory, path, flags, mode, io.openat);
}

int openat64(int directory, const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_of(flags, arguments);
    va_end(arguments);
    ready();
    return opened(directory, path, flags, mode, io.openat64 ? io.openat64 : io.openat);
}

int creat(const char *path, mode_t mode) {
    ready();
    return opened(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, io.openat);
}

// A copy of a descriptor names the same file (a copy over a traced descriptor first closes that one).
static int duplicated(int fd, int copy) {
    if (copy >= 0) {
        if (traced(copy) && copy != fd) record('C', copy, 0, 0, NULL, 0);
        remember(copy, traced(fd));
        if (traced(fd)) record('P', copy, fd, 0, NULL, 0);
    }
    return copy;
}

int dup(int fd) {
    ready();
    pthread_mutex_lock(&io.lock);
    int copy = io.dup(fd);
    int saved = errno;
    duplicated(fd, copy);
    pthread_mutex_unlock(&io.lock);
    errno = saved;
    return copy;
}

int dup2(int fd, int target) {
    ready();
    pthread_mutex_lock(&io.lock);
    int copy = io.dup2(fd, target);
    int saved = errno;
    duplicated(fd, copy);
    pthread_mutex_unlock(&io.lock);
    errno = saved;
    return copy;
}

int dup3(int fd, int target, int flags) {
    ready();
    pthread_mutex_lock(&io.lock);
    int copy = io.dup3(fd, target, flags);
    int saved = errno;
    duplicated(fd, copy);
    pthread_mutex_unlock(&io.lock);
    errno = saved;
    return copy;
}

int close(int fd) {
    ready();
    if (fd == io.trace && fd >= 0) {
        return 0;  // The trace stays open to the end (a process closing every descriptor it did not open).
    }
    pthread_mutex_lock(&io.lock);
    int was_traced = traced(fd) != NULL;
    remember(fd, NULL);
    int result = io.close(fd);
    int saved = errno;
    if (was_traced) record('C', fd, 0, 0, NULL, 0);
    pthread_mutex_unlock(&io.lock);
    errno = saved;
    return result;
}

// MARK: writing

static ssize_t written(int fd, const void *buffer, size_t count, off_t offset, int positional,
                       ssize_t (*call)(int, const void *, size_t, off_t)) {
    ready();
    const char *path = traced(fd);
    if (!path) {
        return positional ? call(fd, buffer, count, offset) : io.write(fd, buffer, count);
    }
    pthread_mutex_lock(&io.lock);
    ssize_t result;
    off_t at = offset;
    if (injected(CALL_WRITE, path)) {
        result = -1;
    } else {
        if (!positional) {
            int flags = fcntl(fd, F_GETFL);
            struct stat info;
            at = (flags >= 0 && (flags & O_APPEND) && fstat(fd, &info) == 0) ? info.st_size : lseek(fd, 0, SEEK_CUR);
        }
        result = positional ? call(fd, buffer, count, offset) : io.write(fd, buffer, count);
    }
    int saved = errno;
    if (result > 0) record('W', fd, (long long)at, 0, buffer, (size_t)result);
    pthread_mutex_unlock(&io.lock);
    errno = saved;
    return result;
}

ssize_t write(int fd, const void *buffer, size_t count) { return written(fd, buffer, count, 0, 0, NULL); }

ssize_t pwrite(int fd, const void *buffer, size_t count, off_t offset) {
    ready();
    return written(fd, buffer, count, offset, 1, io.pwrite);
}

ssize_t pwrite64(int fd, const void *buffer, size_t count, off_t offset) {
    ready();
    return written(fd, buffer, count, offset, 1, io.pwrite64 ? io.pwrite64 : io.pwrite);
}

ssize_t sendfile(int out, int in, off_t *offset, size_t count) {
    ready();
    const char *path = traced(out);
    if (!path) return io.sendfile(out, in, offset, count);
    pthread_mutex_lock(&io.lock);
    ssize_t result;
    off_t at = lseek(out, 0, SEEK_CUR);
    if (injected(CALL_WRITE, path)) {
        result = -1;
    } else {
        result = io.sendfile(out, in, offset, count);
    }
    int saved = errno;
    if (result > 0) {
        // The bytes sent, read back from the file (the descriptor may be write-only).
        char *bytes = malloc((size_t)result);
        int reader = io.open(path, O_RDONLY | O_CLOEXEC);
        if (bytes && reader >= 0 && pread(reader, bytes, (size_t)result, at) == result) {
            record('W', out, (long long)at, 0, bytes, (size_t)result);
        }
        if (reader >= 0) io.close(reader);
        free(bytes);
    }
    pthread_mutex_unlock(&io.lock);
    errno = saved;
    return result;
}

static int truncated(int fd, off_t length, int (*call)(int, off_t)) {
    ready();
    if (!traced(fd)) return call(fd, length);
    pthread_mutex_lock(&io.lock);
    int result = call(fd, length);
    int saved = errno;
    if (result == 0) record('T', fd, (long long)length, 0, NULL, 0);
    pthread_mutex_unlock(&io.lock);
    errno = saved;
    return result;
}

int ftruncate(int fd, off_t length) {
    ready();
    return truncated(fd, length, io.ftruncate);
}

int ftruncate64(int fd, off_t length) {
    ready();
    return truncated(fd, length, io.ftruncate64 ? io.ftruncate64 : io.ftruncate);
}

// MARK: syncing

static int synced(int fd, int (*call)(int)) {
    ready();
    const char *path = traced(fd);
    if (!path) return call(fd);
    pthread_mutex_lock(&io.lock);
    int result = injected(CALL_SYNC, path) ? -1 : call(fd);
    int saved = errno;
    if (result == 0) record('S', fd, 0, 0, NULL, 0);
    pthread_mutex_unlock(&io.lock);
    errno = saved;
    return result;
}

int fsync(int fd) {
    ready();
    return synced(fd, io.fsync);
}

int fdatasync(int fd) {
    ready();
    return synced(fd, io.fdatasync);
}

int syncfs(int fd) {
    ready();
    /* A rule for "sync" fails it too when the descriptor is (a directory) under the traced root. */
    const char *path = traced(fd);
    pthread_mutex_lock(&io.lock);
    int result = path && injected(CALL_SYNC, path) ? -1 : io.syncfs(fd);
    int saved = errno;
    if (result == 0) record('Y', -1, 0, 0, NULL, 0);
    pthread_mutex_unlock(&io.lock);
    errno = saved;
    return result;
}

void sync(void) {
    ready();
    pthread_mutex_lock(&io.lock);
    io.sync();
    record('Y', -1, 0, 0, NULL, 0);
    pthread_mutex_unlock(&io.lock);
}

// MARK: names

static int renamed(int from_directory, const char *from, int to_directory, const char *to, unsigned int flags) {
    ready();
    char old_path[PATH_MAX], new_path[PATH_MAX];
    absolute(from_directory, from, old_path);
    absolute(to_directory, to, new_path);
    if (!under_root(old_path) && !under_root(new_path)) {
        return flags ? io.renameat2(from_directory, from, to_directory, to, flags)
                     : io.renameat(from_directory, from, to_directory, to);
    }
    pthread_mutex_lock(&io.lock);
    int result;
    if (injected(CALL_RENAME, new_path)) {
        result = -1;
    } else {
        result = flags ? io.renameat2(from_directory, from, to_directory, to, flags)
                       : io.renameat(from_directory, from, to_directory, to);
    }
    int saved = errno;
    if (result == 0) record_paths('R', old_path, new_path);
    pthread_mutex_unlock(&io.lock);
    errno = saved;
    return result;
}

int rename(const char *from, const char *to) { return renamed(AT_FDCWD, from, AT_FDCWD, to, 0); }

int renameat(int from_directory, const char *from, int to_directory, const char *to) {
    return renamed(from_directory, from, to_directory, to, 0);
}

int renameat2(int from_directory, const char *from, int to_directory, const char *to, unsigned int flags) {
    return renamed(from_directory, from, to_directory, to, flags);
}

static int linked(int from_directory, const char *from, int to_directory, const char *to, int flags) {
    ready();
    char old_path[PATH_MAX], new_path[PATH_MAX];
    absolute(from_directory, from, old_path);
    absolute(to_directory, to, new_path);
    if (!under_root(new_path)) return io.linkat(from_directory, from, to_directory, to, flags);
    pthread_mutex_lock(&io.lock);
    int result = io.linkat(from_directory, from, to_directory, to, flags);
    int saved = errno;
    if (result == 0) record_paths('L', old_path, new_path);
    pthread_mutex_unlock(&io.lock);
    errno = saved;
    return result;
}

int link(const char *from, const char *to) { return linked(AT_FDCWD, from, AT_FDCWD, to, 0); }

int linkat(int from_directory, const char *from, int to_directory, const char *to, int flags) {
    return linked(from_directory, from, to_directory, to, flags);
}

static int removed(int directory, const char *path, int flags) {
    ready();
    char full[PATH_MAX];
    absolute(directory, path, full);
    if (!under_root(full)) return io.unlinkat(directory, path, flags);
    pthread_mutex_lock(&io.lock);
    int result = io.unlinkat(directory, path, flags);
    int saved = errno;
    if (result == 0) record_paths('U', full, NULL);
    pthread_mutex_unlock(&io.lock);
    errno = saved;
    return result;
}

int unlink(const char *path) { return removed(AT_FDCWD, path, 0); }

int unlinkat(int directory, const char *path, int flags) { return removed(directory, path, flags); }

int rmdir(const char *path) { return removed(AT_FDCWD, path, AT_REMOVEDIR); }

static int made(int directory, const char *path, mode_t mode) {
    ready();
    char full[PATH_MAX];
    absolute(directory, path, full);
    if (!under_root(full)) return io.mkdirat(directory, path, mode);
    pthread_mutex_lock(&io.lock);
    int result = io.mkdirat(directory, path, mode);
    int saved = errno;
    if (result == 0) record_paths('D', full, NULL);
    pthread_mutex_unlock(&io.lock);
    errno = saved;
    return result;
}

int mkdir(const char *path, mode_t mode) { return made(AT_FDCWD, path, mode); }

int mkdirat(int directory, const char *path, mode_t mode) { return made(directory, path, mode); }
