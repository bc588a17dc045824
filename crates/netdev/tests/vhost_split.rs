//! A guest driver for a split virtqueue, in memory, against the burst loops: a burst of 100
//! frames in each direction (heads out of order, an indirect table and a hostile head among
//! them) comes out in order and byte for byte,
//! every chain is returned, and the ring tells the guest not to kick us
//! (`VRING_USED_F_NO_NOTIFY`: every ring is polled).

use netdev::vhost::mem::Guest;
use netdev::vhost::vring::{rx_burst, tx_burst, Vring, HDR_MRG};
use packet::{Batch, Pool};
use std::sync::Arc;
use virtio_queue::QueueT;
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

const BASE: u64 = 0x10000;
const SIZE: usize = 1024 * 1024;
const DESC: u64 = BASE;
const AVAIL: u64 = BASE + 0x4000;
const USED: u64 = BASE + 0x5000;
const INDIRECT: u64 = BASE + 0x8000;
const BUFS: u64 = BASE + 0x10000;
const SLOTS: u16 = 256;
/// Chains per burst.
const N: u16 = 100;

fn ring() -> (Arc<Guest>, Vring) {
    let m = Arc::new(Guest::new(
        GuestMemoryMmap::from_ranges(&[(GuestAddress(BASE), SIZE)]).expect("anon memory"),
    ));
    let v = Vring::split_in(m.clone(), SLOTS, DESC as u32, AVAIL as u32, USED as u32);
    assert!(v.q.is_valid(&m.mem));
    (m, v)
}

fn put(m: &Guest, at: u64, b: &[u8]) {
    m.mem.write_slice(b, GuestAddress(at)).expect("guest write");
}

fn get(m: &Guest, at: u64, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    m.mem
        .read_slice(&mut b, GuestAddress(at))
        .expect("guest read");
    b
}

fn desc(addr: u64, len: u32, flags: u16, next: u16) -> [u8; 16] {
    let mut d = [0u8; 16];
    d[..8].copy_from_slice(&addr.to_le_bytes());
    d[8..12].copy_from_slice(&len.to_le_bytes());
    d[12..14].copy_from_slice(&flags.to_le_bytes());
    d[14..16].copy_from_slice(&next.to_le_bytes());
    d
}

/// Chain `j` of a burst uses descriptor `head(j)`: out of ring order.
fn head(j: u16) -> u16 {
    (j * 7 + 3) % SLOTS
}

fn frame(j: u16) -> Vec<u8> {
    (0..60 + usize::from(j % 5))
        .map(|k| (k as u16 ^ j) as u8)
        .collect()
}

/// Offers `N` chains, one descriptor of `len` bytes each (flags `flags`), at buffer
/// `BUFS + 2048 * j`; chain 10 is indirect, chain 20 names a head past the table.
fn offer(m: &Guest, flags: u16, len: impl Fn(u16) -> u32) {
    for j in 0..N {
        let buf = BUFS + 2048 * u64::from(j);
        let d = desc(buf, len(j), flags, 0);
        if j == 10 {
            put(m, INDIRECT, &d);
            put(m, DESC + 16 * u64::from(head(j)), &desc(INDIRECT, 16, 4, 0));
        } else {
            put(m, DESC + 16 * u64::from(head(j)), &d);
        }
        let h = if j == 20 { SLOTS + 5 } else { head(j) };
        put(m, AVAIL + 4 + 2 * u64::from(j), &h.to_le_bytes());
    }
    put(m, AVAIL + 2, &N.to_le_bytes());
}

fn used(m: &Guest, j: u16) -> (u16, u32) {
    let e = get(m, USED + 4 + 8 * u64::from(j), 8);
    (
        u16::from_le_bytes([e[0], e[1]]),
        u32::from_le_bytes([e[4], e[5], e[6], e[7]]),
    )
}

fn used_flags_and_idx(m: &Guest) -> (u16, u16) {
    let b = get(m, USED, 4);
    (
        u16::from_le_bytes([b[0], b[1]]),
        u16::from_le_bytes([b[2], b[3]]),
    )
}

/// The guest's transmit buffers: a zero header, then frame `j`, at `BUFS + 2048 * j`.
fn guest_frames(m: &Guest) {
    for j in 0..N {
        let mut b = vec![0u8; HDR_MRG];
        b.extend(frame(j));
        put(m, BUFS + 2048 * u64::from(j), &b);
    }
}

/// Frames 0..N as our packets, for a transmit burst.
fn our_frames(pool: &mut Pool) -> Batch {
    let mut out = Batch::new();
    for j in 0..N {
        let mut p = pool.alloc().expect("buffer");
        assert!(p.set_frame(&frame(j)));
        out.push(p).ok().expect("room");
    }
    out
}

