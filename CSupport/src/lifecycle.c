/*
 * The transfer state machine: a transfer's way from the loop's queue into
 * curl and out again (admission, the idle sweep, pause and resume, the
 * decision on a held response, cancel, finishing, disk write results,
 * completion). Every write of t->state is here, through set_state(), which
 * checks each change against the table in internal.h (debug builds) and
 * traces it to stderr when COURIER_ENGINE_TRACE=1.
 *
 * Loop thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static void finish_active(cr_transfer_t* t, CURLcode code, cr_error_t forced);
static void finish_writing(cr_transfer_t* t);

/* ---- States ---- */

static const char* state_name(cr_transfer_state_t state) {
  switch (state) {
    case CR_TRANSFER_QUEUED: return "QUEUED";
    case CR_TRANSFER_ACTIVE: return "ACTIVE";
    case CR_TRANSFER_FINISHING: return "FINISHING";
    case CR_TRANSFER_DECIDING: return "DECIDING";
    case CR_TRANSFER_DONE: return "DONE";
  }
  return "?";
}

static void trace(const cr_transfer_t* t, const char* from, const char* to,
                  const char* file, int line) {
  const char* base = strrchr(file, '/');
  fprintf(stderr, "courier-engine: transfer %llu: %s -> %s at %s:%d\n",
          (unsigned long long)t->id, from, to, base ? base + 1 : file, line);
}

#if CR_DEBUG_CHECKS
/* The table in internal.h. */
static int legal(cr_transfer_state_t from, cr_transfer_state_t to) {
  switch (from) {
    case CR_TRANSFER_QUEUED:
      return to == CR_TRANSFER_ACTIVE || to == CR_TRANSFER_DONE;
    case CR_TRANSFER_ACTIVE:
      return to == CR_TRANSFER_FINISHING || to == CR_TRANSFER_DECIDING ||
             to == CR_TRANSFER_DONE;
    case CR_TRANSFER_FINISHING:
    case CR_TRANSFER_DECIDING:
      return to == CR_TRANSFER_DONE;
    case CR_TRANSFER_DONE:
      return 0;
  }
  return 0;
}

/* What holds of a transfer that has just entered its state. */
static void check(const cr_transfer_t* t) {
  CR_ASSERT(t->magic == CR_TRANSFER_MAGIC);
  CR_ASSERT(!t->held || t->response_emitted);
  switch (t->state) {
    case CR_TRANSFER_QUEUED:
      CR_ASSERT(t->easy == NULL && cr__pending_writes(t) == 0 && !t->response_emitted);
      break;
    case CR_TRANSFER_ACTIVE:
      CR_ASSERT(t->easy != NULL && t->run->pending_writes == 0 && !t->held);
      break;
    case CR_TRANSFER_FINISHING:
      CR_ASSERT(t->easy == NULL);
      break;
    case CR_TRANSFER_DECIDING:
      CR_ASSERT(t->easy == NULL && t->held && t->error == CR_OK);
      CR_ASSERT(t->run->pending_writes == 0 && t->run->chunk_length == 0 &&
                t->run->memory_length == 0);
      break;
    case CR_TRANSFER_DONE:
      CR_ASSERT(t->easy == NULL);
      CR_ASSERT(cr__pending_writes(t) == 0 || t->loop->stopping);
      CR_ASSERT(t->hash_next == NULL && t->list_next == NULL &&
                t->list_prev == NULL);
      break;
  }
}
#endif

#define set_state(t, to) set_state_at((t), (to), __FILE__, __LINE__)

static void set_state_at(cr_transfer_t* t, cr_transfer_state_t to,
                         const char* file, int line) {
  if (cr__trace)
    trace(t, state_name(t->state), state_name(to), file, line);
#if CR_DEBUG_CHECKS
  CR_ASSERT(legal(t->state, to));
#endif
  t->state = to;
#if CR_DEBUG_CHECKS
  check(t);
#endif
}

/* ---- Completion ---- */

/* The last event of a transfer. Frees it unless the dirty list still
 * points at it, in which case the flush frees it. A macro, so that the
 * trace names the line that completed the transfer. */
