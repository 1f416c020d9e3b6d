/*
 * Internal declarations of the transfer engine. Nothing here is seen by
 * Swift, and every function declared here is hidden (not exported from a
 * shared object) and named cr__*: only courier_engine.h's functions are
 * the engine's API. Threads:
 *   - the caller's threads: cr_engine_submit() and the cr_transfer_*()
 *     commands only allocate and enqueue (cr_command_queue_t) and wake a loop;
 *   - one loop thread per cr_loop_t: owns the uv loop, the curl multi handle,
 *     every easy handle, every transfer after submission;
 *   - one writer thread per loop: pwrite()s download chunks (cr_writer_t) and
 *     reports back through the loop's done queue and async handle.
 *
 * Where things live (one concern per file; each file's header comment says
 * which thread runs it):
 *   engine.c          the public entry points, the engine and its handle checks
 *   transfer.c        one transfer: request copy, easy setup, curl callbacks
 *   lifecycle.c       the transfer state machine: admission, commands,
 *                     finishing, completion (every write of t->state)
 *   transfer_table.c  the id table, the waiting queues and the running list
 *   sockets.c         curl <-> libuv: socket, timer and poll callbacks
 *   events.c          the event batch handed to Swift once per iteration
 *   loop.c            a loop thread: start, wake-ups, stop
 *   command_queue.c   commands from any thread to a loop
 *   disk_writer.c     the writer thread
 *   alloc.c           the allocator indirection (alloc.h, alloc_torture.h)
 */
#ifndef COURIER_INTERNAL_H
#define COURIER_INTERNAL_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <uv.h>

#include "alloc.h"
#include "courier_engine.h"
#include "sha2.h"

/* Debug checks (assertions on states and invariants) are compiled in debug
 * builds only: SwiftPM's debug configuration defines DEBUG=1, its release
 * configuration defines neither DEBUG nor NDEBUG, so plain assert() would
 * stay on in release builds. CR_ASSERT costs nothing in release builds and
 * does not evaluate its argument there. */
#if defined(DEBUG) && !defined(NDEBUG)
#define CR_DEBUG_CHECKS 1
#define CR_ASSERT(condition) assert(condition)
#else
#define CR_DEBUG_CHECKS 0
#define CR_ASSERT(condition) ((void)sizeof(!(condition)))
#endif

/* Handle checks at the API boundary (engine.c) and, in debug builds, on
 * every transfer the loop picks up from curl, the writer or the table. */
#define CR_ENGINE_MAGIC 0x43524E47u   /* "CRNG" */
#define CR_TRANSFER_MAGIC 0x43525846u /* "CRXF" */

#define CR_PRIORITY_LEVELS 3
#define CR_CHUNK_SIZE (128 * 1024)     /* one disk write job               */
#define CR_DECODED_SIZE (64 * 1024)    /* decoded at a time into the sink  */
/* A response's head at most (status line, fields, blank line), as curl
 * from 8.6 limits it (MAX_HTTP_RESP_HEADER_SIZE); libcurl 7.88 refuses a
 * single line over 100 KiB only, and as "Out of memory". */
#define CR_MAX_HEADER_SECTION (300 * 1024)
#define CR_MAX_PENDING_WRITES 4        /* per transfer, then curl pauses   */
/* Per loop: chunks waiting for the writer, over all transfers. The disk is
 * the bottleneck when many downloads run at once; more queued chunks add
 * memory, not speed (Benchmarks/, W4). */
#define CR_LOOP_PENDING_WRITES 8
/* curl's receive buffer for a download to a file: the first transfer a loop
 * runs gets the large one (a lone download: fewer recv calls and callbacks,
 * W3), a transfer that starts beside others the small one (the disk is then
 * the bottleneck, and each running transfer holds its own buffer: W4's
 * memory). */
#define CR_FILE_BUFFER_SIZE (128 * 1024)
#define CR_FILE_BUFFER_SHARED_SIZE (64 * 1024)
/* curl's default upload buffer, and the one Courier uses for bodies larger than that. */
#define CR_UPLOAD_BUFFER_DEFAULT (64 * 1024)
#define CR_UPLOAD_BUFFER_SIZE (256 * 1024)
/* The idle-timeout sweep's period: a tenth of the shortest idle timeout it
 * watches, within these bounds; the shortest while an upgraded connection is
 * open (lifecycle.c, sweep_period). */
