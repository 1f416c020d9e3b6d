/*
 * One loop thread: a libuv loop driving one libcurl multi handle with
 * curl_multi_socket_action (the multi-uv pattern), the command queue, the
 * admission of queued transfers, the disk writer's completions, the idle
 * sweep, and the event batch handed to Swift once per loop iteration.
 *
 * Everything in this file runs on the loop thread, except cr_loop_post(),
 * cr_loop_request_stop() and cr_name_thread() (the writer thread names itself).
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

typedef struct cr_socket_s {
  uv_poll_t poll;
  curl_socket_t fd;
  int events;
  cr_loop_t* loop;
} cr_socket_t;

uint64_t cr_now_us(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
}

void cr_name_thread(const char* prefix, int index) {
  char name[16]; /* the kernel keeps 15 bytes */
  snprintf(name, sizeof(name), "%s-%d", prefix, index);
  pthread_setname_np(pthread_self(), name);
}

static void drive(cr_loop_t* loop, curl_socket_t fd, int flags);
static void admit(cr_loop_t* loop);
static void on_kick(uv_idle_t* idle);
static void finish_active(cr_transfer_t* t, CURLcode code, cr_error_t forced);

/* ---- The transfer table (id → transfer) ---- */

static size_t table_slot(const cr_transfer_table_t* table, uint64_t id) {
  return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 20) & (table->bucket_count - 1);
}

static int table_insert(cr_transfer_table_t* table, cr_transfer_t* t) {
  size_t slot;
  if (table->count + 1 > table->bucket_count) {
    size_t count = table->bucket_count ? table->bucket_count * 2 : 256;
    cr_transfer_t** buckets = calloc(count, sizeof(*buckets));
    cr_transfer_table_t grown = {buckets, count, table->count};
    if (buckets == NULL)
      return -1;
    for (size_t i = 0; i < table->bucket_count; i++) {
      cr_transfer_t* item = table->buckets[i];
      while (item) {
        cr_transfer_t* next = item->hash_next;
        size_t s = table_slot(&grown, item->id);
        item->hash_next = buckets[s];
        buckets[s] = item;
        item = next;
      }
    }
    free(table->buckets);
    *table = grown;
  }
  slot = table_slot(table, t->id);
  t->hash_next = table->buckets[slot];
  table->buckets[slot] = t;
  table->count++;
  return 0;
}

static cr_transfer_t* table_find(const cr_transfer_table_t* table, uint64_t id) {
  cr_transfer_t* t;
  if (table->bucket_count == 0)
    return NULL;
  for (t = table->buckets[table_slot(table, id)]; t; t = t->hash_next)
    if (t->id == id)
      return t;
  return NULL;
}

static void table_remove(cr_transfer_table_t* table, cr_transfer_t* t) {
  cr_transfer_t** link;
  if (table->bucket_count == 0)
    return;
  link = &table->buckets[table_slot(table, t->id)];
  while (*link && *link != t)
    link = &(*link)->hash_next;
  if (*link) {
    *link = t->hash_next;
    table->count--;
  }
  t->hash_next = NULL;
}

/* ---- Queues of waiting transfers (by priority) and of running ones ---- */

static void queue_append(cr_transfer_t** head, cr_transfer_t** tail,
                         cr_transfer_t* t) {
  t->queue_next = NULL;
  t->queue_prev = *tail;
  if (*tail)
    (*tail)->queue_next = t;
  else
    *head = t;
  *tail = t;
}

static void queue_unlink(cr_transfer_t** head, cr_transfer_t** tail,
                         cr_transfer_t* t) {
  if (t->queue_prev)
    t->queue_prev->queue_next = t->queue_next;
  else
    *head = t->queue_next;
  if (t->queue_next)
    t->queue_next->queue_prev = t->queue_prev;
  else if (tail)
    *tail = t->queue_prev;
  t->queue_prev = t->queue_next = NULL;
}

static void parked_push(cr_loop_t* loop, cr_transfer_t* t) {
  t->queue_prev = NULL;
  t->queue_next = loop->parked;
  if (loop->parked)
    loop->parked->queue_prev = t;
  loop->parked = t;
}

static void active_push(cr_loop_t* loop, cr_transfer_t* t) {
  t->active_prev = NULL;
  t->active_next = loop->active_head;
  if (loop->active_head)
    loop->active_head->active_prev = t;
  loop->active_head = t;
}

static void active_unlink(cr_loop_t* loop, cr_transfer_t* t) {
  if (t->active_prev)
    t->active_prev->active_next = t->active_next;
  else
    loop->active_head = t->active_next;
  if (t->active_next)
    t->active_next->active_prev = t->active_prev;
  t->active_prev = t->active_next = NULL;
}

