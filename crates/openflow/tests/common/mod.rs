//! What the openflow wire tests share: hex input, and the round trip every captured action
//! vector must survive. Each test file uses part of it.
#![allow(dead_code)]

use openflow::text::{format_actions, parse_actions};
use openflow::wire::action::{decode_action_list, encode_action_list};
use openflow::wire::{OFP10, OFP13, OFP15};
use openflow::Action;

/// Bytes from a hex string (two digits a byte, no separators).
pub fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// For each (text given to ovs-ofctl, bytes it sent in every version, text it prints): in
/// OpenFlow 1.0, 1.3 and 1.5 the bytes decode to actions that `check` accepts, print as OVS
/// printed them and encode to the same bytes, and both texts parse to those actions.
/// Vectors without bytes are skipped.
pub fn action_vectors(vectors: &[(&str, &str, &str)], check: impl Fn(&str, &[Action])) {
    for (given, bytes, printed) in vectors {
        if bytes.is_empty() {
            continue;
        }
        let b = hex(bytes);
        for v in [OFP10, OFP13, OFP15] {
            let acts = decode_action_list(v, &b).unwrap_or_else(|e| panic!("{given}: {e:?}"));
            check(given, &acts);
            assert_eq!(format_actions(&acts), *printed, "{given} v{v}");
            assert_eq!(
                encode_action_list(v, &acts).expect("encodes"),
                b,
                "{given} v{v}"
            );
            assert_eq!(parse_actions(given, None).expect("parses"), acts, "{given}");
            assert_eq!(
                parse_actions(printed, None).expect("parses"),
                acts,
                "{printed}"
            );
        }
    }
}