#[test]
fn a_full_burst_each_way_keeps_order_and_bytes_and_asks_for_no_kicks() {
    // The guest transmits: header then frame in one buffer.
    let (m, mut v) = ring();
    guest_frames(&m);
    offer(&m, 0, |j| (HDR_MRG + frame(j).len()) as u32);
    let mut pool = Pool::new(512);
    let mut batch = Batch::new();
    let b = rx_burst(&mut v, &mut pool, &mut batch);
    assert_eq!(
        (b.packets, b.errors, b.broken),
        (u64::from(N) - 1, 1, false)
    );
    let mut got = Vec::new();
    for p in batch.drain() {
        got.push(p.data().to_vec());
        pool.free(p);
    }
    let want: Vec<Vec<u8>> = (0..N).filter(|&j| j != 20).map(frame).collect();
    assert_eq!(got, want);
    let (flags, idx) = used_flags_and_idx(&m);
    assert_eq!(flags & 1, 1, "VRING_USED_F_NO_NOTIFY set");
    assert_eq!(idx, N, "every chain returned");
    assert_eq!(used(&m, 9), (head(9), 0));
    assert_eq!(
        used(&m, 20),
        (SLOTS + 5, 0),
        "the bad head is returned as it was"
    );

    // The guest receives: device-writable buffers of 2048 bytes.
    let (m, mut v) = ring();
    v.mrg = true;
    offer(&m, 2, |_| 2048);
    let mut out = our_frames(&mut pool);
    let b = tx_burst(&mut v, &mut pool, &mut out, 0);
    // Chain 20's head is past the table: that chain is returned empty and its packet
    // refused (counted as an error), the next packet takes chain 21.
    assert_eq!((b.packets, b.errors, b.dropped), (u64::from(N) - 1, 1, 0));
    let (flags, idx) = used_flags_and_idx(&m);
    assert_eq!((flags & 1, idx), (1, N));
    for j in 0..N {
        let (id, len) = used(&m, j);
        if j == 20 {
            assert_eq!((id, len), (SLOTS + 5, 0));
            continue;
        }
        let f = frame(j);
        assert_eq!(
            (id, len as usize),
            (head(j), HDR_MRG + f.len()),
            "chain {j}"
        );
        let buf = BUFS + 2048 * u64::from(j);
        assert_eq!(get(&m, buf + HDR_MRG as u64, f.len()), f, "chain {j}");
        assert_eq!(get(&m, buf + 10, 2), vec![1, 0], "num_buffers of chain {j}");
    }
    assert_eq!(pool.outstanding(), 0);
}

/// Buffers the guest places outside its memory (past the end, straddling it, at the top of
/// the address space) or gives no length cost only their own chains, in either direction:
/// the burst's prefetch stage and its copies skip them, the rest of the burst goes through.
#[test]
fn buffers_outside_guest_memory_cost_only_their_chains() {
    let end = BASE + SIZE as u64;
    let bad = |j: u16| match j % 4 {
        1 => Some(end + 4096),
        2 => Some(end - 8),
        3 => Some(u64::MAX - 16),
        _ => None,
    };
    let place = |m: &Guest, flags: u16, len: u32| {
        for j in 0..N {
            let addr = bad(j).unwrap_or(BUFS + 2048 * u64::from(j));
            let l = if j == 40 { 0 } else { len };
            put(m, DESC + 16 * u64::from(head(j)), &desc(addr, l, flags, 0));
            put(m, AVAIL + 4 + 2 * u64::from(j), &head(j).to_le_bytes());
        }
        put(m, AVAIL + 2, &N.to_le_bytes());
    };
    let good = (0..N).filter(|&j| bad(j).is_none() && j != 40).count() as u64;

    let (m, mut v) = ring();
    guest_frames(&m);
    place(&m, 0, (HDR_MRG + 64) as u32);
    let mut pool = Pool::new(512);
    let mut batch = Batch::new();
    let b = rx_burst(&mut v, &mut pool, &mut batch);
    assert_eq!((b.packets, b.errors), (good, u64::from(N) - good));
    assert_eq!(used_flags_and_idx(&m).1, N, "every chain returned");
    pool.free_batch(&mut batch);

    let (m, mut v) = ring();
    place(&m, 2, 2048);
    let mut out = our_frames(&mut pool);
    let b = tx_burst(&mut v, &mut pool, &mut out, 0);
    assert_eq!(b.packets + b.errors, u64::from(N));
    assert_eq!(b.packets, good);
    assert_eq!(used_flags_and_idx(&m).1, N, "every chain returned");
    assert_eq!(pool.outstanding(), 0);
}