/* ---- The event batch ---- */

static cr_event_t* push_event(cr_loop_t* loop, cr_transfer_t* t,
                              cr_event_kind_t kind) {
  cr_event_t* e;
  if (loop->event_count == loop->event_capacity) {
    size_t capacity = loop->event_capacity ? loop->event_capacity * 2 : 256;
    cr_event_t* events = realloc(loop->events, capacity * sizeof(*events));
    if (events == NULL)
      return NULL;
    loop->events = events;
    loop->event_capacity = capacity;
  }
  e = &loop->events[loop->event_count++];
  memset(e, 0, sizeof(*e));
  e->kind = kind;
  e->transfer = t->id;
  e->tag = t->tag;
  e->received = t->received;
  e->expected_to_receive = t->expected;
  e->sent = t->sent;
  e->expected_to_send = t->expected_to_send;
  return e;
}

static void free_event_payload(cr_event_t* e) {
  free(e->headers);
  free(e->data);
  free(e->message);
}

static void emit_data(cr_loop_t* loop, cr_transfer_t* t) {
  cr_event_t* e;
  if (t->memory_length == 0)
    return;
  e = push_event(loop, t, CR_EVENT_DATA);
  if (e == NULL)
    return; /* keep accumulating; the next flush tries again */
  e->data = t->memory;
  e->data_length = t->memory_length;
  t->memory = NULL;
  t->memory_length = t->memory_capacity = 0;
}

static void emit_response(cr_transfer_t* t, int may_hold) {
  cr_loop_t* loop = t->loop;
  cr_event_t* e;
  int hold_redirect;
  if (t->response_emitted || !t->response_seen)
    return;
  t->response_emitted = 1;
  hold_redirect = (t->flags & CR_FLAG_HOLD_REDIRECT_AND_AUTH) &&
                  ((t->status / 100 == 3 && t->has_location) ||
                   t->status == 401 || t->status == 407);
  t->held = may_hold && ((t->flags & CR_FLAG_ASK_RESPONSE) || hold_redirect);
  e = push_event(loop, t, CR_EVENT_RESPONSE);
  if (e == NULL)
    return;
  e->status = t->status;
  e->held = t->held;
  e->resume_offset = t->discard_body ? t->resume_offset : t->body_base;
  e->headers = t->header_block;
  e->headers_length = t->header_length;
  t->header_block = NULL;
  t->header_length = t->header_capacity = 0;
}

void cr_loop_emit_response(cr_transfer_t* t) { emit_response(t, 1); }

void cr_loop_mark_dirty(cr_transfer_t* t) {
  t->progress_dirty = 1;
  if (!t->in_dirty_list) {
    t->in_dirty_list = 1;
    t->dirty_next = t->loop->dirty_head;
    t->loop->dirty_head = t;
  }
}

/* The last event of a transfer. Frees it unless the dirty list still
 * points at it, in which case the flush frees it. */
static void complete(cr_transfer_t* t) {
  cr_loop_t* loop = t->loop;
  cr_event_t* e;

  emit_response(t, 0);
  emit_data(loop, t);
  e = push_event(loop, t, CR_EVENT_COMPLETE);
  if (e) {
    int kept = t->sink == CR_SINK_FILE && t->response_seen && !t->discard_body;
    e->status = t->status;
    e->error = t->error;
    e->curl_code = t->curl_code;
    e->os_error = t->os_error;
    e->message = t->message;
    t->message = NULL;
    e->resume_offset = kept ? t->body_base : t->resume_offset;
    e->bytes_on_disk = t->sink != CR_SINK_FILE ? 0
                       : kept ? t->body_base + t->bytes_flushed
                              : t->resume_offset;
    if (t->metrics)
      e->metrics = *t->metrics;
  }
  t->state = CR_TRANSFER_DONE;
  table_remove(&loop->transfers, t);
  atomic_fetch_add(&loop->stat_completed, 1);
  if (t->sink_fd >= 0) {
    close(t->sink_fd);
    t->sink_fd = -1;
  }
  if (t->body_fd >= 0) {
    close(t->body_fd);
    t->body_fd = -1;
  }
  cr_transfer_release_source(t);
  if (!t->in_dirty_list)
    cr_transfer_free(t);
}

/* ---- Disk writes ---- */