#define CR_SWEEP_INTERVAL_MS 100
#define CR_SWEEP_INTERVAL_MAX_MS 10000
/* The first memory-sink buffer of a DATA batch, when the length is unknown,
 * and at most, when it is known. */
#define CR_MEMORY_BATCH_DEFAULT (16 * 1024)
#define CR_MEMORY_BATCH_MAX (256 * 1024)
/* Events in a loop's first batch array. */
#define CR_EVENT_BATCH 256

typedef struct cr_loop_s cr_loop_t;
typedef struct cr_transfer_s cr_transfer_t;

/* A transfer's state. Only lifecycle.c writes it, through set_state(),
 * which checks each change against this table in debug builds and traces
 * it when COURIER_ENGINE_TRACE=1 (docs/engine.md):
 *
 *   from        to          when
 *   (submit)    QUEUED      cr__transfer_create(); the loop takes it over
 *   QUEUED      ACTIVE      admitted: an easy handle added to the multi
 *   QUEUED      DONE        cancelled, timed out or failed before admission
 *   ACTIVE      FINISHING   out of curl, file sink: its last chunks are
 *                           written (also every running one at loop stop)
 *   ACTIVE      DECIDING    out of curl with its whole response while the
 *                           RESPONSE is held: COMPLETE waits for
 *                           cr_transfer_decide()/cr_transfer_cancel()
 *   ACTIVE      DONE        out of curl, nothing left to write
 *   FINISHING   DONE        its last disk write came back (or loop stop)
 *   DECIDING    DONE        decided or cancelled (or loop stop)
 *
 * Nothing leaves DONE and nothing returns to QUEUED or ACTIVE. Invariants
 * (asserted in debug builds): only ACTIVE has an easy handle; DECIDING has
 * no pending write and no kept body byte, no error, and is held; a held
 * transfer has emitted its RESPONSE; FINISHING has pending writes, or
 * completes in the same step; a DONE transfer is in no table or list but
 * the dirty list, which frees it. */
typedef enum {
  CR_TRANSFER_QUEUED = 0,   /* waiting for a slot (or parked while paused) */
  CR_TRANSFER_ACTIVE,       /* added to the multi handle                    */
  CR_TRANSFER_FINISHING,    /* out of curl, waiting for disk writes          */
  CR_TRANSFER_DECIDING,     /* out of curl with its whole response, which is
                               held: COMPLETE waits for the decision         */
  CR_TRANSFER_DONE
} cr_transfer_state_t;

/* ---- decoder.c: content codings ---- */

#define CR_MAX_CODINGS 4
typedef struct cr_decoder_s cr_decoder_t;
#pragma GCC visibility push(hidden)
/* The Accept-Encoding value of what the engine decodes: "gzip, deflate",
 * then br and zstd where their libraries load. */
const char* cr__decoder_offer(void);
/* Appends the codings one Content-Encoding value lists; 0, or -1 with *why
 * for a coding the engine does not decode or too many. */
int cr__codings_parse(unsigned char* codings, int* count, const char* value,
                      size_t length, const char** why);
/* A decoder for the codings (in the order they were applied); NULL when out
 * of memory. */
cr_decoder_t* cr__decoder_make(const unsigned char* codings, int count);
/* Decodes from *input (advanced past what it took) into output, at most
 * capacity bytes; returns the bytes made, or -1 for corrupt data. It takes
 * all of the input or fills the output. */
ptrdiff_t cr__decoder_run(cr_decoder_t* d, const unsigned char** input,
                          size_t* input_length, unsigned char* output,
                          size_t capacity);
/* Whether every coding's stream ended, with nothing left inside. */
int cr__decoder_complete(const cr_decoder_t* d);
void cr__decoder_free(cr_decoder_t* d);
#pragma GCC visibility pop

/* What a transfer holds only once it runs: allocated when it is first
 * admitted (cr__transfer_setup_easy) and freed with the transfer, so that a
 * transfer waiting for a slot carries none of it (Benchmarks/: 100,000
 * queued tasks). Loop thread only, except writer_failed (the writer). */
