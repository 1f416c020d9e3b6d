/* A smoke check of the engine against a local server (see Makefile). */
#include <assert.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "courier_engine.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int completed, responses, data_events, errors;
static long long bytes;
static cr_engine_t* engine;

static void on_events(void* ctx, const cr_event_t* events, size_t count) {
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < count; i++) {
    const cr_event_t* e = &events[i];
    switch (e->kind) {
      case CR_EVENT_RESPONSE:
        responses++;
        if (getenv("VERBOSE")) fprintf(stderr, "response %llu status %d held %d base %lld\n", (unsigned long long)e->transfer, e->status, e->held, (long long)e->resume_offset);
        if (e->held) cr_transfer_decide(engine, e->transfer, CR_DECIDE_ALLOW, -1);
        free(e->headers);
        break;
      case CR_EVENT_DATA: data_events++; bytes += e->data_length; free(e->data); break;
      case CR_EVENT_PROGRESS: break;
      case CR_EVENT_COMPLETE:
        completed++;
        if (e->error) { errors++; if (getenv("VERBOSE")) fprintf(stderr, "error %d curl %d: %s disk %lld\n", e->error, e->curl_code, e->message ? e->message : "", (long long)e->bytes_on_disk); }
        else if (getenv("VERBOSE")) fprintf(stderr, "ok %llu recv %lld disk %lld http %d reused %d\n", (unsigned long long)e->transfer, (long long)e->received, (long long)e->bytes_on_disk, e->metrics.http_version, e->metrics.reused_connection);
        free(e->message);
        break;
    }
  }
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&lock);
}

/* A borrowed upload body: bytes are a pattern of their offset. */
static atomic_int source_releases;
static void source_read(void* context, int64_t offset, void* buffer, size_t length) {
  (void)context;
  for (size_t i = 0; i < length; i++) ((unsigned char*)buffer)[i] = (unsigned char)((offset + (int64_t)i) % 251);
}
static void source_release(void* context) { (void)context; atomic_fetch_add(&source_releases, 1); }

static long long file_size(const char* path) {
  int fd = open(path, O_RDONLY);
  long long size = fd < 0 ? -1 : (long long)lseek(fd, 0, SEEK_END);
  if (fd >= 0) close(fd);
  return size;
}

static void wait_for(int n) {
  pthread_mutex_lock(&lock);
  while (completed < n) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
}

