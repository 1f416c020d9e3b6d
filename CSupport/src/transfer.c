/*
 * One transfer: the deep copy of a request, the easy-handle setup, and the
 * curl callbacks that run on the loop thread while curl drives it.
 * The callbacks never call curl; they only record, buffer and decide.
 *
 * cr__transfer_create() and cr__transfer_free_unsubmitted() run on the
 * submitting thread; everything else on the loop thread.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "internal.h"

/* ---- Request validation and copy (any thread) ---- */

static cr_error_t validate_url(const char* url) {
  CURLU* parsed;
  CURLUcode rc;
  char* scheme = NULL;
  char* host = NULL;
  cr_error_t result = CR_OK;

  if (url == NULL || *url == '\0')
    return CR_ERR_BAD_URL;
  parsed = curl_url();
  if (parsed == NULL)
    return CR_ERR_INTERNAL;
  rc = curl_url_set(parsed, CURLUPART_URL, url, 0);
  if (rc == CURLUE_OUT_OF_MEMORY) {
    result = CR_ERR_INTERNAL;
    goto out;
  }
  if (rc != CURLUE_OK) {
    /* curl rejects unknown schemes as malformed; tell them apart. */
    const char* colon = strchr(url, ':');
    int looks_scheme = colon && colon != url;
    for (const char* p = url; looks_scheme && p < colon; p++)
      if (!isalnum((unsigned char)*p) && *p != '+' && *p != '-' && *p != '.')
        looks_scheme = 0;
    if (looks_scheme && strncasecmp(url, "http:", 5) != 0 &&
        strncasecmp(url, "https:", 6) != 0)
      result = CR_ERR_UNSUPPORTED_URL;
    else
      result = CR_ERR_BAD_URL;
    goto out;
  }
  rc = curl_url_get(parsed, CURLUPART_SCHEME, &scheme, 0);
  if (rc != CURLUE_OK) {
    result = rc == CURLUE_OUT_OF_MEMORY ? CR_ERR_INTERNAL : CR_ERR_BAD_URL;
    goto out;
  }
  if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0) {
    result = CR_ERR_UNSUPPORTED_URL;
    goto out;
  }
  rc = curl_url_get(parsed, CURLUPART_HOST, &host, 0);
  if (rc == CURLUE_OUT_OF_MEMORY)
    result = CR_ERR_INTERNAL;
  else if (rc != CURLUE_OK || host == NULL || *host == '\0')
    result = CR_ERR_BAD_URL;
out:
  curl_free(scheme);
  curl_free(host);
  curl_url_cleanup(parsed);
  return result;
}

cr_transfer_t* cr__transfer_create(const cr_request_t* request,
                                  cr_error_t* error) {
  cr_transfer_t* t;
  cr_error_t url_error = validate_url(request->url);
  int has_expect = 0;
  int borrows_body =
      request->borrowed_body.bytes != NULL && request->borrowed_body.length > 0;

  if (url_error != CR_OK) {
    *error = url_error;
    return NULL;
  }
  if (request->sink == CR_SINK_FILE && request->sink_fd < 0) {
    *error = CR_ERR_FILE_WRITE;
    return NULL;
  }
  const char* method = request->method ? request->method : "GET";
  size_t url_size = strlen(request->url) + 1;
  size_t method_size = strlen(method) + 1;
  size_t text_size = 0;
  size_t header_count = 0;
  for (size_t i = 0; i < request->header_count; i++) {
    const char* line = request->headers[i];
    if (line == NULL)
      continue;
    if (strncasecmp(line, "Expect:", 7) == 0)
      has_expect = 1;
    text_size += strlen(line) + 1;
    header_count++;
  }
  if (!has_expect) {
    /* curl would wait up to a second for "100 Continue" on big bodies. */
    text_size += sizeof("Expect:");
    header_count++;
  }
  /* An upgrade's body goes out raw: no Content-Length for curl to add. */
  int upgrade = (request->flags & CR_FLAG_UPGRADE) != 0;
  if (upgrade) {
    text_size += sizeof("Content-Length:");
    header_count++;
  }
  t = cr__calloc(1, sizeof(*t) + url_size + method_size + text_size);
  if (t == NULL) {
    *error = CR_ERR_INTERNAL;
    return NULL;
  }
  t->magic = CR_TRANSFER_MAGIC;
  t->state = CR_TRANSFER_QUEUED;
  t->body_fd = -1;
  t->sink_fd = -1;
  t->url = (char*)(t + 1);
  memcpy(t->url, request->url, url_size);
  t->method = t->url + url_size;
  memcpy(t->method, method, method_size);
  t->header_text = t->method + method_size;
  t->header_count = header_count;
  char* cursor = t->header_text;
  for (size_t i = 0; i < request->header_count; i++) {
    const char* line = request->headers[i];
    if (line == NULL)
      continue;
    size_t size = strlen(line) + 1;
    memcpy(cursor, line, size);
    cursor += size;
  }
  if (!has_expect) {
    memcpy(cursor, "Expect:", sizeof("Expect:"));
    cursor += sizeof("Expect:");
  }
  if (upgrade)
    memcpy(cursor, "Content-Length:", sizeof("Content-Length:"));
  if (borrows_body) {
    t->body_length = (size_t)request->borrowed_body.length;
  } else if (request->body && request->body_length > 0) {
    t->body = cr__malloc(request->body_length);
    if (t->body == NULL)
      goto oom;
    memcpy(t->body, request->body, request->body_length);
    t->body_length = request->body_length;
  }
  t->body_fd_length = request->body_fd_length;
  t->body_fd_offset = request->body_fd_offset > 0 ? request->body_fd_offset : 0;
  t->sink = request->sink;
  t->digest = request->sink == CR_SINK_FILE ? request->digest : CR_DIGEST_NONE;
  t->resume_offset = request->resume_offset > 0 ? request->resume_offset : 0;
  t->range_length = request->range_length > 0 ? request->range_length : 0;
  t->flags = request->flags | (upgrade ? CR_FLAG_STREAMED_BODY : 0);
  t->streamed_body_length =
      upgrade || request->streamed_body_length < 0 ? -1 : request->streamed_body_length;
  t->max_receive_speed = request->max_receive_speed > 0 ? request->max_receive_speed : 0;
  t->max_send_speed = request->max_send_speed > 0 ? request->max_send_speed : 0;
  t->max_body = request->max_body > 0 ? request->max_body : 0;
  t->auth = request->auth;
  if (request->auth != CR_AUTH_NONE) {
    t->username = cr__strdup(request->username ? request->username : "");
    t->password = cr__strdup(request->password ? request->password : "");
    if (t->username == NULL || t->password == NULL)
      goto oom;
  }
  if (request->proxy) {
    t->proxy = cr__strdup(request->proxy);
    if (t->proxy == NULL)
      goto oom;
  }
  if (request->no_proxy) {
    t->no_proxy = cr__strdup(request->no_proxy);
    if (t->no_proxy == NULL)
      goto oom;
  }
  t->proxy_auth = request->proxy_auth;
  if (request->proxy_auth != CR_AUTH_NONE) {
    t->proxy_username = cr__strdup(request->proxy_username ? request->proxy_username : "");
    t->proxy_password = cr__strdup(request->proxy_password ? request->proxy_password : "");
    if (t->proxy_username == NULL || t->proxy_password == NULL)
      goto oom;
  }
  if (request->connection) {
    t->connection = cr__connection_copy(request->connection);
    if (t->connection == NULL)
      goto oom;
  }
  t->idle_timeout_ms = request->idle_timeout_ms;
  t->total_timeout_ms = request->total_timeout_ms;
  t->priority_level = request->priority > 0 ? 2 : (request->priority < 0 ? 0 : 1);
  t->tag = request->tag;
  t->expected = -1;
  t->expected_to_send = request->body_fd >= 0
                            ? request->body_fd_length
                            : (int64_t)t->body_length;
  if (!(request->body_fd >= 0 || t->body_length > 0))
    t->expected_to_send = -1;
  if (t->flags & CR_FLAG_STREAMED_BODY)
    t->expected_to_send = t->streamed_body_length;
  t->submitted_us = cr__now_us();
  /* Ownership of the descriptors and the borrowed body passes last: nothing
   * can fail after. */
  if (borrows_body)
    t->borrowed = request->borrowed_body;
  t->body_fd = request->body_fd;
  t->sink_fd = request->sink == CR_SINK_FILE ? request->sink_fd : -1;
  *error = CR_OK;
  return t;

oom:
  cr__transfer_free_unsubmitted(t);
  *error = CR_ERR_INTERNAL;
  return NULL;
}

