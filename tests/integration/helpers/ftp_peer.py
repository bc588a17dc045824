"""FTP peers for the conntrack helper tests.

    ftp_peer.py serve ADDR DIR SECONDS     an anonymous FTP server (pyftpdlib) on ADDR:21
                                            serving DIR; prints "ready" once listening
    ftp_peer.py get ADDR NAME MODE TIMEOUT  fetches NAME with Python's ftplib, MODE passive or
                                            active; prints the SHA-256 of what came, or
                                            "error: ..." and exits 1

The server needs Debian's python3-pyftpdlib (run it with /usr/bin/python3); the client only
the standard library.
"""

import ftplib
import hashlib
import sys
import threading


def serve(addr, root, seconds):
    from pyftpdlib.authorizers import DummyAuthorizer
    from pyftpdlib.handlers import FTPHandler
    from pyftpdlib.servers import FTPServer

    auth = DummyAuthorizer()
    auth.add_anonymous(root)

    class Handler(FTPHandler):
        authorizer = auth
        timeout = 30

    server = FTPServer((addr, 21), Handler)
    threading.Timer(float(seconds), server.close_all).start()
    print("ready", flush=True)
    server.serve_forever(timeout=0.2, blocking=True, handle_exit=True)


def get(addr, name, mode, timeout):
    h = hashlib.sha256()
    try:
        ftp = ftplib.FTP(addr, timeout=float(timeout))
        ftp.login()
        ftp.set_pasv(mode == "passive")
        ftp.retrbinary(f"RETR {name}", h.update)
        ftp.quit()
    except (OSError, ftplib.Error, EOFError) as e:
        print(f"error: {type(e).__name__}: {e}", flush=True)
        return 1
    print(h.hexdigest(), flush=True)
    return 0


def main():
    cmd, *args = sys.argv[1:]
    if cmd == "serve":
        serve(*args)
        return 0
    if cmd == "get":
        return get(*args)
    raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    sys.exit(main())
