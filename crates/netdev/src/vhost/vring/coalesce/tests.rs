//! Coalescing towards the guest: which runs qualify, the super-packet's headers and bytes,
//! and split rings with and without MRG_RXBUF against an in-memory guest driver (packed
//! rings: `packed::tests`).

use super::*;
use crate::vhost::mem::Guest;
use crate::vhost::vring::{tx_burst, Burst, Vring, HDR_MRG};
use packet::{Batch, Pool};
use std::sync::Arc;
use virtio_queue::QueueT;
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

/// The RFC 1071 sum of `parts`, one after the other, written independently of the module's.
fn sum(parts: &[&[u8]]) -> u16 {
    let all: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
    let mut s: u32 = all
        .chunks(2)
        .map(|c| u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0)))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The pseudo-header bytes of a TCP segment of `len` bytes in IP packet `ip`.
fn pseudo_bytes(ip: &[u8], len: usize) -> Vec<u8> {
    if ip[0] >> 4 == 6 {
        let mut p = ip[8..40].to_vec();
        p.extend_from_slice(&(len as u32).to_be_bytes());
        p.extend_from_slice(&[0, 0, 0, 6]);
        p
    } else {
        let mut p = ip[12..20].to_vec();
        p.extend_from_slice(&[0, 6]);
        p.extend_from_slice(&(len as u16).to_be_bytes());
        p
    }
}

/// A TCP segment of connection 10.0.0.1:5001 > 10.0.0.2:40000 (or fd00::1 > fd00::2 if
/// `v6`), ack 7777, window 500, with `opts` and `payload`, correct checksums.
pub(crate) fn seg(v6: bool, seq: u32, flags: u8, opts: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    let tcp_len = 20 + opts.len() + payload.len();
    if v6 {
        f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
        f.extend_from_slice(&(tcp_len as u16).to_be_bytes());
        f.extend_from_slice(&[6, 64]);
        f.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        f.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    } else {
        f.extend_from_slice(&[0x08, 0x00, 0x45, 0]);
        f.extend_from_slice(&((20 + tcp_len) as u16).to_be_bytes());
        f.extend_from_slice(&(seq as u16).to_be_bytes()); // some identification
        f.extend_from_slice(&[0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        let c = !sum(&[&f[14..34]]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
    }
    let l4 = f.len();
    f.extend_from_slice(&5001u16.to_be_bytes());
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&7777u32.to_be_bytes());
    f.extend_from_slice(&[
        ((20 + opts.len()) / 4 * 16) as u8,
        flags,
        1,
        244,
        0,
        0,
        0,
        0,
    ]);
    f.extend_from_slice(opts);
    f.extend_from_slice(payload);
    let p = pseudo_bytes(&f[14..], tcp_len);
    let c = !sum(&[&p, &f[l4..]]);
    f[l4 + 16..l4 + 18].copy_from_slice(&c.to_be_bytes());
    f
}

pub(crate) const ACK: u8 = 0x10;
pub(crate) const PSH_ACK: u8 = 0x18;
pub(crate) const TS: [u8; 12] = [1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2];

pub(crate) fn payload(i: usize, n: usize) -> Vec<u8> {
    (0..n).map(|k| (i * 7 + k * 13) as u8).collect()
}

/// `n` consecutive segments of `mss` bytes from sequence number 1000, the last with PSH.
pub(crate) fn stream(v6: bool, n: usize, mss: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let fl = if i + 1 == n { PSH_ACK } else { ACK };
            seg(v6, 1000 + (i * mss) as u32, fl, &TS, &payload(i, mss))
        })
        .collect()
}

