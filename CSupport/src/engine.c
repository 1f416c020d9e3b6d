/*
 * The engine: a set of loops, and the thread-safe entry points that turn
 * calls into commands for them. Every entry point checks its engine handle
 * first: NULL, or a pointer that is not a live engine (its magic number is
 * wrong: destroyed, or not an engine at all), is refused or ignored instead
 * of crashing where the memory can still be read. A destroyed engine's
 * memory may have been reused or unmapped, so this is a best effort, not a
 * guarantee (and AddressSanitizer still reports such a call).
 *
 * Runs on the callers' threads; cr_engine_destroy() joins the loops.
 */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

atomic_llong cr__leaked_loops;
int cr__trace;

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static int global_ok;

static void global_init(void) {
  /* With CURLOPT_NOSIGNAL, a peer that closes mid-write raises SIGPIPE
   * unless the process ignores it (libcurl-thread(3)). */
  struct sigaction current;
  if (sigaction(SIGPIPE, NULL, &current) == 0 && current.sa_handler == SIG_DFL)
    signal(SIGPIPE, SIG_IGN);
  global_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  /* Read once: every transfer's state changes on stderr (lifecycle.c). */
  const char* trace = getenv("COURIER_ENGINE_TRACE");
  cr__trace = trace != NULL && strcmp(trace, "1") == 0;
}

static int engine_valid(const cr_engine_t* engine) {
  return engine != NULL && engine->magic == CR_ENGINE_MAGIC;
}

static void destroy_loops(cr_engine_t* engine, int started) {
  for (int i = 0; i < started; i++)
    cr__loop_request_stop(&engine->loops[i]);
  for (int i = 0; i < started; i++)
    cr__loop_join(&engine->loops[i]);
  free(engine->loops);
  free(engine->ca_pem);
  for (size_t i = 0; i < engine->rate_limit_count; i++)
    cr_rate_limit_release(engine->rate_limits[i]);
  engine->magic = 0;
  free(engine);
}

cr_engine_t* cr_engine_create(const cr_engine_config_t* config,
                              const char** error) {
  cr_engine_t* engine;
  int started = 0;
  const char* ignored;

  if (error == NULL)
    error = &ignored;
  if (config == NULL) {
    *error = "no configuration";
    return NULL;
  }
  pthread_once(&global_once, global_init);
  if (!global_ok) {
    *error = "curl_global_init failed";
    return NULL;
  }
  engine = cr__calloc(1, sizeof(*engine));
  if (engine == NULL) {
    *error = "out of memory";
    return NULL;
  }
  engine->config = *config;
  engine->loop_count = config->loop_count > 0 ? config->loop_count : 1;
  /* Limits are split over the loops without rounding up, so that their sum
   * is exact: never more loops than the smallest limit allows. */
  if (config->max_active_transfers > 0 &&
      engine->loop_count > config->max_active_transfers)
    engine->loop_count = config->max_active_transfers;
  if (config->max_host_connections > 0 &&
      engine->loop_count > config->max_host_connections)
    engine->loop_count = config->max_host_connections;
  if (config->ca_pem && config->ca_pem_length > 0) {
    engine->ca_pem = cr__malloc(config->ca_pem_length);
    if (engine->ca_pem == NULL) {
      free(engine);
      *error = "out of memory";
      return NULL;
    }
    memcpy(engine->ca_pem, config->ca_pem, config->ca_pem_length);
  }
  engine->config.ca_pem = engine->ca_pem;
  for (size_t i = 0; i < config->rate_limit_count && i < CR_MAX_RATE_LIMITS; i++) {
    if (config->rate_limits[i] == NULL)
      continue;
    cr__rate_limit_retain(config->rate_limits[i]);
    engine->rate_limits[engine->rate_limit_count++] = config->rate_limits[i];
  }
  engine->config.rate_limits = NULL;
  engine->config.rate_limit_count = 0;
  atomic_init(&engine->next_sequence, 1);
  atomic_init(&engine->destroyed, 0);
  engine->loops = cr__calloc((size_t)engine->loop_count, sizeof(cr_loop_t));
  if (engine->loops == NULL) {
    free(engine->ca_pem);
    free(engine);
    *error = "out of memory";
    return NULL;
  }
  for (; started < engine->loop_count; started++) {
    if (cr__loop_start(&engine->loops[started], engine, started) != 0) {
      destroy_loops(engine, started);
      *error = "cannot start a loop thread";
      return NULL;
    }
  }
  engine->magic = CR_ENGINE_MAGIC;
  return engine;
}

static void* reap(void* arg) {
  cr_engine_t* engine = arg;
  destroy_loops(engine, engine->loop_count);
  return NULL;
}

void cr_engine_destroy(cr_engine_t* engine) {
  uv_thread_t self;
  pthread_t reaper;
  if (!engine_valid(engine) || atomic_exchange(&engine->destroyed, 1))
    return;
  self = uv_thread_self();
  for (int i = 0; i < engine->loop_count; i++) {
    if (uv_thread_equal(&self, &engine->loops[i].thread)) {
      /* A loop cannot join itself: join from a detached thread. */
      if (pthread_create(&reaper, NULL, reap, engine) == 0) {
        pthread_detach(reaper);
        return;
      }
      break; /* no thread: leak rather than deadlock */
    }
  }
  destroy_loops(engine, engine->loop_count);
}