void cr_loop_queue_chunk(cr_transfer_t* t) {
  cr_write_job_t* job;
  if (t->chunk == NULL || t->chunk_length == 0)
    return;
  job = malloc(sizeof(*job));
  if (job == NULL) {
    t->write_errno = ENOMEM;
    return;
  }
  job->transfer = t;
  job->fd = t->sink_fd;
  job->offset = t->body_base + t->bytes_queued;
  job->buffer = t->chunk;
  job->length = t->chunk_length;
  job->result_errno = 0;
  t->bytes_queued += (int64_t)t->chunk_length;
  t->chunk = NULL;
  t->chunk_length = 0;
  t->pending_writes++;
  t->loop->pending_writes++;
  cr_writer_submit(&t->loop->writer, job);
}

static void apply_pause(cr_transfer_t* t) {
  int want;
  if (t->state != CR_TRANSFER_ACTIVE)
    return;
  want = t->user_paused || t->disk_paused || t->held;
  if (!want && t->curl_paused) {
    t->curl_paused = 0;
    t->last_activity_ms = uv_now(&t->loop->uv);
    /* May call on_write at once with the bytes curl kept. */
    curl_easy_pause(t->easy, CURLPAUSE_CONT);
    uv_idle_start(&t->loop->kick, on_kick);
  } else if (want && !t->curl_paused && t->user_paused) {
    t->curl_paused = 1;
    curl_easy_pause(t->easy, CURLPAUSE_ALL);
  }
}

/* Lets transfers paused for the disk receive again, while the loop's
 * writer has room: a transfer once half its own chunks are written. */
static void resume_disk_paused(cr_loop_t* loop) {
  cr_transfer_t* t = loop->active_head;
  while (t && loop->pending_writes < CR_LOOP_PENDING_WRITES) {
    cr_transfer_t* next = t->active_next;
    if (t->disk_paused && t->pending_writes < CR_MAX_PENDING_WRITES / 2) {
      t->disk_paused = 0;
      apply_pause(t); /* curl may deliver (and queue chunks) at once */
    }
    t = next;
  }
}

static void process_write_results(cr_loop_t* loop) {
  cr_write_job_t* job = cr_writer_take_done(&loop->writer);
  /* Every wake-up comes here (commands too); with no finished write, no
   * chunk budget came free and no paused transfer is due to resume. */
  if (job == NULL)
    return;
  while (job) {
    cr_write_job_t* next = job->next;
    cr_transfer_t* t = job->transfer;
    int result = job->result_errno;
    size_t length = job->length;
    free(job->buffer);
    free(job);
    job = next;

    t->pending_writes--;
    loop->pending_writes--;
    if (result == 0) {
      t->bytes_flushed += (int64_t)length;
    } else if (t->write_errno == 0) {
      t->write_errno = result;
      t->os_error = result;
      if (t->error == CR_OK) {
        t->error = result == ENOSPC ? CR_ERR_NO_SPACE : CR_ERR_FILE_WRITE;
        free(t->message);
        t->message = cr_strdup(strerror(result));
      }
      if (t->state == CR_TRANSFER_ACTIVE) {
        /* May complete (and free) t when nothing else is pending. */
        finish_active(t, CURLE_OK, t->error);
        continue;
      }
    }
    if (t->state == CR_TRANSFER_FINISHING && t->pending_writes == 0)
      complete(t);
  }
  resume_disk_paused(loop);
}

/* ---- Finishing a running transfer ---- */

static void release_easy(cr_loop_t* loop, CURL* easy) {
  curl_easy_reset(easy);
  if (loop->easy_pool_count == loop->easy_pool_capacity) {
    size_t capacity = loop->easy_pool_capacity ? loop->easy_pool_capacity * 2 : 32;
    CURL** pool;
    if (capacity > 1024 ||
        (pool = realloc(loop->easy_pool, capacity * sizeof(*pool))) == NULL) {
      curl_easy_cleanup(easy);
      return;
    }
    loop->easy_pool = pool;
    loop->easy_pool_capacity = capacity;
  }
  loop->easy_pool[loop->easy_pool_count++] = easy;
}

/* Takes t out of curl. The outcome is `forced` when set, else what the
 * callbacks recorded, else what curl says, else the length check. */
