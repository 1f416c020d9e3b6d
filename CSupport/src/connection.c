/*
 * A transfer's connection options (cr_connection_t): who admits the server
 * of a TLS connection (libcurl's verification, the caller's decision, or a
 * server the caller accepted by its key), the TLS versions, the client's
 * certificate, and where the connection goes (a Unix-domain socket, names
 * answered without DNS, one address family, a local interface, DoH).
 *
 * The caller's decision (CR_TRUST_ASK): the chain is verified as usual,
 * and a pre-request callback stops every transfer on its new connection
 * before its request is sent. Its COMPLETE carries the chain (curl's
 * CURLOPT_CERTINFO, PEM) and the verdict; a handshake that failed the
 * verification keeps no chain (OpenSSL stops before curl reads it: only
 * the verdict, CURLINFO_SSL_VERIFYRESULT, is left), so the caller reads it
 * with CR_TRUST_PROBE, which verifies nothing and stops the same way (curl
 * loads no CA at all without CURLOPT_SSL_VERIFYPEER, so a probe's own
 * verdict would say nothing). The caller then submits again with
 * CR_TRUST_VERIFY or CR_TRUST_ACCEPTED and the server's key pinned, so that
 * the connection it decided about is the only kind it gets.
 *
 * Loop thread only, but cr__connection_copy (any thread, at submit).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static size_t string_size(const char* s) { return s ? strlen(s) + 1 : 0; }

/* Copies `length` bytes of `from` to *cursor, advancing it; NULL for none. */
static void* place(char** cursor, const void* from, size_t length) {
  if (from == NULL)
    return NULL;
  void* at = *cursor;
  memcpy(at, from, length);
  *cursor += length;
  return at;
}

/* The bytes a copy of `certificate` needs after the struct. */
static size_t certificate_size(const cr_client_certificate_t* certificate) {
  if (certificate->certificate == NULL)
    return 0;
  return certificate->certificate_length + string_size(certificate->type) +
         (certificate->key ? certificate->key_length : 0) + string_size(certificate->key_password);
}

/* Copies the bytes and strings of `from` to *cursor, pointing `copy` at them. */
static void place_certificate(char** cursor, cr_client_certificate_t* copy, const cr_client_certificate_t* from) {
  if (from->certificate == NULL) {
    memset(copy, 0, sizeof(*copy));
    return;
  }
  copy->certificate = place(cursor, from->certificate, from->certificate_length);
  copy->type = place(cursor, from->type, string_size(from->type));
  copy->key = place(cursor, from->key, from->key_length);
  copy->key_password = place(cursor, from->key_password, string_size(from->key_password));
}

cr_connection_t* cr__connection_copy(const cr_connection_t* options) {
  size_t size = sizeof(cr_connection_t);
  size_t resolve_count = options->resolve ? options->resolve_count : 0;
  size += resolve_count * sizeof(char*);
  for (size_t i = 0; i < resolve_count; i++)
    size += string_size(options->resolve[i]);
  size += string_size(options->pinned_public_keys) + string_size(options->unix_socket_path) +
          string_size(options->interface_name) + string_size(options->doh_url);
  size += certificate_size(&options->client_certificate) + certificate_size(&options->proxy_client_certificate);

  cr_connection_t* copy = cr__malloc(size);
  if (copy == NULL)
    return NULL;
  *copy = *options;
  char* cursor = (char*)(copy + 1);
  const char** resolve = NULL;
  if (resolve_count > 0) {
    resolve = (const char**)(void*)cursor;
    cursor += resolve_count * sizeof(char*);
    for (size_t i = 0; i < resolve_count; i++)
      resolve[i] = place(&cursor, options->resolve[i], string_size(options->resolve[i]));
  }
  copy->resolve = resolve;
  copy->resolve_count = resolve_count;
  copy->pinned_public_keys = place(&cursor, options->pinned_public_keys, string_size(options->pinned_public_keys));
  copy->unix_socket_path = place(&cursor, options->unix_socket_path, string_size(options->unix_socket_path));
  copy->interface_name = place(&cursor, options->interface_name, string_size(options->interface_name));
  copy->doh_url = place(&cursor, options->doh_url, string_size(options->doh_url));
  place_certificate(&cursor, &copy->client_certificate, &options->client_certificate);
  place_certificate(&cursor, &copy->proxy_client_certificate, &options->proxy_client_certificate);
  return copy;
}

/* CR_TRUST_ASK and CR_TRUST_PROBE: every transfer stops here, after the
 * handshake and before its request, and its connection is closed (never
 * reused). A transfer that made no connection of its own (which
 * cr__connection_apply rules out: no multiplexing, and no connection of
 * this kind outlives its transfer) gets no chain and fails in
 * cr__connection_finish. */
static int on_prerequest(void* context, char* remote_ip, char* local_ip, int remote_port, int local_port) {
  (void)remote_ip;
  (void)local_ip;
  (void)remote_port;
  (void)local_port;
  cr_transfer_t* t = context;
  t->error = CR_ERR_TRUST_PENDING;
  (void)curl_easy_setopt(t->easy, CURLOPT_FORBID_REUSE, 1L);
  return CURL_PREREQFUNC_ABORT;
}

