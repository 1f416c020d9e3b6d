/* Content decoding in the engine (RFC 9110 §8.4): gzip and deflate over
 * zlib, br and zstd over the system's libbrotlidec and libzstd, loaded at
 * run time (libcurl links both, so they are wherever it is).
 *
 * Why not libcurl's own decoding: libcurl 7.88 cannot keep decoded bytes
 * across a pause asked from its write callback. What one read of the socket
 * decodes to goes into a buffer capped at 64 MiB, and a gzip body of a high
 * ratio (a log of repeated lines: 1,000:1) passes that within one 128 KiB
 * read: the transfer fails with "Out of memory". Here libcurl hands the body
 * as it came (CURLOPT_HTTP_CONTENT_DECODING 0), which it can keep across a
 * pause, and the engine decodes only as much as its sink has room for
 * (transfer.c, write_encoded). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "internal.h"

/* ---- br and zstd, loaded at run time (their stable C ABIs) ---- */

typedef void* (*brotli_create_fn)(void*, void*, void*);
typedef int (*brotli_stream_fn)(void*, size_t*, const uint8_t**, size_t*,
                                uint8_t**, size_t*);
typedef void (*brotli_destroy_fn)(void*);
typedef struct {
  void* dst;
  size_t size;
  size_t pos;
} zstd_out_t;
typedef struct {
  const void* src;
  size_t size;
  size_t pos;
} zstd_in_t;
typedef void* (*zstd_create_fn)(void);
typedef size_t (*zstd_stream_fn)(void*, zstd_out_t*, zstd_in_t*);
typedef unsigned (*zstd_is_error_fn)(size_t);
typedef size_t (*zstd_free_fn)(void*);

static struct {
  brotli_create_fn brotli_create;
  brotli_stream_fn brotli_stream;
  brotli_destroy_fn brotli_destroy;
  zstd_create_fn zstd_create;
  zstd_stream_fn zstd_stream;
  zstd_is_error_fn zstd_is_error;
  zstd_free_fn zstd_free;
  char offer[40];
} libraries;
static pthread_once_t libraries_once = PTHREAD_ONCE_INIT;

static void load_libraries(void) {
  void* brotli = dlopen("libbrotlidec.so.1", RTLD_NOW | RTLD_LOCAL);
  void* zstd = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
  strcpy(libraries.offer, "gzip, deflate");
  if (brotli) {
    libraries.brotli_create = (brotli_create_fn)dlsym(brotli, "BrotliDecoderCreateInstance");
    libraries.brotli_stream = (brotli_stream_fn)dlsym(brotli, "BrotliDecoderDecompressStream");
    libraries.brotli_destroy = (brotli_destroy_fn)dlsym(brotli, "BrotliDecoderDestroyInstance");
    if (libraries.brotli_create && libraries.brotli_stream && libraries.brotli_destroy)
      strcat(libraries.offer, ", br");
    else
      libraries.brotli_create = NULL;
  }
  if (zstd) {
    libraries.zstd_create = (zstd_create_fn)dlsym(zstd, "ZSTD_createDStream");
    libraries.zstd_stream = (zstd_stream_fn)dlsym(zstd, "ZSTD_decompressStream");
    libraries.zstd_is_error = (zstd_is_error_fn)dlsym(zstd, "ZSTD_isError");
    libraries.zstd_free = (zstd_free_fn)dlsym(zstd, "ZSTD_freeDStream");
    if (libraries.zstd_create && libraries.zstd_stream && libraries.zstd_is_error &&
        libraries.zstd_free)
      strcat(libraries.offer, ", zstd");
    else
      libraries.zstd_create = NULL;
  }
}

const char* cr__decoder_offer(void) {
  pthread_once(&libraries_once, load_libraries);
  return libraries.offer;
}

/* ---- One coding ---- */

typedef enum { CODING_GZIP, CODING_DEFLATE, CODING_BR, CODING_ZSTD } coding_t;

/* The bytes between two stages: what the earlier one produced and the later
 * one has not taken. */
#define STAGE_BUFFER_SIZE (64 * 1024)

typedef struct {
  coding_t coding;
  int ended;         /* its stream ended: later input is ignored         */
  int raw_deflate;   /* deflate without the zlib wrapper (some servers)  */
  int started;       /* inflate produced or consumed something           */
  int mid_frame;     /* zstd: inside a frame (not at a frame's end)      */
  z_stream zlib;
  void* state;       /* br or zstd                                       */
  unsigned char* buffer; /* its input, from the stage before (not stage 0) */
  size_t buffer_start, buffer_end;
} stage_t;

