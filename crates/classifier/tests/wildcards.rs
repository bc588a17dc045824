//! The mechanisms keep megaflow masks small where they are meant to.

use classifier::{Classifier, Config, LookupStats, Match};
use packet::flow::{FlowKey, FLOW_KEY_WORDS};

const W: usize = FLOW_KEY_WORDS;

fn lookup(cls: &Classifier<&'static str, W>, k: &FlowKey) -> (Option<&'static str>, FlowKey) {
    let mut wc = [0u64; W];
    let r = cls.lookup(&k.to_words(), &mut wc).map(|r| *r.payload());
    (r, FlowKey::from_words(&wc))
}

fn ip_key(dst: [u8; 4]) -> FlowKey {
    FlowKey {
        in_port: 1,
        dl_type: 0x0800,
        nw_dst: dst,
        nw_src: [192, 168, 0, 1],
        nw_proto: 6,
        tp_dst: 80,
        ..FlowKey::default()
    }
}

fn bits(a: [u8; 4]) -> u32 {
    u32::from_be_bytes(a).count_ones()
}

#[test]
fn l3_miss_leaves_l4_wildcarded() {
    let mut cls = Classifier::new(Config::flow_key());
    let mask = FlowKey {
        dl_type: u16::MAX,
        nw_proto: u8::MAX,
        tp_dst: u16::MAX,
        ..FlowKey::default()
    };
    cls.insert(Match::from_flow(&ip_key([0; 4]), &mask), 10, "tcp80");
    let mut udp = ip_key([1, 2, 3, 4]);
    udp.nw_proto = 17;
    let (r, wc) = lookup(&cls, &udp);
    assert_eq!(r, None);
    assert_eq!(wc.nw_proto, u8::MAX);
    assert_eq!(wc.dl_type, u16::MAX);
    assert_eq!(wc.tp_dst, 0, "L4 examined although L3 already missed");
    let (r, wc) = lookup(&cls, &ip_key([1, 2, 3, 4]));
    assert_eq!(r, Some("tcp80"));
    assert_eq!(wc.tp_dst, u16::MAX);
}

#[test]
fn l2_miss_leaves_l3_and_l4_wildcarded() {
    let mut cls = Classifier::new(Config::flow_key());
    let mask = FlowKey {
        dl_type: u16::MAX,
        nw_proto: u8::MAX,
        tp_dst: u16::MAX,
        ..FlowKey::default()
    };
    cls.insert(Match::from_flow(&ip_key([0; 4]), &mask), 10, "tcp80");
    let mut arp = ip_key([1, 2, 3, 4]);
    arp.dl_type = 0x0806;
    let (r, wc) = lookup(&cls, &arp);
    assert_eq!(r, None);
    assert_eq!(wc.dl_type, u16::MAX);
    assert_eq!((wc.nw_proto, wc.tp_dst), (0, 0));
}

#[test]
fn prefix_tracking_unwildcards_few_bits() {
    let mut cls = Classifier::new(Config::flow_key());
    let m32 = FlowKey {
        dl_type: u16::MAX,
        nw_dst: [255; 4],
        ..FlowKey::default()
    };
    let m8 = FlowKey {
        dl_type: u16::MAX,
        nw_dst: [255, 0, 0, 0],
        ..FlowKey::default()
    };
    cls.insert(Match::from_flow(&ip_key([10, 1, 2, 3]), &m32), 100, "host");
    cls.insert(Match::from_flow(&ip_key([10, 0, 0, 0]), &m8), 10, "net10");
    // 10.5.6.7 shares 13 bits with 10.1.2.3: 14 bits prove the /32 misses, then the /8
    // matches with 8 bits.
    let (r, wc) = lookup(&cls, &ip_key([10, 5, 6, 7]));
    assert_eq!(r, Some("net10"));
    assert_eq!(wc.nw_dst, [255, 0xfc, 0, 0]);
    assert_eq!(bits(wc.nw_dst), 14);
    // The host itself needs all 32.
    let (r, wc) = lookup(&cls, &ip_key([10, 1, 2, 3]));
    assert_eq!(r, Some("host"));
    assert_eq!(bits(wc.nw_dst), 32);

    // Without prefix tracking the /32 miss costs 32 bits.
    let mut plain = Classifier::new(Config::flow_key().without_prefix_fields());
    plain.insert(Match::from_flow(&ip_key([10, 1, 2, 3]), &m32), 100, "host");
    plain.insert(Match::from_flow(&ip_key([10, 0, 0, 0]), &m8), 10, "net10");
    let (_, wc) = lookup(&plain, &ip_key([10, 5, 6, 7]));
    assert_eq!(bits(wc.nw_dst), 32);
}

