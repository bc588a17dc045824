//! Packed rings against an in-memory guest driver written here from the specification:
//! frames both ways (one and several descriptors, indirect tables, MRG_RXBUF), wrapping
//! rings of any size, event suppression, and a hostile guest's descriptors.

use super::*;
use crate::vhost::vring::{rx_burst, tx_burst, HDR_MRG};
use packet::{Batch, Pool};
use std::collections::HashMap;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::sync::Arc;
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

const BASE: u64 = 0x10000;
const MEM: usize = 512 * 1024;
const DESC: u64 = BASE;
const DRIVER: u64 = BASE + 0x2000;
const DEVICE: u64 = BASE + 0x2004;
const TABLES: u64 = BASE + 0x3000;
const BUFS: u64 = BASE + 0x8000;
const BUFSZ: u64 = 2048;
const OUTSIDE: u64 = BASE + MEM as u64 + 0x1000;

/// The guest side of one packed ring, as a virtio driver keeps it.
struct Driver {
    m: Arc<Guest>,
    v: Vring,
    size: u16,
    next: u16,
    wrap: bool,
    used_next: u16,
    used_wrap: bool,
    counts: HashMap<u16, u16>,
    next_id: u16,
    call: Option<std::fs::File>,
}

impl Driver {
    fn new(size: u16, mrg: bool, event_idx: bool) -> Driver {
        let m = Arc::new(Guest::new(
            GuestMemoryMmap::from_ranges(&[(GuestAddress(BASE), MEM)]).expect("anon memory"),
        ));
        let mut p = Packed {
            desc: DESC,
            driver: DRIVER,
            device: DEVICE,
            size,
            event_idx,
            ..Packed::default()
        };
        assert!(
            p.set_base(0x8000),
            "initial base: position 0, wrap counter 1"
        );
        assert!(p.valid(&m) && p.disable_kicks(&m));
        let mut v = Vring {
            packed: Some(p),
            hdr_len: HDR_MRG,
            mrg,
            mem: Some(m.clone()),
            started: true,
            enabled: true,
            ..Vring::default()
        };
        assert!(v.live());
        // SAFETY: eventfd(2) returns a new descriptor we own, or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK) };
        assert!(fd >= 0);
        // SAFETY: `fd` is ours and open.
        v.call = Some(unsafe { std::fs::File::from_raw_fd(fd) });
        let call = v.call.as_ref().map(|f| f.try_clone().expect("dup"));
        Driver {
            m,
            v,
            size,
            next: 0,
            wrap: true,
            used_next: 0,
            used_wrap: true,
            counts: HashMap::new(),
            next_id: 0,
            call,
        }
    }

    fn write(&self, gpa: u64, b: &[u8]) {
        self.m
            .mem
            .write_slice(b, GuestAddress(gpa))
            .expect("in memory");
    }

