//! The pool's burst operations (`alloc_into`, `free_tail`, `free_batch`) and frame copies,
//! against their one-packet counterparts.

use packet::{Batch, Pool, MAX_BATCH, MAX_FRAME};

/// Buffers are told apart by a byte written into them through a frame.
fn tag(pool: &mut Pool, n: usize) -> Vec<u8> {
    let mut ps = Vec::new();
    for i in 0..n {
        let mut p = pool.alloc().expect("buffer");
        assert!(p.set_frame(&[i as u8; 40]));
        ps.push(p);
    }
    let order = ps.iter().map(|p| p.data()[0]).collect();
    for p in ps {
        pool.free(p);
    }
    order
}

#[test]
fn alloc_into_takes_buffers_in_the_order_alloc_would() {
    let mut a = Pool::new(8);
    let mut b = Pool::new(8);
    tag(&mut a, 8);
    tag(&mut b, 8);
    let one: Vec<u8> = (0..5)
        .map(|_| a.alloc().expect("buffer"))
        .map(|mut p| {
            // A fresh packet: empty frame at the default headroom, no metadata.
            assert_eq!(
                (p.len(), p.headroom(), p.has_tun()),
                (0, packet::HEADROOM, false)
            );
            assert!(p.set_bounds(packet::HEADROOM, 40));
            p.data()[0]
        })
        .collect();
    let mut batch = Batch::new();
    assert_eq!(b.alloc_into(&mut batch, 5), 5);
    let burst: Vec<u8> = batch
        .packets_mut()
        .iter_mut()
        .map(|p| {
            assert_eq!(
                (p.len(), p.headroom(), p.has_tun()),
                (0, packet::HEADROOM, false)
            );
            assert!(p.set_bounds(packet::HEADROOM, 40));
            p.data()[0]
        })
        .collect();
    assert_eq!(one, burst);
    assert_eq!((b.available(), b.alloc_failures()), (3, 0));
    // Short pool: as many as it holds, no failure counted.
    assert_eq!(b.alloc_into(&mut batch, 10), 3);
    assert_eq!((batch.len(), b.available(), b.alloc_failures()), (8, 0, 0));
    // Giving back all but the first two restores the pool's order.
    b.free_tail(&mut batch, 2);
    assert_eq!(batch.len(), 2);
    let mut again = Batch::new();
    assert_eq!(b.alloc_into(&mut again, 6), 6);
    let firsts: Vec<u8> = batch.packets().iter().map(|p| p.data()[0]).collect();
    assert_eq!(firsts, one[..2]);
    b.free_batch(&mut again);
    b.free_batch(&mut batch);
    assert_eq!(b.outstanding(), 0);
}

#[test]
fn alloc_into_stops_at_the_batch_room() {
    let mut pool = Pool::new(MAX_BATCH + 10);
    let mut batch = Batch::new();
    assert_eq!(pool.alloc_into(&mut batch, MAX_BATCH - 3), MAX_BATCH - 3);
    assert_eq!(pool.alloc_into(&mut batch, 10), 3);
    assert!(batch.is_full());
    assert_eq!(pool.alloc_into(&mut batch, 1), 0);
    pool.free_tail(&mut batch, MAX_BATCH + 1);
    assert!(batch.is_full(), "keeping more than there are frees nothing");
    pool.free_batch(&mut batch);
    assert_eq!(pool.outstanding(), 0);
}

#[test]
fn free_batch_keeps_the_pool_at_its_capacity() {
    let mut a = Pool::new(4);
    let mut b = Pool::new(4);
    let mut batch = Batch::new();
    assert_eq!(a.alloc_into(&mut batch, 3), 3);
    assert_eq!(b.alloc_into(&mut batch, 2), 2);
    // `b` has room for two of the five; the rest go to the allocator.
    b.free_batch(&mut batch);
    assert!(batch.is_empty());
    assert_eq!((b.available(), b.outstanding()), (4, 0));
    assert_eq!(a.available(), 1);
}

#[test]
fn set_frame_copies_every_length() {
    let mut pool = Pool::new(1);
    let mut p = pool.alloc().expect("buffer");
    let src: Vec<u8> = (0..MAX_FRAME).map(|i| (i * 7 + i / 251) as u8).collect();
    for len in (0..=200).chain([255, 256, 257, 1500, 1514, MAX_FRAME - 1, MAX_FRAME]) {
        // Garbage first, so a byte the copy missed shows.
        assert!(p.set_frame(&vec![0xee; MAX_FRAME]));
        assert!(p.set_frame(&src[..len]));
        assert_eq!(p.data(), &src[..len], "length {len}");
        assert_eq!(p.headroom(), packet::HEADROOM);
    }
    assert!(!p.set_frame(&vec![0; MAX_FRAME + 1]));
    assert!(p.is_empty());
    pool.free(p);
}
