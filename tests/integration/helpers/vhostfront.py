"""A minimal vhost-user frontend (the VM side) written for tests: it negotiates with a
switch's vhost-user socket like QEMU does (features, owner, memory table with a memfd passed
over SCM_RIGHTS, rings), and then lets the test write whatever it likes into the rings and
descriptors it shares — including what no honest driver would write.

Layout of the one memory region (guest physical address GPA, 1 MiB, also the "frontend
virtual address" UVA, offset 0 in the memfd):
  ring q: descriptor table at RING(q), available ring at RING(q) + 0x1000, used ring at
          RING(q) + 0x2000 (q = 0 receive, 1 transmit), SLOTS entries each;
  buffers from BUF0 on, 2 KiB each.
With `packed=True` (VIRTIO_F_RING_PACKED) each ring is a packed one: the descriptor ring at
RING(q), the driver's event suppression area at RING(q) + 0x1000 and the device's at
RING(q) + 0x2000; `poffer` and `pused` play the driver's side of it.
"""

import mmap
import os
import socket
import struct

GET_FEATURES, SET_FEATURES, SET_OWNER = 1, 2, 3
SET_MEM_TABLE, SET_VRING_NUM, SET_VRING_ADDR, SET_VRING_BASE = 5, 8, 9, 10
GET_VRING_BASE, SET_VRING_KICK, SET_VRING_CALL = 11, 12, 13
GET_PROTOCOL_FEATURES, SET_PROTOCOL_FEATURES, SET_VRING_ENABLE = 15, 16, 18
VERSION = 0x1
REPLY = 0x4

F_CSUM = 1 << 0
F_HOST_TSO4 = 1 << 11
F_HOST_TSO6 = 1 << 12
F_MRG_RXBUF = 1 << 15
F_PROTOCOL_FEATURES = 1 << 30
F_VERSION_1 = 1 << 32
F_RING_PACKED = 1 << 34

GPA = 0x4000_0000
UVA = 0x7f00_0000_0000
REGION = 1 << 20
SLOTS = 16
BUF0 = 0x10000
BUFSZ = 2048
HDR = 12

DESC_NEXT, DESC_WRITE, DESC_INDIRECT = 1, 2, 4
DESC_AVAIL, DESC_USED = 1 << 7, 1 << 15


def RING(q):
    return 0x4000 * q


