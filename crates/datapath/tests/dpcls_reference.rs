//! The megaflow classifier against a linear reference, on random caches and random keys.
//!
//! The reference is the definition: a key is covered by a megaflow when it agrees with the
//! megaflow's key on every bit of its mask, and a lookup may return any live covering megaflow
//! (megaflows of one cache never disagree on a packet's treatment, so which one wins does not
//! matter) or a miss when none covers the key. Masks are drawn from a small pool of random
//! shapes, with one to twelve non-zero words (so both the inline compare, up to eight words,
//! and the full-key compare are used) and key values from small alphabets, so that hits,
//! near misses (keys equal on all but one masked bit) and many subtables all occur. Each case
//! also kills, removes, sweeps and re-ranks megaflows between lookups, and checks the batched
//! lookup against the single one.

use datapath::dpcls::{Dpcls, Megaflow, Words, LOOKUP_CHUNK};
use ofproto::odp::DpAction;
use packet::flow::{FlowKey, FLOW_KEY_WORDS};
use proptest::prelude::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;

fn covers(m: &Megaflow, k: &Words) -> bool {
    k.iter()
        .zip(m.mask.iter())
        .zip(m.key.iter())
        .all(|((k, mask), key)| k & mask == *key)
}

/// The linear answer: is there any live megaflow covering `k`?
fn reference(all: &[Arc<Megaflow>], k: &Words) -> bool {
    all.iter().any(|m| !m.is_dead() && covers(m, k))
}

/// A random mask: `nz` non-zero words at positions from `pos`, each with bits from `bits`.
fn mask_of(pos: &[usize], bits: &[u64]) -> Words {
    let mut w = [0u64; FLOW_KEY_WORDS];
    for (p, b) in pos.iter().zip(bits) {
        w[p % FLOW_KEY_WORDS] |= b | 1;
    }
    w
}

/// A key drawn from a small alphabet (values 0..4 per byte lane) so keys collide often.
fn key_of(seed: u64) -> Words {
    let mut w = [0u64; FLOW_KEY_WORDS];
    let mut x = seed | 1;
    for word in w.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *word = x & 0x0303_0303_0303_0303;
    }
    w
}

fn megaflow(id: u64, key: &Words, mask: &Words) -> Arc<Megaflow> {
    Arc::new(Megaflow::new(
        id,
        FlowKey::from_words(key),
        FlowKey::from_words(mask),
        vec![DpAction::Output(id as u32)],
        vec![],
        vec![],
        1,
        0,
    ))
}

#[derive(Debug, Clone)]
enum Op {
    Insert { mask: usize, key: u64 },
    Kill(usize),
    Remove(usize),
    Sweep,
    Rerank,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0usize..8, any::<u64>()).prop_map(|(mask, key)| Op::Insert { mask, key }),
        1 => any::<usize>().prop_map(Op::Kill),
        1 => any::<usize>().prop_map(Op::Remove),
        1 => Just(Op::Sweep),
        1 => Just(Op::Rerank),
    ]
}

fn masks() -> impl Strategy<Value = Vec<Words>> {
    prop::collection::vec(
        (1usize..13).prop_flat_map(|nz| {
            (
                prop::collection::vec(0usize..FLOW_KEY_WORDS, nz),
                prop::collection::vec(any::<u64>().prop_map(|b| b & 0x0303_0303_0303_0303), nz),
            )
        }),
        8,
    )
    .prop_map(|v| v.iter().map(|(p, b)| mask_of(p, b)).collect())
}

/// Checks single and batched lookups of `keys` against the reference.
fn check(d: &Dpcls, all: &[Arc<Megaflow>], keys: &[Words]) -> Result<(), TestCaseError> {
    for k in keys {
        let (got, probed) = d.lookup(k);
        prop_assert!(probed as usize <= d.n_subtables());
        match got {
            Some(m) => {
                prop_assert!(!m.is_dead(), "a dead megaflow was returned");
                prop_assert!(
                    covers(m, k),
                    "returned megaflow {} does not cover the key",
                    m.id
                );
            }
            None => prop_assert!(!reference(all, k), "missed a covering megaflow"),
        }
    }
    for chunk in keys.chunks(LOOKUP_CHUNK) {
        let fk: Vec<FlowKey> = chunk.iter().map(FlowKey::from_words).collect();
        let mut todo = [0u8; LOOKUP_CHUNK];
        for (i, t) in todo.iter_mut().enumerate() {
            *t = i as u8;
        }
        let mut n = fk.len();
        let mut found = [None; LOOKUP_CHUNK];
        d.lookup_batch(&fk, &mut todo, &mut n, &mut found);
        let unresolved: Vec<usize> = todo[..n].iter().map(|&i| usize::from(i)).collect();
        for (i, k) in chunk.iter().enumerate() {
            match found[i] {
                Some(m) if !unresolved.contains(&i) => {
                    prop_assert!(!m.is_dead(), "batch returned a dead megaflow");
                    prop_assert!(covers(m, k), "batch returned a non-covering megaflow");
                }
                _ => {
                    prop_assert!(unresolved.contains(&i), "key {i} neither found nor left");
                    prop_assert!(!reference(all, k), "batch missed a covering megaflow");
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn dpcls_agrees_with_a_linear_scan(
        masks in masks(),
        ops in prop::collection::vec(op(), 1..120),
        probes in prop::collection::vec(any::<u64>(), 64),
    ) {
        let mut d = Dpcls::new();
        let mut all: Vec<Arc<Megaflow>> = Vec::new();
        let mut id = 0u64;
        let mut keys: Vec<Words> = probes.iter().map(|&s| key_of(s)).collect();
        for op in ops {
            match op {
                Op::Insert { mask, key } => {
                    id += 1;
                    let m = &masks[mask % masks.len()];
                    let k = key_of(key);
                    let mut masked = k;
                    for (a, b) in masked.iter_mut().zip(m.iter()) {
                        *a &= b;
                    }
                    let mf = megaflow(id, &masked, m);
                    // The same mask and key replaces the older megaflow.
                    all.retain(|o| !(o.mask == mf.mask && o.key == mf.key));
                    d.insert(Arc::clone(&mf));
                    all.push(mf);
                    // Probe the inserted key and a near miss (one masked bit flipped).
                    keys.push(k);
                    let mut near = k;
                    if let Some((i, w)) = m.iter().enumerate().find(|(_, w)| **w != 0) {
                        near[i] ^= 1 << w.trailing_zeros();
                    }
                    keys.push(near);
                }
                Op::Kill(i) if !all.is_empty() => {
                    all[i % all.len()].dead.store(true, Ordering::Release);
                }
                Op::Remove(i) if !all.is_empty() => {
                    let m = all.remove(i % all.len());
                    prop_assert!(d.remove(&m));
                    prop_assert!(!d.remove(&m), "removed twice");
                }
                Op::Sweep => {
                    let dead = all.iter().filter(|m| m.is_dead()).count();
                    prop_assert_eq!(d.sweep(), dead);
                    all.retain(|m| !m.is_dead());
                }
                Op::Rerank => d.rerank(),
                _ => {}
            }
            prop_assert_eq!(d.len(), all.len());
            check(&d, &all, &keys[keys.len().saturating_sub(8)..])?;
        }
        check(&d, &all, &keys)?;
        let mut ids: Vec<u64> = d.iter().map(|m| m.id).collect();
        let mut want: Vec<u64> = all.iter().map(|m| m.id).collect();
        ids.sort_unstable();
        want.sort_unstable();
        prop_assert_eq!(ids, want);
    }
}