#define complete(t) complete_at((t), __FILE__, __LINE__)

static void complete_at(cr_transfer_t* t, const char* file, int line) {
  cr_loop_t* loop = t->loop;

  /* A failure always says what failed (NULL only when even this copy
   * finds no memory). */
  if (t->error != CR_OK && t->message == NULL)
    t->message = cr__strdup(cr__error_text(t->error));
  cr__emit_last(t);
  cr__table_remove(&loop->transfers, t);
  CR_ASSERT(cr__table_find(&loop->transfers, t->id) == NULL);
  set_state_at(t, CR_TRANSFER_DONE, file, line);
  atomic_fetch_add(&loop->stat_completed, 1);
  if (t->sink_fd >= 0) {
    close(t->sink_fd);
    t->sink_fd = -1;
  }
  if (t->body_fd >= 0) {
    close(t->body_fd);
    t->body_fd = -1;
  }
  cr__transfer_release_borrowed(t);
  if (!t->in_dirty_list)
    cr__transfer_free(t);
}

/* ---- Disk writes ---- */

void cr__queue_chunk(cr_transfer_t* t) {
  cr_write_job_t* job;
  if (t->run->chunk == NULL || t->run->chunk_length == 0)
    return;
  job = cr__malloc(sizeof(*job));
  if (job == NULL) {
    /* The chunk stays unwritten: the transfer fails, also when this was
     * its last chunk (it must not complete with a short file). */
    t->run->write_errno = ENOMEM;
    if (t->error == CR_OK) {
      t->error = CR_ERR_INTERNAL;
      free(t->message);
      t->message = cr__strdup("out of memory");
    }
    return;
  }
  job->transfer = t;
  job->fd = t->sink_fd;
  job->offset = t->run->body_base + t->run->bytes_queued;
  job->buffer = t->run->chunk;
  job->length = t->run->chunk_length;
  job->result_errno = 0;
  t->run->bytes_queued += (int64_t)t->run->chunk_length;
  t->run->chunk = NULL;
  t->run->chunk_length = 0;
  t->run->pending_writes++;
  t->loop->pending_writes++;
  cr__writer_submit(&t->loop->writer, job);
}

/* Outside curl's callbacks only: may finish (and free) t. */
static void apply_pause(cr_transfer_t* t) {
  int want;
  CURLcode rc = CURLE_OK;
  if (t->state != CR_TRANSFER_ACTIVE)
    return;
  want = t->user_paused || t->disk_paused || t->rate_paused || t->held;
  if (!want && t->curl_paused) {
    t->curl_paused = 0;
    t->run->last_activity_ms = uv_now(&t->loop->uv);
    /* May call on_write at once with the bytes curl kept. */
    rc = curl_easy_pause(t->easy, CURLPAUSE_CONT);
    cr__kick(t->loop);
  } else if (want && !t->curl_paused && t->user_paused) {
    t->curl_paused = 1;
    rc = curl_easy_pause(t->easy, CURLPAUSE_ALL);
  }
  /* on_write refused the bytes curl kept (out of memory, a body longer
   * than announced): curl_easy_pause reports it, and curl never ends the
   * transfer by itself. */
  if (rc != CURLE_OK)
    finish_active(t, rc, CR_OK);
}

/* Outside curl's callbacks only: lets curl read a streamed body again,
 * once there are bytes (or its end) for it. May finish t. */
void cr__supply_wake(cr_transfer_t* t) {
  CURLcode rc;
  if (t->state != CR_TRANSFER_ACTIVE || !t->supply_waiting || t->user_paused)
    return;
  t->supply_waiting = 0;
  /* Receiving stays paused if it was (the disk, a hold, a rate limit). */
  rc = curl_easy_pause(t->easy, t->curl_paused ? CURLPAUSE_RECV : CURLPAUSE_CONT);
  cr__kick(t->loop);
  if (rc != CURLE_OK)
    finish_active(t, rc, CR_OK);
}

/* Lets transfers paused for the disk receive again, while the loop's
 * writer has room: a transfer once half its own chunks are written. */