static void finish_active(cr_transfer_t* t, CURLcode code, cr_error_t forced) {
  cr_loop_t* loop = t->loop;

  if (forced != CR_OK) {
    if (t->error != forced) {
      free(t->message);
      t->message = NULL;
    }
    t->error = forced;
  } else if (t->error == CR_OK) {
    t->error = cr_error_from_curl(code, 1);
    if (t->error == CR_OK && !(t->flags & CR_FLAG_NO_BODY) &&
        t->status != 204 && t->status != 304) {
      /* A decoded body is checked by its wire length. */
      int64_t got = t->expected >= 0 ? t->received : cr_transfer_wire_bytes(t);
      int64_t announced = t->expected >= 0 ? t->expected : t->content_length;
      if (announced >= 0 && got >= 0 && got < announced) {
        t->error = CR_ERR_SHORT_BODY;
        t->message = cr_strdup("the body ended before its announced length");
      }
    }
  }
  if (code != CURLE_OK)
    t->curl_code = (int)code;
  if (t->error != CR_OK && t->message == NULL) {
    const char* text = t->error_buffer && t->error_buffer[0]
                           ? t->error_buffer
                           : (code != CURLE_OK ? curl_easy_strerror(code) : NULL);
    t->message = cr_strdup(text);
  }
  cr_transfer_collect_metrics(t);
  curl_multi_remove_handle(loop->multi, t->easy);
  release_easy(loop, t->easy);
  t->easy = NULL;
  active_unlink(loop, t);
  loop->active_count--;
  atomic_fetch_sub(&loop->stat_active, 1);

  if (t->held && t->error == CR_OK) {
    /* The whole response arrived while held (no body to pause on): the
     * end waits for the decision, as a body would have. Nothing was
     * written, so no disk write can be pending. */
    t->state = CR_TRANSFER_DECIDING;
  } else if (t->sink == CR_SINK_FILE) {
    cr_loop_queue_chunk(t);
    t->state = CR_TRANSFER_FINISHING;
    if (t->pending_writes == 0)
      complete(t);
  } else {
    complete(t);
  }
}

/* Ends a transfer that waited out of curl for the decision on its held
 * response: with the decision's outcome, or cancelled. */
static void end_deciding(cr_transfer_t* t, cr_error_t outcome) {
  t->held = 0;
  if (outcome != CR_OK) {
    t->error = outcome;
    free(t->message);
    t->message = NULL;
  }
  complete(t);
}

static void drain(cr_loop_t* loop) {
  CURLMsg* message;
  int left;
  while ((message = curl_multi_info_read(loop->multi, &left))) {
    cr_transfer_t* t = NULL;
    CURLcode code;
    if (message->msg != CURLMSG_DONE)
      continue;
    code = message->data.result;
    curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char**)&t);
    if (t && t->state == CR_TRANSFER_ACTIVE)
      finish_active(t, code, CR_OK);
  }
  admit(loop);
}

/* ---- Admission ---- */

static CURL* take_easy(cr_loop_t* loop) {
  if (loop->easy_pool_count > 0)
    return loop->easy_pool[--loop->easy_pool_count];
  return curl_easy_init();
}

static void on_sweep(uv_timer_t* timer);

static void admit(cr_loop_t* loop) {
  while (!loop->stopping && loop->active_count < loop->max_active) {
    cr_transfer_t* t = NULL;
    CURL* easy;
    cr_error_t error;
    for (int level = CR_PRIORITY_LEVELS - 1; level >= 0 && !t; level--) {
      t = loop->queue_head[level];
      if (t)
        queue_unlink(&loop->queue_head[level], &loop->queue_tail[level], t);
    }
    if (t == NULL)
      return;
    atomic_fetch_sub(&loop->stat_queued, 1);
    if (t->total_timeout_ms > 0 &&
        (int64_t)(cr_now_us() - t->submitted_us) / 1000 >= t->total_timeout_ms) {
      t->error = CR_ERR_TIMED_OUT;
      t->message = cr_strdup("timed out while waiting for a connection slot");
      complete(t);
      continue;
    }
    easy = take_easy(loop);
    if (easy == NULL) {
      t->error = CR_ERR_INTERNAL;
      complete(t);
      continue;
    }
    error = cr_transfer_setup_easy(t, easy);
    t->admitted_us = cr_now_us();
    t->last_activity_ms = uv_now(&loop->uv);
    if (error == CR_OK && curl_multi_add_handle(loop->multi, easy) != CURLM_OK)
      error = CR_ERR_INTERNAL;
    if (error != CR_OK) {
      release_easy(loop, easy);
      t->easy = NULL;
      t->error = error;
      complete(t);
      continue;
    }
    t->state = CR_TRANSFER_ACTIVE;
    active_push(loop, t);
    loop->active_count++;
    atomic_fetch_add(&loop->stat_active, 1);
    if (t->idle_timeout_ms > 0 && !loop->sweeping) {
      loop->sweeping = 1;
      uv_timer_start(&loop->sweep, on_sweep, CR_SWEEP_INTERVAL_MS,
                     CR_SWEEP_INTERVAL_MS);
    }
  }
}

