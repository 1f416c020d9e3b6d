/*
 * A smoke check of the engine against smoke_server.py (see run.sh), built
 * plain, under ASan+UBSan and under TSan. Every result it prints is checked
 * first; any failed check ends it with status 1.
 *
 *   bin/smoke http://127.0.0.1:PORT [COUNT]
 */
#include <stdatomic.h>

#include <curl/curl.h>

#include "harness.h"

static recorder_t recorder;
static int submitted;

/* Submits r (which must be accepted) and returns its record's index. */
static size_t submit(cr_engine_t* engine, cr_request_t* r, answer_t answer) {
  cr_error_t error = CR_ERR_INTERNAL;
  size_t tag = recorder_add(&recorder, answer, -1);
  r->tag = tag;
  CHECK(cr_engine_submit(engine, r, &error) != 0, "submit of %s refused: %d", r->url,
        error);
  CHECK(error == CR_OK, "error %d with an id", error);
  submitted++;
  return tag;
}

static const record_t* wait_one(size_t tag) {
  CHECK(recorder_wait(&recorder, tag, 1, 60) == 0, "transfer %zu did not complete", tag);
  return &recorder.records[tag];
}

/* One COMPLETE, nothing after it, nothing while held. */
static const record_t* ended(size_t tag, cr_error_t error) {
  const record_t* record = wait_one(tag);
  CHECK(record->completes == 1 && record->after_complete == 0,
        "transfer %zu: %d COMPLETE, %d events after", tag, record->completes,
        record->after_complete);
  CHECK(record->data_while_held == 0 && record->data_before_response == 0,
        "transfer %zu: DATA out of order", tag);
  CHECK(record->error == error, "transfer %zu: error %d, expected %d", tag,
        record->error, error);
  CHECK(!record->unexplained, "transfer %zu: failed (%d) without a message", tag,
        record->error);
  return record;
}

/* The engine's own (hidden) mapping of libcurl's codes: every code maps to
 * an engine error, the ones an HTTP exchange meets to the right one, and
 * every engine error has a text (docs/engine.md, "Errors"). */
cr_error_t cr__error_from_curl(CURLcode code, int after_submit);
const char* cr__error_text(cr_error_t error);

static void error_mapping(void) {
  static const struct {
    CURLcode code;
    cr_error_t error;
  } expected[] = {
      {CURLE_OK, CR_OK},
      {CURLE_COULDNT_RESOLVE_HOST, CR_ERR_CANNOT_RESOLVE},
      {CURLE_COULDNT_CONNECT, CR_ERR_CANNOT_CONNECT},
      {CURLE_PROXY, CR_ERR_CANNOT_CONNECT},
      {CURLE_OPERATION_TIMEDOUT, CR_ERR_TIMED_OUT},
      {CURLE_PARTIAL_FILE, CR_ERR_SHORT_BODY},
      {CURLE_RECV_ERROR, CR_ERR_CONNECTION_LOST},
      {CURLE_SEND_ERROR, CR_ERR_CONNECTION_LOST},
      {CURLE_GOT_NOTHING, CR_ERR_CONNECTION_LOST},
      {CURLE_HTTP2_STREAM, CR_ERR_CONNECTION_LOST},
      {CURLE_HTTP2, CR_ERR_BAD_RESPONSE},
      {CURLE_WEIRD_SERVER_REPLY, CR_ERR_BAD_RESPONSE},
      {CURLE_TOO_MANY_REDIRECTS, CR_ERR_TOO_MANY_REDIRECTS},
      {CURLE_BAD_CONTENT_ENCODING, CR_ERR_DECODING},
      {CURLE_RANGE_ERROR, CR_ERR_BAD_RANGE},
      {CURLE_FILESIZE_EXCEEDED, CR_ERR_TOO_LARGE},
      {CURLE_LOGIN_DENIED, CR_ERR_AUTH_FAILED},
      {CURLE_SEND_FAIL_REWIND, CR_ERR_BODY_NOT_REWOUND},
      {CURLE_SSL_CLIENTCERT, CR_ERR_CLIENT_CERT_REQUIRED},
      {CURLE_SSL_CONNECT_ERROR, CR_ERR_TLS},
      {CURLE_PEER_FAILED_VERIFICATION, CR_ERR_TLS_UNTRUSTED},
      {CURLE_WRITE_ERROR, CR_ERR_FILE_WRITE},
      {CURLE_READ_ERROR, CR_ERR_FILE_READ},
      {CURLE_OUT_OF_MEMORY, CR_ERR_INTERNAL},
      {CURLE_BAD_FUNCTION_ARGUMENT, CR_ERR_INTERNAL},
  };
  for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++)
    CHECK(cr__error_from_curl(expected[i].code, 1) == expected[i].error,
          "curl %d maps to %d, expected %d", (int)expected[i].code,
          cr__error_from_curl(expected[i].code, 1), expected[i].error);
  for (int code = 0; code <= CURL_LAST + 5; code++) {
    cr_error_t error = cr__error_from_curl((CURLcode)code, 1);
    CHECK(error >= CR_OK && error <= CR_ERR_TLS_PINNED, "curl %d: engine error %d", code, error);
    CHECK((error == CR_OK) == (code == 0), "curl %d maps to success", code);
    CHECK(cr__error_text(error)[0] != '\0', "engine error %d has no text", error);
  }
  printf("errors: every curl code (0..%d) maps, each engine error has a text\n", CURL_LAST + 5);
}

