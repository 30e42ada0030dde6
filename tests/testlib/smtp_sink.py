#!/usr/bin/python3
"""A real SMTP server for tests (Debian's python3-aiosmtpd) on 127.0.0.1.

Each accepted message becomes two files in --dir: N.eml, the data as received (after the
server undid the client's dot-stuffing), then N.json with the envelope:
{"mail_from": ..., "rcpt_tos": [...], "auth_user": ... or null, "tls": true|false}.
The .json is written last (by rename), so a reader that sees it sees the whole message.

Options: --user/--password accept AUTH PLAIN and LOGIN with these (also without TLS);
--cert/--key offer STARTTLS, or with --smtps serve TLS from the first byte;
--require-starttls refuses mail before STARTTLS. Prints "ready PORT" once it listens.
Each login attempt is printed as "auth attempt MECHANISM user=USER ok=BOOL" (never the
password). Exit 3 when aiosmtpd is not installed.
"""
import argparse
import json
import os
import signal
import ssl
import sys
import threading
import time

try:
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult, LoginPassword
except ImportError:
    print("smtp_sink: python3-aiosmtpd is not installed "
          "(packaging/install-deps installs it)", file=sys.stderr, flush=True)
    sys.exit(3)


class Sink:
    def __init__(self, directory):
        self.directory = directory
        self.count = 0
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.count += 1
            n = self.count
        base = os.path.join(self.directory, "%04d" % n)
        with open(base + ".eml", "wb") as f:
            f.write(envelope.original_content)
        meta = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "auth_user": session.auth_data.login.decode("utf-8", "replace")
            if session.authenticated and isinstance(session.auth_data, LoginPassword) else None,
            # STARTTLS sets session.ssl; with SMTPS the transport is TLS from the start.
            "tls": session.ssl is not None
            or server.transport.get_extra_info("ssl_object") is not None,
        }
        with open(base + ".json.tmp", "w") as f:
            json.dump(meta, f)
        os.rename(base + ".json.tmp", base + ".json")
        return "250 OK message %d accepted" % n


def authenticator(user, password):
    def check(server, session, envelope, mechanism, auth_data):
        ok = (isinstance(auth_data, LoginPassword) and auth_data.login == user.encode()
              and auth_data.password == password.encode())
        login = auth_data.login.decode("utf-8", "replace") \
            if isinstance(auth_data, LoginPassword) else "?"
        print("auth attempt %s user=%s ok=%s" % (mechanism, login, ok), flush=True)
        # handled=False: aiosmtpd answers a failure with 535 itself.
        return AuthResult(success=ok, handled=False, auth_data=auth_data if ok else None)
    return check


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
    p.add_argument("--user")
    p.add_argument("--password")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--smtps", action="store_true")
    p.add_argument("--require-starttls", action="store_true")
    a = p.parse_args()
    exit_with_parent()

    kwargs = {"hostname": "127.0.0.1", "port": a.port, "server_hostname": "sink.test",
              "ready_timeout": 10}
    tls = None
    if a.cert:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(a.cert, a.key)
    if tls is not None and a.smtps:
        kwargs["ssl_context"] = tls
    elif tls is not None:
        kwargs["tls_context"] = tls
        kwargs["require_starttls"] = a.require_starttls
    if a.user is not None:
        kwargs["authenticator"] = authenticator(a.user, a.password or "")
        kwargs["auth_require_tls"] = False
    controller = Controller(Sink(a.dir), **kwargs)
    controller.start()
    print("ready %d" % a.port, flush=True)

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    controller.stop()


if __name__ == "__main__":
    main()