static void on_sweep(uv_timer_t* timer) {
  cr_loop_t* loop = timer->data;
  uint64_t now = uv_now(&loop->uv);
  int any = 0;
  cr_transfer_t* t = loop->active_head;
  while (t) {
    cr_transfer_t* next = t->active_next;
    if (t->idle_timeout_ms > 0) {
      any = 1;
      if (!t->user_paused && !t->held && !t->disk_paused &&
          now - t->last_activity_ms > (uint64_t)t->idle_timeout_ms) {
        t->error = CR_ERR_TIMED_OUT;
        free(t->message);
        t->message = cr_strdup("no data for longer than the idle timeout");
        finish_active(t, CURLE_OK, CR_OK);
      }
    }
    t = next;
  }
  if (!any) {
    loop->sweeping = 0;
    uv_timer_stop(&loop->sweep);
  }
  admit(loop);
}

/* ---- curl ↔ libuv ---- */

static cr_socket_t* socket_find(cr_loop_t* loop, curl_socket_t fd) {
  if (fd < 0 || (size_t)fd >= loop->socket_capacity)
    return NULL;
  return loop->sockets[fd];
}

static int socket_remember(cr_loop_t* loop, cr_socket_t* ctx) {
  if ((size_t)ctx->fd >= loop->socket_capacity) {
    size_t capacity = loop->socket_capacity ? loop->socket_capacity : 1024;
    cr_socket_t** sockets;
    while (capacity <= (size_t)ctx->fd)
      capacity *= 2;
    sockets = realloc(loop->sockets, capacity * sizeof(*sockets));
    if (sockets == NULL)
      return -1;
    memset(sockets + loop->socket_capacity, 0,
           (capacity - loop->socket_capacity) * sizeof(*sockets));
    loop->sockets = sockets;
    loop->socket_capacity = capacity;
  }
  loop->sockets[ctx->fd] = ctx;
  return 0;
}

static void on_socket_closed(uv_handle_t* handle) {
  cr_socket_t* ctx = handle->data;
  atomic_fetch_sub(&ctx->loop->stat_handles, 1);
  free(ctx);
}

static void socket_forget(cr_loop_t* loop, cr_socket_t* ctx) {
  loop->sockets[ctx->fd] = NULL;
  uv_poll_stop(&ctx->poll);
  uv_close((uv_handle_t*)&ctx->poll, on_socket_closed);
}

int cr_loop_close_socket(void* context, curl_socket_t fd) {
  cr_loop_t* loop = context;
  cr_socket_t* ctx = socket_find(loop, fd);
  if (ctx)
    socket_forget(loop, ctx);
  return close(fd);
}

static void on_poll(uv_poll_t* handle, int status, int events) {
  cr_socket_t* ctx = handle->data;
  cr_loop_t* loop = ctx->loop;
  curl_socket_t fd = ctx->fd;
  int flags = 0;
  if (status < 0) {
    flags = CURL_CSELECT_ERR;
  } else {
    if (events & UV_READABLE)
      flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
      flags |= CURL_CSELECT_OUT;
  }
  drive(loop, fd, flags);
  /* libuv stops a poll that saw POLLERR; curl will not announce the socket
   * again if it still wants it, so restart the watch ourselves. */
  if (status < 0) {
    cr_socket_t* still = socket_find(loop, fd);
    if (still == ctx && ctx->events)
      uv_poll_start(&ctx->poll, ctx->events, on_poll);
  }
}

static int on_curl_socket(CURL* easy, curl_socket_t fd, int what, void* user,
                          void* socket_context) {
  cr_loop_t* loop = user;
  cr_socket_t* ctx = socket_find(loop, fd);
  int events = 0;

  if (what == CURL_POLL_REMOVE) {
    /* Stop watching but keep the handle: curl announces the socket again
     * when a paused transfer resumes (downloads waiting for the disk do so
     * many times a second) or a cached connection is reused, and a new
     * handle would cost an ioctl and epoll_ctl calls each time. The handle
     * is closed with the socket (cr_loop_close_socket). */
    if (ctx && ctx->events != 0) {
      ctx->events = 0;
      uv_poll_stop(&ctx->poll);
    }
    return 0;
  }
  if (what & CURL_POLL_IN)
    events |= UV_READABLE;
  if (what & CURL_POLL_OUT)
    events |= UV_WRITABLE;
  if (ctx == NULL) {
    int r;
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
      return -1;
    ctx->fd = fd;
    ctx->loop = loop;
    ctx->events = -1;
    r = uv_poll_init_socket(&loop->uv, &ctx->poll, fd);
    if (r != 0 || socket_remember(loop, ctx) != 0) {
      if (r == 0) {
        ctx->poll.data = ctx;
        atomic_fetch_add(&loop->stat_handles, 1);
        uv_close((uv_handle_t*)&ctx->poll, on_socket_closed);
      } else {
        free(ctx);
      }
      return -1;
    }
    ctx->poll.data = ctx;
    atomic_fetch_add(&loop->stat_handles, 1);
  }
  if (events != ctx->events) {
    ctx->events = events;
    if (events)
      uv_poll_start(&ctx->poll, events, on_poll);
    else
      uv_poll_stop(&ctx->poll);
  }
  return 0;
}

