/*
 * One loop thread: starts a libuv loop that drives one libcurl multi handle,
 * wakes it for commands and finished disk writes (one async handle), and
 * stops it: transfers out of curl, the writer joined, every handle closed.
 * What happens to transfers is lifecycle.c's; curl's sockets and timers are
 * sockets.c's; the event batch is events.c's.
 *
 * Runs on the loop thread, except cr__loop_start() and cr__loop_join() (the
 * engine's creating and destroying thread), cr__loop_post() and
 * cr__loop_request_stop() (any thread), cr__now_us() and cr__name_thread()
 * (any thread; the writer thread names itself).
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

uint64_t cr__now_us(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
}

void cr__name_thread(const char* prefix, int index) {
  char name[16]; /* the kernel keeps 15 bytes */
  snprintf(name, sizeof(name), "%s-%d", prefix, index);
  pthread_setname_np(pthread_self(), name);
}

static void stop_loop(cr_loop_t* loop);

/* Drops what a command carries, when the loop stops before applying it. */
static void discard_command(cr_command_t* cmd) {
  if (cmd->kind == CR_CMD_SUBMIT)
    cr__transfer_free(cmd->transfer);
  else if (cmd->fd >= 0)
    close(cmd->fd);
  free(cmd->supply);
}

/* Every wake-up: finished disk writes, then the commands, then admission. */
static void on_async(uv_async_t* async) {
  cr_loop_t* loop = async->data;
  size_t count, reserved;

  cr__process_write_results(loop);
  count = cr__command_queue_take(&loop->commands, &loop->command_scratch,
                                 &loop->command_scratch_capacity,
                                 loop->command_reserve, &reserved);
  if (atomic_load(&loop->stop_requested)) {
    /* Nothing is applied any more: free what the commands carry. */
    for (size_t i = 0; i < count; i++)
      discard_command(&loop->command_scratch[i]);
    for (size_t i = 0; i < reserved; i++)
      discard_command(&loop->command_reserve[i]);
    stop_loop(loop);
    return;
  }
  for (size_t i = 0; i < count; i++)
    cr__apply_command(loop, &loop->command_scratch[i]);
  for (size_t i = 0; i < reserved; i++)
    cr__apply_command(loop, &loop->command_reserve[i]);
  cr__admit(loop);
}

/* ---- Start and stop ---- */

static void stop_loop(cr_loop_t* loop) {
  loop->stopping = 1;
  cr__abandon_all(loop);
  cr__events_discard(loop);

  /* curl_multi_cleanup may call the socket and close-socket callbacks:
   * the loop and the socket contexts still exist here. */
  curl_multi_cleanup(loop->multi);
  loop->multi = NULL;
  curl_share_cleanup(loop->share);
  loop->share = NULL;

  cr__close_handles(loop);
}

static void loop_main(void* arg) {
  cr_loop_t* loop = arg;
  cr__name_thread("courier-loop", loop->index);
  uv_run(&loop->uv, UV_RUN_DEFAULT);
  if (uv_loop_close(&loop->uv) == UV_EBUSY) {
    atomic_fetch_add(&cr__leaked_loops, 1);
    cr__close_handles(loop);
    uv_run(&loop->uv, UV_RUN_DEFAULT);
    uv_loop_close(&loop->uv);
  }
}

/* Loop `index`'s share of a limit split over `loops` loops; the shares add
 * up to `limit` exactly. */
static int share_of(int limit, int loops, int index) {
  return limit / loops + (index < limit % loops ? 1 : 0);
}

int cr__loop_start(cr_loop_t* loop, struct cr_engine_s* engine, int index) {
  int per_loop_hosts;
  loop->engine = engine;
  loop->index = index;
  atomic_init(&loop->stop_requested, 0);
  atomic_init(&loop->stat_queued, 0);
  atomic_init(&loop->stat_active, 0);
  atomic_init(&loop->stat_completed, 0);
  atomic_init(&loop->stat_handles, 0);
  loop->max_active = share_of(engine->config.max_active_transfers > 0
                                  ? engine->config.max_active_transfers
                                  : 1024,
                              engine->loop_count, index);

  if (uv_loop_init(&loop->uv) != 0)
    return -1;
  if (cr__command_queue_init(&loop->commands) != 0)
    goto fail_loop;
  if (cr__events_init(loop) != 0)
    goto fail_queue;
  loop->multi = curl_multi_init();
  loop->share = curl_share_init();
  if (loop->multi == NULL || loop->share == NULL)
    goto fail_curl;
  curl_share_setopt(loop->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  curl_share_setopt(loop->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  per_loop_hosts = engine->config.max_host_connections;
  if (per_loop_hosts > 0) {
    per_loop_hosts = share_of(per_loop_hosts, engine->loop_count, index);
    curl_multi_setopt(loop->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)per_loop_hosts);
  }
  curl_multi_setopt(loop->multi, CURLMOPT_MAXCONNECTS,
                    (long)(loop->max_active > 64 ? loop->max_active : 64));

  uv_async_init(&loop->uv, &loop->async, on_async);
  cr__sockets_init(loop); /* the curl timer and the kick */
  uv_prepare_init(&loop->uv, &loop->flush);
  uv_timer_init(&loop->uv, &loop->sweep);
  uv_timer_init(&loop->uv, &loop->rate_timer);
  loop->async.data = loop->flush.data = loop->sweep.data = loop;
  loop->rate_timer.data = loop;
  uv_prepare_start(&loop->flush, cr__on_flush);
  /* The prepare handle alone must not keep the loop alive; async does. */
  uv_unref((uv_handle_t*)&loop->flush);

  if (cr__writer_start(&loop->writer, &loop->async, index,
                       loop->engine->config.write_delay_us) != 0)
    goto fail_handles;
  if (uv_thread_create(&loop->thread, loop_main, loop) != 0) {
    free(cr__writer_stop(&loop->writer)); /* no job was ever submitted */
    goto fail_handles;
  }
  return 0;

fail_handles:
  cr__close_handles(loop);
  uv_run(&loop->uv, UV_RUN_DEFAULT);
fail_curl:
  if (loop->multi)
    curl_multi_cleanup(loop->multi);
  if (loop->share)
    curl_share_cleanup(loop->share);
  free(loop->events);
  loop->events = NULL;
fail_queue:
  cr__command_queue_destroy(&loop->commands);
fail_loop:
  uv_loop_close(&loop->uv);
  return -1;
}

int cr__loop_post(cr_loop_t* loop, const cr_command_t* cmd) {
  if (cr__command_queue_push(&loop->commands, cmd) != 0)
    return -1;
  uv_async_send(&loop->async);
  return 0;
}

void cr__loop_request_stop(cr_loop_t* loop) {
  atomic_store(&loop->stop_requested, 1);
  uv_async_send(&loop->async);
}

void cr__loop_join(cr_loop_t* loop) {
  uv_thread_join(&loop->thread);
  cr__command_queue_destroy(&loop->commands);
  free(loop->command_scratch);
  free(loop->events);
  free(loop->sockets);
}