static void body_is_text(const record_t* record, const char* text) {
  CHECK(record->body_length == strlen(text) &&
            memcmp(record->body, text, record->body_length) == 0,
        "body is not \"%s\"", text);
}

static void api_boundary(cr_engine_t* engine) {
  static union {
    char bytes[8192];
    void* align;
  } foreign;
  cr_engine_t* not_an_engine = (cr_engine_t*)&foreign;
  cr_request_t r = request("http://127.0.0.1:1/");
  cr_error_t error = CR_OK;
  cr_engine_stats_t stats;
  int pipe_fds[2];

  CHECK(cr_engine_create(NULL, NULL) == NULL, "an engine without a config");
  CHECK(cr_engine_submit(NULL, &r, &error) == 0 && error == CR_ERR_INTERNAL,
        "submit to NULL: %d", error);
  error = CR_OK;
  CHECK(cr_engine_submit(not_an_engine, &r, &error) == 0 && error == CR_ERR_INTERNAL,
        "submit to a foreign pointer: %d", error);
  CHECK(cr_engine_submit(engine, NULL, &error) == 0 && error == CR_ERR_INTERNAL,
        "submit of NULL: %d", error);
  memset(&stats, 0xff, sizeof(stats));
  cr_engine_stats(not_an_engine, &stats);
  CHECK(stats.completed == 0 && stats.queued == 0, "stats of a foreign pointer");
  cr_engine_stats(NULL, &stats);
  cr_engine_stats(engine, NULL);
  cr_transfer_cancel(NULL, 257);
  cr_transfer_cancel(not_an_engine, 257);
  cr_transfer_pause(not_an_engine, 257);
  cr_transfer_resume(not_an_engine, 257);
  /* A decision's descriptor is closed even when the engine is not one. */
  CHECK(pipe(pipe_fds) == 0, "pipe");
  cr_transfer_decide(not_an_engine, 257, CR_DECIDE_TO_FILE, pipe_fds[0]);
  CHECK(fcntl(pipe_fds[0], F_GETFD) == -1 && errno == EBADF,
        "a refused decision's descriptor is still open");
  close(pipe_fds[1]);
  cr_engine_destroy(NULL);
  cr_engine_destroy(not_an_engine);
  /* Commands naming no live transfer do nothing. */
  cr_transfer_cancel(engine, 0);
  cr_transfer_cancel(engine, 0xffffff01);
  cr_transfer_decide(engine, 0xffffff01, CR_DECIDE_ALLOW, -1);
  printf("API boundary: NULL and foreign engine pointers refused\n");
}

