/*
 * What smoke.c and torture.c share: a check that fails the program, the
 * server's byte pattern, a borrowed upload body, a default request, a
 * temporary directory, and a recorder of every event of every transfer (by
 * the request's tag), which answers held responses from inside the event
 * callback as each transfer asks.
 */
#ifndef COURIER_TESTS_HARNESS_H
#define COURIER_TESTS_HARNESS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "courier_engine.h"

/* Said before a failed check's message (e.g. which allocation failed). */
static char check_context[256];

/* Fails the program (not compiled out by NDEBUG, unlike assert). */
#define CHECK(condition, ...)                                              \
  do {                                                                     \
    if (!(condition)) {                                                    \
      fprintf(stderr, "%s:%d: %scheck failed: %s: ", __FILE__, __LINE__,   \
              check_context, #condition);                                  \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

/* smoke_server.py's body: byte i of an entity is (i * 7) & 255. */
static inline unsigned char pattern_byte(int64_t i) {
  return (unsigned char)((i * 7) & 255);
}

static inline int is_pattern(const unsigned char* bytes, size_t length,
                             int64_t offset) {
  for (size_t i = 0; i < length; i++)
    if (bytes[i] != pattern_byte(offset + (int64_t)i))
      return 0;
  return 1;
}

/* A borrowed upload body (cr_borrowed_body_t) of `length` pattern bytes, in
 * one buffer that grows as needed and is never freed (the engine may read it
 * until the release); every release is counted (exactly one per transfer). */
static atomic_int borrowed_releases;
static inline void borrowed_release(void* context) {
  (void)context;
  atomic_fetch_add(&borrowed_releases, 1);
}
static inline cr_borrowed_body_t borrowed_pattern(int64_t length) {
  static unsigned char* bytes;
  static int64_t filled;
  cr_borrowed_body_t body;
  if (length > filled) {
    unsigned char* grown = realloc(bytes, (size_t)length);
    if (grown == NULL) {
      fprintf(stderr, "out of memory for a %lld-byte body\n", (long long)length);
      exit(1);
    }
    for (int64_t i = filled; i < length; i++)
      grown[i] = pattern_byte(i);
    bytes = grown;
    filled = length;
  }
  memset(&body, 0, sizeof(body));
  body.bytes = bytes;
  body.length = length;
  body.release = borrowed_release;
  return body;
}

/* A GET of `url` into memory that holds redirects and challenges. */
static inline cr_request_t request(const char* url) {
  cr_request_t r;
  memset(&r, 0, sizeof(r));
  r.url = url;
  r.body_fd = -1;
  r.sink_fd = -1;
  r.sink = CR_SINK_MEMORY;
  r.flags = CR_FLAG_HOLD_REDIRECT_AND_AUTH;
  return r;
}

/* A file's whole content (malloc'd, *length set), or NULL. */
static inline unsigned char* read_file(const char* path, size_t* length) {
  int fd = open(path, O_RDONLY);
  off_t size;
  unsigned char* bytes;
  if (fd < 0)
    return NULL;
  size = lseek(fd, 0, SEEK_END);
  bytes = malloc((size_t)size + 1);
  if (bytes && pread(fd, bytes, (size_t)size, 0) != size) {
    free(bytes);
    bytes = NULL;
  }
  close(fd);
  *length = (size_t)size;
  return bytes;
}

/* 1 when the file holds exactly the pattern's first `size` bytes. */
static inline int file_is_pattern(const char* path, size_t size) {
  size_t length = 0;
  unsigned char* bytes = read_file(path, &length);
  int ok = bytes && length == size && is_pattern(bytes, length, 0);
  free(bytes);
  return ok;
}

static inline void make_temporary_directory(char* path, size_t size,
                                            const char* name) {
  const char* base = getenv("TMPDIR");
  snprintf(path, size, "%s/%s.XXXXXX", base && *base ? base : "/tmp", name);
  CHECK(mkdtemp(path) != NULL, "mkdtemp %s: %s", path, strerror(errno));
}

static inline void remove_temporary_directory(const char* path) {
  DIR* dir = opendir(path);
  struct dirent* entry;
  char file[4096 + 512];
  if (dir == NULL)
    return;
  while ((entry = readdir(dir)) != NULL) {
    if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
      continue;
    snprintf(file, sizeof(file), "%s/%s", path, entry->d_name);
    unlink(file);
  }
  closedir(dir);
  rmdir(path);
}

static inline int open_descriptors(void) {
  DIR* dir = opendir("/proc/self/fd");
  struct dirent* entry;
  int count = 0;
  if (dir == NULL)
    return -1;
  while ((entry = readdir(dir)) != NULL)
    if (entry->d_name[0] != '.')
      count++;
  closedir(dir);
  return count - 1; /* the directory's own descriptor */
}

/* ---- The recorder ---- */

typedef enum {
  ANSWER_NONE = 0,   /* leave a held response held                       */
  ANSWER_ALLOW,      /* cr_transfer_decide(ALLOW)                         */
  ANSWER_CANCEL,     /* cr_transfer_decide(CANCEL)                        */
  ANSWER_TO_FILE,    /* cr_transfer_decide(TO_FILE, answer_fd)            */
  ANSWER_CANCEL_ANY  /* cr_transfer_cancel() on any RESPONSE, held or not */
} answer_t;

typedef struct {
  /* Set before submit. */
  answer_t answer;
  int answer_fd;
  /* Recorded. */
  uint64_t id;
  int responses;
  int held;
  int status;
  int data_events;
  int completes;
  int after_complete;    /* events that came after COMPLETE          */
  int data_while_held;   /* DATA (or a success) before the decision  */
  int data_before_response; /* DATA with no RESPONSE before it       */
  int decided;
  cr_error_t error;
  int unexplained;       /* a failed COMPLETE without a message      */
  int64_t bytes_on_disk;
  unsigned char* body;   /* every DATA byte, in order                */
  size_t body_length;
  size_t body_capacity;
  int out_of_memory;     /* the recorder itself could not keep DATA  */
} record_t;

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  cr_engine_t* engine;
  record_t* records;
  size_t capacity;
  size_t used;
} recorder_t;

static inline void recorder_init(recorder_t* r, size_t capacity) {
  pthread_mutex_init(&r->lock, NULL);
  pthread_cond_init(&r->changed, NULL);
  r->records = calloc(capacity, sizeof(record_t));
  CHECK(r->records != NULL, "out of memory");
  r->capacity = capacity;
  r->used = 0;
  r->engine = NULL;
}

static inline void recorder_reset(recorder_t* r) {
  for (size_t i = 0; i < r->used; i++)
    free(r->records[i].body);
  memset(r->records, 0, r->capacity * sizeof(record_t));
  r->used = 0;
}

static inline void recorder_destroy(recorder_t* r) {
  recorder_reset(r);
  free(r->records);
  pthread_mutex_destroy(&r->lock);
  pthread_cond_destroy(&r->changed);
}

/* A new record; its index goes into the request's tag. */
static inline size_t recorder_add(recorder_t* r, answer_t answer, int fd) {
  size_t index;
  pthread_mutex_lock(&r->lock);
  CHECK(r->used < r->capacity, "more than %zu transfers", r->capacity);
  index = r->used++;
  r->records[index].answer = answer;
  r->records[index].answer_fd = fd;
  pthread_mutex_unlock(&r->lock);
  return index;
}

static inline void append_body(record_t* record, const void* data,
                               size_t length) {
  if (record->body_length + length > record->body_capacity) {
    size_t capacity = record->body_capacity ? record->body_capacity : 4096;
    unsigned char* body;
    while (capacity < record->body_length + length)
      capacity *= 2;
    body = realloc(record->body, capacity);
    if (body == NULL) {
      record->out_of_memory = 1;
      return;
    }
    record->body = body;
    record->body_capacity = capacity;
  }
  memcpy(record->body + record->body_length, data, length);
  record->body_length += length;
}

/* cr_engine_config_t.on_events, with the recorder as its context. */
static inline void recorder_on_events(void* context, const cr_event_t* events,
                                      size_t count) {
  recorder_t* r = context;
  pthread_mutex_lock(&r->lock);
  for (size_t i = 0; i < count; i++) {
    const cr_event_t* e = &events[i];
    record_t* record;
    if (e->tag >= r->used) {
      fprintf(stderr, "event for an unknown tag %llu\n", (unsigned long long)e->tag);
      abort();
    }
    record = &r->records[e->tag];
    record->id = e->transfer;
    if (record->completes > 0)
      record->after_complete++;
    switch (e->kind) {
      case CR_EVENT_RESPONSE:
        record->responses++;
        record->status = e->status;
        record->held = e->held;
        if (e->held && record->answer != ANSWER_NONE) {
          record->decided = 1;
          if (record->answer == ANSWER_ALLOW)
            cr_transfer_decide(r->engine, e->transfer, CR_DECIDE_ALLOW, -1);
          else if (record->answer == ANSWER_CANCEL)
            cr_transfer_decide(r->engine, e->transfer, CR_DECIDE_CANCEL, -1);
          else if (record->answer == ANSWER_TO_FILE) {
            cr_transfer_decide(r->engine, e->transfer, CR_DECIDE_TO_FILE,
                               record->answer_fd);
            record->answer_fd = -1; /* the engine's now */
          }
        }
        if (record->answer == ANSWER_CANCEL_ANY)
          cr_transfer_cancel(r->engine, e->transfer);
        free(e->headers);
        break;
      case CR_EVENT_DATA:
        record->data_events++;
        if (record->responses == 0)
          record->data_before_response++;
        if (record->held && !record->decided)
          record->data_while_held++;
        append_body(record, e->data, e->data_length);
        free(e->data);
        break;
      case CR_EVENT_PROGRESS:
        break;
      case CR_EVENT_INFORMATIONAL:
        free(e->headers);
        break;
      case CR_EVENT_COMPLETE:
        record->completes++;
        record->error = e->error;
        record->unexplained = e->error != CR_OK && (e->message == NULL || e->message[0] == '\0');
        record->bytes_on_disk = e->bytes_on_disk;
        if (record->held && !record->decided && e->error == CR_OK)
          record->data_while_held++;
        if (getenv("VERBOSE"))
          fprintf(stderr, "complete tag %llu id %llu status %d error %d: %s\n",
                  (unsigned long long)e->tag, (unsigned long long)e->transfer,
                  e->status, e->error, e->message ? e->message : "");
        free(e->message);
        break;
    }
  }
  pthread_cond_broadcast(&r->changed);
  pthread_mutex_unlock(&r->lock);
}

/* Waits until records [first, first + count) have completed. Returns 0, or
 * -1 after `seconds`. */
static inline int recorder_wait(recorder_t* r, size_t first, size_t count,
                                int seconds) {
  struct timespec deadline;
  int result = 0;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += seconds;
  pthread_mutex_lock(&r->lock);
  for (;;) {
    size_t done = 0;
    for (size_t i = first; i < first + count; i++)
      if (r->records[i].completes > 0)
        done++;
    if (done == count)
      break;
    if (pthread_cond_timedwait(&r->changed, &r->lock, &deadline) == ETIMEDOUT) {
      result = -1;
      break;
    }
  }
  pthread_mutex_unlock(&r->lock);
  return result;
}

#endif /* COURIER_TESTS_HARNESS_H */
