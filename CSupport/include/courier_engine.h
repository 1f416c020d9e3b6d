/*
 * courier_engine.h: the only header Swift sees of Courier's C transfer core.
 *
 * The engine runs one or more loop threads. Each loop thread owns one libuv
 * loop and one libcurl multi handle, and is the only thread that touches
 * them. Other threads reach a loop only through a command queue woken with
 * one uv_async_send. No libcurl or libuv type appears in this header.
 *
 * Transfers. cr_engine_submit() deep-copies a request, picks a loop and
 * returns a transfer id at once; the network is touched later, on the loop.
 * A transfer is one HTTP exchange (curl never follows redirects itself:
 * redirects, auth retries and resumes are new transfers started by Swift).
 * Every submitted transfer produces exactly one CR_EVENT_COMPLETE, after
 * which its id is dead and commands naming it are ignored.
 *
 * Events. Each loop collects events during one iteration and hands them to
 * the engine's callback once per iteration, on that loop thread, as one
 * array (when memory is short, a full array is handed over early, so that
 * an iteration's events come in more than one: none is ever dropped).
 * Events of one transfer arrive in order:
 *   RESPONSE? (DATA | PROGRESS)* COMPLETE
 * RESPONSE comes once, for the final response (the one whose body is
 * delivered), before any DATA. A RESPONSE with held = 1 is answered with
 * cr_transfer_decide() or cr_transfer_cancel(): until then no DATA and no
 * successful COMPLETE follow, even when the whole response (an empty body,
 * HEAD, 204, 304) has already arrived; only a failure (a timeout, a lost
 * connection) may end a held transfer without a decision.
 * The callback must not block and must not
 * call cr_engine_destroy(); it may call the other cr_* functions.
 * Pointer fields marked "owned" in an event pass to the receiver, who must
 * free() them (also when it ignores the event).
 *
 * All functions are thread-safe unless stated otherwise.
 */
#ifndef COURIER_ENGINE_H
#define COURIER_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_engine_s cr_engine_t;
typedef struct cr_event_s cr_event_t;

/* Where the body of the final response goes. */
typedef enum {
  CR_SINK_MEMORY = 0,  /* delivered in CR_EVENT_DATA batches (owned buffers) */
  CR_SINK_FILE = 1,    /* written by the engine to sink_fd, off the loop    */
  CR_SINK_DISCARD = 2  /* counted, then dropped                             */
} cr_sink_t;

/* Request flags. */
enum {
  /* Hold the body after the final response until cr_transfer_decide(). */
  CR_FLAG_ASK_RESPONSE = 1u << 0,
  /* Hold the body of 3xx responses that carry a Location header, and of
   * 401/407 responses, until cr_transfer_decide(). */
  CR_FLAG_HOLD_REDIRECT_AND_AUTH = 1u << 1,
  /* Send no body and expect none (HEAD). */
  CR_FLAG_NO_BODY = 1u << 2,
  /* Offer HTTP/2 (ALPN over TLS) and wait to multiplex on an existing
   * connection; ignored for plain http, which stays HTTP/1.1. */
  CR_FLAG_HTTP2 = 1u << 3,
  /* Do not verify the server certificate or host name (tests only). */
  CR_FLAG_INSECURE = 1u << 4,
  /* Offer every content coding libcurl decodes (gzip, deflate, br, zstd)
   * in Accept-Encoding, unless the request carries its own, and decode
   * the body: DATA, the sink file and `received` are decoded bytes, and
   * `expected_to_receive` is -1 for an encoded body (its decoded length is
   * unknown; the wire length is still checked against Content-Length).
   * Without it, nothing is decoded and no Accept-Encoding is added. */
  CR_FLAG_DECODE = 1u << 5,
  /* The request body comes from cr_transfer_supply(), as the caller has it;
   * cr_request_t.streamed_body_length is its length, or -1 when unknown
   * (HTTP/1.1 then sends it chunked; HTTP/2 in DATA frames). The body's
   * bytes are read once: a transfer that would have to send them again
   * (curl answering an authentication challenge itself) fails with
   * CR_ERR_BODY_NOT_REWOUND. */
  CR_FLAG_STREAMED_BODY = 1u << 6,
  /* An HTTP/1.1 Upgrade (WebSocket, RFC 6455 §4): give it the Upgrade and
   * Connection fields. A 101 is then the final response (RESPONSE, status
   * 101), the DATA that follows is the new protocol's bytes from the server,
   * and the supplied body (CR_FLAG_STREAMED_BODY, implied) goes out as it
   * is after the head, with no length and no chunk framing. No idle timeout
   * applies after the 101; the transfer ends when cancelled, on a
   * connection error, or when the server closes the connection (COMPLETE,
   * CR_ERR_CONNECTION_LOST). Any other final response ends the body at
   * once and completes as usual. Never multiplexed or reused. */
  CR_FLAG_UPGRADE = 1u << 7
};