void cr__transfer_free_unsubmitted(cr_transfer_t* t) {
  t->body_fd = t->sink_fd = -1;
  memset(&t->borrowed, 0, sizeof(t->borrowed));
  cr__transfer_free(t);
}

void cr__transfer_release_borrowed(cr_transfer_t* t) {
  if (t->borrowed.release)
    t->borrowed.release(t->borrowed.context);
  memset(&t->borrowed, 0, sizeof(t->borrowed));
}

/* The decoder of the response (and what waited in it), when it has one. */
static void drop_decoder(cr_transfer_t* t) {
  cr__decoder_free(t->run->decoder);
  free(t->run->decoded);
  free(t->run->undecoded);
  t->run->decoder = NULL;
  t->run->decoded = NULL;
  t->run->undecoded = NULL;
  t->run->undecoded_length = 0;
  t->run->undecoded_pending = 0;
  t->run->decoder_fed = 0;
}

void cr__transfer_free(cr_transfer_t* t) {
  if (t == NULL)
    return;
  CR_ASSERT(t->magic == CR_TRANSFER_MAGIC);
  if (t->body_fd >= 0)
    close(t->body_fd);
  if (t->sink_fd >= 0)
    close(t->sink_fd);
  curl_slist_free_all(t->headers);
  free(t->body);
  while (t->supply_head) {
    cr_supply_t* next = t->supply_head->next;
    free(t->supply_head);
    t->supply_head = next;
  }
  cr__transfer_release_borrowed(t);
  free(t->username);
  free(t->password);
  free(t->proxy);
  free(t->no_proxy);
  free(t->proxy_username);
  free(t->proxy_password);
  free(t->connection);
  if (t->run) {
    free(t->run->peer_certificates);
    curl_slist_free_all(t->run->resolve);
    free(t->run->header_block);
    free(t->run->memory);
    free(t->run->chunk);
    free(t->run->hash);
    drop_decoder(t);
    free(t->run);
  }
  free(t->message);
  free(t->metrics);
  t->magic = 0;
  free(t);
}

/* ---- Callbacks (loop thread, inside curl) ---- */

static void reset_response(cr_transfer_t* t) {
  t->run->header_length = 0;
  t->status = 0;
  t->run->content_length = -1;
  t->expected = -1;
  t->chunked = 0;
  t->has_location = 0;
  t->encoded = 0;
  t->response_seen = 0;
  t->run->auto_digest = CR_DIGEST_NONE;
  t->run->body_base = -1; /* until finish_headers: the Content-Range start */
  t->run->coding_count = 0;
  t->run->coding_error = NULL;
  drop_decoder(t);
}

/* Keeps a line of the head: 0, -1 out of memory, -2 over
 * CR_MAX_HEADER_SECTION. */
static int append_header(cr_transfer_t* t, const char* line, size_t length) {
  if (t->run->header_length + length > CR_MAX_HEADER_SECTION)
    return -2;
  if (t->run->header_length + length + 1 > t->run->header_capacity) {
    size_t capacity = t->run->header_capacity ? t->run->header_capacity * 2 : 1024;
    char* block;
    while (capacity < t->run->header_length + length + 1)
      capacity *= 2;
    block = cr__realloc(t->run->header_block, capacity);
    if (block == NULL)
      return -1;
    t->run->header_block = block;
    t->run->header_capacity = capacity;
  }
  memcpy(t->run->header_block + t->run->header_length, line, length);
  t->run->header_length += length;
  t->run->header_block[t->run->header_length] = '\0';
  return 0;
}

/* "Name: value" → value (trimmed) if the name matches, else NULL. */
static const char* header_value(const char* line, size_t length,
                                const char* name, size_t* value_length) {
  size_t name_length = strlen(name);
  const char* value;
  const char* end = line + length;
  if (length <= name_length || strncasecmp(line, name, name_length) != 0 ||
      line[name_length] != ':')
    return NULL;
  value = line + name_length + 1;
  while (value < end && (*value == ' ' || *value == '\t'))
    value++;
  while (end > value && (end[-1] == '\r' || end[-1] == '\n' ||
                         end[-1] == ' ' || end[-1] == '\t'))
    end--;
  *value_length = (size_t)(end - value);
  return value;
}

static int fail_from_callback(cr_transfer_t* t, cr_error_t error,
                              const char* message) {
  if (t->error == CR_OK) {
    t->error = error;
    free(t->message);
    t->message = cr__strdup(message);
  }
  return 0;
}

/* The body passes cr_request_t.max_body. Returns 0: the transfer fails. */
static size_t body_too_large(cr_transfer_t* t) {
  char text[128];
  snprintf(text, sizeof(text),
           "the body is longer than the %lld bytes a task may collect",
           (long long)t->max_body);
  return (size_t)fail_from_callback(t, CR_ERR_TOO_LARGE, text);
}

/* The algorithm a digest field's value names, SHA-512 first (RFC 9530's
 * "sha-512=:…:", RFC 3230's "SHA-256=…"). */
static cr_digest_t named_digest(const char* value, size_t length) {
  cr_digest_t found = CR_DIGEST_NONE;
  size_t i;
  for (i = 0; i + 7 <= length; i++) {
    if (strncasecmp(value + i, "sha-512", 7) == 0)
      return CR_DIGEST_SHA512;
    if (strncasecmp(value + i, "sha-256", 7) == 0)
      found = CR_DIGEST_SHA256;
  }
  return found;
}