typedef struct {
  char error_buffer[CURL_ERROR_SIZE];
  uint64_t last_activity_ms;

  /* The response being received. Reset at every status line. */
  char* header_block;
  size_t header_length;
  size_t header_capacity;
  int64_t content_length;     /* -1 unknown                                  */
  int64_t body_base;          /* file offset of the body's first byte       */

  /* Upload body: the next byte to send (of body/borrowed, or body_fd). */
  size_t body_position;
  int64_t body_fd_position;

  /* Memory sink: accumulated since the last DATA event. */
  char* memory;
  size_t memory_length;
  size_t memory_capacity;

  /* File sink. */
  char* chunk;
  size_t chunk_length;
  int64_t bytes_queued;       /* handed to the writer                       */
  int64_t bytes_flushed;      /* written by the writer, contiguous          */
  int pending_writes;
  int write_errno;
  atomic_int writer_failed;
  /* The digest of the file (cr_request_t.digest): made at the end of the
   * final response's headers, then the writer thread's alone while jobs
   * are in flight; `hashed` bytes from offset 0 are in it. */
  cr_sha2_t* hash;
  int64_t hashed;
  cr_digest_t auto_digest;    /* what the head's digest fields name          */

  /* Content decoding (decoder.c): the codings the head names, then the
   * decoder made from them at its end, and the part of a write the sink had
   * no room for (decoded once it has: cr__transfer_decode_pending). */
  unsigned char codings[CR_MAX_CODINGS];
  int coding_count;
  const char* coding_error;   /* why the codings cannot be decoded (static) */
  cr_decoder_t* decoder;
  unsigned char* decoded;     /* the decoder's output, on its way to the sink */
  unsigned char* undecoded;
  size_t undecoded_length;
  /* CR_TRUST_ASK: the chain and verdict of the connection the transfer
   * stopped on (connection.c), for its COMPLETE. */
  char* peer_certificates;
  long verify_result;
  struct curl_slist* resolve; /* cr_connection_t.resolve, for curl          */
  unsigned undecoded_pending : 1; /* input (or output) waits in the decoder  */
  unsigned decoder_fed : 1;   /* some body went through the decoder         */
} cr_running_t;

/* A transfer, owned by its loop from the moment the submit command is
 * applied. Only the loop thread reads or writes it, except the fields the
 * writer thread touches while a job is in flight (run->writer_failed).
 * What a queued transfer needs is here; what only a running one needs is
 * in `run`. */
struct cr_transfer_s {
  uint32_t magic;             /* CR_TRANSFER_MAGIC while allocated          */
  cr_transfer_state_t state;
  uint64_t id;
  uint64_t tag;
  cr_loop_t* loop;

  /* The request, deep-copied at submit: url, method and the header lines
   * into the transfer's own allocation, after the struct (one malloc per
   * queued transfer, not one per string); curl's header list is built from
   * header_text when the transfer starts, so that a queued transfer holds
   * none. */
  char* url;
  char* method;
  char* header_text;          /* header_count lines, each NUL-terminated   */
  size_t header_count;
  struct curl_slist* headers; /* NULL until started                         */
  char* body;                 /* a copied body, or NULL                     */
  cr_borrowed_body_t borrowed; /* or a borrowed one (borrowed.bytes != NULL) */
  size_t body_length;         /* of either                                  */
  int64_t body_fd_length;
  int64_t body_fd_offset;
  int body_fd;
  int sink_fd;
  cr_sink_t sink;
  cr_digest_t digest;
  uint32_t flags;
  int64_t resume_offset;
  int64_t range_length;
  char* username;
  char* password;
  cr_auth_t auth;
  char* proxy;                /* NULL: libcurl's default (the environment)  */
  char* no_proxy;
  char* proxy_username;       /* with proxy_auth != CR_AUTH_NONE             */
  char* proxy_password;
  cr_auth_t proxy_auth;
  cr_connection_t* connection; /* one allocation (connection.c); NULL: none */
  /* CR_FLAG_STREAMED_BODY: the supplied bytes curl has not read yet, oldest
   * first (read_supplied), and how far into the head it has read. */
  struct cr_supply_s* supply_head;
  struct cr_supply_s* supply_tail;
  size_t supply_read;
  int64_t streamed_body_length;
  int priority_level;
  int64_t max_receive_speed;
  int64_t max_send_speed;
  int64_t max_body;           /* cr_request_t.max_body; 0: none             */
  int64_t idle_timeout_ms;
  int64_t total_timeout_ms;
  uint64_t submitted_us;
  uint64_t admitted_us;

