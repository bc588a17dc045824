"""TCP/UDP peers for the connection-tracking tests (run inside a namespace).

  ct_peer.py serve PORT SECONDS        TCP and UDP echo of the peer's address: every TCP
                                       connection and UDP datagram gets back "IP:PORT" of
                                       the sender as the server saw it; exits after SECONDS.
  ct_peer.py tcp IP PORT [N]           opens N (default 1) concurrent TCP connections and
                                       prints one line per answer; exit 1 if any failed.
  ct_peer.py udp IP PORT [SIZE]        one datagram (SIZE bytes, default 5; above the MTU the
                                       kernel sends it in fragments), prints the answer; exit 1
                                       on timeout.
  ct_peer.py refused IP PORT           one datagram on a connected socket to a closed port:
                                       prints "refused" and exits 0 when the ICMP port
                                       unreachable comes back to this socket; exit 1 otherwise.

Timeouts are short (2 s): a refused or dropped connection shows as a failure quickly.
"""

import socket
import sys
import threading
import time


def serve(port, seconds):
    deadline = time.time() + seconds
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind(("0.0.0.0", port))
    t.listen(512)
    t.settimeout(0.2)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("0.0.0.0", port))
    u.settimeout(0.2)

    def udp_loop():
        while time.time() < deadline:
            try:
                data, peer = u.recvfrom(65535)
            except socket.timeout:
                continue
            u.sendto(f"{peer[0]}:{peer[1]}".encode(), peer)

    threading.Thread(target=udp_loop, daemon=True).start()
    print("ready", flush=True)
    while time.time() < deadline:
        try:
            c, peer = t.accept()
        except socket.timeout:
            continue
        try:
            c.sendall(f"{peer[0]}:{peer[1]}".encode())
        finally:
            c.close()


def tcp(ip, port, n):
    results = [None] * n
    socks = []
    for i in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2)
        socks.append(s)

    def one(i):
        s = socks[i]
        try:
            s.connect((ip, port))
            results[i] = s.recv(64).decode()
        except OSError as e:
            results[i] = f"ERROR {e}"

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    # Connections stay open until every answer is in: all N exist at once.
    for s in socks:
        s.close()
    for r in results:
        print(r)
    return 0 if all(r and not r.startswith("ERROR") for r in results) else 1


def udp(ip, port, size=5):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    s.sendto(b"h" * size, (ip, port))
    try:
        data, _ = s.recvfrom(64)
    except socket.timeout:
        print("ERROR timeout")
        return 1
    print(data.decode())
    return 0


def refused(ip, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    s.connect((ip, port))
    s.send(b"anyone?")
    try:
        s.recv(64)
    except ConnectionRefusedError:
        print("refused")
        return 0
    except socket.timeout:
        print("ERROR timeout")
        return 1
    print("ERROR answered")
    return 1


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "serve":
        serve(int(sys.argv[2]), float(sys.argv[3]))
        sys.exit(0)
    if cmd == "tcp":
        sys.exit(tcp(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 1))
    if cmd == "udp":
        sys.exit(udp(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 5))
    if cmd == "refused":
        sys.exit(refused(sys.argv[2], int(sys.argv[3])))
    sys.exit(f"unknown command {cmd}")