static long ssl_version(cr_tls_version_t minimum, cr_tls_version_t maximum) {
  long low = minimum == CR_TLS_1_0   ? CURL_SSLVERSION_TLSv1_0
             : minimum == CR_TLS_1_1 ? CURL_SSLVERSION_TLSv1_1
             : minimum == CR_TLS_1_2 ? CURL_SSLVERSION_TLSv1_2
             : minimum == CR_TLS_1_3 ? CURL_SSLVERSION_TLSv1_3
                                     : CURL_SSLVERSION_DEFAULT;
  long high = maximum == CR_TLS_1_0   ? CURL_SSLVERSION_MAX_TLSv1_0
              : maximum == CR_TLS_1_1 ? CURL_SSLVERSION_MAX_TLSv1_1
              : maximum == CR_TLS_1_2 ? CURL_SSLVERSION_MAX_TLSv1_2
              : maximum == CR_TLS_1_3 ? CURL_SSLVERSION_MAX_TLSv1_3
                                      : CURL_SSLVERSION_MAX_DEFAULT;
  return low | high;
}

/* The curl options of a client certificate: the server's, or the proxy's. */
typedef struct {
  CURLoption certificate, type, key, key_type, password;
  const char* names[5];
} certificate_options_t;

static const certificate_options_t server_certificate_options = {
    CURLOPT_SSLCERT_BLOB, CURLOPT_SSLCERTTYPE, CURLOPT_SSLKEY_BLOB, CURLOPT_SSLKEYTYPE, CURLOPT_KEYPASSWD,
    {"CURLOPT_SSLCERT_BLOB", "CURLOPT_SSLCERTTYPE", "CURLOPT_SSLKEY_BLOB", "CURLOPT_SSLKEYTYPE", "CURLOPT_KEYPASSWD"}};
static const certificate_options_t proxy_certificate_options = {
    CURLOPT_PROXY_SSLCERT_BLOB, CURLOPT_PROXY_SSLCERTTYPE, CURLOPT_PROXY_SSLKEY_BLOB, CURLOPT_PROXY_SSLKEYTYPE,
    CURLOPT_PROXY_KEYPASSWD,
    {"CURLOPT_PROXY_SSLCERT_BLOB", "CURLOPT_PROXY_SSLCERTTYPE", "CURLOPT_PROXY_SSLKEY_BLOB",
     "CURLOPT_PROXY_SSLKEYTYPE", "CURLOPT_PROXY_KEYPASSWD"}};

/* Sets one option on `easy`; when curl refuses it, names it (`name`) in
 * *refused and returns curl's code. */
#define APPLY_AS(option, name, value)                              \
  do {                                                             \
    CURLcode apply_code = curl_easy_setopt(easy, option, value);   \
    if (apply_code != CURLE_OK) {                                  \
      *refused = name;                                             \
      return apply_code;                                           \
    }                                                              \
  } while (0)

/* The same, naming the option itself when curl refuses it. */
#define APPLY(option, value) APPLY_AS(option, #option, value)

/* Sets `c` (when it has a certificate) with the options `o`. */
static CURLcode apply_certificate(CURL* easy, const cr_client_certificate_t* c, const certificate_options_t* o,
                                  const char** refused) {
  if (c->certificate == NULL)
    return CURLE_OK;
  struct curl_blob certificate = {(void*)c->certificate, c->certificate_length, CURL_BLOB_COPY};
  APPLY_AS(o->certificate, o->names[0], &certificate);
  APPLY_AS(o->type, o->names[1], c->type ? c->type : "PEM");
  if (c->key) {
    struct curl_blob key = {(void*)c->key, c->key_length, CURL_BLOB_COPY};
    APPLY_AS(o->key, o->names[2], &key);
    APPLY_AS(o->key_type, o->names[3], "PEM");
  }
  if (c->key_password)
    APPLY_AS(o->password, o->names[4], c->key_password);
  return CURLE_OK;
}