  /* curl state (ACTIVE only). */
  CURL* easy;
  cr_running_t* run;          /* NULL until first admitted                  */

  /* Pause reasons; curl is paused while any is set. */
  unsigned user_paused : 1;
  unsigned disk_paused : 1;
  unsigned held : 1;          /* RESPONSE held, waiting for a decision      */
  unsigned curl_paused : 1;   /* what curl believes                         */
  unsigned rate_paused : 1;   /* a shared rate limit is in debt             */
  unsigned dropping : 1;      /* leaving curl: what it still hands over is
                                 dropped (finish_active)                    */

  /* The response being received. Reset at every status line. */
  unsigned response_emitted : 1;
  unsigned response_seen : 1; /* end of headers of a non-1xx response seen  */
  unsigned chunked : 1;
  unsigned has_location : 1;
  unsigned encoded : 1;       /* Content-Encoding other than identity       */
  unsigned discard_body : 1;  /* body of a response that must not be kept   */
  unsigned progress_dirty : 1;
  unsigned in_dirty_list : 1;
  unsigned supply_ended : 1;  /* the last of the streamed body is supplied  */
  unsigned supply_waiting : 1; /* curl's read paused for want of bytes      */
  unsigned upgraded : 1;      /* CR_FLAG_UPGRADE: the 101 arrived           */
  unsigned peer_closed : 1;   /* upgraded, and the server closed its side   */
  int status;

  /* Counters, read by every event (also of a transfer that never ran). */
  int64_t expected;           /* body bytes expected of this response, -1   */
  int64_t received;
  int64_t sent;
  int64_t expected_to_send;

  /* Outcome. */
  cr_error_t error;
  int curl_code;
  int os_error;
  char* message;
  cr_metrics_t* metrics;      /* from the end of the curl phase; NULL before */

  /* Links. A transfer is in at most one list at a time: a waiting queue,
   * the parked list (queued and paused) or the running list (ACTIVE). */
  cr_transfer_t* hash_next;
  cr_transfer_t* list_prev;
  cr_transfer_t* list_next;
  cr_transfer_t* dirty_next;
};

/* Disk writes still queued for t (0 for a transfer that never ran). */
static inline int cr__pending_writes(const cr_transfer_t* t) {
  return t->run ? t->run->pending_writes : 0;
}

/* ---- Commands (any thread → loop) ---- */

typedef enum {
  CR_CMD_SUBMIT = 1,
  CR_CMD_CANCEL,
  CR_CMD_PAUSE,
  CR_CMD_RESUME,
  CR_CMD_DECIDE,
  CR_CMD_SUPPLY
} cr_command_kind_t;

/* Bytes of a streamed body (cr_transfer_supply), in one allocation. */
typedef struct cr_supply_s {
  struct cr_supply_s* next;
  size_t length;
  int end;
  char bytes[];
} cr_supply_t;

typedef struct {
  cr_command_kind_t kind;
  uint64_t transfer_id;
  cr_transfer_t* transfer;     /* SUBMIT */
  cr_decision_t decision;      /* DECIDE */
  int fd;                      /* DECIDE */
  cr_supply_t* supply;         /* SUPPLY: passes to the transfer, or is freed */
} cr_command_t;

/* Commands that wait, in order, when the vector cannot grow. */
#define CR_COMMAND_RESERVE 32

/* A mutex-protected vector, swapped out whole by the consumer, and a fixed
 * reserve for commands that must not be lost when out of memory. */
typedef struct {
  pthread_mutex_t mutex;
  cr_command_t* items;
  size_t count;
  size_t capacity;
  cr_command_t reserve[CR_COMMAND_RESERVE];
  size_t reserve_count;
} cr_command_queue_t;

#pragma GCC visibility push(hidden)

/* command_queue.c */
int cr__command_queue_init(cr_command_queue_t* queue);
void cr__command_queue_destroy(cr_command_queue_t* queue);
/* Returns 0, or -1 when out of memory: always for a submit that does not
 * fit, and for other commands once the reserve is full too. */
int cr__command_queue_push(cr_command_queue_t* queue, const cr_command_t* cmd);
/* Moves every queued command into *items (caller frees) and returns their
 * count, then copies the reserve's into reserve[] (CR_COMMAND_RESERVE
 * long), *reserve_count of them. Apply *items first, then reserve[]. */
size_t cr__command_queue_take(cr_command_queue_t* queue, cr_command_t** items,
                              size_t* capacity, cr_command_t* reserve,
                              size_t* reserve_count);