/// Checks that `got` (virtio-net header + frame) is the super-packet of `frames`.
pub(crate) fn check_super(got: &[u8], frames: &[Vec<u8>], mss: usize) {
    let v6 = frames[0][12] == 0x86;
    let (l4, end) = if v6 { (54, 86) } else { (34, 66) };
    let h = &got[..10];
    let le = |i: usize| u16::from_le_bytes([h[i], h[i + 1]]);
    assert_eq!(h[0], 1, "NEEDS_CSUM");
    assert_eq!(h[1], if v6 { 4 } else { 1 }, "GSO_TCPV6 / GSO_TCPV4");
    assert_eq!(usize::from(le(2)), end, "hdr_len");
    assert_eq!(usize::from(le(4)), mss, "gso_size");
    assert_eq!((usize::from(le(6)), le(8)), (l4, 16), "csum_start/offset");
    let f = &got[HDR_MRG..];
    let mut want = frames[0][..end].to_vec();
    for x in frames {
        want.extend_from_slice(&x[end..]);
    }
    assert_eq!(f.len(), want.len());
    assert_eq!(&f[end..], &want[end..], "payload bytes in order");
    assert_eq!(&f[..14], &want[..14]);
    if v6 {
        assert_eq!(
            usize::from(u16::from_be_bytes([f[18], f[19]])),
            f.len() - 54
        );
    } else {
        assert_eq!(
            usize::from(u16::from_be_bytes([f[16], f[17]])),
            f.len() - 14
        );
        assert_eq!(sum(&[&f[14..34]]), 0xffff, "IPv4 header checksum");
    }
    assert_eq!(
        f[l4 + 13],
        frames[frames.len() - 1][l4 + 13],
        "last segment's flags"
    );
    assert_eq!(
        &f[l4..l4 + 13],
        &want[l4..l4 + 13],
        "ports, first seq, ack, offset"
    );
    assert_eq!(&f[l4 + 14..l4 + 16], &want[l4 + 14..l4 + 16], "window");
    assert_eq!(&f[l4 + 20..end], &want[l4 + 20..end], "options");
    // The field holds the pseudo-header sum: finishing the checksum as the guest would
    // (sum from csum_start, complement, store) gives a valid segment.
    let p = pseudo_bytes(&f[14..], f.len() - l4);
    assert_eq!(
        u16::from_be_bytes([f[l4 + 16], f[l4 + 17]]),
        sum(&[&p]),
        "pseudo-header sum in the field"
    );
    let mut done = f.to_vec();
    let c = !sum(&[&f[l4..]]);
    done[l4 + 16..l4 + 18].copy_from_slice(&c.to_be_bytes());
    assert_eq!(sum(&[&p, &done[l4..]]), 0xffff, "completed TCP checksum");
}

fn batch(pool: &mut Pool, frames: &[Vec<u8>]) -> Batch {
    let mut b = Batch::new();
    for f in frames {
        let mut p = pool.alloc().expect("pool");
        assert!(p.set_frame(f));
        b.push(p).ok().expect("room");
    }
    b
}

/// How many frames each run at the head of `frames` takes (1: not coalesced), walking the
/// burst as the transmit loop does.
fn runs(g: &mut Gro, frames: &[Vec<u8>]) -> Vec<usize> {
    let mut pool = Pool::new(64);
    let mut b = batch(&mut pool, frames);
    let mut out = Vec::new();
    let mut i = 0;
    while i < frames.len() {
        let n = g.run(&b.packets()[i..]).map_or(1, |r| r.frames);
        out.push(n);
        i += n;
    }
    pool.free_batch(&mut b);
    out
}

fn gro(tso4: bool, tso6: bool) -> Gro {
    let mut g = Gro::default();
    g.set(tso4, tso6);
    g
}

#[test]
fn a_stream_coalesces_into_one_super_packet() {
    for v6 in [false, true] {
        let fs = stream(v6, 10, 1000);
        let mut pool = Pool::new(64);
        let mut b = batch(&mut pool, &fs);
        let mut g = gro(true, true);
        let r = g.run(b.packets()).expect("coalesced");
        assert_eq!(r.frames, 10);
        assert_eq!(r.bytes, fs.iter().map(|f| f.len() as u64).sum::<u64>());
        let mut got = r.hdr.to_vec();
        got.extend_from_slice(&[1, 0]);
        got.extend_from_slice(g.frame());
        check_super(&got, &fs, 1000);
        pool.free_batch(&mut b);
        // Only the negotiated family.
        assert_eq!(runs(&mut gro(!v6, v6), &fs), vec![10]);
        assert_eq!(runs(&mut gro(v6, !v6), &fs), vec![1; 10]);
    }
}