static cr_loop_t* pick_loop(cr_engine_t* engine) {
  cr_loop_t* best = &engine->loops[0];
  long long best_load = LLONG_MAX;
  for (int i = 0; i < engine->loop_count; i++) {
    cr_loop_t* loop = &engine->loops[i];
    long long load = atomic_load(&loop->stat_queued) + atomic_load(&loop->stat_active);
    if (load < best_load) {
      best = loop;
      best_load = load;
    }
  }
  return best;
}

uint64_t cr_engine_submit(cr_engine_t* engine, const cr_request_t* request,
                          cr_error_t* error) {
  cr_error_t ignored;
  cr_transfer_t* t;
  cr_loop_t* loop;
  cr_command_t cmd;

  if (error == NULL)
    error = &ignored;
  if (!engine_valid(engine) || request == NULL ||
      atomic_load(&engine->destroyed)) {
    *error = CR_ERR_INTERNAL;
    return 0;
  }
  t = cr__transfer_create(request, error);
  if (t == NULL)
    return 0;
  loop = pick_loop(engine);
  t->id = (atomic_fetch_add(&engine->next_sequence, 1) << 8) | (uint64_t)loop->index;
  memset(&cmd, 0, sizeof(cmd));
  cmd.kind = CR_CMD_SUBMIT;
  cmd.transfer = t;
  cmd.transfer_id = t->id;
  cmd.fd = -1;
  atomic_fetch_add(&loop->stat_queued, 1);
  if (cr__loop_post(loop, &cmd) != 0) {
    atomic_fetch_sub(&loop->stat_queued, 1);
    cr__transfer_free_unsubmitted(t);
    *error = CR_ERR_INTERNAL;
    return 0;
  }
  return cmd.transfer_id;
}

static void post(cr_engine_t* engine, uint64_t transfer, cr_command_kind_t kind,
                 cr_decision_t decision, int fd) {
  cr_command_t cmd;
  int index = (int)(transfer & 0xff);
  if (!engine_valid(engine) || transfer == 0 || index >= engine->loop_count ||
      atomic_load(&engine->destroyed)) {
    if (fd >= 0)
      close(fd);
    return;
  }
  memset(&cmd, 0, sizeof(cmd));
  cmd.kind = kind;
  cmd.transfer_id = transfer;
  cmd.decision = decision;
  cmd.fd = fd;
  /* Out of memory with the queue's reserve full too: the command is lost,
   * as for a dead id. */
  if (cr__loop_post(&engine->loops[index], &cmd) != 0 && fd >= 0)
    close(fd);
}

void cr_transfer_cancel(cr_engine_t* engine, uint64_t transfer) {
  post(engine, transfer, CR_CMD_CANCEL, CR_DECIDE_ALLOW, -1);
}

void cr_transfer_pause(cr_engine_t* engine, uint64_t transfer) {
  post(engine, transfer, CR_CMD_PAUSE, CR_DECIDE_ALLOW, -1);
}

void cr_transfer_resume(cr_engine_t* engine, uint64_t transfer) {
  post(engine, transfer, CR_CMD_RESUME, CR_DECIDE_ALLOW, -1);
}

void cr_transfer_decide(cr_engine_t* engine, uint64_t transfer,
                        cr_decision_t decision, int fd) {
  post(engine, transfer, CR_CMD_DECIDE, decision,
       decision == CR_DECIDE_TO_FILE ? fd : -1);
}

int cr_transfer_supply(cr_engine_t* engine, uint64_t transfer,
                       const void* bytes, size_t length, int end) {
  cr_command_t cmd;
  cr_supply_t* supply;
  int index = (int)(transfer & 0xff);
  if (!engine_valid(engine) || transfer == 0 || index >= engine->loop_count ||
      atomic_load(&engine->destroyed) || (bytes == NULL && length > 0))
    return -1;
  supply = cr__malloc(sizeof(*supply) + length);
  if (supply == NULL)
    return -1;
  supply->next = NULL;
  supply->length = length;
  supply->end = end != 0;
  if (length > 0)
    memcpy(supply->bytes, bytes, length);
  memset(&cmd, 0, sizeof(cmd));
  cmd.kind = CR_CMD_SUPPLY;
  cmd.transfer_id = transfer;
  cmd.fd = -1;
  cmd.supply = supply;
  if (cr__loop_post(&engine->loops[index], &cmd) != 0) {
    free(supply);
    return -1;
  }
  return 0;
}

void cr_engine_stats(cr_engine_t* engine, cr_engine_stats_t* stats) {
  if (stats == NULL)
    return;
  memset(stats, 0, sizeof(*stats));
  if (!engine_valid(engine))
    return;
  for (int i = 0; i < engine->loop_count; i++) {
    cr_loop_t* loop = &engine->loops[i];
    stats->queued += atomic_load(&loop->stat_queued);
    stats->active += atomic_load(&loop->stat_active);
    stats->completed += atomic_load(&loop->stat_completed);
    stats->open_handles += atomic_load(&loop->stat_handles);
  }
}

int64_t cr_leaked_loop_count(void) { return atomic_load(&cr__leaked_loops); }

const char* cr_curl_version(void) {
  curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
  return info ? info->version : "unknown";
}
