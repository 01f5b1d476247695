#!/usr/bin/env python3
"""A file server for the data fetch tests: serves --root over HTTP on 127.0.0.1.

Listens on an OS-chosen port, printed as "port N" on stdout. GET /NAME sends the
file --root/NAME; a `Range: bytes=N-` header gets 206 with the rest of the
file. Faults, from the JSON file --faults ({"NAME": {...}}), change what a
file's requests get:

  {"drop_after": N}   the first request without a Range header announces the
                      whole length, sends N bytes, and closes the connection
  {"corrupt": true}   every response flips one byte in the middle of the file
  {"status": 503}     every request gets this status
  {"ignore_range": true}  Range headers are ignored: always 200, whole file

A missing file gets 404. HEAD /NAME gets the headers GET would (its
Content-Length included) and no body. Every request is appended to --log as one JSON line:
method, path, and its Range header (or null). Standard library only.
"""
import argparse
import json
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_HEAD(self):
        self.serve(head=True)

    def do_GET(self):
        self.serve(head=False)

    def serve(self, head):
        srv = self.server
        name = self.path.lstrip("/")
        rng = self.headers.get("Range")
        with srv.lock, open(srv.log_path, "a") as f:
            f.write(json.dumps({"method": "HEAD" if head else "GET", "path": self.path, "range": rng}) + "\n")
        fault = srv.faults.get(name, {})
        path = os.path.join(srv.root, name)
        if "status" in fault or not os.path.isfile(path):
            status = fault.get("status", 404)
            body = b"no such file" if status == 404 else b"scripted failure"
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)
            return
        with open(path, "rb") as f:
            data = bytearray(f.read())
        if fault.get("corrupt"):
            data[len(data) // 2] ^= 0xFF
        start = 0
        m = re.fullmatch(r"bytes=(\d+)-", rng or "")
        if m and not fault.get("ignore_range"):
            start = int(m.group(1))
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            self.send_response(200)
        body = bytes(data[start:])
        self.send_header("Content-Type", "application/gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if head:
            return
        with srv.lock:
            drop = fault.get("drop_after") if rng is None and name not in srv.dropped else None
            if drop is not None:
                srv.dropped.add(name)
        if drop is not None:
            self.wfile.write(body[:drop])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.wfile.write(body)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that hangs up is part of the tests


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--faults", help="JSON object: file name -> fault")
    a = p.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    server.root = a.root
    server.log_path = a.log
    server.faults = json.load(open(a.faults)) if a.faults else {}
    server.dropped = set()
    server.lock = threading.Lock()
    print("port %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