static void resume_disk_paused(cr_loop_t* loop) {
  cr_transfer_t* t = loop->active_head;
  while (t && loop->pending_writes < CR_LOOP_PENDING_WRITES) {
    cr_transfer_t* next = t->list_next;
    if (t->disk_paused && t->run->pending_writes < CR_MAX_PENDING_WRITES / 2) {
      /* What waited to be decoded goes first; curl resumes after it. */
      int decoded = cr__transfer_decode_pending(t);
      if (decoded < 0) {
        finish_active(t, CURLE_OK, t->error); /* may free t */
      } else if (decoded == 0) {
        t->disk_paused = 0;
        apply_pause(t); /* curl may deliver (and queue chunks) at once */
      }
    }
    t = next;
  }
}

void cr__process_write_results(cr_loop_t* loop) {
  cr_write_job_t* job = cr__writer_take_done(&loop->writer);
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

    CR_ASSERT(t->magic == CR_TRANSFER_MAGIC && t->run->pending_writes > 0);
    t->run->pending_writes--;
    loop->pending_writes--;
    if (result == 0) {
      t->run->bytes_flushed += (int64_t)length;
    } else if (t->run->write_errno == 0) {
      t->run->write_errno = result;
      t->os_error = result;
      if (t->error == CR_OK) {
        t->error = result == ENOSPC ? CR_ERR_NO_SPACE : CR_ERR_FILE_WRITE;
        free(t->message);
        t->message = cr__strdup(strerror(result));
      }
      if (t->state == CR_TRANSFER_ACTIVE) {
        /* May complete (and free) t when nothing else is pending. */
        finish_active(t, CURLE_OK, t->error);
        continue;
      }
    }
    if (t->state == CR_TRANSFER_FINISHING && t->run->pending_writes == 0)
      finish_writing(t);
  }
  resume_disk_paused(loop);
}

/* ---- Finishing a running transfer ---- */

/* An easy handle serves one transfer and is freed with it, never reset and
 * used again. libcurl 7.88 frees a handle's stored header lines at the start
 * of its next transfer but keeps a pointer to the last of them
 * (state.prevhead, lib/headers.c): a response whose first field line is a
 * continuation (obs-fold, " x") then appends to freed memory, a heap
 * corruption any server could cause on a reused handle (found by the
 * engine-response fuzz target; OversizedHeadTests.foldedFirstLine). A fresh
 * handle has no such pointer, and such a line fails the transfer. Reuse also
 * kept the receive buffer and held bytes of a handle whose transfer ended on
 * a shared HTTP/2 connection (curl #10971, #5842). Connections, TLS sessions
 * and DNS answers are the multi handle's and the loop's share's: a new
 * handle loses none of them. */
static void release_easy(CURL* easy) { curl_easy_cleanup(easy); }

/* Takes t out of curl. The outcome is `forced` when set, else what the
 * callbacks recorded, else what curl says, else the length check. */