static void on_curl_timer_fired(uv_timer_t* timer) {
  drive(timer->data, CURL_SOCKET_TIMEOUT, 0);
}

static void on_kick(uv_idle_t* idle) {
  uv_idle_stop(idle);
  drive(idle->data, CURL_SOCKET_TIMEOUT, 0);
}

static int on_curl_timer(CURLM* multi, long timeout_ms, void* user) {
  cr_loop_t* loop = user;
  if (timeout_ms < 0) {
    uv_timer_stop(&loop->curl_timer);
  } else if (timeout_ms == 0) {
    /* Not a 0 ms timer: libuv 1.44 would run it again in the same pass
     * when re-armed from a timer callback, starving I/O. */
    uv_timer_stop(&loop->curl_timer);
    uv_idle_start(&loop->kick, on_kick);
  } else {
    uv_timer_start(&loop->curl_timer, on_curl_timer_fired, (uint64_t)timeout_ms, 0);
  }
  return 0;
}

static void drive(cr_loop_t* loop, curl_socket_t fd, int flags) {
  int running;
  CURLMcode rc;
  if (loop->stopping)
    return;
  rc = curl_multi_socket_action(loop->multi, fd, flags, &running);
  if (rc != CURLM_OK) {
    /* Every transfer's state is undefined now: fail them all. */
    while (loop->active_head)
      finish_active(loop->active_head, CURLE_OK, CR_ERR_INTERNAL);
  }
  drain(loop);
}

/* ---- Commands ---- */

static void apply_command(cr_loop_t* loop, cr_command_t* cmd) {
  cr_transfer_t* t;
  if (cmd->kind == CR_CMD_SUBMIT) {
    t = cmd->transfer;
    t->loop = loop;
    t->state = CR_TRANSFER_QUEUED;
    if (table_insert(&loop->transfers, t) != 0) {
      t->error = CR_ERR_INTERNAL;
      t->state = CR_TRANSFER_DONE;
      atomic_fetch_sub(&loop->stat_queued, 1);
      /* Not in the table: complete() tolerates that. */
      complete(t);
      return;
    }
    queue_append(&loop->queue_head[t->priority_level],
                 &loop->queue_tail[t->priority_level], t);
    return;
  }
  t = table_find(&loop->transfers, cmd->transfer_id);
  if (cmd->kind == CR_CMD_DECIDE &&
      (t == NULL || !t->held ||
       (t->state != CR_TRANSFER_ACTIVE && t->state != CR_TRANSFER_DECIDING))) {
    if (cmd->fd >= 0)
      close(cmd->fd);
    return;
  }
  if (t == NULL)
    return;
  switch (cmd->kind) {
    case CR_CMD_CANCEL:
      if (t->state == CR_TRANSFER_QUEUED) {
        if (t->user_paused)
          queue_unlink(&loop->parked, NULL, t);
        else
          queue_unlink(&loop->queue_head[t->priority_level],
                       &loop->queue_tail[t->priority_level], t);
        atomic_fetch_sub(&loop->stat_queued, 1);
        t->error = CR_ERR_CANCELLED;
        complete(t);
      } else if (t->state == CR_TRANSFER_ACTIVE) {
        finish_active(t, CURLE_OK, CR_ERR_CANCELLED);
      } else if (t->state == CR_TRANSFER_DECIDING) {
        end_deciding(t, CR_ERR_CANCELLED);
      }
      break;
    case CR_CMD_PAUSE:
      if (t->user_paused)
        break;
      t->user_paused = 1;
      if (t->state == CR_TRANSFER_QUEUED) {
        queue_unlink(&loop->queue_head[t->priority_level],
                     &loop->queue_tail[t->priority_level], t);
        parked_push(loop, t);
      } else {
        apply_pause(t);
      }
      break;
    case CR_CMD_RESUME:
      if (!t->user_paused)
        break;
      t->user_paused = 0;
      if (t->state == CR_TRANSFER_QUEUED) {
        queue_unlink(&loop->parked, NULL, t);
        queue_append(&loop->queue_head[t->priority_level],
                     &loop->queue_tail[t->priority_level], t);
      } else {
        apply_pause(t);
      }
      break;
    case CR_CMD_DECIDE:
      if (cmd->decision == CR_DECIDE_CANCEL) {
        if (t->state == CR_TRANSFER_DECIDING)
          end_deciding(t, CR_ERR_CANCELLED);
        else
          finish_active(t, CURLE_OK, CR_ERR_CANCELLED);
        break;
      }
      if (cmd->decision == CR_DECIDE_TO_FILE) {
        if (t->sink_fd >= 0)
          close(t->sink_fd);
        t->sink = CR_SINK_FILE;
        t->sink_fd = cmd->fd;
      }
      t->held = 0;
      if (t->state == CR_TRANSFER_DECIDING)
        end_deciding(t, CR_OK);
      else
        apply_pause(t);
      break;
    default:
      break;
  }
}

