//! Unit tests of packet buffers, the pool and batches.

use super::*;

#[test]
fn pool_recycles_without_growing() {
    let mut pool = Pool::new(4);
    let a = pool.alloc().expect("a");
    let b = pool.alloc().expect("b");
    assert_eq!(pool.outstanding(), 2);
    pool.free(a);
    pool.free(b);
    assert_eq!(pool.available(), 4);
    let all: Vec<_> = (0..4).map(|_| pool.alloc().expect("buf")).collect();
    assert!(pool.alloc().is_none());
    assert_eq!(pool.alloc_failures(), 1);
    for p in all {
        pool.free(p);
    }
    assert_eq!(pool.outstanding(), 0);
}

#[test]
fn same_tun_is_equal_metadata_on_both() {
    let mut pool = Pool::new(3);
    let mut ps: Vec<Packet> = (0..3).map(|_| pool.alloc().expect("buf")).collect();
    for p in &mut ps {
        assert!(p.set_frame(&[0; 60]));
    }
    let m = TunMeta {
        id: 7,
        src: [10, 0, 0, 1],
        dst: [10, 0, 0, 2],
        flags: 0x8,
        ttl: 64,
        ..TunMeta::default()
    };
    assert!(!ps[0].same_tun(&ps[1]), "neither has metadata");
    assert!(ps[0].set_tun(&m));
    assert!(!ps[0].same_tun(&ps[1]), "one has none");
    assert!(ps[1].set_tun(&m));
    assert!(ps[0].same_tun(&ps[1]));
    for change in [
        |m: &mut TunMeta| m.id = 8,
        |m: &mut TunMeta| m.src[3] = 9,
        |m: &mut TunMeta| m.flags |= 4,
        |m: &mut TunMeta| m.tos = 1,
        |m: &mut TunMeta| m.ipv6_dst[15] = 1,
        |m: &mut TunMeta| {
            m.opts_len = 4;
            m.opts[..4].copy_from_slice(&[1, 2, 3, 0]);
        },
    ] {
        let mut other = m;
        change(&mut other);
        assert!(ps[2].set_tun(&other));
        assert!(!ps[0].same_tun(&ps[2]), "{other:?}");
    }
    ps[1].clear_tun();
    assert!(!ps[0].same_tun(&ps[1]));
    for p in ps {
        pool.free(p);
    }
}

#[test]
fn pool_does_not_grow_past_capacity() {
    let mut a = Pool::new(1);
    let mut b = Pool::new(1);
    let pa = a.alloc().expect("a");
    b.free(pa);
    assert_eq!(b.available(), 1);
}

#[test]
fn frame_edits() {
    let mut pool = Pool::new(1);
    let mut p = pool.alloc().expect("buf");
    assert!(p.set_frame(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x08, 0x00]));
    let tag = p.insert_at(12, 4).expect("room");
    tag.copy_from_slice(&[0x81, 0x00, 0x00, 0x0a]);
    assert_eq!(
        p.data(),
        &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x81, 0, 0, 10, 8, 0]
    );
    assert!(p.remove_at(12, 4));
    assert_eq!(p.data(), &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 8, 0]);
    assert!(!p.remove_at(12, 4));
    assert!(p.push_front(HEADROOM + 1).is_none());
    assert!(p.pull_front(2));
    assert_eq!(p.len(), 12);
    assert!(!p.set_frame(&vec![0u8; MAX_FRAME + 1]));
    assert!(p.set_frame(&vec![0u8; MAX_FRAME]));
    assert_eq!(p.tailroom(), 0);
    assert!(p.push_back(1).is_none());
    pool.free(p);
}

#[test]
fn batch_is_bounded() {
    let mut pool = Pool::new(MAX_BATCH + 1);
    let mut b = Batch::new();
    for _ in 0..MAX_BATCH {
        assert!(b.push(pool.alloc().expect("buf")).is_ok());
    }
    let extra = pool.alloc().expect("buf");
    let back = b.push(extra).expect_err("full");
    pool.free(back);
    assert!(b.is_full());
    pool.free_batch(&mut b);
    assert!(b.is_empty());
    assert_eq!(pool.outstanding(), 0);
}

#[test]
fn tunnel_metadata_rides_in_the_headroom_and_guards_it() {
    let mut pool = Pool::new(2);
    let mut p = pool.alloc().expect("buffer");
    assert!(p.set_frame(&[1u8; 60]));
    assert_eq!(p.tun(), None);
    let m = TunMeta {
        id: 0x1234_5678,
        src: [10, 0, 0, 1],
        dst: [10, 0, 0, 2],
        flags: 8,
        tos: 3,
        ttl: 64,
        opts_len: 8,
        gbp_flags: 0x48,
        gbp_id: 0xbeef,
        opts: [7; TUN_OPTS_MAX],
        ..TunMeta::default()
    };
    assert!(p.set_tun(&m));
    assert_eq!(p.tun(), Some(m));
    // Either family's addresses come back whole, next to the longest options.
    let v6 = TunMeta {
        src: [0; 4],
        dst: [0; 4],
        ipv6_src: [0xfd; 16],
        ipv6_dst: [0xfe; 16],
        opts_len: TUN_OPTS_MAX as u8,
        ..m
    };
    assert!(!m.is_ipv6() && v6.is_ipv6());
    assert!(p.set_tun(&v6));
    assert_eq!(p.tun(), Some(v6));
    assert!(p.set_tun(&m));
    // Pushes may not reach into the metadata area.
    assert!(p.push_front(HEADROOM - TUN_META_LEN + 1).is_none());
    assert!(p.push_front(HEADROOM - TUN_META_LEN).is_some());
    assert_eq!(p.tun(), Some(m));
    let c = pool.clone_packet(&p).expect("copy");
    assert_eq!(c.tun(), Some(m));
    p.clear_tun();
    assert_eq!(p.tun(), None);
    pool.free(p);
    let again = pool.alloc().expect("buffer");
    assert_eq!(again.tun(), None, "a recycled buffer carries no metadata");
}