static void finish_active(cr_transfer_t* t, CURLcode code, cr_error_t forced) {
  cr_loop_t* loop = t->loop;

  CR_ASSERT(t->state == CR_TRANSFER_ACTIVE);
  if (forced != CR_OK) {
    if (t->error != forced) {
      free(t->message);
      t->message = NULL;
    }
    t->error = forced;
  } else if (t->error == CR_OK && code == CURLE_OUT_OF_MEMORY &&
             !t->response_seen) {
    /* libcurl 7.88 keeps each header line in a buffer capped at 100 KiB
     * (CURL_MAX_HTTP_HEADER) and reports a longer one as out of memory. */
    t->error = CR_ERR_BAD_RESPONSE;
    t->message = cr__strdup("a response header line is longer than 100 KiB "
                            "(or memory ran out reading the head)");
  } else if (t->error == CR_OK) {
    t->error = cr__error_from_curl(code, 1);
    if (t->error == CR_OK && !(t->flags & CR_FLAG_NO_BODY)) {
      /* A decoded body (expected unknown) is checked by its wire length;
       * 204 and 304 expect 0 bytes (finish_headers). */
      int64_t got = t->expected >= 0 ? t->received : cr__transfer_wire_bytes(t);
      int64_t announced = t->expected >= 0 ? t->expected : t->run->content_length;
      if (announced >= 0 && got >= 0 && got < announced) {
        t->error = CR_ERR_SHORT_BODY;
        t->message = cr__strdup("the body ended before its announced length");
      }
    }
  }
  if (code != CURLE_OK) {
    t->curl_code = (int)code;
    /* The errno of a failed connect (ENETUNREACH: no route, ECONNREFUSED:
     * nobody listening), which the task layer tells apart. */
    long os_errno = 0;
    if (t->os_error == 0 &&
        curl_easy_getinfo(t->easy, CURLINFO_OS_ERRNO, &os_errno) == CURLE_OK)
      t->os_error = (int)os_errno;
  }
  if (t->error != CR_OK && t->message == NULL) {
    const char* text = t->run->error_buffer[0]
                           ? t->run->error_buffer
                           : (code != CURLE_OK ? curl_easy_strerror(code) : NULL);
    t->message = cr__strdup(text);
  }
  if (t->connection)
    cr__connection_finish(t, code);
  cr__transfer_collect_metrics(t);
  /* Taken out while curl holds bytes for it (paused: for the disk, held, by
   * the user): libcurl 7.88 frees those bytes (tempwrite) only at the end of
   * multi_done(), which returns early when the connection is still in use
   * (HTTP/2; freed before that return from 8.1.0, curl #10971), and
   * curl_easy_cleanup() does not free them either: 16 KiB or more leaked at
   * every such end (LeakSanitizer, the HTTP/2 pass). Unpaused first, curl
   * hands them to the callbacks, which drop them. */
  if (t->curl_paused && (forced != CR_OK || code != CURLE_OK)) {
    t->dropping = 1;
    t->curl_paused = 0;
    (void)curl_easy_pause(t->easy, CURLPAUSE_CONT);
  }
  curl_multi_remove_handle(loop->multi, t->easy);
  release_easy(t->easy);
  t->easy = NULL;
  cr__running_remove(loop, t);
  loop->active_count--;
  atomic_fetch_sub(&loop->stat_active, 1);

  if (t->held && t->error == CR_OK) {
    /* The whole response arrived while held (no body to pause on): the
     * end waits for the decision, as a body would have. Nothing was
     * written, so no disk write can be pending. */
    set_state(t, CR_TRANSFER_DECIDING);
  } else if (t->sink == CR_SINK_FILE) {
    cr__queue_chunk(t);
    set_state(t, CR_TRANSFER_FINISHING);
    /* FINISHING lasts while writes are pending (and body bytes wait to be
     * decoded into them), and not a moment more. */
    if (t->run->pending_writes == 0)
      finish_writing(t);
  } else {
    cr__transfer_check_decoded_end(t);
    complete(t);
  }
}

/* A FINISHING transfer with no write pending: what waits to be decoded is
 * decoded (queuing writes: it finishes when they are done), else it
 * completes. */
static void finish_writing(cr_transfer_t* t) {
  if (t->error == CR_OK && t->run->undecoded_pending) {
    int decoded = cr__transfer_decode_pending(t);
    cr__queue_chunk(t);
    if (decoded > 0 || (decoded == 0 && t->run->pending_writes > 0))
      return;
  }
  cr__transfer_check_decoded_end(t);
  complete(t);
}

/* Ends a transfer that waited out of curl for the decision on its held
 * response: with the decision's outcome, or cancelled. */
static void end_deciding(cr_transfer_t* t, cr_error_t outcome) {
  CR_ASSERT(t->state == CR_TRANSFER_DECIDING);
  t->held = 0;
  if (outcome != CR_OK) {
    t->error = outcome;
    free(t->message);
    t->message = NULL;
  }
  complete(t);
}

void cr__drain(cr_loop_t* loop) {
  CURLMsg* message;
  int left;
  while ((message = curl_multi_info_read(loop->multi, &left))) {
    cr_transfer_t* t = NULL;
    CURLcode code;
    if (message->msg != CURLMSG_DONE)
      continue;
    code = message->data.result;
    curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char**)&t);
    CR_ASSERT(t == NULL || t->magic == CR_TRANSFER_MAGIC);
    if (t && t->state == CR_TRANSFER_ACTIVE)
      finish_active(t, code, CR_OK);
  }
  cr__admit(loop);
}