    fn read(&self, gpa: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n];
        self.m
            .mem
            .read_slice(&mut b, GuestAddress(gpa))
            .expect("in memory");
        b
    }

    fn put_desc(&self, pos: u16, addr: u64, len: u32, id: u16, flags: u16) {
        let mut d = [0u8; 16];
        d[..8].copy_from_slice(&addr.to_le_bytes());
        d[8..12].copy_from_slice(&len.to_le_bytes());
        d[12..14].copy_from_slice(&id.to_le_bytes());
        d[14..16].copy_from_slice(&flags.to_le_bytes());
        self.write(DESC + 16 * u64::from(pos), &d);
    }

    /// Makes a chain of `descs` (addr, len, flags) available, the head's flags last;
    /// returns its buffer id.
    fn offer(&mut self, descs: &[(u64, u32, u16)]) -> u16 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let n = descs.len() as u16;
        let mut at = Vec::new();
        let (mut pos, mut wrap) = (self.next, self.wrap);
        for _ in 0..n {
            at.push((pos, wrap));
            pos += 1;
            if pos == self.size {
                pos = 0;
                wrap = !wrap;
            }
        }
        for k in (0..descs.len()).rev() {
            let (addr, len, mut flags) = descs[k];
            if k + 1 < descs.len() {
                flags |= DESC_NEXT;
            }
            flags |= if at[k].1 { DESC_AVAIL } else { DESC_USED };
            self.put_desc(at[k].0, addr, len, id, flags);
        }
        self.counts.insert(id, n);
        (self.next, self.wrap) = (pos, wrap);
        id
    }

    /// A transmit chain holding a zero header and `frame` in one descriptor at buffer `i`.
    fn send(&mut self, i: u64, frame: &[u8]) -> u16 {
        let mut b = vec![0u8; HDR_MRG];
        b.extend_from_slice(frame);
        self.write(BUFS + BUFSZ * i, &b);
        self.offer(&[(BUFS + BUFSZ * i, b.len() as u32, 0)])
    }

    /// The next used descriptor (id, len), if the device returned one.
    fn used(&mut self) -> Option<(u16, u32)> {
        let d = self.read(DESC + 16 * u64::from(self.used_next), 16);
        let flags = u16::from_le_bytes([d[14], d[15]]);
        let w = self.used_wrap;
        if (flags & DESC_AVAIL != 0) != w || (flags & DESC_USED != 0) != w {
            return None;
        }
        let id = u16::from_le_bytes([d[12], d[13]]);
        let len = u32::from_le_bytes([d[8], d[9], d[10], d[11]]);
        let n = self.counts.remove(&id).expect("a buffer id we offered");
        let p = u32::from(self.used_next) + u32::from(n);
        if p >= u32::from(self.size) {
            self.used_next = (p - u32::from(self.size)) as u16;
            self.used_wrap = !self.used_wrap;
        } else {
            self.used_next = p as u16;
        }
        Some((id, len))
    }

    fn all_used(&mut self) -> Vec<(u16, u32)> {
        std::iter::from_fn(|| self.used()).collect()
    }

    fn driver_event(&self, off_wrap: u16, flags: u16) {
        let mut b = [0u8; 4];
        b[..2].copy_from_slice(&off_wrap.to_le_bytes());
        b[2..].copy_from_slice(&flags.to_le_bytes());
        self.write(DRIVER, &b);
    }

    /// How many times the device signalled the call eventfd since the last look.
    fn signals(&mut self) -> u64 {
        let mut b = [0u8; 8];
        match self.call.as_mut().expect("call").read(&mut b) {
            Ok(8) => u64::from_ne_bytes(b),
            _ => 0,
        }
    }

    fn rx(&mut self, pool: &mut Pool) -> (Burst, Vec<Vec<u8>>) {
        let mut batch = Batch::new();
        let b = rx_burst(&mut self.v, pool, &mut batch);
        let frames = batch.packets().iter().map(|p| p.data().to_vec()).collect();
        pool.free_batch(&mut batch);
        (b, frames)
    }

    fn tx(&mut self, pool: &mut Pool, frames: &[Vec<u8>], retries: u32) -> Burst {
        let mut batch = Batch::new();
        for f in frames {
            let mut p = pool.alloc().expect("pool");
            assert!(p.set_frame(f));
            batch.push(p).ok().expect("room");
        }
        tx_burst(&mut self.v, pool, &mut batch, retries)
    }
}

fn frame(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|k| (i * 31 + k) as u8).collect()
}

#[test]
fn base_carries_position_and_wrap_counter() {
    let mut p = Packed {
        size: 5,
        ..Packed::default()
    };
    assert!(p.set_base(0x8003));
    assert_eq!((p.next, p.wrap), (3, true));
    assert_eq!(p.base(), 0x8003_8003);
    assert!(p.set_base(4));
    assert_eq!(p.base(), 0x0004_0004);
    assert!(!p.set_base(5), "a position past the ring");
    assert!(!p.set_base(0x8005));
}