#[test]
fn runs_end_where_the_rules_say() {
    let mut g = gro(true, true);
    let p = |i| payload(i, 500);
    let s = |seq: u32, fl: u8, o: &[u8], pl: &[u8]| seg(false, seq, fl, o, pl);
    let other_ts = [1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 2];
    // Options differ: a new run starts at the segment whose options changed.
    let fs = vec![
        s(0, ACK, &TS, &p(0)),
        s(500, ACK, &TS, &p(1)),
        s(1000, ACK, &other_ts, &p(2)),
        s(1500, ACK, &other_ts, &p(3)),
    ];
    assert_eq!(runs(&mut g, &fs), vec![2, 2]);
    // A gap in the sequence numbers, and a duplicate.
    let fs = vec![
        s(0, ACK, &TS, &p(0)),
        s(600, ACK, &TS, &p(1)),
        s(600, ACK, &TS, &p(1)),
    ];
    assert_eq!(runs(&mut g, &fs), vec![1, 1, 1]);
    // FIN, SYN, RST, URG, ECE, CWR are never coalesced; PSH ends a run.
    for fl in [0x11, 0x12, 0x14, 0x30, 0x50, 0x90] {
        let fs = vec![s(0, ACK, &TS, &p(0)), s(500, fl, &TS, &p(1))];
        assert_eq!(runs(&mut g, &fs), vec![1, 1], "flags {fl:#x}");
    }
    let fs = vec![s(0, PSH_ACK, &TS, &p(0)), s(500, ACK, &TS, &p(1))];
    assert_eq!(runs(&mut g, &fs), vec![1, 1]);
    // A short segment ends a run; a longer one after the first cannot join.
    let fs = vec![
        s(0, ACK, &TS, &p(0)),
        s(500, ACK, &TS, &payload(1, 200)),
        s(700, ACK, &TS, &p(2)),
    ];
    assert_eq!(runs(&mut g, &fs), vec![2, 1]);
    let fs = vec![s(0, ACK, &TS, &payload(0, 200)), s(200, ACK, &TS, &p(1))];
    assert_eq!(runs(&mut g, &fs), vec![1, 1]);
    // Another ack or window.
    let mut other_ack = s(500, ACK, &TS, &p(1));
    other_ack[34 + 11] ^= 1;
    let fs = vec![s(0, ACK, &TS, &p(0)), other_ack];
    assert_eq!(runs(&mut g, &fs), vec![1, 1]);
    // No payload (a pure ack).
    let fs = vec![s(0, ACK, &TS, &[]), s(0, ACK, &TS, &[])];
    assert_eq!(runs(&mut g, &fs), vec![1, 1]);
    // Not more than 64 KiB of IP packet: 1400-byte segments, 46 fit.
    let fs: Vec<Vec<u8>> = (0..60)
        .map(|i| s(1400 * i as u32, ACK, &TS, &payload(i, 1400)))
        .collect();
    assert_eq!(runs(&mut g, &fs), vec![46, 14]);
}