typedef enum {
  CR_AUTH_NONE = 0,
  CR_AUTH_BASIC = 1,
  CR_AUTH_DIGEST = 2,
  CR_AUTH_ANY = 3,
  /* Connection-based: libcurl makes the handshake's round trips on one
   * connection within the transfer. NEGOTIATE (SPNEGO, Kerberos through
   * GSS-API) uses the system's ticket; its username and password are not
   * used. */
  CR_AUTH_NTLM = 4,
  CR_AUTH_NEGOTIATE = 5
} cr_auth_t;

/* Whose judgment admits the server at the other end of a TLS connection. */
typedef enum {
  /* libcurl verifies the chain (the engine's CAs, or the system's) and the
   * host name; a failure ends the transfer with CR_ERR_TLS_UNTRUSTED. */
  CR_TRUST_VERIFY = 0,
  /* The caller decides. The chain and host name are verified as with
   * CR_TRUST_VERIFY, but the transfer stops after the handshake, before any
   * byte of its request is sent, with CR_ERR_TRUST_PENDING, the chain
   * (COMPLETE's peer_certificates) and the verdict (verify_result: 0; or,
   * when the verification failed, OpenSSL's X509_V_ERR code, 62 for a
   * certificate of another host). A chain that failed to verify is not
   * kept by the TLS library: then peer_certificates is empty, and the
   * caller submits again with CR_TRUST_PROBE to read it. Such a transfer
   * never multiplexes (HTTP/1.1 only: its connection carries no request),
   * and its connection is closed, never reused. Pins (pinned_public_keys)
   * are still enforced. */
  CR_TRUST_ASK = 1,
  /* The caller accepted this server whatever the verification says: the
   * chain and host name are not verified, and pinned_public_keys (which
   * must be set) names the key it accepted. */
  CR_TRUST_ACCEPTED = 2,
  /* Reads a chain that failed CR_TRUST_ASK's verification: nothing is
   * verified, and the transfer stops as CR_TRUST_ASK's does, with the chain
   * and verify_result -1. */
  CR_TRUST_PROBE = 3
} cr_trust_t;

/* The X509_V_ERR code CR_TRUST_ASK reports for a certificate whose names
 * do not include the host (X509_V_ERR_HOSTNAME_MISMATCH). */
#define CR_VERIFY_HOST_MISMATCH 62

typedef enum {
  CR_TLS_DEFAULT = 0,
  CR_TLS_1_0 = 10,
  CR_TLS_1_1 = 11,
  CR_TLS_1_2 = 12,
  CR_TLS_1_3 = 13
} cr_tls_version_t;

/* A client certificate (with its chain): PEM ("PEM") or PKCS#12 ("P12"),
 * and its private key (PEM; NULL when the certificate data holds it),
 * decrypted with key_password. */
typedef struct {
  const void* certificate;
  size_t certificate_length;
  const char* type;
  const void* key;
  size_t key_length;
  const char* key_password;
} cr_client_certificate_t;

/* How a transfer connects beyond its URL: who admits the server, the TLS
 * versions, the client's certificate, and where the connection goes.
 * Zeros and NULLs leave libcurl's defaults. Copied by cr_engine_submit().
 * Transfers whose TLS settings differ never share a connection. */
