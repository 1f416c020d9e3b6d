/*
 * The event batch: the events one loop iteration produces (RESPONSE, DATA,
 * PROGRESS, COMPLETE), gathered in one array and handed to the engine's
 * callback once per iteration by a prepare handle, right before the loop
 * polls (or at once, when memory is short: an event is never dropped).
 * Owns the batch, the dirty list (transfers with progress to report) and
 * the order of one transfer's events: RESPONSE? (DATA | PROGRESS)*
 * COMPLETE.
 *
 * Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void free_event_payload(cr_event_t* e) {
  free(e->headers);
  free(e->data);
  free(e->message);
  free(e->peer_certificates);
}

/* Hands the batch to the engine's callback (or frees it when the loop is
 * stopping or nobody listens) and empties it. */
static void hand_over(cr_loop_t* loop) {
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

int cr__events_init(cr_loop_t* loop) {
  loop->events = cr__malloc(CR_EVENT_BATCH * sizeof(*loop->events));
  if (loop->events == NULL)
    return -1;
  loop->event_capacity = CR_EVENT_BATCH;
  loop->event_count = 0;
  return 0;
}

/* Never fails: an event is never dropped (a dropped RESPONSE or COMPLETE
 * would break the order of a transfer's events, or leave it waiting for a
 * decision nobody is asked for). When the batch cannot grow, it is handed
 * over at once, before the end of the iteration, and its array reused. */
static cr_event_t* push_event(cr_loop_t* loop, cr_transfer_t* t,
                              cr_event_kind_t kind) {
  cr_event_t* e;
  if (loop->event_count == loop->event_capacity) {
    size_t capacity = loop->event_capacity * 2;
    cr_event_t* events = cr__realloc(loop->events, capacity * sizeof(*events));
    if (events != NULL) {
      loop->events = events;
      loop->event_capacity = capacity;
    } else {
      hand_over(loop);
    }
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
  if (t->sink == CR_SINK_FILE && t->run && t->response_seen &&
      !t->discard_body && t->run->body_base >= 0)
    e->bytes_on_disk = t->run->body_base + t->run->bytes_flushed;
  return e;
}

/* What a DATA batch's buffer may hold beyond its bytes when handed over;
 * more goes back to the allocator first. */
#define CR_DATA_SLACK 4096

/* The batch's buffer fitted to its bytes. It was sized for the rest of the
 * body (take_body) and lives as long as the app keeps the bytes: a slow or
 * chunked response hands over a few hundred bytes a batch, each in a buffer
 * of up to 256 KiB whose untouched pages the allocator cannot give to
 * anything else. A few bytes are copied into a block of their size (the big
 * one is freed, and taken again by the next batch); more are shrunk in
 * place, the tail freed. Plain malloc and realloc, not the cr__ indirection:
 * when either fails the buffer stays as it was. */
static void fit_data(cr_running_t* run) {
  size_t length = run->memory_length;
  if (run->memory_capacity - length <= CR_DATA_SLACK)
    return;
  if (length <= CR_DATA_SLACK) {
    char* copy = malloc(length);
    if (copy == NULL)
      return;
    memcpy(copy, run->memory, length);
    free(run->memory);
    run->memory = copy;
  } else {
    char* fitted = realloc(run->memory, length);
    if (fitted != NULL)
      run->memory = fitted;
  }
}

static void emit_data(cr_loop_t* loop, cr_transfer_t* t) {
  cr_event_t* e;
  if (t->run == NULL || t->run->memory_length == 0)
    return;
  fit_data(t->run);
  e = push_event(loop, t, CR_EVENT_DATA);
  e->data = t->run->memory;
  e->data_length = t->run->memory_length;
  t->run->memory = NULL;
  t->run->memory_length = t->run->memory_capacity = 0;
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
  e->status = t->status;
  e->held = t->held;
  e->resume_offset = t->discard_body ? t->resume_offset : t->run->body_base;
  e->headers = t->run->header_block;
  e->headers_length = t->run->header_length;
  t->run->header_block = NULL;
  t->run->header_length = t->run->header_capacity = 0;
}

void cr__emit_response(cr_transfer_t* t) { emit_response(t, 1); }

void cr__emit_informational(cr_transfer_t* t) {
  cr_event_t* e = push_event(t->loop, t, CR_EVENT_INFORMATIONAL);
  e->status = t->status;
  e->headers = t->run->header_block;
  e->headers_length = t->run->header_length;
  t->run->header_block = NULL;
  t->run->header_length = t->run->header_capacity = 0;
}

/* The file's digest for COMPLETE: every write is done (the writer no longer
 * touches run->hash); bytes no chunk brought (a range that added nothing)
 * are read from the file here. */
static void finish_digest(cr_transfer_t* t, cr_event_t* e) {
  cr_sha2_t* hash = t->run->hash;
  if (hash->kind == CR_DIGEST_NONE || t->run->hashed > e->bytes_on_disk)
    return;
  if (cr__sha2_update_from_file(hash, t->sink_fd, t->run->hashed,
                                e->bytes_on_disk) != 0)
    return;
  t->run->hashed = e->bytes_on_disk;
  e->digest_kind = hash->kind;
  cr__sha2_final(hash, e->digest);
  hash->kind = CR_DIGEST_NONE; /* final: never reused */
}

void cr__emit_last(cr_transfer_t* t) {
  cr_loop_t* loop = t->loop;
  cr_event_t* e;
  int kept;

  emit_response(t, 0);
  emit_data(loop, t);
  e = push_event(loop, t, CR_EVENT_COMPLETE);
  kept = t->sink == CR_SINK_FILE && t->response_seen && !t->discard_body;
  e->status = t->status;
  e->error = t->error;
  e->curl_code = t->curl_code;
  e->os_error = t->os_error;
  e->message = t->message;
  t->message = NULL;
  e->resume_offset = kept ? t->run->body_base : t->resume_offset;
  e->bytes_on_disk = t->sink != CR_SINK_FILE ? 0
                     : kept ? t->run->body_base + t->run->bytes_flushed
                            : t->resume_offset;
  if (kept && t->error == CR_OK && t->run->hash &&
      t->run->pending_writes == 0)
    finish_digest(t, e);
  if (t->metrics)
    e->metrics = *t->metrics;
  if (t->run) {
    e->peer_certificates = t->run->peer_certificates;
    e->verify_result = t->run->verify_result;
    t->run->peer_certificates = NULL;
  }
}

void cr__mark_dirty(cr_transfer_t* t) {
  t->progress_dirty = 1;
  if (!t->in_dirty_list) {
    t->in_dirty_list = 1;
    t->dirty_next = t->loop->dirty_head;
    t->loop->dirty_head = t;
  }
}

/* A prepare handle runs right before the loop polls (and may block), so
 * whatever the timers, the idle kick, the async commands and the previous
 * pass's I/O produced is handed over before any wait. */
void cr__on_flush(uv_prepare_t* prepare) {
  cr_loop_t* loop = prepare->data;
  cr_transfer_t* t = loop->dirty_head;
  loop->dirty_head = NULL;
  while (t) {
    cr_transfer_t* next = t->dirty_next;
    t->in_dirty_list = 0;
    t->dirty_next = NULL;
    if (t->state == CR_TRANSFER_DONE) {
      /* Completed while listed: complete() left the freeing to us. */
      cr__transfer_free(t);
    } else if (t->progress_dirty) {
      t->progress_dirty = 0;
      emit_data(loop, t);
      push_event(loop, t, CR_EVENT_PROGRESS);
    }
    t = next;
  }
  hand_over(loop);
}

void cr__events_discard(cr_loop_t* loop) {
  while (loop->dirty_head) {
    cr_transfer_t* next = loop->dirty_head->dirty_next;
    cr__transfer_free(loop->dirty_head);
    loop->dirty_head = next;
  }
  for (size_t i = 0; i < loop->event_count; i++)
    free_event_payload(&loop->events[i]);
  loop->event_count = 0;
}
