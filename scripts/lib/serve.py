#!/usr/bin/env python3
"""A small static file server for the demo and the CLI tests, bound to 127.0.0.1 on a free port.

python3 -m http.server does not answer Range requests and sends no ETag, so a download served by it could never
be resumed. This one does what `courier get --continue`, `courier put` and the CLI tests need, and nothing else:

- GET and HEAD of the files under --root (nothing outside it), HTTP/1.1 with keep-alive;
- a strong ETag ("size-mtime"), Last-Modified, Accept-Ranges: bytes;
- Range: bytes=A-, bytes=A-B, bytes=-N (one range) with 206 + Content-Range, If-Range (a different ETag gets
  the whole file), 416 past the end;
- ?rate=BYTES_PER_SECOND slows down 200 (whole-file) responses and the reading of an upload's body, so that a
  test can interrupt a transfer part-way; 206 (resumed) responses are never slowed;
- ?cd=VALUE sends VALUE as the Content-Disposition header of a file's response;
- ?plain=1 serves the file as python3 -m http.server does: no ETag, no Accept-Ranges, no Range (a Last-Modified,
  which is no validator for a file modified within the second before the response);
- PUT and POST (Content-Length bodies only) store the body as the file at the path under --root (missing
  directories created) and answer 201 (new file) or 200 (replaced) with an empty body;
- /status/CODE[/...] answers CODE to any method (a body, if sent, is read first): with an empty body
  (Content-Length: 0), or a short text body with ?body=1; a 401 carries WWW-Authenticate: Basic realm="x";
- /redirect-empty/N/PATH (N >= 1) answers 302 with Content-Length: 0 and a relative Location: to
  /redirect-empty/N-1/PATH, and from /redirect-empty/1/PATH to /PATH (a chain of N redirects to the file);
- /flaky/N/PATH answers the first N requests for it with 503 and Retry-After: 1, then serves /PATH (for
  `courier get --retry`);
- /auth/USER/PASSWORD/PATH answers 401 with WWW-Authenticate: Basic realm="files" unless the request carries that
  user and password (Basic), then serves /PATH;
- ?setcookie=NAME=VALUE adds Set-Cookie: NAME=VALUE; Path=/ to a file's response.

Each request's log line ends with the Authorization, X-Courier-Test and Cookie fields it carried ("-" for none).

Usage: serve.py --root DIR --port-file FILE [--log FILE] [--port N] [--tls-cert PEM --tls-key PEM]
The server binds 127.0.0.1 on port N (default 0: a free port chosen by the system); with --tls-cert and --tls-key it
serves HTTPS with that certificate. The port is written to
--port-file (atomically) once the server listens; --log records one line per request (with the Content-Length
and Content-Type of an upload).
"""