typedef struct {
  cr_trust_t trust;
  /* The server's public key (the SHA-256 of its DER SubjectPublicKeyInfo)
   * must be one of these: "sha256//<base64>;sha256//<base64>..." (curl's
   * CURLOPT_PINNEDPUBLICKEY). A key that is not fails the transfer with
   * CR_ERR_TLS_PINNED before any byte of the request is sent. */
  const char* pinned_public_keys;
  cr_tls_version_t tls_minimum;
  cr_tls_version_t tls_maximum;
  /* The client's certificate for servers that ask for one, and for a TLS
   * connection to an HTTPS proxy; certificate NULL: none. */
  cr_client_certificate_t client_certificate;
  cr_client_certificate_t proxy_client_certificate;
  /* Connect to this Unix-domain socket instead of the URL's host and port
   * (the URL still names the Host header and the TLS name). */
  const char* unix_socket_path;
  /* "host:port:address[,address...]" entries answered instead of a DNS
   * lookup (curl's --resolve). */
  const char* const* resolve;
  size_t resolve_count;
  int ip_version;               /* 4 or 6: only that family; 0 either  */
  const char* interface_name;   /* the local interface, address or host
                                   to send from (curl's --interface)     */
  const char* doh_url;          /* resolve names over DNS-over-HTTPS     */
} cr_connection_t;

/* A request body in memory that the engine borrows instead of copying it at
 * submit: curl's upload buffer is filled from `bytes` directly, so no
 * caller code runs while curl reads the body. `bytes` must stay valid and
 * unchanged until release() is called, exactly once, when the transfer no
 * longer needs the body: on a loop thread before the transfer's COMPLETE
 * event is delivered, or in cr_engine_destroy(). release() must be
 * thread-safe, must not block and must not call any cr_* function. */
typedef struct {
  const void* bytes;
  int64_t length;               /* bytes in the body, > 0                */
  void (*release)(void* context);
  void* context;
} cr_borrowed_body_t;

/* One request. Everything is copied by cr_engine_submit(); the caller keeps
 * ownership of its memory, except the file descriptors and borrowed_body,
 * which pass to the engine on success (it closes the descriptors and
 * releases the body when the transfer ends) and stay the caller's when
 * cr_engine_submit() fails. */
/* The digest a CR_SINK_FILE transfer computes on its writer thread while the
 * body is written (no second read of the file; a resumed download's prefix
 * on disk is read once when its first chunk is written). COMPLETE carries
 * it over the whole file. */
typedef enum {
  CR_DIGEST_NONE = 0,
  CR_DIGEST_SHA256 = 1,
  CR_DIGEST_SHA512 = 2,
  /* The algorithm a Repr-Digest (RFC 9530), Content-Digest (of a 200) or
   * Digest (RFC 3230) field of the final response names, SHA-512 before
   * SHA-256; none when it names neither, or when the body is decoded from a
   * content coding (the digest is of the encoded bytes). */
  CR_DIGEST_AUTO = 3,
  /* CRC-32C: not a digest of integrity against anyone, a check that the
   * bytes written reached the disk (courierd's files handed over before
   * their flush); 4 bytes, big-endian. */
  CR_DIGEST_CRC32C = 4
} cr_digest_t;