#pragma GCC visibility pop

/* ---- rate_limit.c: shared receive limits ---- */

#pragma GCC visibility push(hidden)
void cr__rate_limit_retain(cr_rate_limit_t* limit);
/* Takes `length` bytes from every limit when all have tokens left; else
 * takes nothing and returns the milliseconds until they will. */
uint64_t cr__rate_limits_take(cr_rate_limit_t* const* limits, size_t count,
                              size_t length);
/* lifecycle.c: pauses t (in on_write) until its limits allow it again. */
void cr__rate_pause(cr_transfer_t* t, uint64_t wait_ms);
#pragma GCC visibility pop

/* ---- The disk writer (one thread per loop) ---- */

typedef struct cr_write_job_s {
  struct cr_write_job_s* next;
  cr_transfer_t* transfer;
  int fd;
  int64_t offset;
  char* buffer;
  size_t length;
  int result_errno;            /* 0 when written in full                    */
} cr_write_job_t;

typedef struct {
  pthread_t thread;
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  cr_write_job_t* head;
  cr_write_job_t* tail;
  int stopping;
  /* Finished jobs go back to the loop: */
  pthread_mutex_t done_mutex;
  cr_write_job_t* done_head;
  cr_write_job_t* done_tail;
  uv_async_t* wake;            /* the loop's async handle                   */
  int index;                   /* the loop's index, for the thread name     */
  int delay_us;                /* cr_engine_config_t.write_delay_us        */
} cr_writer_t;

#pragma GCC visibility push(hidden)

/* disk_writer.c */
int cr__writer_start(cr_writer_t* writer, uv_async_t* wake, int index,
                     int delay_us);
void cr__writer_submit(cr_writer_t* writer, cr_write_job_t* job);
cr_write_job_t* cr__writer_take_done(cr_writer_t* writer);
/* Writes every queued job, joins the thread, and returns the finished jobs
 * the loop has not taken yet (the caller frees them). */
cr_write_job_t* cr__writer_stop(cr_writer_t* writer);

#pragma GCC visibility pop

/* ---- Loops ---- */

typedef struct {
  cr_transfer_t** buckets;
  size_t bucket_count;
  size_t count;
} cr_transfer_table_t;

struct cr_loop_s {
  uv_loop_t uv;
  uv_async_t async;
  uv_timer_t curl_timer;
  uv_idle_t kick;              /* runs socket_action(TIMEOUT) next pass     */
  uv_prepare_t flush;          /* hands the event batch over once per pass  */
  uv_timer_t sweep;            /* idle timeouts                              */
  uv_timer_t rate_timer;       /* lets rate-paused transfers go on           */
  int rate_timer_armed;
  unsigned rate_round;         /* who goes first when they do (fairness)     */
  uv_thread_t thread;
  int index;
  struct cr_engine_s* engine;

  CURLM* multi;
  CURLSH* share;

  cr_command_queue_t commands;
  cr_command_t* command_scratch;
  size_t command_scratch_capacity;
  cr_command_t command_reserve[CR_COMMAND_RESERVE];
  cr_writer_t writer;

  cr_transfer_table_t transfers;
  cr_transfer_t* queue_head[CR_PRIORITY_LEVELS];
  cr_transfer_t* queue_tail[CR_PRIORITY_LEVELS];
  cr_transfer_t* parked;       /* queued but paused by the user             */
  cr_transfer_t* active_head;
  cr_transfer_t* dirty_head;
  int active_count;
  int pending_writes;          /* chunks handed to the writer, all transfers */
  int max_active;
  int sweeping;
  int stopping;
  atomic_int stop_requested;   /* set by cr__loop_request_stop (any thread) */

  /* The event batch of this iteration. */
  cr_event_t* events;
  size_t event_count;
  size_t event_capacity;

  /* Sockets: fd → context, to find stale contexts on fd reuse. */
  struct cr_socket_s** sockets;
  size_t socket_capacity;

  /* Counters read by cr_engine_stats from other threads. */
  atomic_llong stat_queued;
  atomic_llong stat_active;
  atomic_llong stat_completed;
  atomic_llong stat_handles;
};