void cr__fail_running(cr_loop_t* loop, const char* why) {
  while (loop->active_head) {
    cr_transfer_t* t = loop->active_head;
    if (t->error == CR_OK) {
      t->error = CR_ERR_INTERNAL;
      free(t->message);
      t->message = cr__strdup(why);
    }
    finish_active(t, CURLE_OK, CR_OK);
  }
}

/* ---- Admission ---- */

static void on_sweep(uv_timer_t* timer);

/* How often the sweep looks at the transfers it watches: a tenth of the
 * shortest idle timeout (a timeout fires at most 10 % late), between 100 ms
 * and 10 s; 100 ms while an upgraded connection is open (a server's close is
 * noticed here). Each sweep walks every running transfer: with 10,000 open
 * and idle (W7), every 100 ms made 0.028 s of CPU a second, all of the
 * loops' CPU while they waited (2.8 ms a sweep; with the default 60 s
 * timeout, one sweep every 6 s now). */
static uint64_t sweep_period(uint64_t shortest_idle_ms, int upgraded) {
  uint64_t period = shortest_idle_ms / 10;
  if (upgraded || period < CR_SWEEP_INTERVAL_MS)
    return CR_SWEEP_INTERVAL_MS;
  return period > CR_SWEEP_INTERVAL_MAX_MS ? CR_SWEEP_INTERVAL_MAX_MS : period;
}

/* Starts the sweep for a transfer that needs it, or makes it run sooner. */
static void watch_idle(cr_loop_t* loop, const cr_transfer_t* t) {
  uint64_t period;
  int upgraded = (t->flags & CR_FLAG_UPGRADE) != 0;
  if (t->idle_timeout_ms <= 0 && !upgraded)
    return;
  period = sweep_period(t->idle_timeout_ms > 0 ? (uint64_t)t->idle_timeout_ms
                                               : UINT64_MAX,
                        upgraded);
  if (loop->sweeping && period >= uv_timer_get_repeat(&loop->sweep))
    return;
  loop->sweeping = 1;
  uv_timer_start(&loop->sweep, on_sweep, period, period);
}

void cr__admit(cr_loop_t* loop) {
  while (!loop->stopping && loop->active_count < loop->max_active) {
    cr_transfer_t* t;
    CURL* easy;
    cr_error_t error;
    t = cr__waiting_pop(loop);
    if (t == NULL)
      return;
    atomic_fetch_sub(&loop->stat_queued, 1);
    if (t->total_timeout_ms > 0 &&
        (int64_t)(cr__now_us() - t->submitted_us) / 1000 >= t->total_timeout_ms) {
      t->error = CR_ERR_TIMED_OUT;
      t->message = cr__strdup("timed out while waiting for a connection slot");
      complete(t);
      continue;
    }
    easy = curl_easy_init();
    if (easy == NULL) {
      t->error = CR_ERR_INTERNAL;
      t->message = cr__strdup("out of memory (curl_easy_init)");
      complete(t);
      continue;
    }
    error = cr__transfer_setup_easy(t, easy);
    t->admitted_us = cr__now_us();
    if (error == CR_OK) {
      CURLMcode added = curl_multi_add_handle(loop->multi, easy);
      if (added != CURLM_OK) {
        char text[160];
        snprintf(text, sizeof(text), "cannot start the transfer: curl_multi_add_handle: %s (CURLM %d)",
                 curl_multi_strerror(added), (int)added);
        free(t->message);
        t->message = cr__strdup(text);
        error = CR_ERR_INTERNAL;
      }
    }
    if (error != CR_OK) {
      release_easy(easy);
      t->easy = NULL;
      t->error = error;
      complete(t);
      continue;
    }
    cr__running_push(loop, t);
    set_state(t, CR_TRANSFER_ACTIVE);
    loop->active_count++;
    atomic_fetch_add(&loop->stat_active, 1);
    watch_idle(loop, t);
  }
}

/* ---- Shared rate limits ---- */