/* At the end of the final response's headers: the file's digest starts
 * (again) with the body the file keeps. */
static int start_digest(cr_transfer_t* t) {
  cr_digest_t kind = t->digest;
  if (kind == CR_DIGEST_AUTO)
    kind = t->encoded && (t->flags & CR_FLAG_DECODE) ? CR_DIGEST_NONE
                                                     : t->run->auto_digest;
  if (kind == CR_DIGEST_NONE || t->discard_body || t->status / 100 != 2)
    return 1;
  /* Made once per transfer: the writer may still hash an earlier
   * response's chunks; it starts over itself when a chunk goes back to an
   * offset it already hashed past (a whole entity after a range). */
  if (t->run->hash == NULL) {
    t->run->hash = cr__malloc(sizeof(*t->run->hash));
    if (t->run->hash == NULL)
      return fail_from_callback(t, CR_ERR_INTERNAL, "out of memory");
    cr__sha2_init(t->run->hash, kind);
    t->run->hashed = 0;
  }
  return 1;
}

/* Decides, at the end of the final response's headers, what its body is. */
static int finish_headers(cr_transfer_t* t) {
  t->response_seen = 1;
  if (t->run->content_length >= 0 && t->chunked && t->status >= 200)
    return fail_from_callback(t, CR_ERR_BAD_RESPONSE,
                              "Content-Length together with chunked coding");
  t->expected = t->run->content_length;
  /* Content-Length counts encoded bytes; curl delivers decoded ones, whose
   * number is known only at the end. curl checks the wire length itself,
   * and finish_active() checks it again (engine.md §4: HTTP/2 in 7.88.1). */
  if (t->encoded && (t->flags & CR_FLAG_DECODE))
    t->expected = -1;
  if ((t->flags & CR_FLAG_DECODE) && t->run->coding_count > 0 &&
      t->run->coding_error == NULL) {
    t->run->decoder = cr__decoder_make(t->run->codings, t->run->coding_count);
    t->run->decoded = cr__malloc(CR_DECODED_SIZE);
    if (t->run->decoder == NULL || t->run->decoded == NULL)
      return fail_from_callback(t, CR_ERR_INTERNAL, "out of memory");
  }
  if ((t->flags & CR_FLAG_NO_BODY) || t->status == 204 || t->status == 304)
    t->expected = 0;
  /* A body announced longer than the limit fails before it comes. */
  if (t->max_body > 0 && t->expected > t->max_body && t->status / 100 == 2)
    return (int)body_too_large(t);
  int64_t range_start = t->run->body_base;
  t->run->body_base = 0;
  /* A resumed download keeps its partial file untouched until the
   * response is accepted below. */
  t->discard_body = t->resume_offset > 0 || t->range_length > 0;

  if (t->range_length > 0 && t->status == 200)
    return fail_from_callback(t, CR_ERR_BAD_RANGE,
                              "200 (the whole entity) for a range of it");
  if (t->resume_offset > 0 || t->range_length > 0) {
    if (t->status == 206) {
      /* on_header parsed Content-Range into range_start and expected. */
      if (range_start != t->resume_offset)
        return fail_from_callback(t, CR_ERR_BAD_RANGE,
                                  "206 for another range than requested");
      if (t->encoded)
        return fail_from_callback(t, CR_ERR_BAD_RANGE,
                                  "206 with a content coding: the range "
                                  "cannot be appended to the partial file");
      t->run->body_base = t->resume_offset;
      t->discard_body = 0;
    } else if (t->status == 200) {
      /* The whole entity again: start the file over. */
      t->run->body_base = 0;
      t->discard_body = 0;
      if (t->sink == CR_SINK_FILE && ftruncate(t->sink_fd, 0) != 0) {
        t->os_error = errno;
        return fail_from_callback(t, CR_ERR_FILE_WRITE,
                                  "cannot truncate the download file");
      }
    }
    /* Any other status: its body never goes into the partial file. */
  }
  return start_digest(t);
}

static int parse_content_range(cr_transfer_t* t, const char* value,
                               size_t length) {
  /* "bytes A-B/TOTAL", or an unknown total after the slash. */
  char buffer[128];
  long long first, last;
  if (length >= sizeof(buffer))
    return -1;
  memcpy(buffer, value, length);
  buffer[length] = '\0';
  if (sscanf(buffer, "bytes %lld-%lld", &first, &last) != 2 || first < 0 ||
      last < first)
    return -1;
  t->run->body_base = first;
  t->run->content_length = last - first + 1;
  return 0;
}

/* append_header failed (`why`, its result): the head is over
 * CR_MAX_HEADER_SECTION (a server sending a header section without end),
 * or there is no memory for it. Returns 0: the transfer fails. */
static size_t header_not_kept(cr_transfer_t* t, int why) {
  if (why == -2)
    return (size_t)fail_from_callback(
        t, CR_ERR_BAD_RESPONSE,
        "the response's header section is larger than 300 KiB");
  return (size_t)fail_from_callback(t, CR_ERR_INTERNAL, "out of memory");
}

/* One header line (with its line ending): the status line, a field, or the
 * blank line that ends the head. Returns `length`, or 0 when the transfer
 * must fail (t->error says why). */
