/*
 * The allocation torture test (curl's "torture" mode, for the engine's own
 * allocations): runs a representative workload once to count the
 * allocations it makes (K), then K more times with allocation i failing
 * (i = 1...K), each time with a new engine, against smoke_server.py.
 * Every run must end with no crash, every submit either refused with
 * CR_ERR_INTERNAL or answered by exactly one COMPLETE (CR_OK with the right
 * bytes, CR_ERR_INTERNAL, or the outcome the transfer asked for), the
 * engine destroyed, no loop leaked, no descriptor left open and (under
 * AddressSanitizer) no memory leaked.
 *
 *   bin/torture-asan http://127.0.0.1:PORT [--from I] [--to J] [--step S]
 *                    [--persistent] [--with-curl]
 *
 * --persistent makes allocation i and every later one fail (memory that
 * stays short), instead of allocation i alone.
 *
 * --with-curl routes libcurl's allocations through the same allocator
 * (curl_global_init_mem, before any other curl call of this process), so
 * that libcurl's failures are exercised too; K is then much larger, and a
 * transfer may end with any error (libcurl reports some of its allocation
 * failures as other errors), but a success must still be right.
 * libuv's allocations are never routed: libuv aborts on some of them.
 */
#include <stdatomic.h>

#include <curl/curl.h>

#include "../src/alloc.h"
#include "../src/alloc_torture.h"
#include "harness.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_LSAN 1
#endif
#endif
#ifdef HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

#define WAIT_SECONDS 20
#define FILE_BODY 300000
#define UPLOAD_MEMORY 100000
#define UPLOAD_BORROWED 70000
#define UPLOAD_FILE 50000
#define RESUME_TOTAL 10000
#define RESUME_FROM 4000

static const char* base;
static char directory[4096];
static recorder_t recorder;
static int strict; /* the counting run: every transfer must succeed */
/* libcurl's allocations fail too: libcurl reports some of its own failures
 * as other errors (an address it cannot copy as CURLE_COULDNT_RESOLVE_HOST),
 * so any error is accepted; a success must still be right. */
static int any_error;

/* What one transfer must end with. */
typedef enum {
  BODY_ANY = 0,     /* not checked (a cancel that may lose the race)      */
  BODY_NONE,        /* no DATA                                            */
  BODY_PATTERN,     /* memory: the pattern's first `length` bytes         */
  BODY_TEXT,        /* memory: exactly `text`                             */
  FILE_PATTERN      /* the file at `path` holds `length` pattern bytes     */
} shape_t;

typedef struct {
  size_t tag;
  uint64_t id;
  int submitted;
  cr_error_t expected;  /* CR_OK or CR_ERR_CANCELLED                      */
  int may_succeed;      /* a cancel that may arrive after the end          */
  shape_t shape;
  size_t length;
  const char* text;
  char path[4200];
  int held_status;      /* > 0: must have been held with this status       */
} plan_t;

#define MAX_PLANS 32
static plan_t plans[MAX_PLANS];
static int plan_count;

static void url(char* buffer, size_t size, const char* path) {
  snprintf(buffer, size, "%s%s", base, path);
}

static void file_path(plan_t* plan, const char* name) {
  snprintf(plan->path, sizeof(plan->path), "%s/%s", directory, name);
}

/* Submits r for a new plan. The descriptors in r (and answer_fd) are the
 * engine's on success; on a refused submit they are closed here. */