int main(int argc, char** argv) {
  const char* base = argc > 1 ? argv[1] : "http://127.0.0.1:18080";
  int n = argc > 2 ? atoi(argv[2]) : 1000;
  char url[256];
  const char* err;
  cr_engine_config_t config = {0};
  config.loop_count = 2;
  config.max_host_connections = 16;
  config.on_events = on_events;
  engine = cr_engine_create(&config, &err);
  assert(engine);

  cr_request_t r = {0};
  r.body_fd = -1; r.sink_fd = -1; r.sink = CR_SINK_MEMORY;
  r.flags = CR_FLAG_HOLD_REDIRECT_AND_AUTH;
  snprintf(url, sizeof url, "%s/bytes/1024", base);
  r.url = url;
  for (int i = 0; i < n; i++) assert(cr_engine_submit(engine, &r, NULL));
  wait_for(n);
  printf("memory: completed %d responses %d errors %d bytes %lld data events %d\n", completed, responses, errors, bytes, data_events);
  assert(errors == 0 && bytes == 1024LL * n);

  /* download to file */
  int fd = open("/tmp/courier-smoke-out.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
  r.sink = CR_SINK_FILE; r.sink_fd = fd;
  snprintf(url, sizeof url, "%s/bytes/10000000", base);
  assert(cr_engine_submit(engine, &r, NULL));
  wait_for(n + 1);
  printf("file: errors %d size %lld\n", errors, file_size("/tmp/courier-smoke-out.bin"));

  /* cut then resume */
  fd = open("/tmp/courier-smoke-cut.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
  r.sink_fd = fd;
  snprintf(url, sizeof url, "%s/bytes/1000000?cut", base);
  assert(cr_engine_submit(engine, &r, NULL));
  wait_for(n + 2);
  fd = open("/tmp/courier-smoke-cut.bin", O_RDWR);
  off_t have = lseek(fd, 0, SEEK_END);
  printf("cut: errors %d on disk %lld\n", errors, (long long)have);
  r.sink_fd = fd; r.resume_offset = have;
  snprintf(url, sizeof url, "%s/bytes/1000000", base);
  assert(cr_engine_submit(engine, &r, NULL));
  wait_for(n + 3);
  printf("resumed: errors %d size %lld\n", errors, file_size("/tmp/courier-smoke-cut.bin"));
  r.resume_offset = 0;

  /* redirect held + bad url + stall idle timeout + upload */
  r.sink = CR_SINK_MEMORY; r.sink_fd = -1;
  snprintf(url, sizeof url, "%s/redirect", base);
  assert(cr_engine_submit(engine, &r, NULL));
  cr_error_t e;
  r.url = "ftp://127.0.0.1/x"; assert(cr_engine_submit(engine, &r, &e) == 0 && e == CR_ERR_UNSUPPORTED_URL);
  r.url = "http://[::1"; assert(cr_engine_submit(engine, &r, &e) == 0 && e == CR_ERR_BAD_URL);
  r.url = url; snprintf(url, sizeof url, "%s/stall", base); r.idle_timeout_ms = 500;
  assert(cr_engine_submit(engine, &r, NULL));
  r.idle_timeout_ms = 0;
  static char body[3000000]; r.body = body; r.body_length = sizeof body; r.method = "PUT";
  snprintf(url, sizeof url, "%s/upload", base);
  wait_for(n + 5);
  int before = completed;
  assert(cr_engine_submit(engine, &r, NULL));
  wait_for(before + 1);
  /* the same upload from a borrowed source: read on demand, released once */
  r.body = NULL; r.body_length = 0;
  r.body_source.read = source_read; r.body_source.release = source_release;
  r.body_source.length = 2000000;
  before = completed;
  int errors_before = errors;
  assert(cr_engine_submit(engine, &r, NULL));
  wait_for(before + 1);
  printf("source upload: errors %d releases %d\n", errors - errors_before, atomic_load(&source_releases));
  assert(errors == errors_before && atomic_load(&source_releases) == 1);
  /* cancelled at once: still released exactly once, before its COMPLETE */
  r.body_source.length = 50000000;
  before = completed;
  uint64_t cancelled = cr_engine_submit(engine, &r, NULL);
  assert(cancelled);
  cr_transfer_cancel(engine, cancelled);
  wait_for(before + 1);
  printf("cancelled source upload: releases %d\n", atomic_load(&source_releases));
  assert(atomic_load(&source_releases) == 2);
  /* a held redirect with no body (decided while running or after curl ended),
   * and a gzip body decoded */
  r.body_source.read = NULL; r.body_source.release = NULL; r.body_source.length = 0;
  r.method = "GET";
  {
    int before = completed, errors_before = errors;
    long long bytes_before = bytes;
    snprintf(url, sizeof url, "%s/redirect-empty", base);
    for (int i = 0; i < 50; i++) assert(cr_engine_submit(engine, &r, NULL));
    r.flags |= CR_FLAG_DECODE;
    snprintf(url, sizeof url, "%s/gzip/100000", base);
    for (int i = 0; i < 50; i++) assert(cr_engine_submit(engine, &r, NULL));
    r.flags &= ~(uint32_t)CR_FLAG_DECODE;
    wait_for(before + 100);
    printf("held empty + gzip: errors %d decoded bytes %lld\n", errors - errors_before, bytes - bytes_before);
    assert(errors == errors_before && bytes - bytes_before == 50LL * 100000);
  }

  cr_engine_stats_t stats; cr_engine_stats(engine, &stats);
  printf("stats: queued %lld active %lld completed %lld handles %lld\n", (long long)stats.queued, (long long)stats.active, (long long)stats.completed, (long long)stats.open_handles);
  cr_engine_destroy(engine);
  printf("leaked loops %lld\n", (long long)cr_leaked_loop_count());
  return 0;
}