static void stop_loop(cr_loop_t* loop);

static void on_async(uv_async_t* async) {
  cr_loop_t* loop = async->data;
  size_t count;

  process_write_results(loop);
  count = cr_command_queue_take(&loop->commands, &loop->command_scratch,
                                &loop->command_scratch_capacity);
  if (atomic_load(&loop->stop_requested)) {
    /* Nothing is applied any more: free what the commands carry. */
    for (size_t i = 0; i < count; i++) {
      if (loop->command_scratch[i].kind == CR_CMD_SUBMIT)
        cr_transfer_free(loop->command_scratch[i].transfer);
      else if (loop->command_scratch[i].fd >= 0)
        close(loop->command_scratch[i].fd);
    }
    stop_loop(loop);
    return;
  }
  for (size_t i = 0; i < count; i++)
    apply_command(loop, &loop->command_scratch[i]);
  admit(loop);
}

/* ---- Handing events over, once per loop iteration ----
 * A prepare handle runs right before the loop polls (and may block), so
 * whatever the timers, the idle kick, the async commands and the previous
 * pass's I/O produced is handed over before any wait. */

static void on_flush(uv_prepare_t* prepare) {
  cr_loop_t* loop = prepare->data;
  cr_transfer_t* t = loop->dirty_head;
  loop->dirty_head = NULL;
  while (t) {
    cr_transfer_t* next = t->dirty_next;
    t->in_dirty_list = 0;
    t->dirty_next = NULL;
    if (t->state == CR_TRANSFER_DONE) {
      cr_transfer_free(t);
    } else if (t->progress_dirty) {
      t->progress_dirty = 0;
      emit_data(loop, t);
      push_event(loop, t, CR_EVENT_PROGRESS);
    }
    t = next;
  }
  if (loop->event_count == 0)
    return;
  if (loop->stopping || loop->engine->config.on_events == NULL) {
    for (size_t i = 0; i < loop->event_count; i++)
      free_event_payload(&loop->events[i]);
  } else {
    loop->engine->config.on_events(loop->engine->config.context, loop->events,
                                   loop->event_count);
  }
  loop->event_count = 0;
}

/* ---- Start and stop ---- */

static void close_any(uv_handle_t* handle, void* arg) {
  if (!uv_is_closing(handle)) {
    if (handle->type == UV_POLL) {
      cr_socket_t* ctx = handle->data;
      ctx->loop->sockets[ctx->fd] = NULL;
      uv_close(handle, on_socket_closed);
    } else {
      uv_close(handle, NULL);
    }
  }
}

static void stop_loop(cr_loop_t* loop) {
  cr_write_job_t* job;
  loop->stopping = 1;

  /* Out of curl first, then the writer drains, then free everything. */
  while (loop->active_head) {
    cr_transfer_t* t = loop->active_head;
    curl_multi_remove_handle(loop->multi, t->easy);
    curl_easy_cleanup(t->easy);
    t->easy = NULL;
    active_unlink(loop, t);
    t->state = CR_TRANSFER_FINISHING;
  }
  job = cr_writer_stop(&loop->writer);
  while (job) {
    cr_write_job_t* next = job->next;
    free(job->buffer);
    free(job);
    job = next;
  }
  for (size_t i = 0; i < loop->transfers.bucket_count; i++) {
    cr_transfer_t* t = loop->transfers.buckets[i];
    while (t) {
      cr_transfer_t* next = t->hash_next;
      if (!t->in_dirty_list)
        cr_transfer_free(t);
      else
        t->state = CR_TRANSFER_DONE;
      t = next;
    }
  }
  free(loop->transfers.buckets);
  memset(&loop->transfers, 0, sizeof(loop->transfers));
  while (loop->dirty_head) {
    cr_transfer_t* next = loop->dirty_head->dirty_next;
    cr_transfer_free(loop->dirty_head);
    loop->dirty_head = next;
  }
  for (size_t i = 0; i < loop->event_count; i++)
    free_event_payload(&loop->events[i]);
  loop->event_count = 0;

  /* curl_multi_cleanup may call the socket and close-socket callbacks:
   * the loop and the socket contexts still exist here. */
  curl_multi_cleanup(loop->multi);
  loop->multi = NULL;
  for (size_t i = 0; i < loop->easy_pool_count; i++)
    curl_easy_cleanup(loop->easy_pool[i]);
  loop->easy_pool_count = 0;
  curl_share_cleanup(loop->share);
  loop->share = NULL;

  uv_walk(&loop->uv, close_any, NULL);
}

