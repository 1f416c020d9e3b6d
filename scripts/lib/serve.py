#!/usr/bin/env python3
"""A small static file server for the demo and the CLI tests, bound to 127.0.0.1 on a free port.

python3 -m http.server does not answer Range requests and sends no ETag, so a download served by it could never
be resumed. This one does what `courier get --continue` needs, and nothing else:

- GET and HEAD of the files under --root (nothing outside it), HTTP/1.1 with keep-alive;
- a strong ETag ("size-mtime"), Last-Modified, Accept-Ranges: bytes;
- Range: bytes=A-, bytes=A-B, bytes=-N (one range) with 206 + Content-Range, If-Range (a different ETag gets
  the whole file), 416 past the end;
- ?rate=BYTES_PER_SECOND slows down 200 (whole-file) responses, so that a test can interrupt a download
  part-way; 206 (resumed) responses are never slowed.

Usage: serve.py --root DIR --port-file FILE [--log FILE] [--port N]
The server binds 127.0.0.1 on port N (default 0: a free port chosen by the system). The port is written to
--port-file (atomically) once the server listens; --log records one line per request.
"""

import argparse
import email.utils
import os
import signal
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

    def resolve(self, path):
        relative = urllib.parse.unquote(path).lstrip("/")
        full = os.path.realpath(os.path.join(Handler.root, relative))
        if full != Handler.root and not full.startswith(Handler.root + os.sep):
            return None
        return full if os.path.isfile(full) else None

    def serve(self, body):
        parsed = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(parsed.query)
        full = self.resolve(parsed.path)
        range_header = self.headers.get("Range")
        self.log_message('"%s" range=%s if-range=%s', self.requestline, range_header, self.headers.get("If-Range"))
        if full is None:
            self.send_text(404, "not found\n", body)
            return
        info = os.stat(full)
        size = info.st_size
        etag = '"%x-%x"' % (size, info.st_mtime_ns)
        start, end, status = 0, size - 1, 200
        if_range = self.headers.get("If-Range")
        if range_header and (if_range is None or if_range == etag):
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
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", email.utils.formatdate(info.st_mtime, usegmt=True))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
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

    def send_text(self, status, text, body):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)


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
    args = parser.parse_args()

    Handler.root = os.path.realpath(args.root)
    if args.log:
        Handler.log_file = open(args.log, "a", buffering=1)
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 128
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    temporary = args.port_file + ".tmp"
    with open(temporary, "w") as handle:
        handle.write("%d\n" % server.server_address[1])
    os.replace(temporary, args.port_file)
    try:
        server.serve_forever(poll_interval=0.2)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