class Frontend:
    def __init__(self, path, features=F_VERSION_1 | F_MRG_RXBUF, qemu_order=False,
                 packed=False):
        """`qemu_order`: negotiate protocol features and enable both rings before
        SET_FEATURES, as QEMU does while it sets a vhost-user NIC up (it does not enable them
        again when it starts them)."""
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(5)
        self.s.connect(str(path))
        if packed:
            features |= F_RING_PACKED
        # Packed rings: the driver's next position and wrap counter, per ring, for offering
        # and for reading used descriptors, and each offered buffer id's length.
        self.pk = [[0, 1, 0, 1, {}, 0] for _ in (0, 1)]
        self.fd = os.memfd_create("vhost-test-guest")
        os.ftruncate(self.fd, REGION)
        self.mem = mmap.mmap(self.fd, REGION)
        offered = self.get_u64(GET_FEATURES)
        assert offered & features == features, hex(offered)
        if qemu_order:
            self.get_u64(GET_PROTOCOL_FEATURES)
            self.send(SET_PROTOCOL_FEATURES, struct.pack("<Q", 0))
            self.send(SET_OWNER)
            for q in (0, 1):
                self.send(SET_VRING_ENABLE, struct.pack("<II", q, 1))
            self.send(SET_FEATURES, struct.pack("<Q", features | F_PROTOCOL_FEATURES))
        else:
            self.send(SET_FEATURES, struct.pack("<Q", features))
            self.send(SET_OWNER)
        self.send(SET_MEM_TABLE, struct.pack("<II", 1, 0) +
                  struct.pack("<QQQQ", GPA, REGION, UVA, 0), fds=[self.fd])
        self.next_avail = [0, 0]
        self.used_seen = [0, 0]
        self.calls = []
        for q in (0, 1):
            self.send(SET_VRING_NUM, struct.pack("<II", q, SLOTS))
            self.send(SET_VRING_ADDR, struct.pack("<IIQQQQ", q, 0, UVA + RING(q),
                                                  UVA + RING(q) + 0x2000,
                                                  UVA + RING(q) + 0x1000, 0))
            self.send(SET_VRING_BASE, struct.pack("<II", q, 0x8000 if packed else 0))
            call = os.eventfd(0, os.EFD_NONBLOCK)
            self.calls.append(call)
            self.send(SET_VRING_CALL, struct.pack("<Q", q), fds=[call])
            kick = os.eventfd(0, os.EFD_NONBLOCK)
            self.send(SET_VRING_KICK, struct.pack("<Q", q), fds=[kick])
            os.close(kick)

    # ---- the protocol -------------------------------------------------------------------
    def send(self, req, body=b"", fds=None, flags=VERSION):
        msg = struct.pack("<III", req, flags, len(body)) + body
        if fds:
            socket.send_fds(self.s, [msg], fds)
        else:
            self.s.sendall(msg)

    def recv_exact(self, n):
        b = b""
        while len(b) < n:
            c = self.s.recv(n - len(b))
            if not c:
                raise ConnectionError("switch closed the session")
            b += c
        return b

    def get_u64(self, req, body=b""):
        self.send(req, body)
        r, fl, size = struct.unpack("<III", self.recv_exact(12))
        assert r == req and fl & REPLY, (r, fl)
        return struct.unpack("<Q", self.recv_exact(size)[:8])[0]

    def get_vring_base(self, q):
        self.send(GET_VRING_BASE, struct.pack("<II", q, 0))
        r, fl, size = struct.unpack("<III", self.recv_exact(12))
        assert r == GET_VRING_BASE
        return struct.unpack("<II", self.recv_exact(size))[1]

    def close(self):
        self.s.close()
        self.mem.close()
        os.close(self.fd)
        for c in self.calls:
            os.close(c)

    # ---- ring access --------------------------------------------------------------------
    def desc(self, q, i, addr, length, flags=0, nxt=0):
        struct.pack_into("<QIHH", self.mem, RING(q) + 16 * i, addr, length, flags, nxt)

    def offer(self, q, head):
        """Publishes chain `head` in ring q's available ring."""
        a = RING(q) + 0x1000
        idx = self.next_avail[q]
        struct.pack_into("<H", self.mem, a + 4 + 2 * (idx % SLOTS), head)
        self.next_avail[q] = (idx + 1) & 0xFFFF
        struct.pack_into("<H", self.mem, a + 2, self.next_avail[q])

    def set_avail_idx(self, q, idx):
        struct.pack_into("<H", self.mem, RING(q) + 0x1000 + 2, idx & 0xFFFF)

    def used_idx(self, q):
        return struct.unpack_from("<H", self.mem, RING(q) + 0x2000 + 2)[0]

    def used(self, q, k):
        """(head, len) of used entry k of ring q."""
        return struct.unpack_from("<II", self.mem, RING(q) + 0x2000 + 4 + 8 * (k % SLOTS))

    def buf(self, i):
        """Guest address and memfd offset of buffer i."""
        off = BUF0 + BUFSZ * i
        return GPA + off, off

    def write(self, off, data):
        self.mem[off:off + len(data)] = data

    def read(self, off, n):
        return bytes(self.mem[off:off + n])

    def frame_desc(self, q, slot, buf_i, frame):
        """A one-descriptor transmit chain at `slot` holding a header and `frame`."""
        gpa, off = self.buf(buf_i)
        self.write(off, bytes(HDR) + frame)
        self.desc(q, slot, gpa, HDR + len(frame))

    # ---- packed rings (the driver's side) -----------------------------------------------
    def pdesc(self, q, pos, addr, length, id_, flags):
        struct.pack_into("<QIHH", self.mem, RING(q) + 16 * pos, addr, length, id_, flags)

    def poffer(self, q, descs):
        """Makes a chain of (addr, len, flags) available on packed ring q, the head's
        flags written last; returns its buffer id."""
        st = self.pk[q]
        id_ = st[5]
        st[5] = (id_ + 1) & 0xFFFF
        at = []
        pos, wrap = st[0], st[1]
        for _ in descs:
            at.append((pos, wrap))
            pos += 1
            if pos == SLOTS:
                pos, wrap = 0, wrap ^ 1
        for k in reversed(range(len(descs))):
            addr, length, flags = descs[k]
            if k + 1 < len(descs):
                flags |= DESC_NEXT
            flags |= DESC_AVAIL if at[k][1] else DESC_USED
            self.pdesc(q, at[k][0], addr, length, id_, flags)
        st[0], st[1] = pos, wrap
        st[4][id_] = len(descs)
        return id_

    def pused(self, q):
        """The used descriptors (id, len) returned since the last look."""
        st = self.pk[q]
        out = []
        while True:
            _, length, id_, flags = struct.unpack_from("<QIHH", self.mem,
                                                       RING(q) + 16 * st[2])
            w = st[3]
            if bool(flags & DESC_AVAIL) != bool(w) or bool(flags & DESC_USED) != bool(w):
                return out
            out.append((id_, length))
            st[2] += st[4].pop(id_)
            if st[2] >= SLOTS:
                st[2], st[3] = st[2] - SLOTS, w ^ 1

    def device_event_flags(self, q):
        return struct.unpack_from("<H", self.mem, RING(q) + 0x2000 + 2)[0]