static void loop_main(void* arg) {
  cr_loop_t* loop = arg;
  cr_name_thread("courier-loop", loop->index);
  uv_run(&loop->uv, UV_RUN_DEFAULT);
  if (uv_loop_close(&loop->uv) == UV_EBUSY) {
    atomic_fetch_add(&cr_leaked_loops, 1);
    uv_walk(&loop->uv, close_any, NULL);
    uv_run(&loop->uv, UV_RUN_DEFAULT);
    uv_loop_close(&loop->uv);
  }
}

/* Loop `index`'s share of a limit split over `loops` loops; the shares add
 * up to `limit` exactly. */
static int share_of(int limit, int loops, int index) {
  return limit / loops + (index < limit % loops ? 1 : 0);
}

int cr_loop_start(cr_loop_t* loop, struct cr_engine_s* engine, int index) {
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
  if (cr_command_queue_init(&loop->commands) != 0)
    goto fail_loop;
  loop->multi = curl_multi_init();
  loop->share = curl_share_init();
  if (loop->multi == NULL || loop->share == NULL)
    goto fail_curl;
  curl_share_setopt(loop->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  curl_share_setopt(loop->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_multi_setopt(loop->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
  curl_multi_setopt(loop->multi, CURLMOPT_SOCKETDATA, loop);
  curl_multi_setopt(loop->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
  curl_multi_setopt(loop->multi, CURLMOPT_TIMERDATA, loop);
  per_loop_hosts = engine->config.max_host_connections;
  if (per_loop_hosts > 0) {
    per_loop_hosts = share_of(per_loop_hosts, engine->loop_count, index);
    curl_multi_setopt(loop->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)per_loop_hosts);
  }
  curl_multi_setopt(loop->multi, CURLMOPT_MAXCONNECTS,
                    (long)(loop->max_active > 64 ? loop->max_active : 64));

  uv_async_init(&loop->uv, &loop->async, on_async);
  uv_timer_init(&loop->uv, &loop->curl_timer);
  uv_idle_init(&loop->uv, &loop->kick);
  uv_prepare_init(&loop->uv, &loop->flush);
  uv_timer_init(&loop->uv, &loop->sweep);
  loop->async.data = loop->curl_timer.data = loop->kick.data = loop;
  loop->flush.data = loop->sweep.data = loop;
  uv_prepare_start(&loop->flush, on_flush);
  /* The prepare handle alone must not keep the loop alive; async does. */
  uv_unref((uv_handle_t*)&loop->flush);

  if (cr_writer_start(&loop->writer, &loop->async, index) != 0)
    goto fail_handles;
  if (uv_thread_create(&loop->thread, loop_main, loop) != 0) {
    free(cr_writer_stop(&loop->writer)); /* no job was ever submitted */
    goto fail_handles;
  }
  return 0;

fail_handles:
  uv_walk(&loop->uv, close_any, NULL);
  uv_run(&loop->uv, UV_RUN_DEFAULT);
fail_curl:
  if (loop->multi)
    curl_multi_cleanup(loop->multi);
  if (loop->share)
    curl_share_cleanup(loop->share);
  cr_command_queue_destroy(&loop->commands);
fail_loop:
  uv_loop_close(&loop->uv);
  return -1;
}

int cr_loop_post(cr_loop_t* loop, const cr_command_t* cmd) {
  if (cr_command_queue_push(&loop->commands, cmd) != 0)
    return -1;
  uv_async_send(&loop->async);
  return 0;
}

void cr_loop_request_stop(cr_loop_t* loop) {
  atomic_store(&loop->stop_requested, 1);
  uv_async_send(&loop->async);
}

void cr_loop_join(cr_loop_t* loop) {
  uv_thread_join(&loop->thread);
  cr_command_queue_destroy(&loop->commands);
  free(loop->command_scratch);
  free(loop->events);
  free(loop->easy_pool);
  free(loop->sockets);
}
