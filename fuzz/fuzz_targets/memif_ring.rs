//! Fuzzes memif descriptor validation and the burst loops: a ring whose header and
//! descriptors are arbitrary bytes (as a hostile peer could write them) is received from and
//! transmitted to in both roles. Nothing may panic, no copy may leave the region (the loops
//! only copy through `check_desc`, which is checked here against its contract), and no more
//! packets may move than the ring holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use netdev::memif::ring::{
    check_desc, rx_burst, tx_burst, Desc, Mem, Region, RxCursor, Side, TxCursor, RING_HDR,
};
use packet::{Batch, Pool};
use std::sync::OnceLock;

const SIZE: usize = 64 * 1024;

fn region() -> &'static Region {
    static R: OnceLock<Region> = OnceLock::new();
    R.get_or_init(|| Region::create(SIZE as u64).expect("memfd").0)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    // The pure check against its contract.
    let d = Desc {
        flags: u16::from_le_bytes([data[0], data[1]]),
        region: u16::from(data[2] & 3),
        length: u32::from_le_bytes([data[3], data[4], data[5], data[6]]) >> (data[7] & 31),
        offset: u32::from_le_bytes([data[4], data[5], data[6], data[7]]) >> (data[0] & 31),
    };
    let sizes = [SIZE, 4096];
    if let Ok((r, off, len)) = check_desc(&d, &sizes, 2048) {
        assert!(off + len <= sizes[r] && len <= 2048);
    }

    let reg = region();
    let log2 = 1 + data[0] % 8;
    let ring = reg.ring(0, log2).expect("ring fits");
    // Header and descriptors straight from the input; the rest of the region is left alone.
    let ring_bytes = RING_HDR + (16usize << log2);
    reg.write(0, &data[1..data.len().min(1 + ring_bytes)]);
    let side = if data[1] & 1 == 0 {
        Side::Server
    } else {
        Side::Client
    };
    let regions = std::slice::from_ref(reg);
    let sizes = [reg.len()];
    let mem = Mem {
        regions,
        sizes: &sizes,
        max_len: 2048,
    };
    let mut pool = Pool::new(600);
    let mut batch = Batch::new();
    let mut rc = RxCursor {
        next: u16::from_le_bytes([data[2], data[3]]),
    };
    let b = rx_burst(side, &ring, &mem, &mut rc, &mut pool, &mut batch);
    assert!(b.packets as usize <= ring.size() as usize && b.packets as usize == batch.len());
    pool.free_batch(&mut batch);
    for i in 0..64u8 {
        let Some(mut p) = pool.alloc() else { break };
        let len = 14 + usize::from(data[usize::from(i) % data.len()]) * 8;
        p.set_frame(&vec![i; len]);
        let _ = batch.push(p);
    }
    let n = batch.len() as u64;
    let mut tc = TxCursor {
        next: u16::from_le_bytes([data[4], data[5]]),
    };
    let off = |s: u16| 32768 + u32::from(s % 8) * 2048;
    let (b, _) = tx_burst(
        side, &ring, &mem, &mut tc, &mut pool, &mut batch, 2048, &off,
    );
    assert_eq!(b.packets + b.errors + b.dropped, n);
    assert!(batch.is_empty() && pool.outstanding() == 0);
});
