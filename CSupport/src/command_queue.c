/*
 * The command queue: producers on any thread push under a mutex; the loop
 * thread swaps the whole vector out in one step and applies it unlocked
 * (lifecycle.c). Push: any thread; take: the loop thread; init and
 * destroy: the thread that starts or joins the loop.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int cr__command_queue_init(cr_command_queue_t* queue) {
  memset(queue, 0, sizeof(*queue));
  return pthread_mutex_init(&queue->mutex, NULL) == 0 ? 0 : -1;
}

void cr__command_queue_destroy(cr_command_queue_t* queue) {
  pthread_mutex_destroy(&queue->mutex);
  free(queue->items);
  queue->items = NULL;
  queue->count = queue->capacity = 0;
}

int cr__command_queue_push(cr_command_queue_t* queue, const cr_command_t* cmd) {
  int result = 0;
  pthread_mutex_lock(&queue->mutex);
  if (queue->count == queue->capacity) {
    size_t capacity = queue->capacity ? queue->capacity * 2 : 64;
    cr_command_t* items = cr__realloc(queue->items, capacity * sizeof(*items));
    if (items == NULL) {
      result = -1;
      goto out;
    }
    queue->items = items;
    queue->capacity = capacity;
  }
  queue->items[queue->count++] = *cmd;
out:
  pthread_mutex_unlock(&queue->mutex);
  return result;
}

size_t cr__command_queue_take(cr_command_queue_t* queue, cr_command_t** items,
                             size_t* capacity) {
  size_t count;
  cr_command_t* swap_items;
  size_t swap_capacity;

  pthread_mutex_lock(&queue->mutex);
  count = queue->count;
  swap_items = queue->items;
  swap_capacity = queue->capacity;
  /* The caller's (empty) vector becomes the queue's next one. */
  queue->items = *items;
  queue->capacity = *capacity;
  queue->count = 0;
  pthread_mutex_unlock(&queue->mutex);

  *items = swap_items;
  *capacity = swap_capacity;
  return count;
}