static plan_t* submit(cr_engine_t* engine, cr_request_t* r, answer_t answer,
                      int answer_fd, cr_error_t expected, shape_t shape,
                      size_t length, const char* text) {
  plan_t* plan;
  cr_error_t error = CR_OK;
  uint64_t id;
  CHECK(plan_count < MAX_PLANS, "too many plans");
  plan = &plans[plan_count++];
  memset(plan, 0, sizeof(*plan));
  plan->tag = recorder_add(&recorder, answer, answer_fd);
  plan->expected = expected;
  plan->shape = shape;
  plan->length = length;
  plan->text = text;
  r->tag = plan->tag;
  id = cr_engine_submit(engine, r, &error);
  if (id == 0) {
    CHECK(!strict, "submit refused (%d) in the counting run", error);
    CHECK(error == CR_ERR_INTERNAL, "submit refused with %d", error);
    if (r->sink_fd >= 0)
      close(r->sink_fd);
    if (r->body_fd >= 0)
      close(r->body_fd);
    /* Never held, never answered: the answer's descriptor is still ours. */
    if (answer_fd >= 0) {
      pthread_mutex_lock(&recorder.lock);
      recorder.records[plan->tag].answer_fd = -1;
      pthread_mutex_unlock(&recorder.lock);
      close(answer_fd);
    }
    plan_count--;
    return NULL;
  }
  plan->submitted = 1;
  plan->id = id;
  return plan;
}

static int open_new(const char* path) {
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
  return fd;
}

static void write_pattern(const char* path, size_t length) {
  unsigned char* bytes = malloc(length);
  int fd = open_new(path);
  CHECK(bytes != NULL, "out of memory");
  for (size_t i = 0; i < length; i++)
    bytes[i] = pattern_byte((int64_t)i);
  CHECK(write(fd, bytes, length) == (ssize_t)length, "write %s", path);
  close(fd);
  free(bytes);
}

static void wait_group(int first) {
  int count = plan_count - first;
  if (count <= 0)
    return;
  /* Every plan of the group was submitted; their records are contiguous
   * only when no submit was refused, so wait per plan. */
  for (int i = first; i < plan_count; i++)
    CHECK(recorder_wait(&recorder, plans[i].tag, 1, WAIT_SECONDS) == 0,
          "transfer %zu (plan %d) did not complete within %d s (a hang)",
          plans[i].tag, i, WAIT_SECONDS);
}

static void check_plan(const plan_t* plan) {
  const record_t* record = &recorder.records[plan->tag];
  CHECK(record->completes == 1, "plan %zu: %d COMPLETE events", plan->tag,
        record->completes);
  CHECK(record->after_complete == 0, "plan %zu: events after COMPLETE", plan->tag);
  CHECK(record->data_while_held == 0, "plan %zu: DATA or success while held",
        plan->tag);
  CHECK(record->responses <= 1, "plan %zu: %d RESPONSE events", plan->tag,
        record->responses);
  CHECK(record->data_before_response == 0, "plan %zu: DATA before RESPONSE",
        plan->tag);
  CHECK(!record->out_of_memory, "plan %zu: the recorder ran out of memory", plan->tag);
  if (record->error == CR_ERR_INTERNAL && !strict)
    return; /* the failed allocation's outcome */
  if (record->error != CR_OK && any_error && !strict)
    return;
  if (record->error == CR_OK && plan->may_succeed)
    return;
  CHECK(record->error == plan->expected, "plan %zu: error %d, expected %d",
        plan->tag, record->error, plan->expected);
  if (record->error != CR_OK)
    return;
  CHECK(record->responses == 1, "plan %zu: a success with %d RESPONSE events",
        plan->tag, record->responses);
  if (plan->held_status > 0)
    CHECK(record->held && record->status == plan->held_status,
          "plan %zu: held %d status %d", plan->tag, record->held, record->status);
  switch (plan->shape) {
    case BODY_ANY:
      break;
    case BODY_NONE:
      CHECK(record->body_length == 0, "plan %zu: %zu body bytes", plan->tag,
            record->body_length);
      break;
    case BODY_PATTERN:
      CHECK(record->body_length == plan->length &&
                is_pattern(record->body, record->body_length, 0),
            "plan %zu: %zu bytes, not the %zu pattern bytes", plan->tag,
            record->body_length, plan->length);
      break;
    case BODY_TEXT:
      CHECK(record->body_length == strlen(plan->text) &&
                memcmp(record->body, plan->text, record->body_length) == 0,
            "plan %zu: body is not \"%s\"", plan->tag, plan->text);
      break;
    case FILE_PATTERN:
      CHECK(record->bytes_on_disk == (int64_t)plan->length,
            "plan %zu: bytes_on_disk %lld, expected %zu", plan->tag,
            (long long)record->bytes_on_disk, plan->length);
      CHECK(file_is_pattern(plan->path, plan->length),
            "plan %zu: %s is not the %zu pattern bytes", plan->tag, plan->path,
            plan->length);
      break;
  }
}

