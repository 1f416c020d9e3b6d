/*
 * Shared receive-rate limits: a token bucket any number of transfers, loops
 * and engines draw from (a session's limit, courierd's). A transfer takes
 * the bytes curl hands it when every bucket it draws from has tokens left
 * (a bucket may go into debt by one buffer); otherwise on_write pauses it
 * and its loop's rate timer lets it go on once the debt is paid. Any
 * thread; each bucket has its own mutex.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

struct cr_rate_limit_s {
  pthread_mutex_t mutex;
  atomic_int references;
  int64_t rate;             /* bytes per second; 0: unlimited             */
  double tokens;            /* bytes that may pass now; < 0: in debt      */
  uint64_t refilled_us;
};

/* The most a bucket saves up while nothing is received: a quarter of a
 * second's bytes (at least 16 KiB), so that a pause does not buy a long
 * burst, while a loop thread the machine keeps waiting a little still gets
 * its share when it runs. */
static double burst(int64_t rate) {
  double quarter = (double)rate / 4.0;
  return quarter > 16384.0 ? quarter : 16384.0;
}

cr_rate_limit_t* cr_rate_limit_create(int64_t bytes_per_second) {
  cr_rate_limit_t* limit = cr__calloc(1, sizeof(*limit));
  if (limit == NULL)
    return NULL;
  if (pthread_mutex_init(&limit->mutex, NULL) != 0) {
    free(limit);
    return NULL;
  }
  atomic_init(&limit->references, 1);
  limit->rate = bytes_per_second > 0 ? bytes_per_second : 0;
  limit->tokens = limit->rate > 0 ? burst(limit->rate) : 0;
  limit->refilled_us = cr__now_us();
  return limit;
}

void cr_rate_limit_set(cr_rate_limit_t* limit, int64_t bytes_per_second) {
  if (limit == NULL)
    return;
  pthread_mutex_lock(&limit->mutex);
  limit->rate = bytes_per_second > 0 ? bytes_per_second : 0;
  limit->tokens = limit->rate > 0 ? burst(limit->rate) : 0;
  limit->refilled_us = cr__now_us();
  pthread_mutex_unlock(&limit->mutex);
}

void cr__rate_limit_retain(cr_rate_limit_t* limit) {
  atomic_fetch_add(&limit->references, 1);
}

void cr_rate_limit_release(cr_rate_limit_t* limit) {
  if (limit == NULL || atomic_fetch_sub(&limit->references, 1) != 1)
    return;
  pthread_mutex_destroy(&limit->mutex);
  free(limit);
}

/* With the mutex held: the tokens earned since the last refill. */
static void refill(cr_rate_limit_t* limit, uint64_t now) {
  if (now > limit->refilled_us) {
    double earned = (double)(now - limit->refilled_us) * (double)limit->rate / 1e6;
    double cap = burst(limit->rate);
    limit->tokens = limit->tokens + earned > cap ? cap : limit->tokens + earned;
  }
  limit->refilled_us = now;
}

uint64_t cr__rate_limits_take(cr_rate_limit_t* const* limits, size_t count,
                              size_t length) {
  uint64_t now = cr__now_us();
  uint64_t wait_ms = 0;
  size_t i;
  for (i = 0; i < count; i++) {
    cr_rate_limit_t* limit = limits[i];
    pthread_mutex_lock(&limit->mutex);
    if (limit->rate > 0) {
      refill(limit, now);
      if (limit->tokens <= 0) {
        /* Until the debt is paid, and at least a millisecond. */
        uint64_t ms = (uint64_t)(-limit->tokens * 1000.0 / (double)limit->rate) + 1;
        if (ms > wait_ms)
          wait_ms = ms;
      }
    }
    pthread_mutex_unlock(&limit->mutex);
  }
  if (wait_ms > 0)
    return wait_ms;
  for (i = 0; i < count; i++) {
    cr_rate_limit_t* limit = limits[i];
    pthread_mutex_lock(&limit->mutex);
    if (limit->rate > 0)
      limit->tokens -= (double)length;
    pthread_mutex_unlock(&limit->mutex);
  }
  return 0;
}