#[test]
fn guest_transmits_across_wraps_of_an_odd_sized_ring() {
    // Five descriptors: chains of one and two descriptors wrap the ring several times.
    let mut d = Driver::new(5, false, false);
    let mut pool = Pool::new(64);
    let mut want = Vec::new();
    let mut got = Vec::new();
    for round in 0..12 {
        let f = frame(round, 60 + round * 37);
        if round % 2 == 0 {
            d.send(round as u64, &f);
        } else {
            // Header and frame in separate descriptors.
            d.write(BUFS + BUFSZ * round as u64, &[0u8; HDR_MRG]);
            d.write(BUFS + BUFSZ * round as u64 + 64, &f);
            d.offer(&[
                (BUFS + BUFSZ * round as u64, HDR_MRG as u32, 0),
                (BUFS + BUFSZ * round as u64 + 64, f.len() as u32, 0),
            ]);
        }
        want.push(f);
        let (b, frames) = d.rx(&mut pool);
        assert_eq!((b.packets, b.errors, b.broken), (1, 0, false), "{round}");
        got.extend(frames);
        let used = d.all_used();
        assert_eq!(used, vec![(round as u16, 0)], "{round}");
    }
    assert_eq!(got, want);
    assert!(d.signals() > 0, "ENABLE (0) in the driver area: signalled");
    assert_eq!(pool.available(), pool.capacity());
    // Our area tells the guest not to kick.
    assert_eq!(d.read(DEVICE + 2, 2), EVENT_DISABLE.to_le_bytes());
}

/// Offers one chain through an indirect table at `table` of two descriptors: a header in
/// buffer `buf`, frame `f` in buffer `buf + 1`.
fn offer_indirect(d: &mut Driver, table: u64, buf: u64, f: &[u8]) {
    d.write(BUFS + BUFSZ * (buf + 1), f);
    d.write(BUFS + BUFSZ * buf, &[0u8; HDR_MRG]);
    let mut t = Vec::new();
    for (a, l) in [
        (BUFS + BUFSZ * buf, HDR_MRG as u32),
        (BUFS + BUFSZ * (buf + 1), f.len() as u32),
    ] {
        t.extend_from_slice(&a.to_le_bytes());
        t.extend_from_slice(&l.to_le_bytes());
        t.extend_from_slice(&[0, 0, 0, 0]);
    }
    d.write(table, &t);
    d.offer(&[(table, 32, DESC_INDIRECT)]);
}

#[test]
fn a_burst_takes_what_is_available_and_publishes_it_at_once() {
    let mut d = Driver::new(16, false, false);
    let mut pool = Pool::new(64);
    let fs: Vec<Vec<u8>> = (0..6).map(|i| frame(i, 100 + i)).collect();
    for (i, f) in fs.iter().enumerate() {
        d.send(i as u64, f);
    }
    // An indirect chain: header and frame in a table of two.
    let f = frame(9, 300);
    offer_indirect(&mut d, TABLES, 8, &f);
    let (b, frames) = d.rx(&mut pool);
    assert_eq!(b.packets, 7);
    assert_eq!(&frames[..6], &fs[..]);
    assert_eq!(frames[6], f);
    assert_eq!(d.all_used().len(), 7);
    // Nothing more available: nothing happens.
    let (b, _) = d.rx(&mut pool);
    assert_eq!(b, Burst::default());
    assert_eq!(d.v.packed.map(|p| (p.next, p.wrap)), Some((7, true)));
}

