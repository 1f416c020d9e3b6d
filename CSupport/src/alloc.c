/*
 * The allocator indirection: malloc, calloc, realloc and strdup for the
 * whole engine, with a test-only way to fail one chosen allocation
 * (alloc_torture.h). Runs on every thread that allocates: the callers of
 * cr_engine_create()/cr_engine_submit()/cr_transfer_*(), the loop threads.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "alloc_torture.h"

static atomic_int armed;
static atomic_long counted;
static atomic_long fail_at;
static atomic_int fail_after;
static atomic_int failed;

/* 1 when this allocation is to fail. */
static int fails(void) {
  long n;
  if (!atomic_load_explicit(&armed, memory_order_relaxed))
    return 0;
  n = atomic_fetch_add(&counted, 1) + 1;
  if (n != atomic_load(&fail_at) &&
      !(atomic_load(&fail_after) && n > atomic_load(&fail_at)))
    return 0;
  atomic_store(&failed, 1);
  return 1;
}

void* cr__malloc(size_t size) { return fails() ? NULL : malloc(size); }

void* cr__calloc(size_t count, size_t size) {
  return fails() ? NULL : calloc(count, size);
}

void* cr__realloc(void* block, size_t size) {
  return fails() ? NULL : realloc(block, size);
}

char* cr__strdup(const char* s) {
  return s ? cr__strndup(s, strlen(s)) : NULL;
}

char* cr__strndup(const char* s, size_t n) {
  char* copy = cr__malloc(n + 1);
  if (copy) {
    memcpy(copy, s, n);
    copy[n] = '\0';
  }
  return copy;
}

void cr__alloc_fail_at(long n, int and_after) {
  atomic_store(&armed, 0);
  atomic_store(&counted, 0);
  atomic_store(&failed, 0);
  atomic_store(&fail_at, n);
  atomic_store(&fail_after, n > 0 && and_after);
  atomic_store(&armed, 1);
}

long cr__alloc_disarm(int* did_fail) {
  atomic_store(&armed, 0);
  if (did_fail)
    *did_fail = atomic_load(&failed);
  return atomic_load(&counted);
}
