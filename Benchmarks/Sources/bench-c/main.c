/* The C reference client: libcurl's multi interface on one libuv loop, in the shape of curl's
 * docs/examples/multi-uv.c (a uv_poll_t per socket, one uv_timer_t for libcurl's timeout, curl_multi_socket_action),
 * with what a careful C program adds: `--parallel` transfers in flight, each finished easy handle reused for the next
 * transfer, as many connections per host as transfers in flight. It is the floor under every client of the table:
 * what the same libcurl costs with nothing above it.
 *
 *   bench-c --kind memory|disk|upload --count N --parallel P --url FORMAT [--size BYTES]
 *           [--output DIR] [--upload-file PATH] [--cacert PEM]
 *
 * FORMAT holds one %d, the transfer's index. memory: bodies counted and dropped (each must be --size bytes); disk:
 * each body written to DIR/INDEX.bin with 64 KiB receive buffers (as Courier's downloads); upload: the file read once
 * and PUT from memory through libcurl's read callback, no `Expect: 100-continue`. An https FORMAT trusts --cacert
 * and offers HTTP/2 (libcurl's default for https), waiting to multiplex on an existing connection (CURLOPT_PIPEWAIT)
 * as Courier does. Exits 1 on the first failure. */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

enum kind { KIND_MEMORY, KIND_DISK, KIND_UPLOAD };

typedef struct {
  enum kind kind;
  long count;
  long parallel;
  const char* url;
  long long size;
  const char* output;
  const char* cacert;
  char* body;
  size_t body_size;
} options_t;

typedef struct {
  CURL* easy;
  long index;
  long long received;
  size_t sent;
  FILE* file;
  char error[CURL_ERROR_SIZE];
} transfer_t;

typedef struct {
  uv_poll_t poll;
  curl_socket_t fd;
} socket_t;

static options_t options;
static uv_loop_t* loop;
static CURLM* multi;
static uv_timer_t timer;
static long started, finished;
static struct curl_slist* no_expect;

static void fail(const char* what, const char* detail) {
  fprintf(stderr, "bench-c: %s: %s\n", what, detail);
  exit(1);
}

static size_t on_body(char* data, size_t size, size_t count, void* user) {
  transfer_t* transfer = user;
  size_t bytes = size * count;
  transfer->received += (long long)bytes;
  if (transfer->file && fwrite(data, 1, bytes, transfer->file) != bytes)
    return 0;
  return bytes;
}

static size_t on_read(char* buffer, size_t size, size_t count, void* user) {
  transfer_t* transfer = user;
  size_t left = options.body_size - transfer->sent;
  size_t bytes = size * count < left ? size * count : left;
  memcpy(buffer, options.body + transfer->sent, bytes);
  transfer->sent += bytes;
  return bytes;
}

/* Points `transfer`'s easy handle at transfer `index` and adds it to the multi handle. */
static void start(transfer_t* transfer, long index) {
  char url[1024];
  snprintf(url, sizeof url, options.url, (int)index);
  transfer->index = index;
  transfer->received = 0;
  transfer->sent = 0;
  transfer->file = NULL;
  curl_easy_setopt(transfer->easy, CURLOPT_URL, url);
  if (options.kind == KIND_DISK) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%ld.bin", options.output, index);
    transfer->file = fopen(path, "wb");
    if (!transfer->file)
      fail(path, strerror(errno));
  }
  started++;
  CURLMcode code = curl_multi_add_handle(multi, transfer->easy);
  if (code != CURLM_OK)
    fail("curl_multi_add_handle", curl_multi_strerror(code));
}

static transfer_t* make_transfer(void) {
  transfer_t* transfer = calloc(1, sizeof *transfer);
  transfer->easy = curl_easy_init();
  CURL* easy = transfer->easy;
  curl_easy_setopt(easy, CURLOPT_PRIVATE, transfer);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, transfer->error);
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, transfer);
  if (options.kind == KIND_DISK)
    curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, 65536L);
  if (options.cacert)
    curl_easy_setopt(easy, CURLOPT_CAINFO, options.cacert);
  if (!strncmp(options.url, "https:", 6))
    curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
  if (options.kind == KIND_UPLOAD) {
    curl_easy_setopt(easy, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(easy, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(easy, CURLOPT_READDATA, transfer);
    curl_easy_setopt(easy, CURLOPT_INFILESIZE_LARGE, (curl_off_t)options.body_size);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, no_expect);
  }
  return transfer;
}

/* Every finished transfer: checked, then its handle starts the next one (or is freed). */
static void collect_finished(void) {
  CURLMsg* message;
  int pending;
  while ((message = curl_multi_info_read(multi, &pending))) {
    if (message->msg != CURLMSG_DONE)
      continue;
    CURL* easy = message->easy_handle;
    CURLcode result = message->data.result;
    transfer_t* transfer;
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char**)&transfer);
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(multi, easy);
    if (transfer->file && fclose(transfer->file) != 0)
      fail("fclose", strerror(errno));
    if (result != CURLE_OK)
      fail(curl_easy_strerror(result), transfer->error);
    if (options.kind == KIND_UPLOAD ? (status != 201 && status != 204 && status != 200) : status != 200) {
      fprintf(stderr, "bench-c: transfer %ld: HTTP %ld\n", transfer->index, status);
      exit(1);
    }
    if (options.kind != KIND_UPLOAD && options.size >= 0 && transfer->received != options.size) {
      fprintf(stderr, "bench-c: transfer %ld: %lld bytes, expected %lld\n", transfer->index, transfer->received,
              options.size);
      exit(1);
    }
    finished++;
    if (started < options.count) {
      start(transfer, started);
    } else {
      curl_easy_cleanup(easy);
      free(transfer);
    }
  }
}