#[test]
fn descriptors_read_the_same_at_any_alignment() {
    // `load_desc` takes two 8-byte loads on 8-aligned descriptors and bytes elsewhere (an
    // indirect table may start anywhere): both give the little-endian words.
    let raw: Vec<u8> = (0u8..40)
        .map(|i| i.wrapping_mul(37).wrapping_add(11))
        .collect();
    for off in 0..24 {
        let b = &raw[off..off + 16];
        let word = |x: &[u8]| x.iter().rev().fold(0u64, |a, &y| a << 8 | u64::from(y));
        // SAFETY: 16 bytes of `raw` from `off` on.
        let got = unsafe { load_desc(raw.as_ptr().add(off)) };
        assert_eq!(got, (word(&b[..8]), word(&b[8..])), "offset {off}");
    }
    // An indirect table at an address that is not 8-aligned, read through the ring.
    let mut d = Driver::new(8, false, false);
    let mut pool = Pool::new(16);
    let f = frame(4, 200);
    offer_indirect(&mut d, TABLES + 4, 2, &f);
    let (b, frames) = d.rx(&mut pool);
    assert_eq!((b.packets, b.errors), (1, 0));
    assert_eq!(frames, vec![f]);
}

#[test]
fn switch_transmits_with_and_without_mergeable_buffers() {
    let mut d = Driver::new(8, true, false);
    let mut pool = Pool::new(64);
    // Four 512-byte receive buffers; a 1,400-byte frame takes three (12 + 1400 bytes).
    let ids: Vec<u16> = (0..4)
        .map(|i| d.offer(&[(BUFS + BUFSZ * i, 512, DESC_WRITE)]))
        .collect();
    let f = frame(3, 1400);
    let b = d.tx(&mut pool, std::slice::from_ref(&f), 0);
    assert_eq!((b.packets, b.dropped, b.errors), (1, 0, 0));
    let used = d.all_used();
    assert_eq!(
        used,
        vec![(ids[0], 512), (ids[1], 512), (ids[2], 12 + 1400 - 1024)]
    );
    let mut hdr = vec![0u8; 10];
    hdr.extend_from_slice(&3u16.to_le_bytes());
    assert_eq!(d.read(BUFS, 12), hdr, "num_buffers = 3");
    let mut out = d.read(BUFS + 12, 500);
    out.extend(d.read(BUFS + BUFSZ, 512));
    out.extend(d.read(BUFS + 2 * BUFSZ, 1400 - 1012));
    assert_eq!(out, f);
    // One buffer left: a 60-byte frame fits, the next finds none and is dropped.
    let b = d.tx(&mut pool, &[frame(1, 60), frame(2, 60)], 2);
    assert_eq!((b.packets, b.dropped), (1, 1));
    assert_eq!(d.all_used(), vec![(ids[3], 72)]);
    assert_eq!(pool.available(), pool.capacity());

    // Without MRG_RXBUF a frame must fit one chain: a too small one is refused, returned
    // with length 0, and the next packet goes on.
    d.v.mrg = false;
    let small = d.offer(&[(BUFS, 100, DESC_WRITE)]);
    let big = d.offer(&[(BUFS + BUFSZ, 2048, DESC_WRITE)]);
    let b = d.tx(&mut pool, &[frame(4, 500), frame(5, 500)], 0);
    assert_eq!((b.packets, b.errors), (1, 1));
    assert_eq!(d.all_used(), vec![(small, 0), (big, 512)]);
    assert_eq!(d.read(BUFS + BUFSZ + 12, 500), frame(5, 500));
}

