"""The loopback server for smoke.c and torture.c (see run.sh).

Usage: smoke_server.py --port-file FILE [--port N]
Binds 127.0.0.1 on port N (default 0: a free port chosen by the system) and writes the port to FILE (atomically)
once it listens. Ends on SIGTERM.

  GET  /bytes/N[?cut]       N bytes, byte i = (i*7) & 255; honours "Range: bytes=S-" with a 206; ?cut sends half
                            the body and closes the connection
  GET  /redirect            302 to /bytes/10 with the 5-byte body "moved"
  GET  /redirect-empty      302 to /bytes/10 with an empty body
  GET  /gzip/N              /bytes/N's body, gzip-encoded (Content-Encoding: gzip)
  GET  /digest              401 with a Digest challenge and the body "unauthorized" until a request carries a
                            Digest Authorization (not verified), then 200 with the body "ok"
  GET  /stall               200 with Content-Length 10, then nothing for 3 s
  PUT  /upload (any path)   answers with the decimal number of body bytes received (Content-Length or chunked)
  GET  /upgrade             with "Upgrade: echo": 101, then echoes the bytes it receives until they contain
                            b"close", then closes the connection
"""
import argparse
import gzip
import http.server
import os
import sys
import time

# The port file and the serving loop are the project file server's (scripts/lib/serve.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "lib"))
from serve import publish_port_and_serve  # noqa: E402


PERIOD = bytes((i * 7) & 255 for i in range(256))  # the pattern repeats every 256 bytes


def pattern(n):
    return (PERIOD * (n // 256 + 1))[:n]


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        parts = self.path.split('/')
        if parts[1] == 'bytes':
            n = int(parts[2].split('?')[0])
            body = pattern(n)
            start = 0
            status = 200
            rng = self.headers.get('Range')
            if rng and 'ignore' not in self.path:
                start = int(rng.split('=')[1].split('-')[0])
                status = 206
            self.send_response(status)
            self.send_header('Content-Length', str(n - start))
            self.send_header('ETag', '"e1"')
            if status == 206:
                self.send_header('Content-Range', 'bytes %d-%d/%d' % (start, n - 1, n))
            self.end_headers()
            if 'cut' in self.path:
                self.wfile.write(body[start:start + (n - start) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body[start:])
        elif parts[1] == 'redirect':
            self.send_response(302)
            self.send_header('Location', '/bytes/10')
            self.send_header('Content-Length', '5')
            self.end_headers()
            self.wfile.write(b'moved')
        elif parts[1] == 'redirect-empty':
            self.send_response(302)
            self.send_header('Location', '/bytes/10')
            self.send_header('Content-Length', '0')
            self.end_headers()
        elif parts[1] == 'gzip':
            body = gzip.compress(pattern(int(parts[2])))
            self.send_response(200)
            self.send_header('Content-Encoding', 'gzip')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif parts[1] == 'digest':
            answered = self.headers.get('Authorization', '').startswith('Digest ')
            body = b'ok' if answered else b'unauthorized'
            self.send_response(200 if answered else 401)
            if not answered:
                self.send_header('WWW-Authenticate', 'Digest realm="smoke", nonce="n1", qop="auth"')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif parts[1] == 'upgrade' and self.headers.get('Upgrade') == 'echo':
            self.send_response(101)
            self.send_header('Upgrade', 'echo')
            self.send_header('Connection', 'Upgrade')
            self.end_headers()
            self.wfile.flush()
            seen = b''
            while b'close' not in seen:
                chunk = self.rfile.read1(65536)
                if not chunk:
                    break
                seen += chunk
                self.wfile.write(chunk)
                self.wfile.flush()
            self.close_connection = True
        elif parts[1] == 'stall':
            self.send_response(200)
            self.send_header('Content-Length', '10')
            self.end_headers()
            self.wfile.flush()
            time.sleep(3)
        else:
            self.send_response(404)
            self.send_header('Content-Length', '0')
            self.end_headers()

    def do_PUT(self):
        if self.headers.get('Transfer-Encoding', '').lower() == 'chunked':
            d = b''
            while True:
                size = int(self.rfile.readline().split(b';')[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                d += self.rfile.read(size)
                self.rfile.readline()
        else:
            d = self.rfile.read(int(self.headers.get('Content-Length')))
        b = str(len(d)).encode()
        self.send_response(200)
        self.send_header('Content-Length', str(len(b)))
        self.end_headers()
        self.wfile.write(b)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        # Clients that cancel or fail on purpose reset their connections; anything else is reported.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    publish_port_and_serve(Server(('127.0.0.1', args.port), H), args.port_file)


if __name__ == "__main__":
    main()