typedef struct {
  const char* url;              /* absolute http or https URL            */
  const char* method;           /* "GET", "PUT", ... (NULL: GET)          */
  const char* const* headers;   /* "Name: value" lines                   */
  size_t header_count;
  const void* body;             /* request body from memory (copied)     */
  size_t body_length;
  cr_borrowed_body_t borrowed_body; /* or borrowed (bytes != NULL)     */
  int body_fd;                  /* request body from a file, or -1       */
  int64_t body_fd_length;       /* bytes to send from body_fd_offset     */
  int64_t body_fd_offset;       /* where in body_fd they start (a resumed
                                   upload's rest)                         */
  int64_t streamed_body_length; /* CR_FLAG_STREAMED_BODY: -1 unknown     */
  cr_sink_t sink;
  int sink_fd;                  /* CR_SINK_FILE: written with pwrite     */
  /* > 0: ask for bytes from this offset ("Range: bytes=N-"). A 206 whose
   * Content-Range starts elsewhere fails with CR_ERR_BAD_RANGE; a 200 means
   * the server sent the whole entity: the sink file is truncated and the
   * RESPONSE event reports resume_offset 0. Add any If-Range header
   * yourself. Bodies are written at file offset resume_offset + n. A 206
   * with a Content-Encoding fails with CR_ERR_BAD_RANGE (ranges of an
   * encoded entity are never mixed into a file); do not combine with
   * CR_FLAG_DECODE. */
  int64_t resume_offset;
  /* > 0: ask for exactly this many bytes from resume_offset ("Range:
   * bytes=A-B", resume_offset 0 included: a segment of a segmented
   * download). Only a 206 for that range is accepted: a 200 fails with
   * CR_ERR_BAD_RANGE instead of starting the file over. */
  int64_t range_length;
  cr_digest_t digest;           /* CR_SINK_FILE: hash the file as written;
                                   sink_fd must then be readable too     */
  uint32_t flags;               /* CR_FLAG_*                             */
  cr_auth_t auth;
  const char* username;         /* with auth != CR_AUTH_NONE             */
  const char* password;
  /* The proxy: NULL leaves libcurl's default (the http_proxy, HTTPS_PROXY,
   * ALL_PROXY and NO_PROXY environment); "" uses none; else "host:port" or
   * a URL. no_proxy: hosts that bypass it (curl's NO_PROXY syntax). */
  const char* proxy;
  const char* no_proxy;
  cr_auth_t proxy_auth;         /* credential for a 407, as auth         */
  const char* proxy_username;
  const char* proxy_password;
  /* This transfer's own limits, in bytes per second (libcurl's
   * CURLOPT_MAX_RECV_SPEED_LARGE and _SEND_); 0: none. */
  int64_t max_receive_speed;
  int64_t max_send_speed;
  /* The most body bytes (decoded) the transfer keeps: a longer body fails
   * with CR_ERR_TOO_LARGE, at its Content-Length when that says so, else
   * when the bytes pass it (curl's --max-filesize). 0: no limit. */
  int64_t max_body;
  int64_t idle_timeout_ms;      /* no byte in either direction: fail; 0 off */
  int64_t total_timeout_ms;     /* whole transfer, queueing included; 0 off */
  int priority;                 /* higher first among queued transfers   */
  uint64_t tag;                 /* echoed in every event                 */
  const cr_connection_t* connection; /* NULL: libcurl's defaults          */
} cr_request_t;

/* A receive-rate limit that transfers of any number of engines share (a
 * session's, a whole process's): a token bucket of bytes per second.
 * Created with one reference; each engine configured with it holds its own.
 * cr_rate_limit_set changes the rate at once (0: unlimited); any thread. */
typedef struct cr_rate_limit_s cr_rate_limit_t;
#define CR_MAX_RATE_LIMITS 4
cr_rate_limit_t* cr_rate_limit_create(int64_t bytes_per_second);
void cr_rate_limit_set(cr_rate_limit_t* limit, int64_t bytes_per_second);
void cr_rate_limit_release(cr_rate_limit_t* limit);

/* The two limits are split over the loops so that their sum is exact; an
 * engine runs no more loops than the smaller limit. */
typedef struct {
  int loop_count;               /* loop threads, >= 1                    */
  int max_host_connections;     /* per host, per engine; 0 unlimited     */
  int max_active_transfers;     /* running at once per engine; 0: 1024   */
  const char* ca_pem;           /* trusted CA certificates, PEM; NULL: system */
  size_t ca_pem_length;
  int buffer_size;              /* receive buffer; 0: default            */
  /* A test aid: each loop's disk writer waits this long before every
   * write, as a slow disk makes it wait (transfers to files then pause for
   * the disk). 0: none. */
  int write_delay_us;
  /* Receive limits every transfer of the engine draws from (copied and
   * retained; at most CR_MAX_RATE_LIMITS). */
  cr_rate_limit_t* const* rate_limits;
  size_t rate_limit_count;
  void (*on_events)(void* context, const cr_event_t* events, size_t count);
  void* context;
} cr_engine_config_t;

/* The digest of the first `length` bytes of the file at `path` (SHA-256,
 * SHA-512 or CRC-32C) into out; returns its length, or 0 when it cannot be read
 * that far. For a file the engine did not write (a resumed download that
 * was already whole). Blocking; any thread. */
size_t cr_file_digest(const char* path, int64_t length, cr_digest_t kind,
                      unsigned char out[64]);

/* The digest of `length` bytes at `bytes` (SHA-256, SHA-512 or CRC-32C)
 * into out; returns its length (0 for another kind). Any thread. */
size_t cr_bytes_digest(const void* bytes, size_t length, cr_digest_t kind,
                       unsigned char out[64]);

