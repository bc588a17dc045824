//! Differential tests: the classifier against a linear scan on random rule sets and
//! packets, plus wildcard soundness (every key that agrees with the looked-up key on the
//! returned mask gets the same answer).

#![allow(clippy::field_reassign_with_default)]

use classifier::{Classifier, Config, Match, Ranking, RuleId};
use packet::flow::{FlowKey, FLOW_KEY_WORDS};
use proptest::prelude::*;

const W: usize = FLOW_KEY_WORDS;

/// splitmix64.
fn next(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn pick<T: Copy>(s: &mut u64, xs: &[T]) -> T {
    xs[(next(s) % xs.len() as u64) as usize]
}

/// A packet from a small, collision-prone domain.
fn rand_key(s: &mut u64) -> FlowKey {
    let mut k = FlowKey::default();
    k.in_port = pick(s, &[1, 2, 3, 4]);
    k.metadata = pick(s, &[0, 1, 2, 3, 0x100, 0x1ff]);
    k.dl_type = pick(s, &[0x0800, 0x0800, 0x86dd, 0x0806]);
    let ip = |s: &mut u64| -> [u8; 4] {
        if next(s).is_multiple_of(5) {
            [192, 168, pick(s, &[0, 1]), pick(s, &[1, 2, 3])]
        } else {
            [
                10,
                pick(s, &[0, 1, 2, 5]),
                pick(s, &[0, 1, 2, 3]),
                pick(s, &[0, 1, 2, 3, 7, 255]),
            ]
        }
    };
    k.nw_src = ip(s);
    k.nw_dst = ip(s);
    let ip6 = |s: &mut u64| -> [u8; 16] {
        let mut a = [0u8; 16];
        a[0] = 0x20;
        a[1] = 0x01;
        a[3] = pick(s, &[0xb8, 0xb9]);
        a[6] = pick(s, &[0, 1, 0x80]);
        a[15] = pick(s, &[1, 2, 3]);
        a
    };
    k.ipv6_src = ip6(s);
    k.ipv6_dst = ip6(s);
    k.nw_proto = pick(s, &[6, 17, 1]);
    k.nw_ttl = pick(s, &[1, 64]);
    k.tp_src = pick(s, &[1000, 2000, 80]);
    k.tp_dst = pick(s, &[22, 80, 443, 8080]);
    k
}

fn plen_mask<const N: usize>(plen: u32) -> [u8; N] {
    let mut m = [0u8; N];
    for (i, b) in m.iter_mut().enumerate() {
        let covered = plen.saturating_sub(8 * i as u32).min(8);
        *b = (0xff00u16 >> covered) as u8;
    }
    m
}

/// A mask of one of a few realistic shapes.
fn shape_mask(shape: u8, p1: u32, p2: u32) -> FlowKey {
    let mut m = FlowKey::default();
    match shape % 12 {
        0 => m.in_port = u32::MAX,
        1 => {
            m.dl_type = u16::MAX;
            m.nw_dst = plen_mask(p1 % 33);
        }
        2 => {
            m.dl_type = u16::MAX;
            m.nw_src = plen_mask(p1 % 33);
        }
        3 => {
            m.dl_type = u16::MAX;
            m.nw_proto = u8::MAX;
            m.tp_dst = u16::MAX;
        }
        4 => {
            m.in_port = u32::MAX;
            m.dl_type = u16::MAX;
            m.nw_dst = plen_mask(32);
        }
        5 => {
            m.metadata = u64::MAX;
            if p1.is_multiple_of(2) {
                m.in_port = u32::MAX;
            }
        }
        6 => m.metadata = 0xff,
        7 => {
            m.metadata = u64::MAX;
            m.dl_type = u16::MAX;
            m.nw_dst = plen_mask(p1 % 33);
        }
        8 => {}
        9 => {
            m.dl_type = u16::MAX;
            m.ipv6_dst = plen_mask((p1 % 33) * 4);
        }
        10 => {
            m.dl_type = u16::MAX;
            m.nw_src = plen_mask(p1 % 33);
            m.nw_dst = plen_mask(p2 % 33);
        }
        _ => {
            m.metadata = u64::MAX;
            m.dl_type = u16::MAX;
            m.nw_proto = u8::MAX;
            m.tp_dst = u16::MAX;
            m.nw_src = plen_mask(p2 % 33);
        }
    }
    m
}

struct Linear {
    rules: Vec<(RuleId, Match<W>, u32)>,
}

impl Linear {
    fn best_priority(&self, key: &[u64; W]) -> Option<u32> {
        self.rules
            .iter()
            .filter(|(_, m, _)| m.matches(key))
            .map(|(_, _, p)| *p)
            .max()
    }
}

fn config(variant: u8) -> Config<W> {
    let c = Config::flow_key();
    match variant % 5 {
        0 => c,
        1 => c.without_prefix_fields(),
        2 => c.without_partitioning(),
        3 => c.with_hit_counting(true).with_ranking(Ranking::Hits),
        _ => c.with_stages(&[W]).unwrap_or(c).without_prefix_fields(),
    }
}

fn check(cls: &Classifier<u64, W>, lin: &Linear, seed: &mut u64, n_packets: usize) {
    for _ in 0..n_packets {
        let key = rand_key(seed).to_words();
        let mut wc = [0u64; W];
        let got = cls.lookup(&key, &mut wc).cloned();
        let want = lin.best_priority(&key);
        assert_eq!(got.as_ref().map(|r| r.priority()), want, "key {key:x?}");
        if let Some(r) = &got {
            assert!(r.matches(&key));
            assert!(lin.rules.iter().any(|(id, _, _)| *id == r.id()));
        }
        // Soundness: splice other keys into the wildcarded bits.
        for j in 0..12 {
            let other = if j % 3 == 2 {
                let mut w = [0u64; W];
                for x in &mut w {
                    *x = next(seed);
                }
                w
            } else {
                rand_key(seed).to_words()
            };
            let mut probe = [0u64; W];
            for i in 0..W {
                probe[i] = (key[i] & wc[i]) | (other[i] & !wc[i]);
            }
            let mut wc2 = [0u64; W];
            let again = cls.lookup(&probe, &mut wc2);
            assert_eq!(
                again.map(|r| r.id()),
                got.as_ref().map(|r| r.id()),
                "unsound wildcards {wc:x?} for key {key:x?}, probe {probe:x?}"
            );
        }
    }
}

fn check_selection(cls: &Classifier<u64, W>, lin: &Linear) {
    for (id, m, p) in lin.rules.iter().take(10) {
        let exact: Vec<RuleId> = cls.find_exact(m, *p).map(|r| r.id()).collect();
        let mut want: Vec<RuleId> = lin
            .rules
            .iter()
            .filter(|(_, m2, p2)| m2 == m && p2 == p)
            .map(|(i, _, _)| *i)
            .collect();
        assert!(exact.contains(id));
        let mut exact_sorted = exact.clone();
        exact_sorted.sort();
        want.sort();
        assert_eq!(exact_sorted, want);
        let loose_q = Match::new(*m.value(), {
            // Loosen the query: keep only the first non-zero mask word.
            let mut q = [0u64; W];
            if let Some(i) = m.mask().iter().position(|&x| x != 0) {
                q[i] = m.mask()[i];
            }
            q
        });
        let mut loose: Vec<RuleId> = cls.find_loose(&loose_q).map(|r| r.id()).collect();
        let mut want: Vec<RuleId> = lin
            .rules
            .iter()
            .filter(|(_, m2, _)| m2.is_covered_by(&loose_q))
            .map(|(i, _, _)| *i)
            .collect();
        loose.sort();
        want.sort();
        assert_eq!(loose, want);
    }
    let mut all: Vec<RuleId> = cls.iter().map(|r| r.id()).collect();
    let mut want: Vec<RuleId> = lin.rules.iter().map(|(i, _, _)| *i).collect();
    all.sort();
    want.sort();
    assert_eq!(all, want);
    assert_eq!(cls.len(), lin.rules.len());
}

proptest! {
    // 96 cases by default; PROPTEST_CASES=N for a longer run.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(96),
        ..ProptestConfig::default()
    })]

    #[test]
    fn matches_linear_classifier(
        rules in prop::collection::vec((any::<u8>(), any::<u32>(), any::<u32>(), 0u32..24, any::<u64>()), 1..60),
        variant in 0u8..5,
        seed in any::<u64>(),
    ) {
        let mut seed = seed;
        let mut cls: Classifier<u64, W> = Classifier::new(config(variant));
        let mut lin = Linear { rules: Vec::new() };
        let half = rules.len() / 2;
        // First half one by one, second half in a batch.
        for (shape, p1, p2, prio, s) in rules.iter().take(half) {
            let mut s = *s;
            let m = Match::from_flow(&rand_key(&mut s), &shape_mask(*shape, *p1, *p2));
            let id = cls.insert(m, *prio, s);
            lin.rules.push((id, m, *prio));
        }
        cls.batch(|b| {
            for (shape, p1, p2, prio, s) in rules.iter().skip(half) {
                let mut s = *s;
                let m = Match::from_flow(&rand_key(&mut s), &shape_mask(*shape, *p1, *p2));
                let id = b.insert(m, *prio, s);
                lin.rules.push((id, m, *prio));
            }
        });
        check(&cls, &lin, &mut seed, 48);
        check_selection(&cls, &lin);
        if variant == 3 {
            cls.rerank();
            check(&cls, &lin, &mut seed, 16);
        }
        // Remove about a third, some singly and some in a batch.
        let victims: Vec<RuleId> = lin
            .rules
            .iter()
            .filter(|_| next(&mut seed).is_multiple_of(3))
            .map(|(id, _, _)| *id)
            .collect();
        let (single, batched) = victims.split_at(victims.len() / 2);
        for id in single {
            prop_assert!(cls.remove(*id).is_some());
        }
        cls.batch(|b| {
            for id in batched {
                assert!(b.remove(*id).is_some());
            }
        });
        lin.rules.retain(|(id, _, _)| !victims.contains(id));
        if let Some(v) = victims.first() {
            prop_assert!(cls.remove(*v).is_none());
        }
        check(&cls, &lin, &mut seed, 48);
        check_selection(&cls, &lin);
    }
}