struct cr_engine_s {
  uint32_t magic;              /* CR_ENGINE_MAGIC until cr_engine_destroy  */
  cr_engine_config_t config;
  char* ca_pem;
  cr_rate_limit_t* rate_limits[CR_MAX_RATE_LIMITS]; /* retained             */
  size_t rate_limit_count;
  int loop_count;
  cr_loop_t* loops;
  atomic_ullong next_sequence;
  atomic_int destroyed;
};

#pragma GCC visibility push(hidden)

/* ---- loop.c: a loop thread ---- */

int cr__loop_start(cr_loop_t* loop, struct cr_engine_s* engine, int index);
/* Any thread: queues a command and wakes the loop. Returns -1 when out of
 * memory; the command is not queued and the caller still owns what it
 * carries. */
int cr__loop_post(cr_loop_t* loop, const cr_command_t* cmd);
/* Any thread: the loop frees everything and ends at its next wake-up. Takes
 * no memory, so it cannot be lost. */
void cr__loop_request_stop(cr_loop_t* loop);
void cr__loop_join(cr_loop_t* loop);
/* Any thread. */
uint64_t cr__now_us(void);
/* Names the calling thread "<prefix>-<index>" (shown by top, perf, gdb). */
void cr__name_thread(const char* prefix, int index);

/* ---- transfer.c: one transfer (loop thread only unless stated) ---- */

/* Any thread: deep-copies a request. Returns NULL with *error set. */
cr_transfer_t* cr__transfer_create(const cr_request_t* request,
                                   cr_error_t* error);
void cr__transfer_free(cr_transfer_t* t);
/* Frees a transfer that was never submitted: its descriptors and borrowed
 * body stay the caller's (neither closed nor released). */
void cr__transfer_free_unsubmitted(cr_transfer_t* t);
/* Releases a borrowed body once (complete() does it before the COMPLETE
 * event is handed over; cr__transfer_free() if still held). */
void cr__transfer_release_borrowed(cr_transfer_t* t);
/* Prepares t->easy for the request. Returns 0 or an error code. */
cr_error_t cr__transfer_setup_easy(cr_transfer_t* t, CURL* easy);

/* ---- Connection options (connection.c) ---- */

/* A deep copy of `options` in one allocation (free() releases it), or NULL
 * when memory is short. */
cr_connection_t* cr__connection_copy(const cr_connection_t* options);
/* Sets t->connection's options on easy; on a refusal returns curl's code
 * and names the option in *option. */
CURLcode cr__connection_apply(cr_transfer_t* t, CURL* easy, const char** option);
/* At the end of t's curl phase, before its handle is released: a transfer
 * of CR_TRUST_ASK that stopped for its server's certificate gets
 * CR_ERR_TRUST_PENDING, the chain and the verdict. */
void cr__connection_finish(cr_transfer_t* t, CURLcode code);
/* Body bytes of the response as they came off the connection (before any
 * content decoding); -1 when curl cannot say. While t->easy is set. */
int64_t cr__transfer_wire_bytes(cr_transfer_t* t);
/* Reads curl's timings into t->metrics. */
void cr__transfer_collect_metrics(cr_transfer_t* t);
cr_error_t cr__error_from_curl(CURLcode code, int after_submit);
/* Whether t offers HTTP/2 (CR_FLAG_HTTP2 on an https URL). */
int cr__transfer_offers_http2(const cr_transfer_t* t);
/* A failure's message when nothing more precise was recorded. */
const char* cr__error_text(cr_error_t error);

/* ---- lifecycle.c: the state machine (loop thread) ---- */

/* Applies one command taken from the loop's queue. */
void cr__apply_command(cr_loop_t* loop, cr_command_t* cmd);
/* A streamed body's transfer waiting for bytes gets curl reading again. */
void cr__supply_wake(cr_transfer_t* t);
/* Moves queued transfers into curl while the loop has room. */
void cr__admit(cr_loop_t* loop);
/* Finishes every transfer curl reports done, then admits. */
void cr__drain(cr_loop_t* loop);
/* socket_action failed: every running transfer fails (CR_ERR_INTERNAL). */
void cr__fail_running(cr_loop_t* loop, const char* why);
/* Takes the writer's finished jobs: completes what they were waiting for
 * and lets disk-paused transfers receive again. */
void cr__process_write_results(cr_loop_t* loop);
/* Hands t's filled chunk to the writer (curl's write callback, finishing). */
void cr__queue_chunk(cr_transfer_t* t);
/* transfer.c: decodes what a body's sink had no room for (write_encoded),
 * as far as the sink has room now. 0: all of it; 1: the sink is full again
 * (t->disk_paused); -1: the transfer fails (t->error says why). */