static size_t on_header_line(cr_transfer_t* t, char* data, size_t length) {
  const char* value;
  size_t value_length;
  int kept;

  if (length >= 5 && strncmp(data, "HTTP/", 5) == 0) {
    const char* space = memchr(data, ' ', length);
    reset_response(t);
    if (space)
      t->status = atoi(space + 1);
    /* HTTP/2: the body ends with its stream, not when Content-Length bytes
     * have come. libcurl 7.88 ends a transfer as soon as the announced
     * length has arrived and resets the stream when the server's
     * END_STREAM comes in a later frame (as SwiftNIO's servers send it):
     * a reset the server counts against the rapid-reset attack
     * (nghttp2_closed_stream_reset.c). Read to the stream's end, the stream
     * is closed when the transfer ends and no reset goes out. The status
     * line comes before the fields, so curl has not read Content-Length
     * yet; the engine checks the length itself (on_write, finish_active).
     * Never for HTTP/1.1, where the length is what ends a body on a
     * kept-alive connection. */
    if (length >= 7 && strncmp(data, "HTTP/2 ", 7) == 0)
      curl_easy_setopt(t->easy, CURLOPT_IGNORE_CONTENT_LENGTH, 1L);
  } else if (length <= 2 && (data[0] == '\r' || data[0] == '\n')) {
    if ((kept = append_header(t, data, length)) != 0)
      return header_not_kept(t, kept);
    if (t->status == 101 && (t->flags & CR_FLAG_UPGRADE)) {
      /* Switched: the rest is the new protocol's, with no timeout of ours. */
      if (finish_headers(t) <= 0)
        return 0;
      t->upgraded = 1;
      t->idle_timeout_ms = 0;
      cr__emit_response(t);
    } else if (t->status >= 200) {
      int outcome = finish_headers(t);
      if (outcome <= 0)
        return 0; /* curl fails with CURLE_WRITE_ERROR; t->error says why */
      /* Final unless curl will answer an auth challenge itself: a Digest
       * nonce's round trip, an NTLM or Negotiate handshake. */
      cr_auth_t auth = t->status == 407 ? t->proxy_auth : t->auth;
      if (!((t->status == 401 || t->status == 407) &&
            (auth == CR_AUTH_DIGEST || auth == CR_AUTH_ANY || auth == CR_AUTH_NTLM ||
             auth == CR_AUTH_NEGOTIATE)))
        cr__emit_response(t);
    } else if (t->status > 101) {
      cr__emit_informational(t);
    }
    return length;
  } else if ((value = header_value(data, length, "Content-Length",
                                   &value_length))) {
    char* end;
    char buffer[32];
    long long parsed;
    if (value_length == 0 || value_length >= sizeof(buffer))
      return fail_from_callback(t, CR_ERR_BAD_RESPONSE, "bad Content-Length");
    memcpy(buffer, value, value_length);
    buffer[value_length] = '\0';
    parsed = strtoll(buffer, &end, 10);
    if (*end != '\0' || parsed < 0)
      return fail_from_callback(t, CR_ERR_BAD_RESPONSE, "bad Content-Length");
    if (t->run->content_length >= 0 && t->run->content_length != parsed && t->status != 206)
      return fail_from_callback(t, CR_ERR_BAD_RESPONSE,
                                "conflicting Content-Length headers");
    if (t->status != 206)
      t->run->content_length = parsed;
  } else if ((value = header_value(data, length, "Content-Range",
                                   &value_length))) {
    if (t->status == 206 && parse_content_range(t, value, value_length) != 0)
      return fail_from_callback(t, CR_ERR_BAD_RANGE, "bad Content-Range");
  } else if ((value = header_value(data, length, "Transfer-Encoding",
                                   &value_length))) {
    if (value_length >= 7 && strncasecmp(value + value_length - 7, "chunked", 7) == 0)
      t->chunked = 1;
  } else if (header_value(data, length, "Location", &value_length)) {
    t->has_location = value_length > 0;
  } else if ((value = header_value(data, length, "Repr-Digest",
                                   &value_length)) ||
             (t->status == 200 &&
              (value = header_value(data, length, "Content-Digest",
                                    &value_length))) ||
             (value = header_value(data, length, "Digest", &value_length))) {
    cr_digest_t named = named_digest(value, value_length);
    if (named > t->run->auto_digest)
      t->run->auto_digest = named;
  } else if ((value = header_value(data, length, "Content-Encoding",
                                   &value_length))) {
    if (value_length > 0 &&
        !(value_length == 8 && strncasecmp(value, "identity", 8) == 0))
      t->encoded = 1;
    /* A coding the engine cannot decode fails the transfer only when a body
     * comes (a HEAD or a 304 names it and has none), with the parser's
     * reason. */
    if ((t->flags & CR_FLAG_DECODE) && t->run->coding_error == NULL)
      (void)cr__codings_parse(t->run->codings, &t->run->coding_count, value,
                              value_length, &t->run->coding_error);
  }
  if ((kept = append_header(t, data, length)) != 0)
    return header_not_kept(t, kept);
  return length;
}

/* CURLOPT_HEADERFUNCTION. curl passes one line a call, except after a
 * pause: libcurl 7.88 keeps the header lines that arrive while a transfer is
 * paused in one buffer and passes them in a single call when it resumes
 * (status line, fields and the blank line together). Each line is handled
 * on its own, or that head's fields and its end would be lost and its body
 * written before the head was finished (seen as a write at offset -1). */
static size_t on_header(char* data, size_t size, size_t count, void* context) {
  cr_transfer_t* t = context;
  size_t length = size * count;
  size_t offset = 0;

  CR_ASSERT(t->magic == CR_TRANSFER_MAGIC);
  if (t->dropping)
    return length;
  t->run->last_activity_ms = uv_now(&t->loop->uv);
  while (offset < length) {
    char* line = data + offset;
    char* newline = memchr(line, '\n', length - offset);
    size_t line_length = newline ? (size_t)(newline - line) + 1 : length - offset;
    if (on_header_line(t, line, line_length) != line_length)
      return 0; /* curl fails with CURLE_WRITE_ERROR; t->error says why */
    offset += line_length;
  }
  return length;
}

/* The first buffer of a DATA batch: what is left of a known length (a 1 KiB
 * body takes 1 KiB, not 16), else 16 KiB; it doubles from there. */
static size_t first_memory_capacity(const cr_transfer_t* t) {
  int64_t left = t->expected >= 0 ? t->expected - t->received : -1;
  if (left <= 0)
    return CR_MEMORY_BATCH_DEFAULT;
  return left < CR_MEMORY_BATCH_MAX ? (size_t)left : CR_MEMORY_BATCH_MAX;
}

/* Whether the file writer has no room for this transfer's next chunk. */
static int sink_full(const cr_transfer_t* t) {
  return t->sink == CR_SINK_FILE && !t->discard_body &&
         (t->run->pending_writes >= CR_MAX_PENDING_WRITES ||
          t->loop->pending_writes >= CR_LOOP_PENDING_WRITES);
}

/* Body bytes (decoded, if the body has a coding) into the sink. Returns
 * `length`, CURL_WRITEFUNC_PAUSE when the writer is full and `may_pause`
 * (curl keeps the bytes), or 0 when the transfer fails (t->error). */
static size_t take_body(cr_transfer_t* t, const char* data, size_t length,
                        int may_pause) {
  if (t->expected >= 0 && t->received + (int64_t)length > t->expected)
    return fail_from_callback(t, CR_ERR_BAD_RESPONSE,
                              "body longer than announced");
  if (t->max_body > 0 && !t->discard_body &&
      t->received + (int64_t)length > t->max_body)
    return body_too_large(t);
  if (t->discard_body || t->sink == CR_SINK_DISCARD) {
    /* counted only */
  } else if (t->sink == CR_SINK_MEMORY) {
    if (t->run->memory_length + length > t->run->memory_capacity) {
      size_t capacity = t->run->memory_capacity ? t->run->memory_capacity
                                           : first_memory_capacity(t);
      char* memory;
      while (capacity < t->run->memory_length + length)
        capacity *= 2;
      memory = cr__realloc(t->run->memory, capacity);
      if (memory == NULL)
        return fail_from_callback(t, CR_ERR_INTERNAL, "out of memory");
      t->run->memory = memory;
      t->run->memory_capacity = capacity;
    }
    memcpy(t->run->memory + t->run->memory_length, data, length);
    t->run->memory_length += length;
  } else {
    size_t offset = 0;
    if (t->run->write_errno != 0)
      return 0;
    if (may_pause && sink_full(t)) {
      t->disk_paused = 1;
      t->curl_paused = 1;
      return CURL_WRITEFUNC_PAUSE;
    }
    while (offset < length) {
      size_t room, take;
      if (t->run->chunk == NULL) {
        t->run->chunk = cr__malloc(CR_CHUNK_SIZE);
        if (t->run->chunk == NULL)
          return fail_from_callback(t, CR_ERR_INTERNAL, "out of memory");
        t->run->chunk_length = 0;
      }
      room = CR_CHUNK_SIZE - t->run->chunk_length;
      take = length - offset < room ? length - offset : room;
      memcpy(t->run->chunk + t->run->chunk_length, data + offset, take);
      t->run->chunk_length += take;
      offset += take;
      if (t->run->chunk_length == CR_CHUNK_SIZE) {
        cr__queue_chunk(t);
        /* Not queued (out of memory): the chunk is still full, and t->error
         * says why the transfer fails. */
        if (t->run->write_errno != 0)
          return 0;
      }
    }
  }
  t->received += (int64_t)length;
  cr__mark_dirty(t);
  return length;
}