#[test]
fn event_suppression_decides_the_signal() {
    let mut d = Driver::new(8, false, true);
    let mut pool = Pool::new(64);
    d.driver_event(0, EVENT_DISABLE);
    d.send(0, &frame(0, 60));
    d.rx(&mut pool);
    d.all_used();
    assert_eq!(d.signals(), 0, "DISABLE");
    d.all_used();
    // DESC: signal when the used cursor passes position 3 of the first lap.
    d.driver_event(0x8000 | 3, EVENT_DESC);
    d.send(1, &frame(1, 60));
    d.rx(&mut pool); // cursor 1 -> 2
    d.all_used();
    assert_eq!(d.signals(), 0, "not yet at 3");
    d.send(2, &frame(2, 60));
    d.send(3, &frame(3, 60));
    d.rx(&mut pool); // 2 -> 4, passes 3
    d.all_used();
    assert_eq!(d.signals(), 1);
    // An event in the next lap (wrap 0) at position 1: not until the ring wrapped.
    d.driver_event(1, EVENT_DESC);
    for i in 4..8 {
        d.send(i, &frame(i as usize, 60));
    }
    d.rx(&mut pool); // 4 -> 0 (lap 2)
    d.all_used();
    assert_eq!(d.signals(), 0);
    d.send(8, &frame(8, 60));
    d.send(9, &frame(9, 60));
    d.rx(&mut pool); // 0 -> 2, passes 1
    d.all_used();
    assert_eq!(d.signals(), 1);
    d.driver_event(0, EVENT_ENABLE);
    d.send(10, &frame(10, 60));
    d.rx(&mut pool);
    d.all_used();
    assert_eq!(d.signals(), 1);
    assert_eq!(d.counts.len(), 0, "every chain returned");
}

#[test]
fn hostile_descriptors_cost_their_chain_only() {
    let mut d = Driver::new(16, false, false);
    let mut pool = Pool::new(64);
    let good = frame(1, 80);
    d.send(0, &good);
    let bad = [
        // Outside guest memory; an absurd length; device-writable for the device to read.
        d.offer(&[(OUTSIDE, 72, 0)]),
        d.offer(&[(BUFS, 0xFFFF_0000, 0)]),
        d.offer(&[(BUFS, 72, DESC_WRITE)]),
        // Indirect with NEXT; indirect after the head; empty, misaligned or outside tables.
        d.offer(&[(TABLES, 32, DESC_INDIRECT), (BUFS, 72, 0)]),
        d.offer(&[(BUFS, 12, 0), (TABLES, 32, DESC_INDIRECT)]),
        d.offer(&[(TABLES, 0, DESC_INDIRECT)]),
        d.offer(&[(TABLES, 24, DESC_INDIRECT)]),
        d.offer(&[(OUTSIDE, 32, DESC_INDIRECT)]),
        // Only a header.
        d.offer(&[(BUFS, 12, 0)]),
    ];
    d.send(1, &good);
    let (b, frames) = d.rx(&mut pool);
    assert_eq!(
        (b.packets, b.errors, b.broken),
        (2, bad.len() as u64, false)
    );
    assert_eq!(frames, vec![good.clone(), good.clone()]);
    let used = d.all_used();
    assert_eq!(used.len(), bad.len() + 2);
    for &id in &bad {
        assert!(used.contains(&(id, 0)), "{id} returned");
    }
    assert_eq!(pool.available(), pool.capacity());

    // A chain that never ends (NEXT on every descriptor of the ring) breaks the ring:
    // counted once, then it is left alone.
    let size = d.size;
    let (pos, wrap) = (d.next, d.wrap);
    for k in 0..size {
        let p = (pos + k) % size;
        let w = if p >= pos { wrap } else { !wrap };
        let f = DESC_NEXT | if w { DESC_AVAIL } else { DESC_USED };
        d.put_desc(p, BUFS, 12, 0, f);
    }
    let (b, _) = d.rx(&mut pool);
    assert!(b.broken && b.errors == 1 && d.v.broken, "{b:?}");
    assert!(!d.v.live());
    assert_eq!(pool.available(), pool.capacity());
}

#[test]
fn hostile_receive_buffers_are_returned_empty() {
    let mut d = Driver::new(8, true, false);
    let mut pool = Pool::new(64);
    let bad = [
        d.offer(&[(OUTSIDE, 2048, DESC_WRITE)]),
        d.offer(&[(BUFS, 2048, 0)]),
        d.offer(&[(BUFS, 4, DESC_WRITE)]),
    ];
    let ok = d.offer(&[(BUFS + BUFSZ, 2048, DESC_WRITE)]);
    let fs: Vec<Vec<u8>> = (0..4).map(|i| frame(i, 64)).collect();
    let b = d.tx(&mut pool, &fs, 0);
    assert_eq!((b.packets, b.errors, b.dropped), (1, 3, 0));
    assert_eq!(
        d.all_used(),
        vec![(bad[0], 0), (bad[1], 0), (bad[2], 0), (ok, 76)]
    );
    assert_eq!(d.read(BUFS + BUFSZ + 12, 64), fs[3]);
    assert_eq!(pool.available(), pool.capacity());
}