#[test]
fn ip_options_fragments_extension_headers_and_bad_checksums_are_not_coalesced() {
    let mut g = gro(true, true);
    let pl = |i| payload(i, 500);
    // IPv6 with a hop-by-hop header (next header 0) in front of TCP.
    let v6ext = |seq: u32| {
        let mut f = seg(true, seq, ACK, &TS, &pl(0));
        f[20] = 0;
        f
    };
    assert_eq!(runs(&mut g, &[v6ext(0), v6ext(500)]), vec![1, 1]);
    // An IPv4 fragment (more fragments), and options (IHL 6).
    let mut frag = vec![
        seg(false, 0, ACK, &TS, &pl(0)),
        seg(false, 500, ACK, &TS, &pl(1)),
    ];
    for f in &mut frag {
        f[20] |= 0x20;
    }
    assert_eq!(runs(&mut g, &frag), vec![1, 1]);
    let mut opt = frag.clone();
    for f in &mut opt {
        f[20] &= !0x20;
        f[14] = 0x46;
    }
    assert_eq!(runs(&mut g, &opt), vec![1, 1]);
    // A corrupt TCP checksum: in the second segment the first goes alone; in the third the
    // run stops before it.
    let mut fs = stream(false, 4, 500);
    fs[1][50] ^= 0xff;
    assert_eq!(runs(&mut g, &fs), vec![1, 1, 2]);
    let mut fs = stream(false, 4, 500);
    fs[2][70] ^= 0xff;
    assert_eq!(runs(&mut g, &fs), vec![2, 1, 1]);
    // A corrupt IPv4 header checksum.
    let mut fs = stream(false, 3, 500);
    fs[0][24] ^= 1;
    assert_eq!(runs(&mut g, &fs), vec![1, 2]);
    // A frame with Ethernet padding past the IP length.
    let mut fs = stream(false, 2, 500);
    fs[1].push(0);
    assert_eq!(runs(&mut g, &fs), vec![1, 1]);
}

// ---------------------------------------------------------------------------------------------
// Split rings

const BASE: u64 = 0x10000;
const MEM: usize = 8 << 20;
const DESC: u64 = BASE;
const AVAIL: u64 = BASE + 0x1000;
const USED: u64 = BASE + 0x2000;
const BUFS: u64 = BASE + 0x4000;
const BUFSZ: u64 = 0x12000;
const SLOTS: u16 = 64;

struct Split {
    m: Arc<Guest>,
    v: Vring,
    avail: u16,
    used: u16,
}

impl Split {
    fn new(mrg: bool) -> Split {
        let m = Arc::new(Guest::new(
            GuestMemoryMmap::from_ranges(&[(GuestAddress(BASE), MEM)]).expect("anon memory"),
        ));
        let mut v = Vring::split_in(m.clone(), SLOTS, DESC as u32, AVAIL as u32, USED as u32);
        assert!(v.q.is_valid(&m.mem));
        v.mrg = mrg;
        Split {
            m,
            v,
            avail: 0,
            used: 0,
        }
    }

    fn put(&self, at: u64, b: &[u8]) {
        self.m.mem.write_slice(b, GuestAddress(at)).expect("write");
    }

    fn get(&self, at: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n];
        self.m
            .mem
            .read_slice(&mut b, GuestAddress(at))
            .expect("read");
        b
    }

    /// Offers receive chain `avail % SLOTS`: one writable descriptor of `len` bytes.
    fn post(&mut self, len: u32) {
        let d = self.avail % SLOTS;
        let mut e = [0u8; 16];
        e[..8].copy_from_slice(&(BUFS + BUFSZ * u64::from(d)).to_le_bytes());
        e[8..12].copy_from_slice(&len.to_le_bytes());
        e[12..14].copy_from_slice(&2u16.to_le_bytes());
        self.put(DESC + 16 * u64::from(d), &e);
        self.put(AVAIL + 4 + 2 * u64::from(d), &d.to_le_bytes());
        self.avail = self.avail.wrapping_add(1);
        self.put(AVAIL + 2, &self.avail.to_le_bytes());
    }

    fn tx(&mut self, frames: &[Vec<u8>]) -> Burst {
        let mut pool = Pool::new(256);
        let mut b = batch(&mut pool, frames);
        let r = tx_burst(&mut self.v, &mut pool, &mut b, 0);
        assert_eq!(pool.available(), pool.capacity());
        r
    }

    /// The packets the guest received since the last call: header + frame, the chains of
    /// one packet joined by `num_buffers`.
    fn received(&mut self) -> Vec<Vec<u8>> {
        let idx = u16::from_le_bytes(self.get(USED + 2, 2).try_into().expect("2"));
        let mut out = Vec::new();
        while self.used != idx {
            let e = self.get(USED + 4 + 8 * u64::from(self.used % SLOTS), 8);
            let id = u64::from(u16::from_le_bytes([e[0], e[1]]));
            let len = u32::from_le_bytes([e[4], e[5], e[6], e[7]]) as usize;
            let data = self.get(BUFS + BUFSZ * id, len);
            self.used = self.used.wrapping_add(1);
            let n = u16::from_le_bytes([data[10], data[11]]);
            let mut p = data;
            for _ in 1..n {
                let e = self.get(USED + 4 + 8 * u64::from(self.used % SLOTS), 8);
                let id = u64::from(u16::from_le_bytes([e[0], e[1]]));
                let len = u32::from_le_bytes([e[4], e[5], e[6], e[7]]) as usize;
                p.extend(self.get(BUFS + BUFSZ * id, len));
                self.used = self.used.wrapping_add(1);
            }
            out.push(p);
        }
        out
    }
}

