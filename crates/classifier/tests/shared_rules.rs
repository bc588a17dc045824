//! Rules under caller-chosen ids, shared between classifiers: a second classifier filled
//! with `insert_shared` from the first (in another order, with removals and payload
//! replacements in between) holds the very same rules and answers every lookup alike.

use std::sync::Arc;

use classifier::{Classifier, Config, Match, RuleId};

const W: usize = 4;

fn cfg() -> Config<W> {
    Config::new()
        .with_stages(&[1, 2, 4])
        .and_then(|c| c.with_partition_word(0))
        .expect("config")
}

fn m(w0: u64, m0: u64, w1: u64, m1: u64) -> Match<W> {
    Match::new([w0, w1, 0, 0], [m0, m1, 0, 0])
}

/// Per probe key: the rule found (id, payload) and the megaflow mask.
type Answer = (Option<(u64, u32)>, [u64; W]);

fn answers(c: &Classifier<u32, W>) -> Vec<Answer> {
    let mut out = Vec::new();
    for a in 0..4u64 {
        for b in 0..4u64 {
            let mut wc = [0u64; W];
            let r = c
                .lookup(&[a, b, 7, 9], &mut wc)
                .map(|r| (r.id().as_u64(), *r.payload()));
            out.push((r, wc));
        }
    }
    out
}

#[test]
fn a_classifier_filled_with_shared_rules_answers_alike() {
    let mut a: Classifier<u32, W> = Classifier::new(cfg());
    // Equal priorities on one masked value: the lower id wins in both, whatever the
    // insertion order.
    a.insert_with_id(RuleId::new(30), m(1, 3, 0, 0), 5, 300);
    a.insert_with_id(RuleId::new(10), m(1, 3, 0, 0), 5, 100);
    a.insert_with_id(RuleId::new(20), m(2, 3, 1, 1), 7, 200);
    a.insert_with_id(RuleId::new(40), m(0, 0, 0, 0), 1, 400);
    a.insert_with_id(RuleId::new(50), m(3, 3, 2, 3), 9, 500);
    // Ids the classifier picks itself stay above the ones chosen.
    let auto = a.insert(m(0, 3, 3, 3), 2, 600);
    assert!(auto.as_u64() > 50);
    a.remove(RuleId::new(50));
    a.replace(RuleId::new(20), 201);

    let mut b: Classifier<u32, W> = Classifier::new(cfg());
    let mut rules: Vec<_> = a.iter().cloned().collect();
    rules.sort_by_key(|r| std::cmp::Reverse(r.id()));
    b.batch(|bt| {
        for r in rules {
            bt.insert_shared(r);
        }
    });
    assert_eq!(b.len(), a.len());
    for r in a.iter() {
        let other = b.get(r.id()).expect("same id in both");
        assert!(Arc::ptr_eq(r, other));
    }
    assert_eq!(answers(&a), answers(&b));
    let mut wc = [0u64; W];
    let hit = b.lookup(&[1, 0, 0, 0], &mut wc).map(|r| *r.payload());
    assert_eq!(hit, Some(100));

    // A shared rule replaced by a new version (same match) and one whose id now has
    // another match.
    a.replace(RuleId::new(10), 101);
    a.insert_with_id(RuleId::new(30), m(2, 3, 0, 0), 6, 301);
    for id in [10, 30] {
        let r = Arc::clone(a.get(RuleId::new(id)).expect("rule"));
        b.insert_shared(r);
    }
    assert_eq!(b.len(), a.len());
    assert_eq!(answers(&a), answers(&b));
}

/// Rules added without re-ranking (their prefixes merged into the prefix sets at the
/// re-ranking, a removal in between included) answer every lookup, megaflow mask included,
/// as the same rules added one by one.
#[test]
fn rules_added_unranked_answer_as_rules_added_one_by_one() {
    use packet::flow::{FlowKey, FLOW_KEY_WORDS};
    let rule_match = |addr: [u8; 4], plen: u32| {
        let bits = if plen == 0 {
            0
        } else {
            u32::MAX << (32 - plen)
        };
        let mask = FlowKey {
            dl_type: u16::MAX,
            nw_dst: bits.to_be_bytes(),
            ..FlowKey::default()
        };
        let value = FlowKey {
            dl_type: 0x0800,
            nw_dst: addr,
            ..FlowKey::default()
        };
        Match::from_flow(&value, &mask)
    };
    let mut a: Classifier<u32, FLOW_KEY_WORDS> = Classifier::new(Config::flow_key());
    let mut id = 0u64;
    for x in 0..200u32 {
        id += 1;
        let addr = [10, (x >> 4) as u8, (x & 15) as u8 * 16, 1];
        a.insert_with_id(RuleId::new(id), rule_match(addr, 32), 100, x);
        id += 1;
        a.insert_with_id(RuleId::new(id), rule_match([11, x as u8, 0, 0], 24), 50, x);
    }
    let gone = RuleId::new(7);
    let mut b: Classifier<u32, FLOW_KEY_WORDS> = Classifier::new(Config::flow_key());
    // One rule added ranked first, so that the rest is merged into a set that has one.
    let mut rules: Vec<_> = a.iter().cloned().collect();
    rules.sort_by_key(|r| r.id());
    let (first, rest) = rules.split_at(1);
    b.insert_shared(Arc::clone(&first[0]));
    for r in rest {
        b.insert_shared_unranked(Arc::clone(r));
    }
    b.remove(gone);
    b.rerank();
    a.remove(gone);
    for x in 0..300u32 {
        for host in [1u8, 2, 200] {
            let key = FlowKey {
                dl_type: 0x0800,
                nw_dst: [
                    10 + (x % 3) as u8,
                    (x >> 4) as u8,
                    (x & 15) as u8 * 16,
                    host,
                ],
                ..FlowKey::default()
            };
            let (mut wa, mut wb) = ([0u64; FLOW_KEY_WORDS], [0u64; FLOW_KEY_WORDS]);
            let ra = a.lookup(&key.to_words(), &mut wa).map(|r| r.id());
            let rb = b.lookup(&key.to_words(), &mut wb).map(|r| r.id());
            assert_eq!(ra, rb, "{key:?}");
            assert_eq!(wa, wb, "megaflow mask for {key:?}");
        }
    }
}