struct cr_decoder_s {
  stage_t stages[CR_MAX_CODINGS]; /* in decoding order: the last listed first */
  int count;
};

static int stage_open(stage_t* s, coding_t coding) {
  memset(s, 0, sizeof(*s));
  s->coding = coding;
  switch (coding) {
  case CODING_GZIP:
    return inflateInit2(&s->zlib, 15 + 16) == Z_OK ? 0 : -1;
  case CODING_DEFLATE:
    return inflateInit2(&s->zlib, 15) == Z_OK ? 0 : -1;
  case CODING_BR:
    s->state = libraries.brotli_create(NULL, NULL, NULL);
    return s->state ? 0 : -1;
  case CODING_ZSTD:
    s->state = libraries.zstd_create();
    return s->state ? 0 : -1;
  }
  return -1;
}

static void stage_close(stage_t* s) {
  switch (s->coding) {
  case CODING_GZIP:
  case CODING_DEFLATE:
    inflateEnd(&s->zlib);
    break;
  case CODING_BR:
    if (s->state)
      libraries.brotli_destroy(s->state);
    break;
  case CODING_ZSTD:
    if (s->state)
      libraries.zstd_free(s->state);
    break;
  }
  free(s->buffer);
}

/* Decodes from in/in_length into out/capacity; advances *consumed and
 * *produced. 0, or -1 for corrupt data. */
static int stage_step(stage_t* s, const unsigned char* in, size_t in_length,
                      unsigned char* out, size_t capacity, size_t* consumed,
                      size_t* produced) {
  *consumed = *produced = 0;
  if (s->ended) {
    *consumed = in_length; /* after the end: ignored, as curl does */
    return 0;
  }
  switch (s->coding) {
  case CODING_GZIP:
  case CODING_DEFLATE: {
    int rc;
    s->zlib.next_in = (Bytef*)in;
    s->zlib.avail_in = (uInt)in_length;
    s->zlib.next_out = out;
    s->zlib.avail_out = (uInt)capacity;
    rc = inflate(&s->zlib, Z_NO_FLUSH);
    if (rc == Z_DATA_ERROR && s->coding == CODING_DEFLATE && !s->started &&
        !s->raw_deflate) {
      /* "deflate" sent without its zlib wrapper: start over as raw. */
      inflateEnd(&s->zlib);
      memset(&s->zlib, 0, sizeof(s->zlib));
      if (inflateInit2(&s->zlib, -15) != Z_OK)
        return -1;
      s->raw_deflate = 1;
      return stage_step(s, in, in_length, out, capacity, consumed, produced);
    }
    *consumed = in_length - s->zlib.avail_in;
    *produced = capacity - s->zlib.avail_out;
    if (*consumed > 0 || *produced > 0)
      s->started = 1;
    if (rc == Z_STREAM_END) {
      s->ended = 1;
      return 0;
    }
    return rc == Z_OK || rc == Z_BUF_ERROR ? 0 : -1;
  }
  case CODING_BR: {
    size_t available_in = in_length, available_out = capacity;
    const uint8_t* next_in = in;
    uint8_t* next_out = out;
    /* 0 error, 1 success (the end), 2 needs input, 3 needs output. */
    int rc = libraries.brotli_stream(s->state, &available_in, &next_in,
                                     &available_out, &next_out, NULL);
    *consumed = in_length - available_in;
    *produced = capacity - available_out;
    if (rc == 1)
      s->ended = 1;
    return rc == 0 ? -1 : 0;
  }
  case CODING_ZSTD: {
    zstd_in_t input = {in, in_length, 0};
    zstd_out_t output = {out, capacity, 0};
    size_t rc = libraries.zstd_stream(s->state, &output, &input);
    if (libraries.zstd_is_error(rc))
      return -1;
    *consumed = input.pos;
    *produced = output.pos;
    /* 0: a frame is complete and flushed; another may follow. */
    if (*consumed > 0 || *produced > 0)
      s->mid_frame = rc != 0;
    return 0;
  }
  }
  return -1;
}

/* ---- The chain ---- */