int cr__transfer_decode_pending(cr_transfer_t* t);
/* transfer.c: at a body's end, fails the transfer whose content coding did
 * not end with it (a truncated gzip stream). */
void cr__transfer_check_decoded_end(cr_transfer_t* t);
/* Loop stop: takes every transfer out of curl and frees them (no COMPLETE
 * is delivered); the writer is stopped in between. */
void cr__abandon_all(cr_loop_t* loop);

/* ---- transfer_table.c: where a loop keeps its transfers (loop thread) ---- */

/* Returns 0, or -1 when out of memory (t is not inserted). */
int cr__table_insert(cr_transfer_table_t* table, cr_transfer_t* t);
cr_transfer_t* cr__table_find(const cr_transfer_table_t* table, uint64_t id);
void cr__table_remove(cr_transfer_table_t* table, cr_transfer_t* t);
/* The waiting queues, one per priority level, first in first out. */
void cr__waiting_push(cr_loop_t* loop, cr_transfer_t* t);
void cr__waiting_remove(cr_loop_t* loop, cr_transfer_t* t);
/* Unlinks and returns the first transfer of the highest non-empty level. */
cr_transfer_t* cr__waiting_pop(cr_loop_t* loop);
/* Queued transfers paused by the user wait here, out of the queues. */
void cr__parked_push(cr_loop_t* loop, cr_transfer_t* t);
void cr__parked_remove(cr_loop_t* loop, cr_transfer_t* t);
/* Transfers in curl (ACTIVE). */
void cr__running_push(cr_loop_t* loop, cr_transfer_t* t);
void cr__running_remove(cr_loop_t* loop, cr_transfer_t* t);

/* ---- sockets.c: curl <-> libuv (loop thread) ---- */

/* Sets the multi handle's socket and timer callbacks and initializes the
 * handles they drive (the curl timer and the kick). */
void cr__sockets_init(cr_loop_t* loop);
/* curl_multi_socket_action on fd (CURL_SOCKET_TIMEOUT: timers), then
 * cr__drain(). Does nothing once the loop is stopping. */
void cr__drive(cr_loop_t* loop, curl_socket_t fd, int flags);
/* Runs socket_action(CURL_SOCKET_TIMEOUT) in the next loop pass. */
void cr__kick(cr_loop_t* loop);
/* CURLOPT_OPENSOCKETFUNCTION: curl's socket, close-on-exec. */
curl_socket_t cr__open_socket(void* context, curlsocktype purpose, struct curl_sockaddr* address);
/* CURLOPT_CLOSESOCKETFUNCTION: stops and closes the fd's poll first. */
int cr__close_socket(void* loop, curl_socket_t fd);
/* Closes every handle of the loop (poll handles with their contexts). */
void cr__close_handles(cr_loop_t* loop);

/* ---- events.c: the event batch (loop thread) ---- */

/* Allocates the batch (CR_EVENT_BATCH events; it doubles when full).
 * Returns 0, or -1 when out of memory. Loop start. */
int cr__events_init(cr_loop_t* loop);

/* The RESPONSE event, once, when the final response's headers are in; sets
 * t->held as the request's flags ask. */
void cr__emit_response(cr_transfer_t* t);
void cr__emit_informational(cr_transfer_t* t); /* a 1xx head other than 100/101 */
/* The last events of a transfer: its RESPONSE if none was emitted (never
 * held), its last DATA, and COMPLETE with its outcome. */
void cr__emit_last(cr_transfer_t* t);
/* Schedules a PROGRESS (and the DATA gathered so far) for the next flush. */
void cr__mark_dirty(cr_transfer_t* t);
/* The prepare callback: hands the batch over once per loop iteration. */
void cr__on_flush(uv_prepare_t* prepare);
/* Loop stop: frees the transfers the dirty list still holds and every
 * undelivered event's payload. */
void cr__events_discard(cr_loop_t* loop);

/* engine.c */
extern atomic_llong cr__leaked_loops;
/* COURIER_ENGINE_TRACE=1 in the environment of the first cr_engine_create(). */
extern int cr__trace;

#pragma GCC visibility pop

#endif /* COURIER_INTERNAL_H */