static void on_rate_timer(uv_timer_t* timer);

void cr__rate_pause(cr_transfer_t* t, uint64_t wait_ms) {
  cr_loop_t* loop = t->loop;
  t->rate_paused = 1;
  t->curl_paused = 1;
  if (!loop->rate_timer_armed) {
    loop->rate_timer_armed = 1;
    uv_timer_start(&loop->rate_timer, on_rate_timer, wait_ms, 0);
  }
}

/* The debt is paid (or nearly): the rate-paused transfers go on, starting
 * one further along the list each time so that none is always last. Each
 * may pause itself again at once (curl hands it what it kept). */
static void on_rate_timer(uv_timer_t* timer) {
  cr_loop_t* loop = timer->data;
  cr_transfer_t* paused[64];
  size_t count = 0, start, i;
  cr_transfer_t* t;
  loop->rate_timer_armed = 0;
  for (t = loop->active_head; t && count < 64; t = t->list_next)
    if (t->rate_paused)
      paused[count++] = t;
  if (count == 0)
    return;
  start = loop->rate_round++ % count;
  for (i = 0; i < count; i++) {
    /* apply_pause may finish (and free) the transfer it resumes, never
     * another one. */
    t = paused[(start + i) % count];
    t->rate_paused = 0;
    apply_pause(t);
  }
  /* More than 64 waiting: the rest go on next time. */
  if (!loop->rate_timer_armed) {
    for (t = loop->active_head; t; t = t->list_next) {
      if (t->rate_paused) {
        loop->rate_timer_armed = 1;
        uv_timer_start(&loop->rate_timer, on_rate_timer, 1, 0);
        break;
      }
    }
  }
}

static void on_sweep(uv_timer_t* timer) {
  cr_loop_t* loop = timer->data;
  uint64_t now = uv_now(&loop->uv);
  int any = 0, upgraded = 0;
  uint64_t shortest_idle = UINT64_MAX, period;
  cr_transfer_t* t = loop->active_head;
  while (t) {
    cr_transfer_t* next = t->list_next;
    if (t->flags & CR_FLAG_UPGRADE) {
      any = 1;
      upgraded = 1;
      if (t->peer_closed) {
        /* The server closed an upgraded connection (sockets.c saw curl stop
         * reading it while its body waited): curl itself would wait for the
         * body forever. */
        t->error = CR_ERR_CONNECTION_LOST;
        free(t->message);
        t->message = cr__strdup("the server closed the connection");
        finish_active(t, CURLE_OK, CR_OK);
        t = next;
        continue;
      }
    }
    if (t->idle_timeout_ms > 0) {
      any = 1;
      if ((uint64_t)t->idle_timeout_ms < shortest_idle)
        shortest_idle = (uint64_t)t->idle_timeout_ms;
      if (!t->user_paused && !t->held && !t->disk_paused && !t->rate_paused &&
          now - t->run->last_activity_ms > (uint64_t)t->idle_timeout_ms) {
        t->error = CR_ERR_TIMED_OUT;
        free(t->message);
        t->message = cr__strdup("no data for longer than the idle timeout");
        finish_active(t, CURLE_OK, CR_OK);
      }
    }
    t = next;
  }
  if (!any) {
    loop->sweeping = 0;
    uv_timer_stop(&loop->sweep);
  } else if ((period = sweep_period(shortest_idle, upgraded)) !=
             uv_timer_get_repeat(&loop->sweep)) {
    /* The transfers with the shortest timeouts ended (or shorter came). */
    uv_timer_start(&loop->sweep, on_sweep, period, period);
  }
  cr__admit(loop);
}

/* ---- Commands ---- */

