//! The Nicira `sample` action: bytes checked against Debian's `ovs-ofctl ofp-print` (OVS 3.1
//! decodes each vector below into exactly the text beside it), in every form (SAMPLE,
//! SAMPLE2 with a sampling port, SAMPLE3 with a direction), in OpenFlow 1.0, 1.3 and 1.5; the
//! text parser and printer agree with ovs-ofctl's, and what OVS refuses we refuse.

use openflow::messages::FlowModCommand;
use openflow::text::{format_actions, parse_actions, parse_flow};
use openflow::wire::action::{decode_action_list, encode_action_list};
use openflow::wire::{OFP10, OFP13, OFP15};

mod common;
use common::hex;

/// (action bytes, ovs-ofctl's text for them).
const VECTORS: &[(&str, &str)] = &[
    (
        "ffff001800002320001d303900005ba0000087070000b26e",
        "sample(probability=12345,collector_set_id=23456,obs_domain_id=34567,obs_point_id=45678)",
    ),
    (
        "ffff0020000023200026303900005ba0000087070000b26eddd5000000000000",
        "sample(probability=12345,collector_set_id=23456,obs_domain_id=34567,obs_point_id=45678,sampling_port=56789)",
    ),
    (
        "ffff0020000023200029303900005ba0000087070000b26eddd5020000000000",
        "sample(probability=12345,collector_set_id=23456,obs_domain_id=34567,obs_point_id=45678,sampling_port=56789,egress)",
    ),
    (
        "ffff00200000232000290001000000010000000100000001ffff010000000000",
        "sample(probability=1,collector_set_id=1,obs_domain_id=1,obs_point_id=1,ingress)",
    ),
    (
        "ffff00200000232000260001000000010000000100000001fffe000000000000",
        "sample(probability=1,collector_set_id=1,obs_domain_id=1,obs_point_id=1,sampling_port=LOCAL)",
    ),
];

#[test]
fn ovs_vectors_decode_print_and_encode() {
    for v in [OFP10, OFP13, OFP15] {
        for (bytes, text) in VECTORS {
            let b = hex(bytes);
            let acts = decode_action_list(v, &b).unwrap_or_else(|e| panic!("{text}: {e:?}"));
            assert_eq!(format_actions(&acts), *text, "version {v}");
            assert_eq!(encode_action_list(v, &acts).expect("encodes"), b, "{text}");
            assert_eq!(parse_actions(text, None).expect("parses"), acts, "{text}");
        }
    }
}

#[test]
fn text_defaults_and_order_as_ovs_ofctl() {
    let a =
        parse_actions("sample(egress,probability=0x10,obs_point_id=0x10)", None).expect("parses");
    assert_eq!(
        format_actions(&a),
        "sample(probability=16,collector_set_id=0,obs_domain_id=0,obs_point_id=16,egress)"
    );
    let a = parse_actions("sample(probability=1,ingress,egress)", None).expect("parses");
    assert!(format_actions(&a).ends_with(",egress)"));
    let a = parse_actions("sample(probability=1,sampling_port=NONE)", None).expect("parses");
    assert_eq!(
        format_actions(&a),
        "sample(probability=1,collector_set_id=0,obs_domain_id=0,obs_point_id=0)"
    );
}

#[test]
fn refused_as_ovs_refuses() {
    for bad in [
        "sample()",
        "sample(probability=0)",
        "sample(probability=65536)",
        "sample(probability=1,foo=2)",
        "sample(probability=1,sampling_port=70000)",
        // ovs-ofctl keeps the low 32 bits here; we say the value does not fit.
        "sample(probability=1,collector_set_id=4294967296)",
    ] {
        assert!(parse_actions(bad, None).is_err(), "{bad} was accepted");
    }
    // The action set has no place for a sample (OVS: OFPBAC_BAD_TYPE).
    assert!(parse_flow(
        "actions=write_actions(sample(probability=1),output:1)",
        FlowModCommand::Add
    )
    .is_err());
    // Zero probability, a direction beyond egress, a short SAMPLE2: refused at decode.
    for bad in [
        "ffff001800002320001d0000000000010000000100000001",
        "ffff00200000232000290001000000010000000100000001ffff030000000000",
        // SAMPLE2's subtype in SAMPLE's 24 bytes.
        "ffff00180000232000260001000000010000000100000001",
    ] {
        let b = hex(bad);
        assert!(decode_action_list(OFP13, &b).is_err(), "{bad}");
    }
}
