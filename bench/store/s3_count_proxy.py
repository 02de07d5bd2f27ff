#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A counting HTTP proxy in front of an S3 endpoint, for benchmarks: every
request is forwarded as it came (method, path, headers, body: SigV4
signatures stay valid, the Host header included; an HTTP-chunked body is
forwarded whole) and counted by method, with the body bytes each way; the
counts are written to COUNTS_FILE (JSON) after every request.

    bench/store/s3_count_proxy.py LISTEN_PORT UPSTREAM_HOST:PORT COUNTS_FILE

Clients point at http://127.0.0.1:LISTEN_PORT instead of the endpoint.
"""
import http.client
import http.server
import json
import socketserver
import sys
import threading

port, upstream, counts_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
counts = {}
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def forward(self):
        headers = {k: v for k, v in self.headers.items()}
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            # HTTP-level chunks (below the S3 signature): forwarded whole.
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            body = b"".join(parts)
            headers = {k: v for k, v in headers.items() if k.lower() != "transfer-encoding"}
            headers["Content-Length"] = str(len(body))
        else:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
        length = len(body) if body else 0
        conn = http.client.HTTPConnection(upstream, timeout=120)
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        self.send_response_only(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() in ("transfer-encoding", "connection") or (k.lower() == "content-length" and self.command != "HEAD"):
                continue
            self.send_header(k, v)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(data)))  # (a HEAD's is the object's, passed on)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        conn.close()
        with lock:
            counts[self.command] = counts.get(self.command, 0) + 1
            counts["bytes_in"] = counts.get("bytes_in", 0) + (length or 0)
            counts["bytes_out"] = counts.get("bytes_out", 0) + (len(data) if self.command != "HEAD" else 0)
            with open(counts_file, "w") as f:
                json.dump(counts, f)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = forward


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


Server(("127.0.0.1", port), Handler).serve_forever()