int main(int argc, char** argv) {
  const char* base = argc > 1 ? argv[1] : NULL;
  int n = argc > 2 ? atoi(argv[2]) : 1000;
  char directory[4096], path[4200], cut_path[4200], url[512];
  const char* error = NULL;
  cr_engine_config_t config;
  cr_engine_t* engine;
  cr_request_t r;
  size_t first, tag;
  const record_t* record;
  cr_error_t refused;
  long long bytes = 0;
  static char upload[3000000];

  if (base == NULL || n <= 0) {
    fprintf(stderr, "usage: smoke BASE_URL [COUNT]\n");
    return 2;
  }
  make_temporary_directory(directory, sizeof(directory), "courier-smoke");
  recorder_init(&recorder, (size_t)n + 200);
  memset(&config, 0, sizeof(config));
  config.loop_count = 2;
  config.max_host_connections = 16;
  config.on_events = recorder_on_events;
  config.context = &recorder;
  engine = cr_engine_create(&config, &error);
  CHECK(engine != NULL, "cr_engine_create: %s", error);
  recorder.engine = engine;
  api_boundary(engine);
  error_mapping();

  /* Many small GETs into memory over two loops. */
  snprintf(url, sizeof(url), "%s/bytes/1024", base);
  r = request(url);
  first = recorder.used;
  for (int i = 0; i < n; i++)
    submit(engine, &r, ANSWER_ALLOW);
  for (int i = 0; i < n; i++) {
    record = ended(first + (size_t)i, CR_OK);
    CHECK(record->responses == 1 && record->status == 200 && !record->held,
          "transfer %zu: %d responses, status %d", first + (size_t)i,
          record->responses, record->status);
    CHECK(record->body_length == 1024 && is_pattern(record->body, 1024, 0),
          "transfer %zu: not the 1024 pattern bytes", first + (size_t)i);
    bytes += (long long)record->body_length;
  }
  printf("memory: %d transfers, %lld bytes, every body checked\n", n, bytes);

  /* A download to a file, through the writer thread. */
  snprintf(path, sizeof(path), "%s/out.bin", directory);
  snprintf(url, sizeof(url), "%s/bytes/10000000", base);
  r = request(url);
  r.sink = CR_SINK_FILE;
  r.sink_fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  CHECK(r.sink_fd >= 0, "open %s", path);
  record = ended(submit(engine, &r, ANSWER_ALLOW), CR_OK);
  CHECK(record->bytes_on_disk == 10000000 && file_is_pattern(path, 10000000),
        "file: %lld bytes on disk", (long long)record->bytes_on_disk);
  printf("file: 10000000 bytes on disk, content checked\n");

  /* A cut body, then its ranged resume. */
  snprintf(cut_path, sizeof(cut_path), "%s/cut.bin", directory);
  snprintf(url, sizeof(url), "%s/bytes/1000000?cut", base);
  r = request(url);
  r.sink = CR_SINK_FILE;
  r.sink_fd = open(cut_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  record = ended(submit(engine, &r, ANSWER_ALLOW), CR_ERR_SHORT_BODY);
  CHECK(record->bytes_on_disk == 500000 && file_is_pattern(cut_path, 500000),
        "cut: %lld bytes on disk", (long long)record->bytes_on_disk);
  printf("cut: short body, 500000 bytes on disk\n");
  snprintf(url, sizeof(url), "%s/bytes/1000000", base);
  r = request(url);
  r.sink = CR_SINK_FILE;
  r.sink_fd = open(cut_path, O_RDWR);
  r.resume_offset = 500000;
  record = ended(submit(engine, &r, ANSWER_ALLOW), CR_OK);
  CHECK(record->status == 206 && record->bytes_on_disk == 1000000 &&
            file_is_pattern(cut_path, 1000000),
        "resumed: status %d, %lld bytes on disk", record->status,
        (long long)record->bytes_on_disk);
  printf("resumed: 206, 1000000 bytes on disk, content checked\n");

  /* A held redirect, allowed: its own body is delivered. */
  snprintf(url, sizeof(url), "%s/redirect", base);
  r = request(url);
  record = ended(submit(engine, &r, ANSWER_ALLOW), CR_OK);
  CHECK(record->held && record->status == 302, "redirect: held %d status %d",
        record->held, record->status);
  body_is_text(record, "moved");
  printf("held redirect: 302 held, allowed, body \"moved\"\n");

  /* Digest answered by curl itself: two responses on one transfer, the
   * 401's length forgotten at the 200's status line. */
  snprintf(url, sizeof(url), "%s/digest", base);
  r = request(url);
  r.auth = CR_AUTH_DIGEST;
  r.username = "ann";
  r.password = "pw";
  record = ended(submit(engine, &r, ANSWER_ALLOW), CR_OK);
  CHECK(record->responses == 1 && record->status == 200,
        "digest: %d responses, status %d", record->responses, record->status);
  body_is_text(record, "ok");
  printf("digest: the 401 answered by curl, the 200 with its own length\n");

  /* Refused at submit. */
  r = request("ftp://127.0.0.1/x");
  CHECK(cr_engine_submit(engine, &r, &refused) == 0 && refused == CR_ERR_UNSUPPORTED_URL,
        "ftp: %d", refused);
  r = request("http://[::1");
  CHECK(cr_engine_submit(engine, &r, &refused) == 0 && refused == CR_ERR_BAD_URL,
        "bad url: %d", refused);
  printf("refused: ftp unsupported, a malformed URL bad\n");

  /* An idle timeout on a stalled body. */
  snprintf(url, sizeof(url), "%s/stall", base);
  r = request(url);
  r.idle_timeout_ms = 500;
  ended(submit(engine, &r, ANSWER_ALLOW), CR_ERR_TIMED_OUT);
  printf("stall: idle timeout\n");

  /* Uploads: copied from memory, borrowed, and a borrowed one cancelled. */
  for (size_t i = 0; i < sizeof(upload); i++)
    upload[i] = (char)pattern_byte((int64_t)i);
  snprintf(url, sizeof(url), "%s/upload", base);
  r = request(url);
  r.method = "PUT";
  r.body = upload;
  r.body_length = sizeof(upload);
  body_is_text(ended(submit(engine, &r, ANSWER_ALLOW), CR_OK), "3000000");
  r.body = NULL;
  r.body_length = 0;
  r.borrowed_body = borrowed_pattern(2000000);
  body_is_text(ended(submit(engine, &r, ANSWER_ALLOW), CR_OK), "2000000");
  CHECK(atomic_load(&borrowed_releases) == 1, "%d releases", atomic_load(&borrowed_releases));
  r.borrowed_body = borrowed_pattern(50000000);
  tag = recorder_add(&recorder, ANSWER_ALLOW, -1);
  r.tag = tag;
  {
    uint64_t id = cr_engine_submit(engine, &r, NULL);
    CHECK(id != 0, "submit refused");
    submitted++;
    cr_transfer_cancel(engine, id);
  }
  ended(tag, CR_ERR_CANCELLED);
  CHECK(atomic_load(&borrowed_releases) == 2, "%d releases", atomic_load(&borrowed_releases));
  printf("uploads: 3000000 and 2000000 bytes arrived; the borrowed body released once each, "
         "also when cancelled\n");

  /* Streamed bodies (cr_transfer_supply): chunked when the length is
   * unknown, with a length when it is known; supplied in pieces, an empty
   * one among them. */
  for (int known = 0; known <= 1; known++) {
    uint64_t id;
    snprintf(url, sizeof(url), "%s/upload", base);
    r = request(url);
    r.method = "PUT";
    r.flags |= CR_FLAG_STREAMED_BODY;
    r.streamed_body_length = known ? 1500000 : -1;
    tag = recorder_add(&recorder, ANSWER_ALLOW, -1);
    r.tag = tag;
    id = cr_engine_submit(engine, &r, NULL);
    CHECK(id != 0, "streamed submit refused");
    submitted++;
    for (size_t offset = 0; offset < 1500000; offset += 300000) {
      CHECK(cr_transfer_supply(engine, id, upload + offset, 300000, 0) == 0, "supply refused");
      if (offset == 600000)
        CHECK(cr_transfer_supply(engine, id, NULL, 0, 0) == 0, "empty supply refused");
    }
    CHECK(cr_transfer_supply(engine, id, NULL, 0, 1) == 0, "end refused");
    record = ended(tag, CR_OK);
    body_is_text(record, "1500000");
    CHECK(cr_transfer_supply(engine, id, upload, 10, 1) == 0, "supply after the end refused");
  }
  printf("streamed: 1500000 bytes supplied in pieces arrived, chunked and with a length\n");

  /* An upgrade: the 101 is final, the supplied bytes go out raw after the
   * head and the server's bytes come back as the body, until the server
   * closes the connection. */
  {
    const char* fields[] = {"Upgrade: echo", "Connection: Upgrade"};
    uint64_t id;
    snprintf(url, sizeof(url), "%s/upgrade", base);
    r = request(url);
    r.headers = fields;
    r.header_count = 2;
    r.flags |= CR_FLAG_UPGRADE;
    tag = recorder_add(&recorder, ANSWER_ALLOW, -1);
    r.tag = tag;
    id = cr_engine_submit(engine, &r, NULL);
    CHECK(id != 0, "upgrade submit refused");
    submitted++;
    CHECK(cr_transfer_supply(engine, id, "hello ", 6, 0) == 0, "supply refused");
    CHECK(cr_transfer_supply(engine, id, "close", 5, 0) == 0, "supply refused");
    record = ended(tag, CR_ERR_CONNECTION_LOST);
    CHECK(record->status == 101, "upgrade: status %d", record->status);
    body_is_text(record, "hello close");
  }
  printf("upgrade: 101 final, raw bytes both ways, the server's close ends it\n");

  /* Held redirects with no body (decided out of curl), and gzip decoded. */
  snprintf(url, sizeof(url), "%s/redirect-empty", base);
  r = request(url);
  first = recorder.used;
  for (int i = 0; i < 50; i++)
    submit(engine, &r, ANSWER_ALLOW);
  {
    char gzip_url[512];
    snprintf(gzip_url, sizeof(gzip_url), "%s/gzip/100000", base);
    r = request(gzip_url);
    r.flags |= CR_FLAG_DECODE;
    for (int i = 0; i < 50; i++)
      submit(engine, &r, ANSWER_ALLOW);
  }
  for (size_t i = first; i < first + 50; i++) {
    record = ended(i, CR_OK);
    CHECK(record->held && record->status == 302 && record->body_length == 0,
          "transfer %zu: held %d status %d, %zu bytes", i, record->held,
          record->status, record->body_length);
  }
  for (size_t i = first + 50; i < first + 100; i++) {
    record = ended(i, CR_OK);
    CHECK(record->body_length == 100000 && is_pattern(record->body, 100000, 0),
          "transfer %zu: not the 100000 decoded pattern bytes", i);
  }
  printf("held empty + gzip: 50 held 302s allowed, 50 bodies decoded and checked\n");

  {
    cr_engine_stats_t stats;
    cr_engine_stats(engine, &stats);
    CHECK(stats.queued == 0 && stats.active == 0 && stats.completed == submitted,
          "stats: queued %lld active %lld completed %lld of %d",
          (long long)stats.queued, (long long)stats.active,
          (long long)stats.completed, submitted);
    printf("stats: queued 0, active 0, completed %lld, %lld open handles\n",
           (long long)stats.completed, (long long)stats.open_handles);
  }
  cr_engine_destroy(engine);
  CHECK(cr_leaked_loop_count() == 0, "leaked loops");
  printf("destroyed: leaked loops 0\n");
  recorder_destroy(&recorder);
  remove_temporary_directory(directory);
  return 0;
}