#[test]
fn a_ring_outside_memory_is_refused() {
    let m = Arc::new(Guest::new(
        GuestMemoryMmap::from_ranges(&[(GuestAddress(BASE), MEM)]).expect("anon memory"),
    ));
    let p = Packed {
        desc: BASE + MEM as u64 - 16 * 3,
        driver: DRIVER,
        device: DEVICE,
        size: 4,
        ..Packed::default()
    };
    assert!(!p.valid(&m));
    let p = Packed {
        desc: DESC + 8,
        size: 4,
        ..p
    };
    assert!(!p.valid(&m), "misaligned ring");
    let p = Packed { desc: DESC, ..p };
    assert!(p.valid(&m));
    assert!(!Packed {
        device: OUTSIDE,
        ..p
    }
    .valid(&m));
}

#[test]
fn packed_ring_gets_super_packets_or_single_frames() {
    use crate::vhost::vring::coalesce::tests::{check_super, stream};
    let mut pool = Pool::new(64);
    // MRG_RXBUF: 2 KiB buffers; ten 1000-byte segments (10,066 bytes of frame) take five.
    let mut d = Driver::new(64, true, false);
    d.v.gro.set(true, true);
    let ids: Vec<u16> = (0..8)
        .map(|i| d.offer(&[(BUFS + BUFSZ * i, BUFSZ as u32, DESC_WRITE)]))
        .collect();
    let fs = stream(false, 10, 1000);
    let b = d.tx(&mut pool, &fs, 0);
    assert_eq!(
        (b.packets, b.dropped, b.errors, b.coalesced),
        (10, 0, 0, 10)
    );
    let used = d.all_used();
    assert_eq!(used.len(), 5);
    assert_eq!(used.iter().map(|u| u.0).collect::<Vec<_>>(), ids[..5]);
    let mut got = Vec::new();
    for (k, u) in used.iter().enumerate() {
        got.extend(d.read(BUFS + BUFSZ * k as u64, u.1 as usize));
    }
    assert_eq!(u16::from_le_bytes([got[10], got[11]]), 5, "num_buffers");
    check_super(&got, &fs, 1000);
    // Three buffers left, a run of four IPv6 segments needs more: they go one by one and
    // the fourth finds no buffer.
    let fs = stream(true, 4, 1800);
    let b = d.tx(&mut pool, &fs, 0);
    assert_eq!((b.packets, b.dropped, b.coalesced), (3, 1, 0));
    let used = d.all_used();
    assert_eq!(used.len(), 3);
    for (k, u) in used.iter().enumerate() {
        let g = d.read(BUFS + BUFSZ * (5 + k as u64), u.1 as usize);
        assert_eq!(&g[..10], &[0u8; 10]);
        assert_eq!(&g[HDR_MRG..], &fs[k][..]);
    }

    // Without MRG_RXBUF: one chain of five descriptors holds the whole super-packet.
    let mut d = Driver::new(16, false, false);
    d.v.gro.set(true, true);
    let descs: Vec<(u64, u32, u16)> = (0..5)
        .map(|i| (BUFS + BUFSZ * i, BUFSZ as u32, DESC_WRITE))
        .collect();
    let id = d.offer(&descs);
    let fs = stream(true, 8, 1000);
    let b = d.tx(&mut pool, &fs, 0);
    assert_eq!((b.packets, b.errors, b.coalesced), (8, 0, 8));
    let used = d.all_used();
    assert_eq!(used.len(), 1);
    assert_eq!(used[0].0, id);
    let got = d.read(BUFS, used[0].1 as usize);
    check_super(&got, &fs, 1000);
    assert_eq!(pool.available(), pool.capacity());
}