static void on_poll(uv_poll_t* poll, int status, int events) {
  socket_t* context = (socket_t*)poll->data;
  int flags = 0;
  if (status < 0)
    flags = CURL_CSELECT_ERR;
  if (!status && (events & UV_READABLE))
    flags |= CURL_CSELECT_IN;
  if (!status && (events & UV_WRITABLE))
    flags |= CURL_CSELECT_OUT;
  int running;
  curl_multi_socket_action(multi, context->fd, flags, &running);
  collect_finished();
}

static void on_timer(uv_timer_t* handle) {
  (void)handle;
  int running;
  curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
  collect_finished();
}

static int on_timeout_change(CURLM* handle, long milliseconds, void* user) {
  (void)handle;
  (void)user;
  if (milliseconds < 0) {
    uv_timer_stop(&timer);
  } else {
    /* 0 means at once: on the next loop iteration, not from inside this callback. */
    uv_timer_start(&timer, on_timer, milliseconds ? (uint64_t)milliseconds : 1, 0);
  }
  return 0;
}

static void on_socket_closed(uv_handle_t* handle) {
  free(handle->data);
}

static int on_socket(CURL* easy, curl_socket_t fd, int action, void* user, void* socket_data) {
  (void)easy;
  (void)user;
  socket_t* context = socket_data;
  if (action == CURL_POLL_REMOVE) {
    if (context) {
      uv_poll_stop(&context->poll);
      uv_close((uv_handle_t*)&context->poll, on_socket_closed);
      curl_multi_assign(multi, fd, NULL);
    }
    return 0;
  }
  if (!context) {
    context = calloc(1, sizeof *context);
    context->fd = fd;
    uv_poll_init_socket(loop, &context->poll, fd);
    context->poll.data = context;
    curl_multi_assign(multi, fd, context);
  }
  int events = 0;
  if (action != CURL_POLL_IN)
    events |= UV_WRITABLE;
  if (action != CURL_POLL_OUT)
    events |= UV_READABLE;
  uv_poll_start(&context->poll, events, on_poll);
  return 0;
}

static void read_body(const char* path) {
  FILE* file = fopen(path, "rb");
  if (!file)
    fail(path, strerror(errno));
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  options.body = malloc((size_t)size + 1);
  options.body_size = fread(options.body, 1, (size_t)size, file);
  fclose(file);
}

static void parse(int argc, char** argv) {
  options.parallel = 1;
  options.size = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const char* name = argv[i];
    const char* value = argv[i + 1];
    if (!strcmp(name, "--kind")) {
      options.kind = !strcmp(value, "disk") ? KIND_DISK : !strcmp(value, "upload") ? KIND_UPLOAD : KIND_MEMORY;
    } else if (!strcmp(name, "--count")) {
      options.count = atol(value);
    } else if (!strcmp(name, "--parallel")) {
      options.parallel = atol(value);
    } else if (!strcmp(name, "--url")) {
      options.url = value;
    } else if (!strcmp(name, "--size")) {
      options.size = atoll(value);
    } else if (!strcmp(name, "--output")) {
      options.output = value;
    } else if (!strcmp(name, "--upload-file")) {
      read_body(value);
    } else if (!strcmp(name, "--cacert")) {
      options.cacert = value;
    } else {
      fail("unknown option", name);
    }
  }
  if (!options.url || options.count < 0 || options.parallel < 1 || (options.kind == KIND_DISK && !options.output) ||
      (options.kind == KIND_UPLOAD && !options.body))
    fail("usage", "bench-c --kind memory|disk|upload --count N --parallel P --url FORMAT [--size BYTES] "
                  "[--output DIR] [--upload-file PATH] [--cacert PEM]");
}

int main(int argc, char** argv) {
  parse(argc, argv);
  if (curl_global_init(CURL_GLOBAL_ALL) != CURLE_OK)
    fail("curl_global_init", "failed");
  no_expect = curl_slist_append(NULL, "Expect:");
  loop = uv_default_loop();
  uv_timer_init(loop, &timer);
  multi = curl_multi_init();
  curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, on_timeout_change);
  curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, options.parallel);
  curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, options.parallel);
  long first = options.parallel < options.count ? options.parallel : options.count;
  for (long i = 0; i < first; i++)
    start(make_transfer(), i);
  while (finished < options.count) {
    if (uv_run(loop, UV_RUN_ONCE) == 0 && finished < options.count)
      fail("loop", "nothing left to wait for before every transfer finished");
  }
  uv_timer_stop(&timer);
  uv_close((uv_handle_t*)&timer, NULL);
  curl_multi_cleanup(multi); /* closes the connections: CURL_POLL_REMOVE for each socket */
  uv_run(loop, UV_RUN_DEFAULT);
  if (uv_loop_close(loop) != 0)
    fail("uv_loop_close", "handles left open");
  curl_slist_free_all(no_expect);
  free(options.body);
  curl_global_cleanup();
  return 0;
}