/* Decodes `length` bytes of the body into the sink, as far as the sink has
 * room: what it has no room for waits (t->run->undecoded, or inside the
 * decoder) and the transfer is paused for the disk. 0: all of it went; 1:
 * some waits; -1: the transfer fails (t->error). */
static int decode_into_sink(cr_transfer_t* t, const unsigned char* input,
                            size_t length) {
  t->run->decoder_fed = 1;
  for (;;) {
    ptrdiff_t made = cr__decoder_run(t->run->decoder, &input, &length,
                                     t->run->decoded, CR_DECODED_SIZE);
    if (made < 0) {
      fail_from_callback(t, CR_ERR_DECODING,
                         "the body is not valid in its content coding");
      return -1;
    }
    if (made > 0 &&
        take_body(t, (const char*)t->run->decoded, (size_t)made, 0) == 0)
      return -1;
    if (length == 0 && (size_t)made < CR_DECODED_SIZE) {
      free(t->run->undecoded);
      t->run->undecoded = NULL;
      t->run->undecoded_length = 0;
      t->run->undecoded_pending = 0;
      return 0;
    }
    if (sink_full(t))
      break;
  }
  /* The rest waits for the writer: kept (at most one read of curl's). */
  if (length == 0) {
    free(t->run->undecoded);
    t->run->undecoded = NULL;
  } else if (t->run->undecoded && input >= t->run->undecoded &&
             input < t->run->undecoded + t->run->undecoded_length) {
    memmove(t->run->undecoded, input, length);
  } else {
    unsigned char* kept = cr__malloc(length);
    if (kept == NULL) {
      fail_from_callback(t, CR_ERR_INTERNAL, "out of memory");
      return -1;
    }
    memcpy(kept, input, length);
    free(t->run->undecoded);
    t->run->undecoded = kept;
  }
  t->run->undecoded_length = length;
  t->run->undecoded_pending = 1;
  t->disk_paused = 1;
  return 1;
}

int cr__transfer_decode_pending(cr_transfer_t* t) {
  if (!t->run->undecoded_pending)
    return 0;
  return decode_into_sink(t, t->run->undecoded, t->run->undecoded_length);
}

void cr__transfer_check_decoded_end(cr_transfer_t* t) {
  if (t->error == CR_OK && t->run && t->run->decoder &&
      t->run->decoder_fed && !cr__decoder_complete(t->run->decoder)) {
    t->error = CR_ERR_DECODING;
    free(t->message);
    t->message = cr__strdup("the body ended inside its content coding");
  }
}

/* CURLOPT_WRITEFUNCTION. A body with a content coding comes as it was sent
 * (CURLOPT_HTTP_CONTENT_DECODING 0): curl can keep such bytes across a
 * pause, and the engine decodes only what its sink has room for
 * (decoder.c says why libcurl 7.88's own decoding cannot be paused). */
static size_t on_write(char* data, size_t size, size_t count, void* context) {
  cr_transfer_t* t = context;
  size_t length = size * count;

  CR_ASSERT(t->magic == CR_TRANSFER_MAGIC);
  if (t->dropping)
    return length;
  t->run->last_activity_ms = uv_now(&t->loop->uv);
  if (!t->response_emitted)
    cr__emit_response(t);
  if (t->held || t->user_paused) {
    t->curl_paused = 1;
    return CURL_WRITEFUNC_PAUSE;
  }
  if (t->run->undecoded_pending || (t->run->decoder && sink_full(t))) {
    t->disk_paused = 1;
    t->curl_paused = 1;
    return CURL_WRITEFUNC_PAUSE;
  }
  if (t->loop->engine->rate_limit_count > 0 && length > 0) {
    uint64_t wait_ms = cr__rate_limits_take(t->loop->engine->rate_limits,
                                            t->loop->engine->rate_limit_count,
                                            length);
    if (wait_ms > 0) {
      cr__rate_pause(t, wait_ms);
      return CURL_WRITEFUNC_PAUSE;
    }
  }
  if (t->discard_body || length == 0)
    return take_body(t, data, length, 1);
  if (t->run->coding_error)
    return fail_from_callback(t, CR_ERR_DECODING, t->run->coding_error);
  if (t->run->decoder) {
    if (t->run->write_errno != 0)
      return 0;
    return decode_into_sink(t, (const unsigned char*)data, length) < 0 ? 0
                                                                       : length;
  }
  return take_body(t, data, length, 1);
}

/* Copies up to `room` supplied bytes of a streamed body into buffer,
 * freeing what is read; notes the end once the last is read. */
static size_t read_supplied(cr_transfer_t* t, char* buffer, size_t room) {
  size_t n = 0;
  while (n < room && t->supply_head) {
    cr_supply_t* head = t->supply_head;
    size_t take = head->length - t->supply_read;
    if (take > room - n)
      take = room - n;
    memcpy(buffer + n, head->bytes + t->supply_read, take);
    n += take;
    t->supply_read += take;
    if (t->supply_read == head->length) {
      if (head->end)
        t->supply_ended = 1;
      t->supply_head = head->next;
      if (t->supply_head == NULL)
        t->supply_tail = NULL;
      t->supply_read = 0;
      free(head);
    }
  }
  return n;
}

static size_t on_read(char* buffer, size_t size, size_t count, void* context) {
  cr_transfer_t* t = context;
  size_t room = size * count;
  size_t n = 0;

  if (t->dropping)
    return CURL_READFUNC_ABORT;
  t->run->last_activity_ms = uv_now(&t->loop->uv);
  if (t->user_paused) {
    t->curl_paused = 1;
    return CURL_READFUNC_PAUSE;
  }
  if (t->flags & CR_FLAG_STREAMED_BODY) {
    n = read_supplied(t, buffer, room);
    if (n == 0 && !t->supply_ended) {
      /* Nothing yet: curl asks again once cr_transfer_supply() brings some
       * (cr__supply_wake). */
      t->supply_waiting = 1;
      return CURL_READFUNC_PAUSE;
    }
  } else if (t->body_fd >= 0) {
    int64_t left = t->body_fd_length - t->run->body_fd_position;
    ssize_t got;
    if (left <= 0)
      return 0;
    if ((int64_t)room > left)
      room = (size_t)left;
    do {
      got = pread(t->body_fd, buffer, room,
                  (off_t)(t->body_fd_offset + t->run->body_fd_position));
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
      t->os_error = errno;
      fail_from_callback(t, CR_ERR_FILE_READ, "cannot read the upload file");
      return CURL_READFUNC_ABORT;
    }
    if (got == 0) {
      fail_from_callback(t, CR_ERR_FILE_READ, "upload file shorter than announced");
      return CURL_READFUNC_ABORT;
    }
    n = (size_t)got;
    t->run->body_fd_position += got;
  } else {
    size_t left = t->body_length - t->run->body_position;
    const char* bytes = t->body ? t->body : t->borrowed.bytes;
    n = room < left ? room : left;
    if (n > 0)
      memcpy(buffer, bytes + t->run->body_position, n);
    t->run->body_position += n;
  }
  t->sent += (int64_t)n;
  cr__mark_dirty(t);
  return n;
}

