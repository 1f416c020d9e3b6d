/*
 * The command queue: producers on any thread push under a mutex; the loop
 * thread swaps the whole vector out in one step and applies it unlocked
 * (lifecycle.c). When the vector cannot grow (out of memory), a command
 * that cannot report failure (cancel, pause, resume, decide: their API
 * functions return nothing) goes to a small fixed reserve instead, and
 * every later one follows it there until the loop takes them, so that
 * order is kept; a submit is refused instead (cr_engine_submit reports
 * CR_ERR_INTERNAL). A command is lost only when the reserve is full too.
 *
 * Push: any thread; take: the loop thread; init and destroy: the thread
 * that starts or joins the loop.
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
  if (queue->reserve_count > 0 && cmd->kind != CR_CMD_SUBMIT)
    goto reserve; /* behind the commands already there */
  if (queue->count == queue->capacity) {
    size_t capacity = queue->capacity ? queue->capacity * 2 : 64;
    cr_command_t* items = cr__realloc(queue->items, capacity * sizeof(*items));
    if (items == NULL) {
      if (cmd->kind != CR_CMD_SUBMIT)
        goto reserve;
      result = -1;
      goto out;
    }
    queue->items = items;
    queue->capacity = capacity;
  }
  queue->items[queue->count++] = *cmd;
  goto out;
reserve:
  if (queue->reserve_count < CR_COMMAND_RESERVE)
    queue->reserve[queue->reserve_count++] = *cmd;
  else
    result = -1;
out:
  pthread_mutex_unlock(&queue->mutex);
  return result;
}

size_t cr__command_queue_take(cr_command_queue_t* queue, cr_command_t** items,
                              size_t* capacity, cr_command_t* reserve,
                              size_t* reserve_count) {
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
  *reserve_count = queue->reserve_count;
  if (queue->reserve_count > 0)
    memcpy(reserve, queue->reserve, queue->reserve_count * sizeof(*reserve));
  queue->reserve_count = 0;
  pthread_mutex_unlock(&queue->mutex);

  *items = swap_items;
  *capacity = swap_capacity;
  return count;
}
