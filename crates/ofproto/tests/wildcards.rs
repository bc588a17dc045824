//! Megaflow soundness of xlate: for random rule sets and flows, every flow that agrees with a
//! looked-up flow on the bits of the returned wildcard mask gets exactly the same datapath
//! actions. This is the property the megaflow cache relies on.

use ofproto::switch::OfPort;
use ofproto::{xlate, Ofproto};
use openflow::text::{parse_flow, parse_group};
use openflow::{FlowModCommand, GroupModCommand};
use packet::flow::{FlowKey, FLOW_KEY_WORDS};
use proptest::prelude::*;

fn rule_text(kind: u8, p: u16, a: u8, b: u8, port: u16) -> String {
    match kind % 9 {
        0 => format!("priority={p},ip,nw_dst={a}.{b}.0.0/16,actions=output:2"),
        1 => format!("priority={p},tcp,tp_dst={port},actions=output:3"),
        2 => format!("priority={p},in_port={},actions=output:1", a % 4 + 1),
        3 => format!("priority={p},udp,nw_src={a}.0.0.0/8,tp_src={port},actions=dec_ttl,output:2"),
        4 => format!(
            "priority={p},dl_dst=02:00:00:00:00:{:02x},actions=output:4",
            b % 4
        ),
        5 => {
            format!("priority={p},ip,nw_dst={a}.{b}.1.0/24,actions=mod_nw_src:9.9.9.9,goto_table:1")
        }
        6 => format!("table=1,priority={p},tcp,tp_src={port},actions=output:3"),
        7 => format!("priority={p},ip,actions=group:1"),
        _ => format!("priority={p},tcp6,actions=output:2"),
    }
}

fn flow(words: [u64; 6]) -> FlowKey {
    // A compact random flow: pick header values from small sets so rules hit often.
    let [w0, w1, w2, w3, w4, w5] = words;
    let dl_type = match w0 % 4 {
        0 | 1 => 0x0800,
        2 => 0x86dd,
        _ => 0x0806,
    };
    FlowKey {
        in_port: (w0 >> 8) as u32 % 4 + 1,
        dl_dst: [2, 0, 0, 0, 0, (w1 % 4) as u8],
        dl_type,
        nw_src: [(w2 % 3) as u8 + 10, (w2 >> 8) as u8, 1, 2],
        nw_dst: [
            (w3 % 3) as u8 + 10,
            (w3 >> 8) as u8 % 3,
            (w3 >> 16) as u8 % 2,
            5,
        ],
        nw_proto: [6u8, 17, 1][(w4 % 3) as usize],
        nw_ttl: (w4 >> 8) as u8 % 3,
        tp_src: 1000 + (w5 % 4) as u16,
        tp_dst: 2000 + ((w5 >> 8) % 4) as u16,
        ..FlowKey::ZERO
    }
}

fn mix(k: &FlowKey, wc: &FlowKey, r: &FlowKey) -> FlowKey {
    let (kw, ww, rw) = (k.to_words(), wc.to_words(), r.to_words());
    let mut out = [0u64; FLOW_KEY_WORDS];
    for i in 0..FLOW_KEY_WORDS {
        out[i] = (kw[i] & ww[i]) | (rw[i] & !ww[i]);
    }
    FlowKey::from_words(&out)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn xlate_results_are_determined_by_the_wildcard_mask(
        rules in prop::collection::vec((any::<u8>(), 0u16..100, 10u8..13, 0u8..3, 1000u16..1004), 1..25),
        flows in prop::collection::vec(any::<[u64; 6]>(), 1..20),
        others in prop::collection::vec(any::<[u64; 6]>(), 8),
    ) {
        let mut of = Ofproto::new();
        for p in 1..=4 {
            of.set_port(OfPort { ofport: p, name: format!("p{p}"), live: true, no_flood: false, admin_down: false });
        }
        let g = parse_group(
            "group_id=1,type=select,bucket=output:1,bucket=output:2,bucket=output:3",
            GroupModCommand::Add,
        ).expect("group");
        of.group_mod(&g, 0).expect("group");
        for (kind, p, a, b, port) in rules {
            let fm = parse_flow(&rule_text(kind, p, a, b, port), FlowModCommand::Add).expect("parse");
            // Rules that clash (e.g. goto into an empty table) are fine; refused ones skipped.
            let _ = of.flow_mod(&fm, 0);
        }
        for f in flows {
            let k = flow(f);
            let x = xlate(&of, &k, None, None);
            for o in &others {
                let k2 = mix(&k, &x.wc, &flow(*o));
                let x2 = xlate(&of, &k2, None, None);
                prop_assert_eq!(&x.actions, &x2.actions, "flow {} vs {} (megaflow {})",
                    k, k2, ofproto::text::megaflow_text(&k, &x.wc, &ofproto::tlv::TlvTable::default()));
            }
        }
    }
}