/* Lets curl rewind an upload body, e.g. after an auth round trip. A
 * streamed body only to where it is: its bytes are gone once read. */
static int on_seek(void* context, curl_off_t offset, int origin) {
  cr_transfer_t* t = context;
  if (origin != SEEK_SET || offset < 0)
    return CURL_SEEKFUNC_CANTSEEK;
  if (t->flags & CR_FLAG_STREAMED_BODY)
    return offset == t->sent ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_CANTSEEK;
  if (t->body_fd >= 0) {
    if (offset > t->body_fd_length)
      return CURL_SEEKFUNC_FAIL;
    t->run->body_fd_position = offset;
  } else {
    if ((size_t)offset > t->body_length)
      return CURL_SEEKFUNC_FAIL;
    t->run->body_position = (size_t)offset;
  }
  t->sent = offset;
  return CURL_SEEKFUNC_OK;
}

/* ---- Easy handle setup (loop thread) ---- */

/* curl's mask for a credential of `auth` (a server's or a proxy's). */
static long auth_mask(cr_auth_t auth) {
  switch (auth) {
    case CR_AUTH_BASIC: return CURLAUTH_BASIC;
    case CR_AUTH_DIGEST: return CURLAUTH_DIGEST;
    case CR_AUTH_NTLM: return CURLAUTH_NTLM;
    case CR_AUTH_NEGOTIATE: return CURLAUTH_NEGOTIATE;
    default: return CURLAUTH_ANY;
  }
}

/* A refused option fails the transfer with curl's code and a message that
 * names the option (docs/engine.md, "Errors"). */
static cr_error_t setup_failed(cr_transfer_t* t, CURLcode code,
                               const char* option) {
  char text[160];
  snprintf(text, sizeof(text), "cannot set up the transfer: %s: %s", option,
           curl_easy_strerror(code));
  t->curl_code = (int)code;
  free(t->message);
  t->message = cr__strdup(text);
  return cr__error_from_curl(code, 0);
}