void cr__apply_command(cr_loop_t* loop, cr_command_t* cmd) {
  cr_transfer_t* t;
  if (cmd->kind == CR_CMD_SUBMIT) {
    t = cmd->transfer;
    t->loop = loop;
    CR_ASSERT(t->magic == CR_TRANSFER_MAGIC && t->state == CR_TRANSFER_QUEUED);
    if (cr__trace)
      trace(t, "(submitted)", state_name(t->state), __FILE__, __LINE__);
    if (cr__table_insert(&loop->transfers, t) != 0) {
      t->error = CR_ERR_INTERNAL;
      atomic_fetch_sub(&loop->stat_queued, 1);
      /* Not in the table: complete() tolerates that. */
      complete(t);
      return;
    }
    cr__waiting_push(loop, t);
    return;
  }
  t = cr__table_find(&loop->transfers, cmd->transfer_id);
  if (cmd->kind == CR_CMD_DECIDE &&
      (t == NULL || !t->held ||
       (t->state != CR_TRANSFER_ACTIVE && t->state != CR_TRANSFER_DECIDING))) {
    if (cmd->fd >= 0)
      close(cmd->fd);
    return;
  }
  if (t == NULL) {
    free(cmd->supply); /* bytes for a transfer that ended */
    return;
  }
  switch (cmd->kind) {
    case CR_CMD_CANCEL:
      if (t->state == CR_TRANSFER_QUEUED) {
        if (t->user_paused)
          cr__parked_remove(loop, t);
        else
          cr__waiting_remove(loop, t);
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
        cr__waiting_remove(loop, t);
        cr__parked_push(loop, t);
      } else {
        apply_pause(t);
      }
      break;
    case CR_CMD_RESUME:
      if (!t->user_paused)
        break;
      t->user_paused = 0;
      if (t->state == CR_TRANSFER_QUEUED) {
        cr__parked_remove(loop, t);
        cr__waiting_push(loop, t);
      } else {
        apply_pause(t);
      }
      break;
    case CR_CMD_SUPPLY:
      if (!(t->flags & CR_FLAG_STREAMED_BODY) || t->supply_ended ||
          (t->supply_tail && t->supply_tail->end)) {
        free(cmd->supply);
        break;
      }
      if (t->supply_tail)
        t->supply_tail->next = cmd->supply;
      else
        t->supply_head = cmd->supply;
      t->supply_tail = cmd->supply;
      cr__supply_wake(t);
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

/* ---- Loop stop ---- */

#if CR_DEBUG_CHECKS
/* Once per loop, before it tears down: the table and the lists agree. */
static void check_loop(cr_loop_t* loop) {
  int active = 0;
  size_t count = 0;
  for (cr_transfer_t* t = loop->active_head; t; t = t->list_next) {
    CR_ASSERT(t->state == CR_TRANSFER_ACTIVE && t->loop == loop);
    active++;
  }
  CR_ASSERT(active == loop->active_count);
  for (size_t i = 0; i < loop->transfers.bucket_count; i++) {
    for (cr_transfer_t* t = loop->transfers.buckets[i]; t; t = t->hash_next) {
      CR_ASSERT(t->magic == CR_TRANSFER_MAGIC && t->state != CR_TRANSFER_DONE);
      CR_ASSERT(t->state != CR_TRANSFER_FINISHING || t->run->pending_writes > 0);
      CR_ASSERT(t->state != CR_TRANSFER_DECIDING ||
                (t->held && t->easy == NULL && t->run->pending_writes == 0));
      count++;
    }
  }
  CR_ASSERT(count == loop->transfers.count);
}
#endif

void cr__abandon_all(cr_loop_t* loop) {
  cr_write_job_t* job;
#if CR_DEBUG_CHECKS
  check_loop(loop);
#endif
  /* Out of curl first, then the writer drains, then free everything. */
  while (loop->active_head) {
    cr_transfer_t* t = loop->active_head;
    curl_multi_remove_handle(loop->multi, t->easy);
    curl_easy_cleanup(t->easy);
    t->easy = NULL;
    cr__running_remove(loop, t);
    set_state(t, CR_TRANSFER_FINISHING);
  }
  job = cr__writer_stop(&loop->writer);
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
      if (!t->in_dirty_list) {
        cr__transfer_free(t);
      } else {
        /* The dirty list frees it (cr__events_discard). */
        t->hash_next = NULL;
        t->list_prev = t->list_next = NULL;
        set_state(t, CR_TRANSFER_DONE);
      }
      t = next;
    }
  }
  free(loop->transfers.buckets);
  memset(&loop->transfers, 0, sizeof(loop->transfers));
}
