/*
 * The engine alone, without Courier's Swift layer: COUNT GETs of URL into memory, IN_FLIGHT at a time, on LOOPS
 * loop threads (default 2). Each completion submits the next transfer from the event callback. Prints the wall
 * time; Benchmarks/README.md compares it with the Swift clients on workload W1 (see Makefile).
 *
 *   bin/load http://127.0.0.1:PORT/1k.bin 20000 100
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "courier_engine.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int total, submitted, completed, failed;
static long long received;
static cr_engine_t* engine;
static cr_request_t request;

static void submit(int count) {
  for (int i = 0; i < count; i++) {
    cr_error_t error;
    if (!cr_engine_submit(engine, &request, &error)) {
      fprintf(stderr, "load: submit failed (%d)\n", error);
      exit(1);
    }
  }
}

static void on_events(void* context, const cr_event_t* events, size_t count) {
  int finished = 0;
  long long bytes = 0;
  for (size_t i = 0; i < count; i++) {
    const cr_event_t* event = &events[i];
    switch (event->kind) {
      case CR_EVENT_RESPONSE: free(event->headers); break;
      case CR_EVENT_DATA: bytes += (long long)event->data_length; free(event->data); break;
      case CR_EVENT_PROGRESS: break;
      case CR_EVENT_COMPLETE:
        finished++;
        if (event->error) failed++;
        free(event->message);
        break;
    }
  }
  pthread_mutex_lock(&lock);
  received += bytes;
  completed += finished;
  int next = finished < total - submitted ? finished : total - submitted;
  submitted += next;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&lock);
  submit(next);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: load URL COUNT IN_FLIGHT [LOOPS]\n");
    return 2;
  }
  total = atoi(argv[2]);
  int in_flight = atoi(argv[3]);
  if (in_flight > total) in_flight = total;
  cr_engine_config_t config = {0};
  config.loop_count = argc > 4 ? atoi(argv[4]) : 2;
  config.max_host_connections = in_flight;
  config.on_events = on_events;
  const char* error;
  engine = cr_engine_create(&config, &error);
  if (!engine) {
    fprintf(stderr, "load: %s\n", error);
    return 1;
  }
  request.url = argv[1];
  request.body_fd = -1;
  request.sink = CR_SINK_MEMORY;
  request.sink_fd = -1;

  struct timespec started, ended;
  clock_gettime(CLOCK_MONOTONIC, &started);
  pthread_mutex_lock(&lock);
  submitted = in_flight;
  pthread_mutex_unlock(&lock);
  submit(in_flight);
  pthread_mutex_lock(&lock);
  while (completed < total) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  clock_gettime(CLOCK_MONOTONIC, &ended);
  double wall = (double)(ended.tv_sec - started.tv_sec) + (double)(ended.tv_nsec - started.tv_nsec) * 1e-9;
  printf("%d transfers, %d failed, %lld bytes, %.3f s, %.0f req/s\n", completed, failed, received, wall,
         completed / wall);
  cr_engine_destroy(engine);
  return failed ? 1 : 0;
}