/* Engine error codes (CR_EVENT_COMPLETE.error); 0 is success. */
typedef enum {
  CR_OK = 0,
  CR_ERR_CANCELLED = 1,          /* cr_transfer_cancel() or engine shutdown */
  CR_ERR_TIMED_OUT = 2,          /* idle or total timeout                   */
  CR_ERR_CANNOT_RESOLVE = 3,
  CR_ERR_CANNOT_CONNECT = 4,
  CR_ERR_CONNECTION_LOST = 5,    /* reset or closed mid-exchange            */
  CR_ERR_SHORT_BODY = 6,         /* fewer bytes than Content-Length/Range   */
  CR_ERR_BAD_RESPONSE = 7,       /* not HTTP, conflicting lengths, too long */
  CR_ERR_BAD_RANGE = 8,          /* 206 for another range than asked        */
  CR_ERR_TLS = 9,                /* handshake failed                        */
  CR_ERR_TLS_UNTRUSTED = 10,     /* certificate not trusted or wrong host   */
  CR_ERR_FILE_WRITE = 11,        /* writing the sink file failed            */
  CR_ERR_FILE_READ = 12,         /* reading the body file failed            */
  CR_ERR_UNSUPPORTED_URL = 13,
  CR_ERR_BAD_URL = 14,
  CR_ERR_NO_SPACE = 15,          /* ENOSPC while writing                    */
  CR_ERR_INTERNAL = 16,          /* any other libcurl failure: see curl_code */
  CR_ERR_DECODING = 17,          /* a corrupt or unknown content coding     */
  CR_ERR_TOO_LARGE = 18,         /* a body over its limit                   */
  CR_ERR_AUTH_FAILED = 19,       /* the credentials were refused            */
  CR_ERR_TOO_MANY_REDIRECTS = 20,
  CR_ERR_BODY_NOT_REWOUND = 21,  /* the body had to be sent again and could
                                    not be rewound                          */
  CR_ERR_CLIENT_CERT_REQUIRED = 22, /* the server asked for a client
                                    certificate and none was given          */
  CR_ERR_TRUST_PENDING = 23,     /* CR_TRUST_ASK: the caller must decide    */
  CR_ERR_TLS_PINNED = 24         /* the server's key is not a pinned one    */
} cr_error_t;

/* Timings in microseconds from the start of the transfer (curl's *_TIME_T),
 * -1 when the phase did not happen. */
typedef struct {
  int64_t queued_us;             /* submit until curl took it              */
  int64_t name_lookup_us;
  int64_t connect_us;
  int64_t tls_us;                /* APPCONNECT                             */
  int64_t pretransfer_us;
  int64_t first_byte_us;         /* STARTTRANSFER                          */
  int64_t total_us;
  int64_t request_header_bytes;
  int64_t response_header_bytes;
  int64_t body_bytes_sent;
  int64_t body_bytes_received;   /* after decoding (what was delivered)    */
  int64_t body_bytes_on_wire;    /* before decoding                        */
  int http_version;              /* 10, 11, 20, 30; 0 unknown             */
  int reused_connection;         /* 1 when no new connection was made     */
  int remote_port;
  int local_port;
  char remote_ip[48];
  char local_ip[48];
} cr_metrics_t;

typedef enum {
  CR_EVENT_RESPONSE = 1,
  CR_EVENT_DATA = 2,
  CR_EVENT_PROGRESS = 3,
  CR_EVENT_COMPLETE = 4,
  /* An informational (1xx) response other than 100 and 101, before the
   * final one: status and headers (owned), e.g. 104 Upload Resumption
   * Supported with the upload's Location. */
  CR_EVENT_INFORMATIONAL = 5
} cr_event_kind_t;

struct cr_event_s {
  cr_event_kind_t kind;
  uint64_t transfer;
  uint64_t tag;
  /* RESPONSE */
  int status;
  int held;                      /* 1: body and end held until a decision   */
  int64_t resume_offset;         /* where the body starts in the sink file  */
  char* headers;                 /* owned: raw header block, CRLF lines,
                                    status line first                        */
  size_t headers_length;
  /* DATA */
  void* data;                    /* owned                                   */
  size_t data_length;
  /* PROGRESS (also set on RESPONSE and COMPLETE) */
  int64_t received;              /* body bytes of the final response        */
  int64_t expected_to_receive;   /* -1 unknown                              */
  int64_t sent;
  int64_t expected_to_send;      /* -1 unknown                              */
  /* COMPLETE */
  cr_error_t error;
  int curl_code;                 /* underlying CURLcode, 0 none             */
  int os_error;                  /* errno for file errors, 0 none           */
  char* message;                 /* owned, may be NULL                      */
  int64_t bytes_on_disk;         /* CR_SINK_FILE: contiguous bytes written
                                    from offset 0, flushed to the fd (also
                                    on RESPONSE and PROGRESS: the file offset
                                    the kept body is written up to so far)   */
  cr_digest_t digest_kind;       /* SHA256, SHA512 or CRC32C when set:   
                                    of the bytes_on_disk bytes; else NONE    */
  unsigned char digest[64];      /* 32 bytes of SHA-256, 64 of SHA-512, 4 */
  cr_metrics_t metrics;
  /* COMPLETE with CR_ERR_TRUST_PENDING: the server's chain as PEM blocks,
   * leaf first (owned), and the verification's verdict (cr_trust_t). */
  char* peer_certificates;
  long verify_result;
};