/// Where a restarted device would resume on `d`'s ring, as the ring shows it.
fn resumed(d: &Driver) -> Option<(u16, bool)> {
    d.v.packed.expect("packed").resume_point(&d.m)
}

fn position(d: &Driver) -> (u16, bool) {
    let p = d.v.packed.expect("packed");
    (p.next, p.wrap)
}

#[test]
fn a_restarted_device_finds_its_place_in_a_transmit_ring() {
    let mut d = Driver::new(7, false, false);
    let mut pool = Pool::new(64);
    // A zeroed ring: used-looking descriptors without our mark, so no answer (the
    // frontend's base stands).
    assert_eq!(resumed(&d), None);
    d.send(0, &frame(0, 60));
    assert_eq!(resumed(&d), None, "a fresh ring the driver began to fill");
    let mut laps = 0;
    for round in 1..60 {
        let i = round as u64 % 16;
        let f = frame(round, 60 + round);
        if round % 3 == 1 {
            d.write(BUFS + BUFSZ * i, &[0u8; HDR_MRG]);
            d.write(BUFS + BUFSZ * i + 64, &f);
            d.offer(&[
                (BUFS + BUFSZ * i, HDR_MRG as u32, 0),
                (BUFS + BUFSZ * i + 64, f.len() as u32, 0),
            ]);
        } else {
            d.send(i, &f);
        }
        // Every fourth round the device does not run: two chains wait for it.
        if round % 4 != 3 {
            let was = position(&d).1;
            let (b, _) = d.rx(&mut pool);
            assert!(b.packets >= 1 && b.errors == 0, "{round}");
            laps += usize::from(position(&d).1 != was);
            d.all_used();
        }
        assert_eq!(resumed(&d), Some(position(&d)), "round {round}");
    }
    assert!(laps >= 10, "the ring wrapped {laps} times");
    assert_eq!(pool.available(), pool.capacity());
}

#[test]
fn a_restarted_device_finds_its_place_in_a_receive_ring_kept_full() {
    let mut d = Driver::new(6, true, false);
    let mut pool = Pool::new(64);
    let mut bufs = 0u64;
    for round in 0..40 {
        // The driver refills the ring to the brim, as Linux does its receive queue.
        while d.counts.len() < 6 {
            d.offer(&[(BUFS + BUFSZ * (bufs % 16), 512, DESC_WRITE)]);
            bufs += 1;
        }
        assert_eq!(resumed(&d), Some(position(&d)), "full, round {round}");
        // One to three buffers per frame, one or two frames.
        let frames: Vec<Vec<u8>> = (0..1 + round % 2)
            .map(|k| frame(round + k, 60 + 400 * ((round + k) % 3)))
            .collect();
        let b = d.tx(&mut pool, &frames, 0);
        assert_eq!(b.packets as usize, frames.len(), "{round}");
        // Before and after the driver took the buffers back.
        assert_eq!(resumed(&d), Some(position(&d)), "used, round {round}");
        d.all_used();
        assert_eq!(resumed(&d), Some(position(&d)), "taken, round {round}");
    }
    assert_eq!(pool.available(), pool.capacity());
}

