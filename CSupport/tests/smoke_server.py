# The loopback server for smoke.c: python3 smoke_server.py PORT (binds 127.0.0.1 only).
import gzip, http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self,*a): pass
    def do_GET(self):
        parts=self.path.split('/')
        if parts[1]=='bytes':
            n=int(parts[2].split('?')[0]); body=bytes((i*7)&255 for i in range(n))
            start=0; status=200
            rng=self.headers.get('Range')
            if rng and 'ignore' not in self.path:
                start=int(rng.split('=')[1].split('-')[0]); status=206
            self.send_response(status)
            self.send_header('Content-Length', str(n-start))
            self.send_header('ETag','"e1"')
            if status==206: self.send_header('Content-Range','bytes %d-%d/%d'%(start,n-1,n))
            self.end_headers()
            if 'cut' in self.path:
                self.wfile.write(body[start:start+(n-start)//2]); self.wfile.flush(); self.close_connection=True; return
            self.wfile.write(body[start:])
        elif parts[1]=='redirect':
            self.send_response(302); self.send_header('Location','/bytes/10'); self.send_header('Content-Length','5'); self.end_headers(); self.wfile.write(b'moved')
        elif parts[1]=='redirect-empty':
            self.send_response(302); self.send_header('Location','/bytes/10'); self.send_header('Content-Length','0'); self.end_headers()
        elif parts[1]=='gzip':
            n=int(parts[2]); body=gzip.compress(bytes((i*7)&255 for i in range(n)))
            self.send_response(200); self.send_header('Content-Encoding','gzip'); self.send_header('Content-Length',str(len(body))); self.end_headers(); self.wfile.write(body)
        elif parts[1]=='stall':
            self.send_response(200); self.send_header('Content-Length','10'); self.end_headers(); self.wfile.flush(); time.sleep(3)
        else:
            self.send_response(404); self.send_header('Content-Length','0'); self.end_headers()
    def do_PUT(self):
        n=int(self.headers.get('Content-Length')); d=self.rfile.read(n)
        b=str(len(d)).encode(); self.send_response(200); self.send_header('Content-Length',str(len(b))); self.end_headers(); self.wfile.write(b)
http.server.ThreadingHTTPServer(('127.0.0.1',int(sys.argv[1])),H).serve_forever()
