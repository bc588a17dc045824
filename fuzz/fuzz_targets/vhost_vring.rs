//! Fuzzes the vhost-user descriptor walker and burst loops, with and without guest offloads:
//! a split virtqueue whose descriptor table, available ring and indices are arbitrary bytes
//! (as a hostile guest could write them) is received from and transmitted to. Nothing may panic or hang, no
//! more chains may be consumed than the ring holds, every packet received fits a buffer,
//! and every packet given to transmit is accounted for (sent, dropped or refused).
#![no_main]

use libfuzzer_sys::fuzz_target;
use netdev::vhost::mem::Guest;
use netdev::vhost::vring::{rx_burst, tx_burst, Vring, HDR_LEGACY, HDR_MRG};
use packet::{Batch, Pool, MAX_FRAME};
use std::sync::{Arc, OnceLock};
use virtio_queue::QueueT;
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

/// Guest memory: 64 KiB at guest address 0x10000 (so that address 0 is outside it).
const BASE: u64 = 0x10000;
const SIZE: usize = 64 * 1024;
const DESC: u64 = BASE;
const AVAIL: u64 = BASE + 0x4000;
const USED: u64 = BASE + 0x6000;

fn mem() -> Arc<Guest> {
    static M: OnceLock<Arc<Guest>> = OnceLock::new();
    M.get_or_init(|| {
        Arc::new(Guest::new(
            GuestMemoryMmap::from_ranges(&[(GuestAddress(BASE), SIZE)]).expect("anon memory"),
        ))
    })
    .clone()
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let m = mem();
    let log2 = data[0] % 9; // rings of 1..=256 entries
    let size: u16 = 1 << log2;
    let mut v = Vring::default();
    let q = &mut v.q;
    q.set_size(size);
    q.set_desc_table_address(Some(DESC as u32), Some(0));
    q.set_avail_ring_address(Some(AVAIL as u32), Some(0));
    q.set_used_ring_address(Some(USED as u32), Some(0));
    q.set_next_avail(u16::from_le_bytes([data[1], data[2]]));
    q.set_next_used(u16::from_le_bytes([data[1], data[2]]));
    q.set_event_idx(data[3] & 1 != 0);
    q.set_ready(true);
    assert!(q.is_valid(&m.mem));
    v.mrg = data[3] & 2 != 0;
    v.hdr_len = if data[3] & 4 != 0 {
        HDR_LEGACY
    } else {
        HDR_MRG
    };
    // With offloads, frames are finished on receipt (checksums, segmentation).
    v.offload = data[3] & 8 != 0;
    v.mem = Some(m.clone());
    v.started = true;
    v.enabled = true;
    // Descriptor table, then the available ring, straight from the input.
    let rest = &data[4..];
    let nd = (16 * size as usize).min(rest.len());
    m.mem
        .write_slice(&rest[..nd], GuestAddress(DESC))
        .expect("in memory");
    let rest = &rest[nd..];
    let na = (4 + 2 * size as usize + 2).min(rest.len());
    m.mem
        .write_slice(&rest[..na], GuestAddress(AVAIL))
        .expect("in memory");
    let avail_before = v.q.next_avail();

    let mut pool = Pool::new(600);
    let mut batch = Batch::new();
    let b = rx_burst(&mut v, &mut pool, &mut batch);
    assert_eq!(b.packets as usize, batch.len());
    if v.offload {
        // One chain may yield many segments, but only as many as a batch holds.
        assert!(b.errors as usize <= size as usize + 1);
        assert!(b.packets as usize <= packet::MAX_BATCH);
    } else {
        assert!((b.packets + b.errors) as usize <= size as usize + 1);
    }
    let consumed = v.q.next_avail().wrapping_sub(avail_before);
    assert!(consumed <= size);
    for p in batch.packets() {
        assert!(!p.is_empty() && p.len() <= MAX_FRAME);
    }
    pool.free_batch(&mut batch);

    // Transmit into the same ring (as if it were a receive queue).
    v.broken = false;
    let n = 1 + (data[1] % 40) as usize;
    for i in 0..n {
        let mut p = pool.alloc().expect("pool");
        let len = 60 + (i * 97) % (MAX_FRAME - 60);
        assert!(p.set_frame(&vec![i as u8; len]));
        batch.push(p).ok().expect("room");
    }
    let b = tx_burst(&mut v, &mut pool, &mut batch, u32::from(data[2] % 3));
    assert!(batch.is_empty());
    assert_eq!((b.packets + b.dropped + b.errors) as usize, n, "{b:?}");
    assert_eq!(pool.available(), pool.capacity());
});
