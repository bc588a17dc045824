"""A minimal TFTP server and client (RFC 1350, octet mode, read requests only) for the
conntrack helper tests.

    tftp_peer.py serve ADDR DIR SECONDS   answers read requests on ADDR:69, each transfer
                                           from its own new port as TFTP does; prints "ready"
    tftp_peer.py get ADDR NAME TIMEOUT     fetches NAME; prints the SHA-256 of what came, or
                                           "error: ..." and exits 1
"""

import hashlib
import os
import socket
import struct
import sys
import threading
import time

RRQ, DATA, ACK, ERROR = 1, 3, 4, 5
BLOCK = 512


def send_file(client, path):
    """One transfer from a fresh socket (a new port), lock-step with the client's ACKs."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        s.sendto(struct.pack("!HH", ERROR, 1) + b"not found\0", client)
        s.close()
        return
    block = 1
    while True:
        chunk = data[(block - 1) * BLOCK:block * BLOCK]
        pkt = struct.pack("!HH", DATA, block & 0xFFFF) + chunk
        for _ in range(5):
            s.sendto(pkt, client)
            try:
                ack, frm = s.recvfrom(100)
            except socket.timeout:
                continue
            if frm == client and ack[:4] == struct.pack("!HH", ACK, block & 0xFFFF):
                break
        else:
            break
        if len(chunk) < BLOCK:
            break
        block += 1
    s.close()


def serve(addr, root, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 69))
    s.settimeout(0.2)
    end = time.time() + float(seconds)
    print("ready", flush=True)
    while time.time() < end:
        try:
            req, client = s.recvfrom(600)
        except socket.timeout:
            continue
        if len(req) < 4 or struct.unpack("!H", req[:2])[0] != RRQ:
            continue
        name = req[2:].split(b"\0")[0].decode(errors="replace")
        path = os.path.join(root, os.path.basename(name))
        threading.Thread(target=send_file, args=(client, path), daemon=True).start()


def get(addr, name, timeout):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(float(timeout))
    h = hashlib.sha256()
    try:
        s.sendto(struct.pack("!H", RRQ) + name.encode() + b"\0octet\0", (addr, 69))
        expect = 1
        while True:
            pkt, frm = s.recvfrom(4 + BLOCK)
            op, block = struct.unpack("!HH", pkt[:4])
            if op == ERROR:
                print(f"error: server: {pkt[4:-1].decode(errors='replace')}", flush=True)
                return 1
            if op != DATA:
                continue
            if block == expect & 0xFFFF:
                h.update(pkt[4:])
                expect += 1
            # The answer goes to the port the data came from, not to 69.
            s.sendto(struct.pack("!HH", ACK, block), frm)
            if block == (expect - 1) & 0xFFFF and len(pkt) - 4 < BLOCK:
                break
    except OSError as e:
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