/* Decisions for a held response (cr_transfer_decide). */
typedef enum {
  CR_DECIDE_ALLOW = 0,           /* deliver the body to the sink            */
  CR_DECIDE_CANCEL = 1,          /* end the transfer (COMPLETE: cancelled)  */
  CR_DECIDE_TO_FILE = 2          /* deliver the body to fd instead          */
} cr_decision_t;

/* Starts the loop threads. Returns NULL and sets *error (a message in a
 * static buffer; error may be NULL) when the engine cannot start or config
 * is NULL. */
cr_engine_t* cr_engine_create(const cr_engine_config_t* config,
                              const char** error);

/* Cancels every transfer (their COMPLETE events are not delivered), closes
 * every handle and joins the loop threads. NULL, or a pointer that is not a
 * live engine, is ignored (as far as its memory can still be read: a
 * destroyed engine's may have been reused). Must not be called from inside
 * the event callback; if called on a loop thread anyway, the joining
 * happens on a detached thread. */
void cr_engine_destroy(cr_engine_t* engine);

/* Returns a transfer id (> 0), or 0 with *error set when the request is
 * invalid (no URL, bad scheme, malformed URL), or CR_ERR_INTERNAL when the
 * engine is NULL, destroyed or not an engine, or out of memory. On 0,
 * nothing was taken over. */
uint64_t cr_engine_submit(cr_engine_t* engine, const cr_request_t* request,
                          cr_error_t* error);

/* Commands. Each is queued to the transfer's loop and applied there. Out of
 * memory, up to 32 commands per loop wait in a fixed reserve; only beyond
 * that is a command lost (as one naming a dead transfer is). */
void cr_transfer_cancel(cr_engine_t* engine, uint64_t transfer);
void cr_transfer_pause(cr_engine_t* engine, uint64_t transfer);  /* no bytes flow */
void cr_transfer_resume(cr_engine_t* engine, uint64_t transfer);
void cr_transfer_decide(cr_engine_t* engine, uint64_t transfer,
                        cr_decision_t decision, int fd);
/* More of a CR_FLAG_STREAMED_BODY transfer's body: `length` bytes (copied;
 * 0 is allowed), then the end when `end` is nonzero. The bytes go out in
 * the order supplied, as curl asks for them; the transfer's `sent` (in its
 * PROGRESS events) counts what curl took, so a caller keeps its memory
 * bounded by supplying while supplied − sent is below a window. Returns 0,
 * or -1 (nothing queued) for a bad engine or id or when out of memory;
 * bytes for a transfer that ended are dropped. Any thread. */
int cr_transfer_supply(cr_engine_t* engine, uint64_t transfer,
                       const void* bytes, size_t length, int end);

/* Counters for tests and diagnostics. */
typedef struct {
  int64_t queued;                /* submitted, waiting for a slot           */
  int64_t active;                /* handed to curl                          */
  int64_t completed;
  int64_t open_handles;          /* poll handles of open sockets (idle
                                    cached connections included)           */
} cr_engine_stats_t;
void cr_engine_stats(cr_engine_t* engine, cr_engine_stats_t* stats);

/* Process-wide: loops that were closed with handles still open (uv_loop_close
 * returned UV_EBUSY). Tests assert it stays 0. */
int64_t cr_leaked_loop_count(void);

/* The version of the libcurl in use, e.g. "7.88.1". */
const char* cr_curl_version(void);

#ifdef __cplusplus
}
#endif

#endif /* COURIER_ENGINE_H */