CURLcode cr__connection_apply(cr_transfer_t* t, CURL* easy, const char** refused) {
  const cr_connection_t* c = t->connection;
  switch (c->trust) {
    case CR_TRUST_PROBE:
      APPLY(CURLOPT_SSL_VERIFYPEER, 0L);
      APPLY(CURLOPT_SSL_VERIFYHOST, 0L);
      /* fall through - stopped as CR_TRUST_ASK is */
    case CR_TRUST_ASK:
      APPLY(CURLOPT_CERTINFO, 1L);
      /* A resumed TLS session brings no chain to show; a stream multiplexed
       * on another transfer's connection, no handshake of its own. */
      APPLY(CURLOPT_SSL_SESSIONID_CACHE, 0L);
      APPLY(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
      APPLY(CURLOPT_PIPEWAIT, 0L);
      APPLY(CURLOPT_PREREQFUNCTION, on_prerequest);
      APPLY(CURLOPT_PREREQDATA, t);
      break;
    case CR_TRUST_ACCEPTED:
      APPLY(CURLOPT_SSL_VERIFYPEER, 0L);
      APPLY(CURLOPT_SSL_VERIFYHOST, 0L);
      break;
    case CR_TRUST_VERIFY:
      break;
  }
  if (c->pinned_public_keys)
    APPLY(CURLOPT_PINNEDPUBLICKEY, c->pinned_public_keys);
  if (c->tls_minimum != CR_TLS_DEFAULT || c->tls_maximum != CR_TLS_DEFAULT)
    APPLY(CURLOPT_SSLVERSION, ssl_version(c->tls_minimum, c->tls_maximum));
  CURLcode code = apply_certificate(easy, &c->client_certificate, &server_certificate_options, refused);
  if (code == CURLE_OK)
    code = apply_certificate(easy, &c->proxy_client_certificate, &proxy_certificate_options, refused);
  if (code != CURLE_OK)
    return code;
  if (c->unix_socket_path)
    APPLY(CURLOPT_UNIX_SOCKET_PATH, c->unix_socket_path);
  if (c->resolve_count > 0) {
    if (t->run->resolve == NULL) {
      for (size_t i = 0; i < c->resolve_count; i++) {
        struct curl_slist* next = curl_slist_append(t->run->resolve, c->resolve[i]);
        if (next == NULL) {
          *refused = "CURLOPT_RESOLVE";
          return CURLE_OUT_OF_MEMORY;
        }
        t->run->resolve = next;
      }
    }
    APPLY(CURLOPT_RESOLVE, t->run->resolve);
  }
  if (c->ip_version == 4 || c->ip_version == 6)
    APPLY(CURLOPT_IPRESOLVE, c->ip_version == 4 ? (long)CURL_IPRESOLVE_V4 : (long)CURL_IPRESOLVE_V6);
  if (c->interface_name)
    APPLY(CURLOPT_INTERFACE, c->interface_name);
  if (c->doh_url)
    APPLY(CURLOPT_DOH_URL, c->doh_url);
  return CURLE_OK;
}

#undef APPLY
#undef APPLY_AS

/* The chain of the connection t's handshake made, as PEM blocks, leaf
 * first; NULL when curl kept none. */
static char* peer_chain(CURL* easy) {
  struct curl_certinfo* info = NULL;
  if (curl_easy_getinfo(easy, CURLINFO_CERTINFO, &info) != CURLE_OK || info == NULL || info->num_of_certs <= 0)
    return NULL;
  size_t size = 1;
  for (int i = 0; i < info->num_of_certs; i++)
    for (struct curl_slist* field = info->certinfo[i]; field; field = field->next)
      if (strncmp(field->data, "Cert:", 5) == 0)
        size += strlen(field->data + 5) + 1;
  char* chain = cr__malloc(size);
  if (chain == NULL)
    return NULL;
  char* cursor = chain;
  for (int i = 0; i < info->num_of_certs; i++)
    for (struct curl_slist* field = info->certinfo[i]; field; field = field->next)
      if (strncmp(field->data, "Cert:", 5) == 0) {
        size_t length = strlen(field->data + 5);
        memcpy(cursor, field->data + 5, length);
        cursor += length;
        *cursor++ = '\n';
      }
  *cursor = '\0';
  return chain;
}

void cr__connection_finish(cr_transfer_t* t, CURLcode code) {
  cr_trust_t trust = t->connection->trust;
  if (trust != CR_TRUST_ASK && trust != CR_TRUST_PROBE)
    return;
  int stopped = t->error == CR_ERR_TRUST_PENDING;
  int failed = trust == CR_TRUST_ASK && code == CURLE_PEER_FAILED_VERIFICATION;
  if (!stopped && !failed)
    return;
  char* chain = peer_chain(t->easy);
  long verdict = trust == CR_TRUST_PROBE ? -1 : 0;
  if (failed && chain != NULL) {
    /* curl read the chain, so it verified: the name check after it failed
     * (curl leaves CURLINFO_SSL_VERIFYRESULT unset then). */
    verdict = CR_VERIFY_HOST_MISMATCH;
  } else if (failed) {
    /* The chain did not verify: OpenSSL stopped before curl read it. */
    if (curl_easy_getinfo(t->easy, CURLINFO_SSL_VERIFYRESULT, &verdict) != CURLE_OK || verdict == 0)
      verdict = -1;
    chain = cr__strdup("");
  }
  if (chain == NULL) {
    t->error = CR_ERR_TLS_UNTRUSTED;
    free(t->message);
    t->message = cr__strdup("the server's certificate chain could not be read");
    return;
  }
  free(t->run->peer_certificates);
  t->run->peer_certificates = chain;
  t->run->verify_result = verdict;
  t->error = CR_ERR_TRUST_PENDING;
  free(t->message);
  t->message = cr__strdup("the server's certificate waits for a decision");
}