#[test]
fn slash8_miss_needs_only_the_differing_bit() {
    let mut cls = Classifier::new(Config::flow_key());
    let m8 = FlowKey {
        dl_type: u16::MAX,
        nw_dst: [255, 0, 0, 0],
        ..FlowKey::default()
    };
    cls.insert(Match::from_flow(&ip_key([20, 0, 0, 0]), &m8), 10, "net20");
    // 10 = 00001010, 20 = 00010100: the fourth bit differs.
    let (r, wc) = lookup(&cls, &ip_key([10, 5, 6, 7]));
    assert_eq!(r, None);
    assert_eq!(wc.nw_dst, [0xf0, 0, 0, 0]);
    assert_eq!(wc.dl_type, 0, "the prefix alone explains the miss");
}

#[test]
fn partitions_skip_other_metadata_values() {
    let mut cls = Classifier::new(Config::flow_key());
    let mask = FlowKey {
        metadata: u64::MAX,
        dl_type: u16::MAX,
        nw_proto: u8::MAX,
        tp_dst: u16::MAX,
        ..FlowKey::default()
    };
    for md in 1..=5u64 {
        let mut k = ip_key([0; 4]);
        k.metadata = md;
        k.tp_dst = 1000 + md as u16;
        cls.insert(Match::from_flow(&k, &mask), 10, "md");
    }
    let mut k = ip_key([1, 2, 3, 4]);
    k.metadata = 77;
    let mut stats = LookupStats::default();
    let mut wc = [0u64; W];
    assert!(cls
        .lookup_traced(&k.to_words(), &mut wc, &mut stats)
        .is_none());
    let wc = FlowKey::from_words(&wc);
    assert_eq!(stats.partition_skips, 1);
    assert_eq!(stats.subtables_visited, 0);
    assert_eq!(wc.metadata, u64::MAX);
    assert_eq!((wc.dl_type, wc.nw_proto, wc.tp_dst), (0, 0, 0));
    // A partition that exists is searched normally.
    k.metadata = 3;
    k.tp_dst = 1003;
    assert_eq!(lookup(&cls, &k).0, Some("md"));
}

#[test]
fn priority_sorting_stops_early() {
    let mut cls = Classifier::new(Config::flow_key());
    let port = FlowKey {
        in_port: u32::MAX,
        ..FlowKey::default()
    };
    let dst = FlowKey {
        dl_type: u16::MAX,
        nw_dst: [255; 4],
        ..FlowKey::default()
    };
    cls.insert(Match::from_flow(&ip_key([0; 4]), &port), 100, "port1");
    for i in 0..50u8 {
        cls.insert(Match::from_flow(&ip_key([10, 0, 0, i]), &dst), 50, "dst");
    }
    let mut stats = LookupStats::default();
    let mut wc = [0u64; W];
    let r = cls.lookup_traced(&ip_key([10, 0, 0, 3]).to_words(), &mut wc, &mut stats);
    assert_eq!(r.map(|r| *r.payload()), Some("port1"));
    assert_eq!(stats.subtables_visited, 1);
    let wc = FlowKey::from_words(&wc);
    assert_eq!(wc.in_port, u32::MAX);
    assert_eq!((wc.dl_type, wc.nw_dst), (0, [0; 4]));
}

#[test]
fn hit_ranking_puts_busy_subtables_first() {
    let mut cls = Classifier::new(Config::flow_key().with_hit_counting(true));
    let a = FlowKey {
        tp_dst: u16::MAX,
        ..FlowKey::default()
    };
    let b = FlowKey {
        nw_proto: u8::MAX,
        ..FlowKey::default()
    };
    cls.insert(Match::from_flow(&ip_key([0; 4]), &a), 5, "a");
    let mut k = ip_key([0; 4]);
    k.nw_proto = 17;
    cls.insert(Match::from_flow(&k, &b), 5, "b");
    for _ in 0..10 {
        let mut wc = [0u64; W];
        let mut q = ip_key([0; 4]);
        q.nw_proto = 17;
        q.tp_dst = 9;
        cls.lookup(&q.to_words(), &mut wc);
    }
    cls.sort_subtables_by_hits();
    let first = cls.subtables().next().map(|s| (s.hits, s.n_rules));
    assert_eq!(first, Some((10, 1)));
    assert_eq!(cls.n_subtables(), 2);
}
