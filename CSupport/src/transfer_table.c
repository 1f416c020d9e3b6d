/*
 * Where a loop keeps its transfers: the id table (id → transfer, for the
 * commands that name a transfer by id), the waiting queues (one per
 * priority level), the parked list (queued transfers paused by the user)
 * and the running list (transfers in curl). Pure bookkeeping: nothing here
 * changes a transfer's state (lifecycle.c does).
 *
 * Loop thread only.
 */
#include <stdlib.h>

#include "internal.h"

/* ---- The id table ---- */

static size_t table_slot(const cr_transfer_table_t* table, uint64_t id) {
  return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 20) & (table->bucket_count - 1);
}

int cr__table_insert(cr_transfer_table_t* table, cr_transfer_t* t) {
  size_t slot;
  if (table->count + 1 > table->bucket_count) {
    size_t count = table->bucket_count ? table->bucket_count * 2 : 256;
    cr_transfer_t** buckets = cr__calloc(count, sizeof(*buckets));
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

cr_transfer_t* cr__table_find(const cr_transfer_table_t* table, uint64_t id) {
  cr_transfer_t* t;
  if (table->bucket_count == 0)
    return NULL;
  for (t = table->buckets[table_slot(table, id)]; t; t = t->hash_next) {
    if (t->id == id) {
      /* A transfer leaves the table before it becomes DONE. */
      CR_ASSERT(t->magic == CR_TRANSFER_MAGIC && t->state != CR_TRANSFER_DONE);
      return t;
    }
  }
  return NULL;
}

void cr__table_remove(cr_transfer_table_t* table, cr_transfer_t* t) {
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

/* ---- The lists: the waiting queues (one per priority level), the parked
 * list and the running list. They share list_prev/list_next: a transfer is
 * in at most one of them. ---- */

static void list_append(cr_transfer_t** head, cr_transfer_t** tail,
                        cr_transfer_t* t) {
  t->list_next = NULL;
  t->list_prev = *tail;
  if (*tail)
    (*tail)->list_next = t;
  else
    *head = t;
  *tail = t;
}

static void list_unlink(cr_transfer_t** head, cr_transfer_t** tail,
                        cr_transfer_t* t) {
  if (t->list_prev)
    t->list_prev->list_next = t->list_next;
  else
    *head = t->list_next;
  if (t->list_next)
    t->list_next->list_prev = t->list_prev;
  else if (tail)
    *tail = t->list_prev;
  t->list_prev = t->list_next = NULL;
}

static void list_push_front(cr_transfer_t** head, cr_transfer_t* t) {
  t->list_prev = NULL;
  t->list_next = *head;
  if (*head)
    (*head)->list_prev = t;
  *head = t;
}

void cr__waiting_push(cr_loop_t* loop, cr_transfer_t* t) {
  list_append(&loop->queue_head[t->priority_level],
              &loop->queue_tail[t->priority_level], t);
}

void cr__waiting_remove(cr_loop_t* loop, cr_transfer_t* t) {
  list_unlink(&loop->queue_head[t->priority_level],
              &loop->queue_tail[t->priority_level], t);
}

cr_transfer_t* cr__waiting_pop(cr_loop_t* loop) {
  for (int level = CR_PRIORITY_LEVELS - 1; level >= 0; level--) {
    cr_transfer_t* t = loop->queue_head[level];
    if (t) {
      list_unlink(&loop->queue_head[level], &loop->queue_tail[level], t);
      return t;
    }
  }
  return NULL;
}

void cr__parked_push(cr_loop_t* loop, cr_transfer_t* t) {
  list_push_front(&loop->parked, t);
}

void cr__parked_remove(cr_loop_t* loop, cr_transfer_t* t) {
  list_unlink(&loop->parked, NULL, t);
}

void cr__running_push(cr_loop_t* loop, cr_transfer_t* t) {
  list_push_front(&loop->active_head, t);
}

void cr__running_remove(cr_loop_t* loop, cr_transfer_t* t) {
  list_unlink(&loop->active_head, NULL, t);
}