int cr__codings_parse(unsigned char* codings, int* count, const char* value,
                      size_t length, const char** why) {
  const char* end = value + length;
  pthread_once(&libraries_once, load_libraries);
  while (value < end) {
    const char* name;
    size_t name_length;
    coding_t coding;
    while (value < end && (*value == ' ' || *value == '\t' || *value == ','))
      value++;
    name = value;
    while (value < end && *value != ',' && *value != ' ' && *value != '\t')
      value++;
    name_length = (size_t)(value - name);
    if (name_length == 0)
      continue;
    if ((name_length == 4 && strncasecmp(name, "gzip", 4) == 0) ||
        (name_length == 6 && strncasecmp(name, "x-gzip", 6) == 0))
      coding = CODING_GZIP;
    else if (name_length == 7 && strncasecmp(name, "deflate", 7) == 0)
      coding = CODING_DEFLATE;
    else if (name_length == 2 && strncasecmp(name, "br", 2) == 0 &&
             libraries.brotli_create)
      coding = CODING_BR;
    else if (name_length == 4 && strncasecmp(name, "zstd", 4) == 0 &&
             libraries.zstd_create)
      coding = CODING_ZSTD;
    else if (name_length == 8 && strncasecmp(name, "identity", 8) == 0)
      continue;
    else {
      *why = "the body has a content coding this engine does not decode";
      return -1;
    }
    if (*count == CR_MAX_CODINGS) {
      *why = "the body has more content codings than this engine decodes in a row";
      return -1;
    }
    codings[(*count)++] = (unsigned char)coding;
  }
  return 0;
}

cr_decoder_t* cr__decoder_make(const unsigned char* codings, int count) {
  cr_decoder_t* d;
  int i;
  if (count <= 0 || count > CR_MAX_CODINGS)
    return NULL;
  d = cr__calloc(1, sizeof(*d));
  if (d == NULL)
    return NULL;
  /* Listed in the order they were applied: the last is decoded first. Each
   * stage after the first reads the one before it through a buffer. */
  for (i = 0; i < count; i++) {
    stage_t* s = &d->stages[i];
    if (stage_open(s, (coding_t)codings[count - 1 - i]) != 0 ||
        (i > 0 && (s->buffer = cr__malloc(STAGE_BUFFER_SIZE)) == NULL)) {
      d->count = i + 1;
      cr__decoder_free(d);
      return NULL;
    }
    d->count = i + 1;
  }
  return d;
}

/* Fills the output of stage k (its decoded bytes) into out, reading what
 * it needs from the stage before it, or from *input for stage 0. */
static int pull(cr_decoder_t* d, int k, const unsigned char** input,
                size_t* input_length, unsigned char* out, size_t capacity,
                size_t* produced) {
  stage_t* s = &d->stages[k];
  *produced = 0;
  while (*produced < capacity) {
    size_t consumed = 0, made = 0;
    if (k == 0) {
      if (stage_step(s, *input, *input_length, out + *produced,
                     capacity - *produced, &consumed, &made) != 0)
        return -1;
      *input += consumed;
      *input_length -= consumed;
    } else {
      if (s->buffer_start == s->buffer_end) {
        size_t filled = 0;
        if (pull(d, k - 1, input, input_length, s->buffer, STAGE_BUFFER_SIZE,
                 &filled) != 0)
          return -1;
        s->buffer_start = 0;
        s->buffer_end = filled;
      }
      if (stage_step(s, s->buffer + s->buffer_start,
                     s->buffer_end - s->buffer_start, out + *produced,
                     capacity - *produced, &consumed, &made) != 0)
        return -1;
      s->buffer_start += consumed;
    }
    *produced += made;
    if (consumed == 0 && made == 0)
      break; /* needs input it does not have, or its stream ended */
  }
  return 0;
}

ptrdiff_t cr__decoder_run(cr_decoder_t* d, const unsigned char** input,
                          size_t* input_length, unsigned char* output,
                          size_t capacity) {
  size_t produced = 0;
  if (pull(d, d->count - 1, input, input_length, output, capacity,
           &produced) != 0)
    return -1;
  return (ptrdiff_t)produced;
}

int cr__decoder_complete(const cr_decoder_t* d) {
  int i;
  for (i = 0; i < d->count; i++) {
    const stage_t* s = &d->stages[i];
    if (s->buffer_start != s->buffer_end)
      return 0;
    if (s->coding == CODING_ZSTD ? s->mid_frame : !s->ended)
      return 0;
  }
  return 1;
}

void cr__decoder_free(cr_decoder_t* d) {
  int i;
  if (d == NULL)
    return;
  for (i = 0; i < d->count; i++)
    stage_close(&d->stages[i]);
  free(d);
}