/* One engine, the whole workload, destroyed. */
static void run_workload(void) {
  static const char ca[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  char address[64][512];
  int n = 0;
  const char* error = NULL;
  cr_engine_config_t config;
  cr_engine_t* engine;
  cr_request_t r;
  plan_t* plan;
  int first;
  int borrowed = 0;
  static unsigned char upload[UPLOAD_MEMORY];

  for (size_t i = 0; i < sizeof(upload); i++)
    upload[i] = pattern_byte((int64_t)i);
  plan_count = 0;
  recorder_reset(&recorder);
  atomic_store(&borrowed_releases, 0);

  memset(&config, 0, sizeof(config));
  config.loop_count = 1;
  config.max_host_connections = 4;
  config.ca_pem = ca;
  config.ca_pem_length = sizeof(ca) - 1;
  config.on_events = recorder_on_events;
  config.context = &recorder;
  engine = cr_engine_create(&config, &error);
  if (engine == NULL) {
    CHECK(!strict, "cr_engine_create failed in the counting run: %s", error);
    CHECK(error != NULL, "no error message");
    return;
  }
  recorder.engine = engine;

  /* 1. GETs into memory and into a file, a decoded body. */
  first = plan_count;
  for (int i = 0; i < 3; i++) {
    url(address[n], sizeof(address[n]), "/bytes/1024");
    r = request(address[n++]);
    submit(engine, &r, ANSWER_ALLOW, -1, CR_OK, BODY_PATTERN, 1024, NULL);
  }
  url(address[n], sizeof(address[n]), "/bytes/300000");
  r = request(address[n++]);
  r.sink = CR_SINK_FILE;
  {
    char path[4200];
    snprintf(path, sizeof(path), "%s/file.bin", directory);
    r.sink_fd = open_new(path);
    plan = submit(engine, &r, ANSWER_ALLOW, -1, CR_OK, FILE_PATTERN, FILE_BODY, NULL);
    if (plan)
      file_path(plan, "file.bin");
  }
  url(address[n], sizeof(address[n]), "/gzip/100000");
  r = request(address[n++]);
  r.flags |= CR_FLAG_DECODE;
  submit(engine, &r, ANSWER_ALLOW, -1, CR_OK, BODY_PATTERN, 100000, NULL);
  wait_group(first);

  /* 2. Uploads: copied from memory, borrowed, from a file. */
  first = plan_count;
  url(address[n], sizeof(address[n]), "/upload");
  r = request(address[n++]);
  r.method = "PUT";
  r.body = upload;
  r.body_length = UPLOAD_MEMORY;
  submit(engine, &r, ANSWER_ALLOW, -1, CR_OK, BODY_TEXT, 0, "100000");
  r.body = NULL;
  r.body_length = 0;
  r.borrowed_body = borrowed_pattern(UPLOAD_BORROWED);
  if (submit(engine, &r, ANSWER_ALLOW, -1, CR_OK, BODY_TEXT, 0, "70000"))
    borrowed++;
  memset(&r.borrowed_body, 0, sizeof(r.borrowed_body));
  {
    char path[4200];
    snprintf(path, sizeof(path), "%s/upload.bin", directory);
    r.body_fd = open(path, O_RDONLY);
    CHECK(r.body_fd >= 0, "open %s", path);
    r.body_fd_length = UPLOAD_FILE;
    submit(engine, &r, ANSWER_ALLOW, -1, CR_OK, BODY_TEXT, 0, "50000");
  }
  wait_group(first);

  /* 3. Held responses: a redirect with a body allowed, one with no body
   * allowed and cancelled (decided out of curl: DECIDING), a final
   * response sent to a file. */
  first = plan_count;
  url(address[n], sizeof(address[n]), "/redirect");
  r = request(address[n++]);
  plan = submit(engine, &r, ANSWER_ALLOW, -1, CR_OK, BODY_TEXT, 0, "moved");
  if (plan)
    plan->held_status = 302;
  url(address[n], sizeof(address[n]), "/redirect-empty");
  r = request(address[n++]);
  plan = submit(engine, &r, ANSWER_ALLOW, -1, CR_OK, BODY_NONE, 0, NULL);
  if (plan)
    plan->held_status = 302;
  plan = submit(engine, &r, ANSWER_CANCEL, -1, CR_ERR_CANCELLED, BODY_NONE, 0, NULL);
  url(address[n], sizeof(address[n]), "/bytes/1000");
  r = request(address[n++]);
  r.flags |= CR_FLAG_ASK_RESPONSE;
  {
    char path[4200];
    snprintf(path, sizeof(path), "%s/decided.bin", directory);
    plan = submit(engine, &r, ANSWER_TO_FILE, open_new(path), CR_OK, FILE_PATTERN,
                  1000, NULL);
    if (plan) {
      file_path(plan, "decided.bin");
      plan->held_status = 200;
    }
  }
  wait_group(first);

  /* 4. Cancels: of a running transfer at its response, of a queued one. */
  first = plan_count;
  url(address[n], sizeof(address[n]), "/stall");
  r = request(address[n++]);
  submit(engine, &r, ANSWER_CANCEL_ANY, -1, CR_ERR_CANCELLED, BODY_ANY, 0, NULL);
  url(address[n], sizeof(address[n]), "/bytes/2000");
  r = request(address[n++]);
  plan = submit(engine, &r, ANSWER_ALLOW, -1, CR_ERR_CANCELLED, BODY_ANY, 0, NULL);
  if (plan) {
    plan->may_succeed = 1;
    cr_transfer_cancel(engine, plan->id);
  }
  wait_group(first);

  /* 5. A ranged resume into a partial file. */
  first = plan_count;
  {
    char path[4200];
    snprintf(path, sizeof(path), "%s/resumed.bin", directory);
    write_pattern(path, RESUME_FROM);
    url(address[n], sizeof(address[n]), "/bytes/10000");
    r = request(address[n++]);
    r.sink = CR_SINK_FILE;
    r.sink_fd = open(path, O_RDWR);
    r.resume_offset = RESUME_FROM;
    plan = submit(engine, &r, ANSWER_ALLOW, -1, CR_OK, FILE_PATTERN, RESUME_TOTAL,
                  NULL);
    if (plan)
      file_path(plan, "resumed.bin");
  }
  wait_group(first);

  for (int i = 0; i < plan_count; i++)
    check_plan(&plans[i]);
  CHECK(atomic_load(&borrowed_releases) == borrowed,
        "%d borrowed body releases for %d submitted", atomic_load(&borrowed_releases),
        borrowed);
  {
    cr_engine_stats_t stats;
    cr_engine_stats(engine, &stats);
    CHECK(stats.queued == 0 && stats.active == 0 &&
              stats.completed == plan_count,
          "stats: queued %lld active %lld completed %lld of %d",
          (long long)stats.queued, (long long)stats.active,
          (long long)stats.completed, plan_count);
  }
  cr_engine_destroy(engine);
  recorder.engine = NULL;
  /* Answers never given (the transfer failed before its RESPONSE). */
  for (size_t i = 0; i < recorder.used; i++)
    if (recorder.records[i].answer_fd >= 0)
      close(recorder.records[i].answer_fd);
}

int main(int argc, char** argv) {
  long from = 1, to = -1, step = 1, count;
  int with_curl = 0, persistent = 0, failed_runs = 0, runs = 0, descriptors;
  struct timespec started, ended;

  if (argc < 2) {
    fprintf(stderr, "usage: torture BASE_URL [--from I] [--to J] [--step S] [--persistent] [--with-curl]\n");
    return 2;
  }
  base = argv[1];
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--from") == 0 && i + 1 < argc)
      from = atol(argv[++i]);
    else if (strcmp(argv[i], "--to") == 0 && i + 1 < argc)
      to = atol(argv[++i]);
    else if (strcmp(argv[i], "--step") == 0 && i + 1 < argc)
      step = atol(argv[++i]);
    else if (strcmp(argv[i], "--with-curl") == 0)
      with_curl = 1;
    else if (strcmp(argv[i], "--persistent") == 0)
      persistent = 1;
    else {
      fprintf(stderr, "torture: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  any_error = with_curl;
  if (with_curl)
    CHECK(curl_global_init_mem(CURL_GLOBAL_DEFAULT, cr__malloc, free, cr__realloc,
                               cr__strdup, cr__calloc) == CURLE_OK,
          "curl_global_init_mem");
  clock_gettime(CLOCK_MONOTONIC, &started);
  make_temporary_directory(directory, sizeof(directory), "courier-torture");
  {
    char path[4200];
    snprintf(path, sizeof(path), "%s/upload.bin", directory);
    write_pattern(path, UPLOAD_FILE);
  }
  recorder_init(&recorder, 64);

  /* A first run warms up what is allocated once per process (curl's and
   * OpenSSL's globals), so that the counting run counts the workload. */
  strict = 1;
  run_workload();
  descriptors = open_descriptors();
#ifdef HAVE_LSAN
  CHECK(__lsan_do_recoverable_leak_check() == 0, "leaks after the first run");
#endif

  cr__alloc_fail_at(0, 0);
  run_workload();
  count = cr__alloc_disarm(NULL);
  CHECK(count > 0, "no allocation counted");
  CHECK(open_descriptors() == descriptors, "descriptors left open");
  printf("torture: the workload makes %ld allocations%s\n", count,
         with_curl ? " (the engine's and libcurl's)" : " (the engine's own)");
  fflush(stdout);

  strict = 0;
  if (to < 0 || to > count)
    to = count;
  for (long i = from; i <= to; i += step) {
    int failed = 0;
    snprintf(check_context, sizeof(check_context), "allocation %ld%s of %ld failing: ", i,
             persistent ? " and later" : "", count);
    cr__alloc_fail_at(i, persistent);
    run_workload();
    cr__alloc_disarm(&failed);
    runs++;
    failed_runs += failed;
    CHECK(cr_leaked_loop_count() == 0, "a loop was leaked");
    CHECK(open_descriptors() == descriptors, "%d descriptors open, %d before",
          open_descriptors(), descriptors);
#ifdef HAVE_LSAN
    CHECK(__lsan_do_recoverable_leak_check() == 0, "memory leaked");
#endif
    if (getenv("VERBOSE") || i % 100 == 0) {
      printf("torture: %ld of %ld\n", i, to);
      fflush(stdout);
    }
  }
  check_context[0] = '\0';
  recorder_destroy(&recorder);
  remove_temporary_directory(directory);
  clock_gettime(CLOCK_MONOTONIC, &ended);
  printf("torture: %d runs over allocation points %ld..%ld (step %ld) of K = %ld%s; "
         "%d runs reached their failing allocation; 0 crashes, 0 hangs, 0 leaks "
         "(%s), %.1f s\n",
         runs, from, to, step, count, persistent ? ", each failing with every later one" : "",
         failed_runs,
#ifdef HAVE_LSAN
         "LeakSanitizer after every run",
#else
         "not checked: build with -fsanitize=address",
#endif
         (double)(ended.tv_sec - started.tv_sec) +
             (double)(ended.tv_nsec - started.tv_nsec) * 1e-9);
  if (with_curl)
    curl_global_cleanup();
  return 0;
}
