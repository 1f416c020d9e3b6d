/*
 * No RST_STREAM for an HTTP/2 stream that is already closed.
 *
 * libcurl 7.88 resets nearly every HTTP/2 stream it completes: when it reads
 * a stream's end it clears its own "closed" mark (http2_handle_stream_close,
 * lib/http2.c, "to prevent infinite loop"), so the transfer's end
 * (http2_data_done) sees an open stream and submits RST_STREAM with
 * STREAM_CLOSED. nghttp2 before 1.66 sends a RST_STREAM submitted for a stream
 * it has already closed (nghttp2 issue 2354; later versions accept the call
 * and send nothing), and the frame goes out. A server that counts the resets
 * it receives against the rapid-reset attack (CVE-2023-44487: SwiftNIO and
 * Netty allow 200 in 30 s) then ends the connection with GOAWAY
 * ENHANCE_YOUR_CALM and cancels every stream on it: measured against the test
 * server, 870 to 1,030 resets per 1,000 requests, and 82 of 1,000 requests
 * with 100 in flight failing (the curl 7.88 command line too: 107 of 2,000).
 *
 * This definition of nghttp2_submit_rst_stream() is found before
 * libnghttp2's by the dynamic linker (the program's own definitions come
 * first, and the linker exports it because libcurl, in the link, refers to
 * it). A reset asked for a stream nghttp2 no longer has, or has in the
 * closed state, is accepted and not sent, which is what nghttp2 1.66 does;
 * every other call goes to libnghttp2's function unchanged. It affects every
 * user of libnghttp2 in the process, FoundationNetworking's URLSession
 * included, in the same way: the peer must ignore such a frame (RFC 9113
 * 5.1, "closed"), so nothing but the count changes. With nghttp2 1.66 or
 * later it forwards every call.
 *
 * Any thread (nghttp2 calls are made on the thread that owns the session).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* The few declarations of nghttp2.h used here (its ABI is stable: soname
 * libnghttp2.so.14 since 1.0); the header is not installed with libcurl. */
typedef struct nghttp2_session nghttp2_session;
typedef struct nghttp2_stream nghttp2_stream;
typedef struct {
  int age;
  int version_num;
  const char* version_str;
  const char* proto_str;
} nghttp2_info;
enum { NGHTTP2_STREAM_STATE_CLOSED = 7 };

typedef int (*submit_rst_stream_fn)(nghttp2_session*, uint8_t, int32_t,
                                    uint32_t);
typedef nghttp2_stream* (*find_stream_fn)(nghttp2_session*, int32_t);
typedef int (*stream_state_fn)(nghttp2_stream*);
typedef nghttp2_info* (*version_fn)(int);

int nghttp2_submit_rst_stream(nghttp2_session* session, uint8_t flags,
                              int32_t stream_id, uint32_t error_code);

static pthread_once_t resolved = PTHREAD_ONCE_INIT;
static submit_rst_stream_fn real_submit_rst_stream;
static find_stream_fn find_stream;
static stream_state_fn stream_state;
static int filters;

static void resolve(void) {
  version_fn version = (version_fn)dlsym(RTLD_DEFAULT, "nghttp2_version");
  nghttp2_info* info = version ? version(0) : NULL;
  real_submit_rst_stream =
      (submit_rst_stream_fn)dlsym(RTLD_NEXT, "nghttp2_submit_rst_stream");
  find_stream =
      (find_stream_fn)dlsym(RTLD_DEFAULT, "nghttp2_session_find_stream");
  stream_state = (stream_state_fn)dlsym(RTLD_DEFAULT, "nghttp2_stream_get_state");
  /* Never this definition itself (a link where it came first twice). */
  if (real_submit_rst_stream == nghttp2_submit_rst_stream)
    real_submit_rst_stream = NULL;
  filters = info != NULL && info->version_num < 0x014200 && find_stream &&
            stream_state;
}

__attribute__((visibility("default"))) int nghttp2_submit_rst_stream(
    nghttp2_session* session, uint8_t flags, int32_t stream_id,
    uint32_t error_code) {
  pthread_once(&resolved, resolve);
  if (real_submit_rst_stream == NULL)
    return 0; /* no libnghttp2 behind this one: nothing to reset */
  if (filters && stream_id > 0) {
    nghttp2_stream* stream = find_stream(session, stream_id);
    if (stream == NULL || stream_state(stream) == NGHTTP2_STREAM_STATE_CLOSED)
      return 0;
  }
  return real_submit_rst_stream(session, flags, stream_id, error_code);
}
