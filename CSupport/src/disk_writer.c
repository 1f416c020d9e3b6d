/*
 * The disk writer: one thread per loop pwrite()s download chunks so that
 * the loop thread keeps receiving while the disk is busy. Jobs of one
 * transfer are written in order; after a failed job the transfer's later
 * jobs are skipped, so what is on disk stays a contiguous prefix.
 *
 * writer_main() is the writer thread; cr__writer_submit() and
 * cr__writer_take_done() run on the loop thread; start and stop on the
 * thread that starts the loop and on the loop thread at its stop.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

static int write_fully(int fd, const char* buffer, size_t length,
                       int64_t offset) {
  while (length > 0) {
    ssize_t n = pwrite(fd, buffer, length, (off_t)offset);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    if (n == 0)
      return EIO;
    buffer += n;
    length -= (size_t)n;
    offset += n;
  }
  return 0;
}

/* Adds a written chunk to its transfer's digest: the file's bytes before it
 * first (a resumed download's prefix, read once), from scratch when the
 * chunk starts before what was hashed (the file started over). */
static int hash_chunk(const cr_write_job_t* job) {
  cr_running_t* run = job->transfer->run;
  int result;
  if (run->hash == NULL)
    return 0;
  if (job->offset < run->hashed) {
    cr__sha2_init(run->hash, run->hash->kind);
    run->hashed = 0;
  }
  result = cr__sha2_update_from_file(run->hash, job->fd, run->hashed,
                                     job->offset);
  if (result != 0)
    return result;
  cr__sha2_update(run->hash, job->buffer, job->length);
  run->hashed = job->offset + (int64_t)job->length;
  return 0;
}

static void* writer_main(void* arg) {
  cr_writer_t* writer = arg;
  cr__name_thread("courier-write", writer->index);
  for (;;) {
    cr_write_job_t* job;
    pthread_mutex_lock(&writer->mutex);
    while (writer->head == NULL && !writer->stopping)
      pthread_cond_wait(&writer->cond, &writer->mutex);
    job = writer->head;
    if (job == NULL) {
      pthread_mutex_unlock(&writer->mutex);
      break; /* stopping and drained */
    }
    writer->head = job->next;
    if (writer->head == NULL)
      writer->tail = NULL;
    pthread_mutex_unlock(&writer->mutex);

    job->next = NULL;
    if (atomic_load(&job->transfer->run->writer_failed)) {
      job->result_errno = ECANCELED;
    } else {
      if (writer->delay_us > 0)
        usleep((useconds_t)writer->delay_us); /* a slow disk (tests) */
      job->result_errno =
          write_fully(job->fd, job->buffer, job->length, job->offset);
      if (job->result_errno == 0)
        job->result_errno = hash_chunk(job);
      if (job->result_errno != 0)
        atomic_store(&job->transfer->run->writer_failed, 1);
    }

    pthread_mutex_lock(&writer->done_mutex);
    if (writer->done_tail)
      writer->done_tail->next = job;
    else
      writer->done_head = job;
    writer->done_tail = job;
    pthread_mutex_unlock(&writer->done_mutex);
    uv_async_send(writer->wake);
  }
  return NULL;
}

int cr__writer_start(cr_writer_t* writer, uv_async_t* wake, int index,
                     int delay_us) {
  writer->index = index;
  writer->delay_us = delay_us > 0 ? delay_us : 0;
  writer->head = writer->tail = NULL;
  writer->done_head = writer->done_tail = NULL;
  writer->stopping = 0;
  writer->wake = wake;
  if (pthread_mutex_init(&writer->mutex, NULL) != 0)
    return -1;
  if (pthread_mutex_init(&writer->done_mutex, NULL) != 0) {
    pthread_mutex_destroy(&writer->mutex);
    return -1;
  }
  if (pthread_cond_init(&writer->cond, NULL) != 0) {
    pthread_mutex_destroy(&writer->mutex);
    pthread_mutex_destroy(&writer->done_mutex);
    return -1;
  }
  if (pthread_create(&writer->thread, NULL, writer_main, writer) != 0) {
    pthread_cond_destroy(&writer->cond);
    pthread_mutex_destroy(&writer->mutex);
    pthread_mutex_destroy(&writer->done_mutex);
    return -1;
  }
  return 0;
}

void cr__writer_submit(cr_writer_t* writer, cr_write_job_t* job) {
  job->next = NULL;
  pthread_mutex_lock(&writer->mutex);
  if (writer->tail)
    writer->tail->next = job;
  else
    writer->head = job;
  writer->tail = job;
  pthread_cond_signal(&writer->cond);
  pthread_mutex_unlock(&writer->mutex);
}

cr_write_job_t* cr__writer_take_done(cr_writer_t* writer) {
  cr_write_job_t* jobs;
  pthread_mutex_lock(&writer->done_mutex);
  jobs = writer->done_head;
  writer->done_head = writer->done_tail = NULL;
  pthread_mutex_unlock(&writer->done_mutex);
  return jobs;
}

cr_write_job_t* cr__writer_stop(cr_writer_t* writer) {
  cr_write_job_t* done;
  pthread_mutex_lock(&writer->mutex);
  writer->stopping = 1;
  pthread_cond_signal(&writer->cond);
  pthread_mutex_unlock(&writer->mutex);
  pthread_join(writer->thread, NULL);
  done = cr__writer_take_done(writer);
  pthread_cond_destroy(&writer->cond);
  pthread_mutex_destroy(&writer->mutex);
  pthread_mutex_destroy(&writer->done_mutex);
  return done;
}
