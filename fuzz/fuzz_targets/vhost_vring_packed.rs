//! Fuzzes the packed virtqueue walker and burst loops (VIRTIO_F_RING_PACKED), with and
//! without guest offloads: a packed ring whose descriptors (addresses, lengths, ids, flags
//! including AVAIL/USED, NEXT and INDIRECT), the driver's event suppression area and our
//! position in it are arbitrary bytes, as a hostile guest could write them, is received
//! from and transmitted to. Nothing may panic or hang, the position stays inside the ring,
//! no more chains are taken than the ring holds, every packet received fits a buffer, and
//! every packet given to transmit is accounted for (sent, dropped or refused). Where a
//! restarted switch would resume (`Packed::resume_point`) is read from the arbitrary ring and
//! again from the ring after the bursts: always a position inside the ring, if any.
#![no_main]

use libfuzzer_sys::fuzz_target;
use netdev::vhost::mem::Guest;
use netdev::vhost::vring::{rx_burst, tx_burst, Packed, Vring, HDR_LEGACY, HDR_MRG};
use packet::{Batch, Pool, MAX_FRAME};
use std::sync::{Arc, OnceLock};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

/// Guest memory: 64 KiB at guest address 0x10000 (so that address 0 is outside it).
const BASE: u64 = 0x10000;
const SIZE: usize = 64 * 1024;
const DESC: u64 = BASE;
const DRIVER: u64 = BASE + 0x4000;
const DEVICE: u64 = BASE + 0x4004;

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
    if data.len() < 10 {
        return;
    }
    let m = mem();
    // Rings of 1..=256 descriptors, any size (packed rings need no power of two).
    let size = u16::from(data[0]) + 1;
    let mut p = Packed {
        desc: DESC,
        driver: DRIVER,
        device: DEVICE,
        size,
        event_idx: data[3] & 1 != 0,
        ..Packed::default()
    };
    let base = u32::from(u16::from_le_bytes([data[1], data[2]]));
    if !p.set_base(base) {
        assert!(base & 0x7fff >= u32::from(size));
        return;
    }
    assert!(p.valid(&m));
    let mut v = Vring {
        packed: Some(p),
        mrg: data[3] & 2 != 0,
        hdr_len: if data[3] & 4 != 0 {
            HDR_LEGACY
        } else {
            HDR_MRG
        },
        // With offloads, frames are finished on receipt (checksums, segmentation).
        offload: data[3] & 8 != 0,
        mem: Some(m.clone()),
        started: true,
        enabled: true,
        ..Vring::default()
    };
    // The driver's event area, then the descriptor ring, straight from the input.
    m.mem
        .write_slice(&data[4..8], GuestAddress(DRIVER))
        .expect("in memory");
    let retries = u32::from(data[8] % 3);
    let ntx = 1 + (data[9] % 40) as usize;
    let rest = &data[10..];
    let nd = (16 * size as usize).min(rest.len());
    m.mem
        .write_slice(&rest[..nd], GuestAddress(DESC))
        .expect("in memory");

    if let Some((next, _)) = p.resume_point(&m) {
        assert!(next < size);
    }

    let mut pool = Pool::new(600);
    let mut batch = Batch::new();
    let b = rx_burst(&mut v, &mut pool, &mut batch);
    assert_eq!(b.packets as usize, batch.len());
    if v.offload {
        assert!(b.errors as usize <= size as usize + 1);
        assert!(b.packets as usize <= packet::MAX_BATCH);
    } else {
        assert!((b.packets + b.errors) as usize <= size as usize + 1);
    }
    let q = v.packed.expect("still packed");
    assert!(q.next < size);
    for p in batch.packets() {
        assert!(!p.is_empty() && p.len() <= MAX_FRAME);
    }
    pool.free_batch(&mut batch);

    // Transmit into the same ring (as if it were a receive queue).
    v.broken = false;
    for i in 0..ntx {
        let mut p = pool.alloc().expect("pool");
        let len = 60 + (i * 97) % (MAX_FRAME - 60);
        assert!(p.set_frame(&vec![i as u8; len]));
        batch.push(p).ok().expect("room");
    }
    let b = tx_burst(&mut v, &mut pool, &mut batch, retries);
    assert!(batch.is_empty());
    assert_eq!((b.packets + b.dropped + b.errors) as usize, ntx, "{b:?}");
    assert!(v.packed.expect("still packed").next < size);
    assert_eq!(pool.available(), pool.capacity());
    if let Some((next, _)) = p.resume_point(&m) {
        assert!(next < size);
    }
});