#define SET(option, value)                                          \
  do {                                                              \
    CURLcode set_code = curl_easy_setopt(easy, option, value);      \
    if (set_code != CURLE_OK)                                       \
      return setup_failed(t, set_code, #option);                    \
  } while (0)

int cr__transfer_offers_http2(const cr_transfer_t* t) {
  return (t->flags & CR_FLAG_HTTP2) && strncasecmp(t->url, "https:", 6) == 0;
}

cr_error_t cr__transfer_setup_easy(cr_transfer_t* t, CURL* easy) {
  struct cr_engine_s* engine = t->loop->engine;
  int has_body = t->body_fd >= 0 || t->body_length > 0 || (t->flags & CR_FLAG_STREAMED_BODY);
  int upgrade = (t->flags & CR_FLAG_UPGRADE) != 0;

  t->easy = easy;
  if (t->run == NULL) {
    t->run = cr__calloc(1, sizeof(*t->run));
    if (t->run == NULL) {
      free(t->message);
      t->message = cr__strdup("out of memory");
      return CR_ERR_INTERNAL;
    }
    t->run->content_length = -1;
    atomic_init(&t->run->writer_failed, 0);
  }
  t->run->last_activity_ms = uv_now(&t->loop->uv);
  SET(CURLOPT_URL, t->url);
  SET(CURLOPT_PRIVATE, t);
  SET(CURLOPT_ERRORBUFFER, t->run->error_buffer);
  SET(CURLOPT_NOSIGNAL, 1L);
  SET(CURLOPT_QUICK_EXIT, 1L);
  SET(CURLOPT_PROTOCOLS_STR, "http,https");
  SET(CURLOPT_FOLLOWLOCATION, 0L);
  SET(CURLOPT_SHARE, t->loop->share);
  SET(CURLOPT_HEADERFUNCTION, on_header);
  SET(CURLOPT_HEADERDATA, t);
  SET(CURLOPT_WRITEFUNCTION, on_write);
  SET(CURLOPT_WRITEDATA, t);
  if (t->headers == NULL) {
    const char* line = t->header_text;
    for (size_t i = 0; i < t->header_count; i++) {
      struct curl_slist* next = curl_slist_append(t->headers, line);
      if (next == NULL) {
        curl_slist_free_all(t->headers); /* never a partial list */
        t->headers = NULL;
        return setup_failed(t, CURLE_OUT_OF_MEMORY, "the header list");
      }
      t->headers = next;
      line += strlen(line) + 1;
    }
  }
  SET(CURLOPT_HTTPHEADER, t->headers);
  SET(CURLOPT_TCP_KEEPALIVE, 1L);
  SET(CURLOPT_OPENSOCKETFUNCTION, cr__open_socket);
  SET(CURLOPT_CLOSESOCKETFUNCTION, cr__close_socket);
  SET(CURLOPT_CLOSESOCKETDATA, t->loop);
  if (upgrade) {
    /* Its own connection, which nothing reuses after. */
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    SET(CURLOPT_FRESH_CONNECT, 1L);
    SET(CURLOPT_FORBID_REUSE, 1L);
  } else if (cr__transfer_offers_http2(t)) {
    /* Only over TLS: a plain-http transfer waiting to multiplex would wait
     * for a connection that never can (and h2c is broken in 7.88.1). */
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    SET(CURLOPT_PIPEWAIT, 1L);
  } else {
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
  }
  /* The codings the engine decodes are offered (a request's own
   * Accept-Encoding header replaces the offer, and decoding stays on); curl
   * passes the body as it came, and the engine decodes it (decoder.c). */
  if (t->flags & CR_FLAG_DECODE)
    SET(CURLOPT_ACCEPT_ENCODING, cr__decoder_offer());
  SET(CURLOPT_HTTP_CONTENT_DECODING, 0L);
  if (t->flags & CR_FLAG_INSECURE) {
    SET(CURLOPT_SSL_VERIFYPEER, 0L);
    SET(CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (engine->ca_pem) {
    /* The same CAs for the server and for an HTTPS proxy. */
    struct curl_blob blob;
    blob.data = engine->ca_pem;
    blob.len = engine->config.ca_pem_length;
    blob.flags = CURL_BLOB_NOCOPY;
    SET(CURLOPT_CAINFO_BLOB, &blob);
    SET(CURLOPT_PROXY_CAINFO_BLOB, &blob);
  }
  if (t->sink == CR_SINK_FILE)
    SET(CURLOPT_BUFFERSIZE,
        (long)(engine->config.buffer_size > 0 ? engine->config.buffer_size
               : t->loop->active_count == 0   ? CR_FILE_BUFFER_SIZE
                                              : CR_FILE_BUFFER_SHARED_SIZE));
  else if (engine->config.buffer_size > 0)
    SET(CURLOPT_BUFFERSIZE, (long)engine->config.buffer_size);

  if (strcmp(t->method, "HEAD") == 0 || (t->flags & CR_FLAG_NO_BODY)) {
    SET(CURLOPT_NOBODY, 1L);
    t->flags |= CR_FLAG_NO_BODY;
  }
  if (has_body) {
    int64_t body_size = t->body_fd >= 0 ? t->body_fd_length : (int64_t)t->body_length;
    if (t->flags & CR_FLAG_STREAMED_BODY)
      /* An upgrade's body never ends for curl (and no length goes out). */
      body_size = upgrade ? INT64_MAX : t->streamed_body_length;
    SET(CURLOPT_UPLOAD, 1L);
    SET(CURLOPT_READFUNCTION, on_read);
    SET(CURLOPT_READDATA, t);
    SET(CURLOPT_SEEKFUNCTION, on_seek);
    SET(CURLOPT_SEEKDATA, t);
    SET(CURLOPT_INFILESIZE_LARGE, (curl_off_t)body_size);
    /* curl reads an upload body 64 KiB at a time by default, one send() and one loop turn each; large bodies
     * go out in fewer, larger writes (measured in Benchmarks/, W5). */
    if (body_size > CR_UPLOAD_BUFFER_DEFAULT && !(t->flags & CR_FLAG_STREAMED_BODY))
      SET(CURLOPT_UPLOAD_BUFFERSIZE, (long)(body_size < CR_UPLOAD_BUFFER_SIZE ? body_size : CR_UPLOAD_BUFFER_SIZE));
  }
  if ((strcmp(t->method, "GET") != 0 || has_body) && strcmp(t->method, "HEAD") != 0 &&
      !(has_body && strcmp(t->method, "PUT") == 0))
    SET(CURLOPT_CUSTOMREQUEST, t->method);
  if (t->range_length > 0) {
    char range[48];
    snprintf(range, sizeof(range), "%lld-%lld", (long long)t->resume_offset,
             (long long)(t->resume_offset + t->range_length - 1));
    SET(CURLOPT_RANGE, range);
  } else if (t->resume_offset > 0) {
    char range[32];
    snprintf(range, sizeof(range), "%lld-", (long long)t->resume_offset);
    SET(CURLOPT_RANGE, range);
  }
  if (t->auth != CR_AUTH_NONE) {
    SET(CURLOPT_HTTPAUTH, auth_mask(t->auth));
    SET(CURLOPT_USERNAME, t->username);
    SET(CURLOPT_PASSWORD, t->password);
  }
  if (t->proxy)
    SET(CURLOPT_PROXY, t->proxy);
  if (t->no_proxy)
    SET(CURLOPT_NOPROXY, t->no_proxy);
  if (t->proxy_auth != CR_AUTH_NONE) {
    SET(CURLOPT_PROXYAUTH, auth_mask(t->proxy_auth));
    SET(CURLOPT_PROXYUSERNAME, t->proxy_username);
    SET(CURLOPT_PROXYPASSWORD, t->proxy_password);
  }
  if (t->total_timeout_ms > 0) {
    int64_t spent = (int64_t)((cr__now_us() - t->submitted_us) / 1000);
    int64_t left = t->total_timeout_ms - spent;
    SET(CURLOPT_TIMEOUT_MS, (long)(left > 1 ? left : 1));
  }
  if (t->idle_timeout_ms > 0)
    SET(CURLOPT_CONNECTTIMEOUT_MS, (long)t->idle_timeout_ms);
  if (t->max_receive_speed > 0)
    SET(CURLOPT_MAX_RECV_SPEED_LARGE, (curl_off_t)t->max_receive_speed);
  if (t->max_send_speed > 0)
    SET(CURLOPT_MAX_SEND_SPEED_LARGE, (curl_off_t)t->max_send_speed);
  if (t->connection) {
    const char* refused = NULL;
    CURLcode code = cr__connection_apply(t, easy, &refused);
    if (code != CURLE_OK)
      return setup_failed(t, code, refused);
  }
  return CR_OK;
}

#undef SET

int64_t cr__transfer_wire_bytes(cr_transfer_t* t) {
  curl_off_t bytes;
  /* curl counts body bytes as they come off the connection, before any
   * content decoding. */
  if (!(t->encoded && (t->flags & CR_FLAG_DECODE)))
    return t->received;
  if (t->easy == NULL ||
      curl_easy_getinfo(t->easy, CURLINFO_SIZE_DOWNLOAD_T, &bytes) != CURLE_OK)
    return -1;
  return (int64_t)bytes;
}

void cr__transfer_collect_metrics(cr_transfer_t* t) {
  /* Allocated here, not with the transfer: a queued transfer stays small. */
  cr_metrics_t* m = t->metrics ? t->metrics : cr__calloc(1, sizeof(*m));
  CURL* easy = t->easy;
  curl_off_t value;
  long number;
  char* text;

  if (m == NULL)
    return; /* out of memory: the COMPLETE event reports no timings */
  t->metrics = m;
#define TIME(info, field)                                        \
  m->field = curl_easy_getinfo(easy, info, &value) == CURLE_OK   \
                 ? (int64_t)value                                \
                 : -1
  TIME(CURLINFO_NAMELOOKUP_TIME_T, name_lookup_us);
  TIME(CURLINFO_CONNECT_TIME_T, connect_us);
  TIME(CURLINFO_APPCONNECT_TIME_T, tls_us);
  TIME(CURLINFO_PRETRANSFER_TIME_T, pretransfer_us);
  TIME(CURLINFO_STARTTRANSFER_TIME_T, first_byte_us);
  TIME(CURLINFO_TOTAL_TIME_T, total_us);
#undef TIME
  m->queued_us = (int64_t)(t->admitted_us - t->submitted_us);
  m->request_header_bytes =
      curl_easy_getinfo(easy, CURLINFO_REQUEST_SIZE, &number) == CURLE_OK ? number : 0;
  m->response_header_bytes =
      curl_easy_getinfo(easy, CURLINFO_HEADER_SIZE, &number) == CURLE_OK ? number : 0;
  m->body_bytes_sent = t->sent;
  m->body_bytes_received = t->received;
  m->body_bytes_on_wire = cr__transfer_wire_bytes(t);
  if (curl_easy_getinfo(easy, CURLINFO_HTTP_VERSION, &number) == CURLE_OK) {
    switch (number) {
      case CURL_HTTP_VERSION_1_0: m->http_version = 10; break;
      case CURL_HTTP_VERSION_1_1: m->http_version = 11; break;
      case CURL_HTTP_VERSION_2_0: m->http_version = 20; break;
      case CURL_HTTP_VERSION_3: m->http_version = 30; break;
      default: m->http_version = 0;
    }
  }
  m->reused_connection =
      curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &number) == CURLE_OK &&
      number == 0 && m->http_version != 0;
  if (curl_easy_getinfo(easy, CURLINFO_PRIMARY_PORT, &number) == CURLE_OK)
    m->remote_port = (int)number;
  if (curl_easy_getinfo(easy, CURLINFO_LOCAL_PORT, &number) == CURLE_OK)
    m->local_port = (int)number;
  if (curl_easy_getinfo(easy, CURLINFO_PRIMARY_IP, &text) == CURLE_OK && text)
    snprintf(m->remote_ip, sizeof(m->remote_ip), "%s", text);
  if (curl_easy_getinfo(easy, CURLINFO_LOCAL_IP, &text) == CURLE_OK && text)
    snprintf(m->local_ip, sizeof(m->local_ip), "%s", text);
}

/* Every CURLcode of libcurl 7.88 (and later ones it does not name) to the
 * engine's codes, which Swift maps to Apple's URLError codes
 * (Sources/Courier/Errors/EngineErrorMapping.swift). Codes of protocols the
 * engine refuses at submit (FTP, TFTP, SSH, LDAP, RTSP, file:) and of API
 * misuse are internal: they cannot come from an HTTP exchange. The
 * message always carries curl's own text (finish_active). */
cr_error_t cr__error_from_curl(CURLcode code, int after_submit) {
  switch (code) {
    case CURLE_OK: return CR_OK;
    case CURLE_UNSUPPORTED_PROTOCOL:
      /* The scheme was checked at submit: this is an HTTP/0.9 or other
       * non-HTTP answer. */
      return after_submit ? CR_ERR_BAD_RESPONSE : CR_ERR_UNSUPPORTED_URL;
    case CURLE_URL_MALFORMAT: return CR_ERR_BAD_URL;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return CR_ERR_CANNOT_RESOLVE;
    case CURLE_COULDNT_CONNECT:
    case CURLE_INTERFACE_FAILED:
    case CURLE_NO_CONNECTION_AVAILABLE:
    case CURLE_QUIC_CONNECT_ERROR:
    case CURLE_PROXY: return CR_ERR_CANNOT_CONNECT;
    case CURLE_OPERATION_TIMEDOUT: return CR_ERR_TIMED_OUT;
    case CURLE_PARTIAL_FILE: return CR_ERR_SHORT_BODY;
    /* A connection that ended or broke mid-exchange, an HTTP/2 stream the
     * server reset (RST_STREAM: curl's text names its code), an upload
     * the server stopped taking. */
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
    case CURLE_UPLOAD_FAILED: return CR_ERR_CONNECTION_LOST;
    /* Not HTTP, or HTTP/2 frames that break the protocol. */
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_HTTP2:
    case CURLE_HTTP_RETURNED_ERROR: return CR_ERR_BAD_RESPONSE;
    case CURLE_TOO_MANY_REDIRECTS: return CR_ERR_TOO_MANY_REDIRECTS;
    case CURLE_BAD_CONTENT_ENCODING: return CR_ERR_DECODING;
    case CURLE_RANGE_ERROR:
    case CURLE_BAD_DOWNLOAD_RESUME: return CR_ERR_BAD_RANGE;
    case CURLE_FILESIZE_EXCEEDED: return CR_ERR_TOO_LARGE;
    case CURLE_LOGIN_DENIED:
    case CURLE_AUTH_ERROR: return CR_ERR_AUTH_FAILED;
    case CURLE_SEND_FAIL_REWIND: return CR_ERR_BODY_NOT_REWOUND;
    case CURLE_SSL_CLIENTCERT: return CR_ERR_CLIENT_CERT_REQUIRED;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_USE_SSL_FAILED:
    case CURLE_SSL_SHUTDOWN_FAILED: return CR_ERR_TLS;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_INVALIDCERTSTATUS: return CR_ERR_TLS_UNTRUSTED;
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH: return CR_ERR_TLS_PINNED;
    case CURLE_WRITE_ERROR: return CR_ERR_FILE_WRITE;
    case CURLE_READ_ERROR:
    case CURLE_FILE_COULDNT_READ_FILE: return CR_ERR_FILE_READ;
    /* Not a cancel: the engine cancels with curl_multi_remove_handle, and
     * its read callback records its own error before it aborts. curl
     * reports this for every transfer of a multi handle whose socket or
     * timer callback failed (out of memory in sockets.c). */
    case CURLE_ABORTED_BY_CALLBACK:
    /* Out of memory (in libcurl 7.88 also a header section or a decoded
     * piece over its limit: curl's text says which), misuse of the API,
     * a poll that failed, and the other protocols' codes. */
    default: return CR_ERR_INTERNAL;
  }
}

const char* cr__error_text(cr_error_t error) {
  switch (error) {
    case CR_OK: return "no error";
    case CR_ERR_CANCELLED: return "cancelled";
    case CR_ERR_TIMED_OUT: return "timed out";
    case CR_ERR_CANNOT_RESOLVE: return "the host name could not be resolved";
    case CR_ERR_CANNOT_CONNECT: return "could not connect";
    case CR_ERR_CONNECTION_LOST: return "the connection was lost";
    case CR_ERR_SHORT_BODY: return "the body ended before its announced length";
    case CR_ERR_BAD_RESPONSE: return "the server's response is not valid HTTP";
    case CR_ERR_BAD_RANGE: return "the server did not answer the range asked for";
    case CR_ERR_TLS: return "the TLS handshake failed";
    case CR_ERR_TLS_UNTRUSTED: return "the server's certificate is not trusted";
    case CR_ERR_FILE_WRITE: return "writing the download file failed";
    case CR_ERR_FILE_READ: return "reading the upload file failed";
    case CR_ERR_UNSUPPORTED_URL: return "unsupported URL";
    case CR_ERR_BAD_URL: return "malformed URL";
    case CR_ERR_NO_SPACE: return "no space left on the device";
    case CR_ERR_INTERNAL: return "the transfer engine failed";
    case CR_ERR_DECODING: return "the body's content coding is corrupt or unknown";
    case CR_ERR_TOO_LARGE: return "the body is larger than allowed";
    case CR_ERR_AUTH_FAILED: return "authentication failed";
    case CR_ERR_TOO_MANY_REDIRECTS: return "too many redirects";
    case CR_ERR_BODY_NOT_REWOUND: return "the request body could not be sent again";
    case CR_ERR_CLIENT_CERT_REQUIRED: return "the server requires a client certificate";
    case CR_ERR_TRUST_PENDING: return "the server's certificate waits for a decision";
    case CR_ERR_TLS_PINNED: return "the server's public key is not a pinned one";
  }
  return "the transfer failed";
}