#[test]
fn a_burst_half_published_by_a_killed_device_is_finished() {
    let mut d = Driver::new(8, true, false);
    let mut pool = Pool::new(64);
    let ids: Vec<u16> = (0..8)
        .map(|i| d.offer(&[(BUFS + BUFSZ * i, 512, DESC_WRITE)]))
        .collect();
    d.tx(&mut pool, &[frame(0, 60)], 0);
    assert_eq!(d.all_used(), vec![(ids[0], 72)]);
    // A burst of three frames (the second takes two buffers), then the device "dies" before
    // publishing its first used descriptor: put that one's flags back as available.
    let (fpos, fwrap) = position(&d);
    let b = d.tx(&mut pool, &[frame(1, 60), frame(2, 700), frame(3, 60)], 0);
    assert_eq!(b.packets, 3);
    let avail = DESC_WRITE | if fwrap { DESC_AVAIL } else { DESC_USED };
    d.write(DESC + 16 * u64::from(fpos) + 14, &avail.to_le_bytes());
    assert_eq!(d.used(), None, "the guest sees nothing of the burst");
    assert_eq!(resumed(&d), Some(position(&d)));
    assert_eq!(
        d.all_used(),
        vec![(ids[1], 72), (ids[2], 512), (ids[3], 200), (ids[4], 72)],
        "the restarted device published the burst"
    );

    // A used descriptor without our mark (another device ran the ring): no answer.
    d.write(DESC + 16 * u64::from(fpos), &0u64.to_le_bytes());
    d.tx(&mut pool, &[frame(4, 60)], 0);
    let (lpos, _) = position(&d);
    let last = (lpos + 7) % 8;
    d.write(DESC + 16 * u64::from(last), &BUFS.to_le_bytes());
    assert_eq!(resumed(&d), None);
    assert_eq!(pool.available(), pool.capacity());
}

#[test]
fn arbitrary_rings_give_a_position_inside_them_or_none() {
    // What the fuzz target `vhost_vring_packed` does at length: descriptors of random
    // flags, with our mark (random counts and distances) in many address fields.
    let d = Driver::new(1, false, false);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut answers = 0;
    for _ in 0..3000 {
        let size = 1 + (rnd() % 40) as u16;
        for pos in 0..size {
            let r = rnd();
            let addr = if r & 1 != 0 {
                // Mostly plausible marks (short chains, bursts), some not.
                super::resume::mark((r >> 8) as u16 % 6, (r >> 24) as u16 % 12)
            } else {
                r
            };
            let flags = (r >> 40) as u16 & (DESC_AVAIL | DESC_USED | DESC_NEXT);
            d.put_desc(pos, addr, 0, 0, flags);
        }
        let mut p = d.v.packed.expect("packed");
        p.size = size;
        if let Some((next, _)) = p.resume_point(&d.m) {
            assert!(next < size);
            answers += 1;
        }
    }
    assert!(answers > 300, "{answers} answers");
}

#[test]
fn a_burst_the_driver_took_in_part_and_offered_again_is_not_reopened() {
    // Linux's receive path takes back what a budget allows and refills what it took: the
    // driver's position can stop inside one of our bursts, the burst's first descriptors
    // offered again (a new lap) and its last ones still used. The last used descriptor's
    // mark then points back past the driver's position.
    for taken in 1..4 {
        let mut d = Driver::new(8, true, false);
        let mut pool = Pool::new(64);
        let mut bufs = 0u64;
        let mut offer = |d: &mut Driver| {
            d.offer(&[(BUFS + BUFSZ * (bufs % 16), 512, DESC_WRITE)]);
            bufs += 1;
        };
        for _ in 0..8 {
            offer(&mut d);
        }
        // Walk the ring a few descriptors on, so the burst below straddles a lap's end.
        for round in 0..6 {
            d.tx(&mut pool, &[frame(round, 60)], 0);
            d.all_used();
            offer(&mut d);
        }
        let b = d.tx(
            &mut pool,
            &(0..5).map(|k| frame(10 + k, 60)).collect::<Vec<_>>(),
            0,
        );
        assert_eq!(b.packets, 5);
        for _ in 0..taken {
            assert!(d.used().is_some());
            offer(&mut d);
        }
        assert_eq!(
            resumed(&d),
            Some(position(&d)),
            "{taken} taken and offered again"
        );
        // Everything the device returned is still there for the driver.
        assert_eq!(d.all_used().len(), 5 - taken);
        assert_eq!(resumed(&d), Some(position(&d)), "{taken}: the rest taken");
        assert_eq!(pool.available(), pool.capacity());
    }
}