fn other() -> Vec<u8> {
    let mut f = seg(false, 0, ACK, &TS, &payload(9, 300));
    f[23] = 17; // UDP by protocol number: never coalesced
    f
}

#[test]
fn split_ring_gets_super_packets_with_and_without_mergeable_buffers() {
    for mrg in [true, false] {
        let mut d = Split::new(mrg);
        d.v.gro.set(true, true);
        let len = if mrg { 2048 } else { 70_000 };
        for _ in 0..40 {
            d.post(len);
        }
        let mut fs = stream(false, 20, 1448);
        fs.push(other());
        fs.extend(stream(true, 5, 1000));
        let b = d.tx(&fs);
        assert_eq!((b.packets, b.dropped, b.errors), (26, 0, 0), "mrg {mrg}");
        assert_eq!(b.coalesced, 25);
        let got = d.received();
        assert_eq!(got.len(), 3, "mrg {mrg}");
        check_super(&got[0], &fs[..20], 1448);
        assert_eq!(
            &got[1][..10],
            &PLAIN,
            "a frame that does not qualify goes plain"
        );
        assert_eq!(&got[1][HDR_MRG..], &fs[20][..]);
        check_super(&got[2], &fs[21..], 1000);
    }
}

#[test]
fn too_few_guest_buffers_send_single_frames_and_no_features_change_nothing() {
    // Without MRG_RXBUF and 2 KiB chains no super-packet fits: frames go one by one.
    let mut d = Split::new(false);
    d.v.gro.set(true, true);
    for _ in 0..10 {
        d.post(2048);
    }
    let fs = stream(false, 6, 1000);
    let b = d.tx(&fs);
    assert_eq!((b.packets, b.coalesced), (6, 0));
    let got = d.received();
    assert_eq!(got.len(), 6);
    for (g, f) in got.iter().zip(&fs) {
        assert_eq!((&g[..10], &g[HDR_MRG..]), (&PLAIN[..], &f[..]));
    }
    // With MRG_RXBUF but only two buffers posted for three segments: the run does not fit,
    // the first frames go alone, the last finds no buffer.
    let mut d = Split::new(true);
    d.v.gro.set(true, false);
    d.post(2048);
    d.post(2048);
    let fs = stream(false, 3, 1400);
    let b = d.tx(&fs);
    assert_eq!((b.packets, b.dropped, b.coalesced), (2, 1, 0));
    assert_eq!(d.received().len(), 2);
    // A guest without the features gets every frame as it was.
    let mut d = Split::new(true);
    for _ in 0..10 {
        d.post(2048);
    }
    let fs = stream(false, 6, 1000);
    assert_eq!(d.tx(&fs).packets, 6);
    let got = d.received();
    assert_eq!(got.len(), 6);
    for (g, f) in got.iter().zip(&fs) {
        assert_eq!((&g[..10], &g[HDR_MRG..]), (&PLAIN[..], &f[..]));
    }
}