import argparse
import base64
import email.utils
import os
import signal
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "courier-test-files/1"
    root = "."
    log_file = None
    log_lock = threading.Lock()
    # /flaky/N/PATH: how many requests each such path has had.
    flaky_counts = {}

    def log_message(self, format, *args):  # noqa: A002 (BaseHTTPRequestHandler's signature)
        if Handler.log_file is None:
            return
        with Handler.log_lock:
            Handler.log_file.write("%s %s\n" % (self.log_date_time_string(), format % args))
            Handler.log_file.flush()

    def do_HEAD(self):
        self.serve(body=False)

    def do_GET(self):
        self.serve(body=True)

    def do_PUT(self):
        self.receive()

    def do_POST(self):
        self.receive()

    def inside_root(self, path):
        """The real path of URL path `path` under --root, or None when it would be outside."""
        relative = urllib.parse.unquote(path).lstrip("/")
        full = os.path.realpath(os.path.join(Handler.root, relative))
        if full != Handler.root and not full.startswith(Handler.root + os.sep):
            return None
        return full

    def resolve(self, path):
        full = self.inside_root(path)
        return full if full is not None and os.path.isfile(full) else None

    def serve(self, body):
        parsed = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(parsed.query)
        range_header = self.headers.get("Range")
        self.log_message(
            '"%s" range=%s if-range=%s authorization=%s x-courier-test=%s cookie=%s',
            self.requestline,
            range_header,
            self.headers.get("If-Range"),
            self.headers.get("Authorization", "-"),
            self.headers.get("X-Courier-Test", "-"),
            self.headers.get("Cookie", "-"),
        )
        if parsed.path.startswith("/status/"):
            self.send_status(parsed.path, query, body)
            return
        if parsed.path.startswith("/redirect-empty/"):
            self.send_redirect(parsed, body)
            return
        path = parsed.path
        if path.startswith("/flaky/"):
            _, _, count, rest = path.split("/", 3)
            with Handler.log_lock:
                seen = Handler.flaky_counts.get(path, 0)
                Handler.flaky_counts[path] = seen + 1
            if seen < int(count):
                self.send_text(503, "try again\n", body, headers=[("Retry-After", "1")])
                return
            path = "/" + rest
        if path.startswith("/auth/"):
            _, _, user, password, rest = path.split("/", 4)
            credential = "%s:%s" % (urllib.parse.unquote(user), urllib.parse.unquote(password))
            expected = "Basic " + base64.b64encode(credential.encode()).decode()
            if self.headers.get("Authorization") != expected:
                self.send_text(401, "who are you?\n", body, headers=[("WWW-Authenticate", 'Basic realm="files"')])
                return
            path = "/" + rest
        full = self.resolve(path)
        if full is None:
            self.send_text(404, "not found\n", body)
            return
        info = os.stat(full)
        size = info.st_size
        etag = '"%x-%x"' % (size, info.st_mtime_ns)
        start, end, status = 0, size - 1, 200
        if_range = self.headers.get("If-Range")
        plain = query.get("plain", [""])[0] == "1"
        if range_header and not plain and (if_range is None or if_range == etag):
            parsed_range = parse_range(range_header, size)
            if parsed_range == "unsatisfiable":
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if parsed_range is not None:
                start, end = parsed_range
                status = 206
        length = max(end - start + 1, 0)
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(length))
        self.send_header("Last-Modified", email.utils.formatdate(info.st_mtime, usegmt=True))
        if not plain:
            self.send_header("ETag", etag)
            self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.send_disposition(query)
        self.end_headers()
        if not body or length == 0:
            return
        rate = int(query.get("rate", ["0"])[0] or 0)
        try:
            with open(full, "rb") as source:
                if rate > 0 and status == 200:
                    send_slowly(self.wfile, source, start, length, rate)
                else:
                    self.connection.sendfile(source, offset=start, count=length)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def send_text(self, status, text, body, headers=()):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if body and data:
            self.wfile.write(data)

    def send_disposition(self, query):
        value = disposition(query)
        if value:
            self.send_header("Content-Disposition", value)
        for cookie in query.get("setcookie", []):
            self.send_header("Set-Cookie", cookie + "; Path=/")

    def send_status(self, path, query, body):
        """/status/CODE[/...]: CODE with an empty body, or a short text one with ?body=1."""
        code = path.split("/")[2]
        if not code.isdigit() or not 200 <= int(code) <= 599:
            self.send_text(400, "bad status %r\n" % code, body)
            return
        code = int(code)
        text = ""
        if query.get("body", [""])[0] == "1" and code not in (204, 304):
            text = "%d %s\n" % (code, self.responses.get(code, ("status",))[0])
        headers = [("WWW-Authenticate", 'Basic realm="x"')] if code == 401 else []
        cd = disposition(query)
        if cd:
            headers.append(("Content-Disposition", cd))
        self.send_text(code, text, body, headers)

    def send_redirect(self, parsed, body):
        """/redirect-empty/N/PATH: 302, Content-Length: 0, a relative Location one hop nearer to /PATH."""
        parts = parsed.path.split("/", 3)  # "", "redirect-empty", N, PATH
        if len(parts) < 4 or not parts[2].isdigit() or int(parts[2]) < 1 or not parts[3]:
            self.send_text(404, "not found\n", body)
            return
        hops, rest = int(parts[2]), parts[3]
        up = "../" * (rest.count("/") + 1)
        if hops > 1:
            location = "%s%d/%s" % (up, hops - 1, rest)  # /redirect-empty/N-1/PATH
        else:
            location = "../" + up + rest  # /PATH
        if parsed.query:
            location += "?" + parsed.query
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def receive(self):
        """PUT and POST: stores the body at the path under --root (through a temporary file), or answers a
        /status/ path after reading the body."""
        parsed = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(parsed.query)
        length_header = self.headers.get("Content-Length")
        self.log_message(
            '"%s" length=%s content-type=%s', self.requestline, length_header, self.headers.get("Content-Type")
        )
        try:
            length = int(length_header)
            if length < 0:
                raise ValueError(length_header)
        except (TypeError, ValueError):
            self.close_connection = True
            self.send_text(411, "a Content-Length is required\n", True)
            return
        if parsed.path.startswith("/status/"):
            if self.drain(length):
                self.send_status(parsed.path, query, True)
            return
        full = self.inside_root(parsed.path)
        if full is None or parsed.path.endswith("/") or os.path.isdir(full):
            if self.drain(length):
                self.send_text(405, "cannot store a file there\n", True)
            return
        existed = os.path.exists(full)
        temporary = "%s.upload-%d" % (full, threading.get_ident())
        try:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(temporary, "wb") as target:
                complete = self.copy_body(length, target.write, int(query.get("rate", ["0"])[0] or 0))
            if not complete:
                os.remove(temporary)
                return
            os.replace(temporary, full)
        except OSError as error:
            if os.path.exists(temporary):
                os.remove(temporary)
            self.close_connection = True
            self.send_text(500, "cannot store the file: %s\n" % error, True)
            return
        self.send_response(200 if existed else 201)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def drain(self, length):
        return self.copy_body(length, lambda chunk: None)

    def copy_body(self, length, write, rate=0):
        """Reads `length` body bytes into `write` (at about `rate` bytes per second if not 0); False (and the
        connection closed) when the client stopped."""
        step = max(rate // 20, 1) if rate > 0 else 65536
        left = length
        while left > 0:
            chunk = self.rfile.read(min(left, step))
            if not chunk:
                self.close_connection = True
                return False
            write(chunk)
            left -= len(chunk)
            if rate > 0:
                time.sleep(0.05)
        return True


def disposition(query):
    """The Content-Disposition asked for with ?cd=VALUE, or None (also when VALUE would break the header)."""
    value = query.get("cd", [""])[0]
    if not value or any(c in value for c in "\r\n\0"):
        return None
    return value


def parse_range(header, size):
    """(start, end) for one satisfiable byte range, "unsatisfiable", or None to send the whole file."""
    if not header.startswith("bytes=") or "," in header:
        return None
    first, _, last = header[len("bytes="):].strip().partition("-")
    try:
        if first == "":
            suffix = int(last)
            if suffix <= 0:
                return "unsatisfiable"
            return (max(size - suffix, 0), size - 1)
        start = int(first)
        end = int(last) if last else size - 1
    except ValueError:
        return None
    if start >= size:
        return "unsatisfiable"
    if end < start:
        return None
    return (start, min(end, size - 1))


def send_slowly(out, source, start, length, rate):
    source.seek(start)
    step = max(rate // 20, 1)
    left = length
    while left > 0:
        chunk = source.read(min(step, left))
        if not chunk:
            break
        out.write(chunk)
        out.flush()
        left -= len(chunk)
        time.sleep(0.05)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    args = parser.parse_args()

    Handler.root = os.path.realpath(args.root)
    if args.log:
        Handler.log_file = open(args.log, "a", buffering=1)
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 128
    server = QuietServer(("127.0.0.1", args.port), Handler)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    publish_port_and_serve(server, args.port_file)


class QuietServer(ThreadingHTTPServer):
    """Says nothing of a client that closed its connection early, or of a TLS handshake it ended (a client that
    refuses the certificate, or stops after the handshake to judge it)."""

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (ConnectionError, ssl.SSLError)):
            return
        super().handle_error(request, client_address)


def publish_port_and_serve(server, port_file):
    """Writes the server's port to port_file (atomically: a reader never sees a partial file), then serves until
    SIGTERM or Ctrl-C, and closes the socket. CSupport/tests/smoke_server.py uses it too."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    temporary = port_file + ".tmp"
    with open(temporary, "w") as handle:
        handle.write("%d\n" % server.server_address[1])
    os.replace(temporary, port_file)
    try:
        server.serve_forever(poll_interval=0.2)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
