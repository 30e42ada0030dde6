#!/usr/bin/python3
"""A tiny HTTP receiver for tests on 127.0.0.1.

Each request becomes N.json in --dir, written whole (by rename):
{"method": ..., "path": ..., "headers": {name: value, ...}, "body_base64": "..."}
(header names as sent, the body's bytes in base64).

Answers: --fail-first N answers the first N requests with --fail-status (default 500) and
--fail-body, later ones 200 with "ok". With --cert and --key it serves HTTPS. Prints "ready PORT" once it listens (PORT 0 picks
a free port, which is the one printed).
"""
import argparse
import base64
import json
import os
import signal
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def exit_with_parent():
    """Ends this process when the test that started it is gone (even killed)."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)
    threading.Thread(target=watch, daemon=True).start()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--fail-first", type=int, default=0)
    p.add_argument("--fail-status", type=int, default=500)
    p.add_argument("--fail-body", default="internal error")
    p.add_argument("--cert")
    p.add_argument("--key")
    a = p.parse_args()
    exit_with_parent()
    lock = threading.Lock()
    state = {"count": 0}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length > 0 else b""
            with lock:
                state["count"] += 1
                n = state["count"]
            record = {"method": self.command, "path": self.path,
                      "headers": {k: v for k, v in self.headers.items()},
                      "body_base64": base64.b64encode(body).decode("ascii")}
            base = os.path.join(a.dir, "%04d" % n)
            with open(base + ".json.tmp", "w") as f:
                json.dump(record, f)
            os.rename(base + ".json.tmp", base + ".json")
            if n <= a.fail_first:
                status, answer = a.fail_status, a.fail_body.encode()
            else:
                status, answer = 200, b"ok"
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        do_PUT = do_POST
        do_GET = do_POST

    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    if a.cert:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(a.cert, a.key)
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    print("ready %d" % server.server_address[1], flush=True)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    server.serve_forever()
    sys.exit(0)


if __name__ == "__main__":
    main()
