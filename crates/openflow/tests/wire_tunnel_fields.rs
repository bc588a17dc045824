//! Exact bytes of the tunnel address fields as Debian's `ovs-ofctl` (OVS 3.1) sends them,
//! captured from `ovs-ofctl -O OpenFlow10|13|15 add-flow` of
//!
//! ```text
//! tun_id=0x5,tun_src=1.1.1.1,tun_dst=2.2.2.0/24,
//! actions=set_field:3.3.3.3->tun_dst,set_field:4.4.4.4->tun_src,output:1
//! ```
//!
//! `tun_src`/`tun_dst` are Nicira class-1 fields 31 and 32 (`NXM_NX_TUN_IPV4_SRC/DST`) in
//! every version; over 1.0 the set_fields travel as `reg_load`. Each message must decode to
//! that flow and encode back to the same bytes.

use openflow::text::{format_instructions, format_match};
use openflow::wire::{decode_frame, encode, Message, NxMessage, OFP10, OFP13, OFP15};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const OF10: &str = "0104008800000008000023200000000d00000000000000000000000000008000ffffffffffff0000002000000000000000012008000000000000000500013e04010101010001410802020200ffffff00ffff0018000023200007001f000140040000000003030303ffff0018000023200007001f00013e0400000000040404040000000800010000";
const OF13: &str = "040e009000000006000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001002480004c08000000000000000500013e04010101010001410802020200ffffff00000000000004003800000000001900100001400403030303000000000019001000013e04040404040000000000000010000000010000000000000000";
const OF15: &str = "060e009000000006000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001002480004c08000000000000000500013e04010101010001410802020200ffffff00000000000004003800000000001900100001400403030303000000000019001000013e04040404040000000000000010000000010000000000000000";

#[test]
fn tunnel_addresses_decode_and_encode_byte_exact_in_every_version() {
    for (text, version, xid, actions) in [
        (
            OF10,
            OFP10,
            8,
            "load:0x3030303->NXM_NX_TUN_IPV4_DST[],load:0x4040404->NXM_NX_TUN_IPV4_SRC[],output:1",
        ),
        (
            OF13,
            OFP13,
            6,
            "set_field:3.3.3.3->tun_dst,set_field:4.4.4.4->tun_src,output:1",
        ),
        (
            OF15,
            OFP15,
            6,
            "set_field:3.3.3.3->tun_dst,set_field:4.4.4.4->tun_src,output:1",
        ),
    ] {
        let bytes = hex(text);
        let (fm, nx) = match decode_frame(&bytes) {
            Ok((_, Message::FlowMod(fm), _)) => (fm, false),
            Ok((_, Message::Nx(NxMessage::FlowMod(fm)), _)) => (fm, true),
            other => panic!("not a flow_mod: {other:?}"),
        };
        assert_eq!(
            format_match(&fm.match_, None),
            "tun_id=0x5,tun_src=1.1.1.1,tun_dst=2.2.2.0/24"
        );
        assert_eq!(format_instructions(&fm.instructions), actions);
        let msg = if nx {
            Message::Nx(NxMessage::FlowMod(fm))
        } else {
            Message::FlowMod(fm)
        };
        assert_eq!(
            encode(&msg, version, xid).unwrap(),
            bytes,
            "version {version}"
        );
    }
}

/// `tun_ipv6_src`/`tun_ipv6_dst` are Nicira class-1 fields 109 and 110
/// (`NXM_NX_TUN_IPV6_SRC/DST`, 16 bytes, maskable) in every version, as in OVS (which has
/// no OXM basic field for them).
#[test]
fn ipv6_tunnel_addresses_travel_as_nicira_fields_in_every_version() {
    use openflow::text::parse_flow;
    let text = "tun_id=0x5,tun_ipv6_src=fd00::1,tun_ipv6_dst=2001:db8::/64,\
                actions=set_field:fd00::2->tun_ipv6_dst,output:1";
    // The Nicira names in `load` and `move`.
    let loads = "load:0xfd000000000000000000000000000002->NXM_NX_TUN_IPV6_DST[],\
                 move:NXM_NX_TUN_IPV6_SRC[]->NXM_NX_XXREG0[],output:1";
    let with_loads = format!("tun_id=0x5,actions={loads}");
    let fm = parse_flow(&with_loads, openflow::messages::FlowModCommand::Add).expect("parses");
    assert_eq!(format_instructions(&fm.instructions), loads);
    for version in [OFP10, OFP13, OFP15] {
        // OpenFlow 1.0 says a 128-bit write as two 64-bit `reg_load`s, as OVS does.
        let actions = if version == OFP10 {
            "set_field:::2/::ffff:ffff:ffff:ffff->tun_ipv6_dst,\
             set_field:fd00::/64->tun_ipv6_dst,output:1"
        } else {
            "set_field:fd00::2->tun_ipv6_dst,output:1"
        };
        let fm = parse_flow(text, openflow::messages::FlowModCommand::Add).expect("parses");
        let msg = if version == OFP10 {
            Message::Nx(NxMessage::FlowMod(fm))
        } else {
            Message::FlowMod(fm)
        };
        let bytes = encode(&msg, version, 3).expect("encodes");
        // NXM_NX_TUN_IPV6_SRC exact (0x0001da10) and NXM_NX_TUN_IPV6_DST masked (0x0001dd20).
        let find = |pat: &[u8]| bytes.windows(pat.len()).any(|w| w == pat);
        let mut src = vec![0x00, 0x01, 0xda, 0x10, 0xfd, 0x00];
        src.extend_from_slice(&[0; 13]);
        src.push(1);
        assert!(find(&src), "version {version}: {bytes:02x?}");
        assert!(
            find(&[0x00, 0x01, 0xdd, 0x20, 0x20, 0x01, 0x0d, 0xb8]),
            "{version}"
        );
        let fm = match decode_frame(&bytes) {
            Ok((_, Message::FlowMod(fm), _)) | Ok((_, Message::Nx(NxMessage::FlowMod(fm)), _)) => {
                fm
            }
            other => panic!("not a flow_mod: {other:?}"),
        };
        assert_eq!(
            format_match(&fm.match_, None),
            "tun_id=0x5,tun_ipv6_src=fd00::1,tun_ipv6_dst=2001:db8::/64"
        );
        assert_eq!(format_instructions(&fm.instructions), actions);
    }
}
