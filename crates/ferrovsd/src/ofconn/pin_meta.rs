//! The pipeline fields a packet-in reports with its packet, and a resume takes back: what
//! OVS puts in a packet-in's match (its "flow metadata"). Every field is reported only when
//! it is not zero, except `in_port`, always there:
//!
//! * the tunnel's `tun_id`, `tun_src`, `tun_dst`, `tun_ipv6_src`, `tun_ipv6_dst`, and each `tun_metadata<N>` option the
//!   packet has (present, and mapped by the bridge's TLV table), its value included even
//!   when zero, as OVS reports the options in a packet's "present" map;
//! * `metadata` and the registers, as the pipeline had them at the `controller` action;
//! * `pkt_mark`;
//! * `ct_state` (with `eth_type`, which the connection-tracking fields need to be read),
//!   and, for a valid connection (new, established or reply) with a protocol, its original
//!   tuple (`ct_nw_src`/`dst` or `ct_ipv6_src`/`dst`, `ct_nw_proto`, `ct_tp_src`/`dst`);
//! * `ct_zone`, `ct_mark`, `ct_label`.
//!
//! OpenFlow 1.0's standard packet-in has no match: there only `in_port` is sent.
//! A resume takes every one of these back ([`RESUMED`], the registers and the options).

use ofproto::odp::PipelineMeta;
use ofproto::tlv::TlvTable;
use openflow::oxm::{Field, CS_ESTABLISHED, CS_NEW, CS_REPLY_DIR};
use openflow::Match;
use packet::flow::{FlowKey, ETH_TYPE_IPV4, ETH_TYPE_IPV6};

/// The fields a resumed packet takes from the controller besides the registers (the rest
/// of its flow comes from its bytes): every one [`metadata`] reports except `in_port`,
/// which says where the packet came from, and `eth_type`, which the bytes say.
pub const RESUMED: [Field; 18] = [
    Field::TunnelId,
    Field::TunSrc,
    Field::TunDst,
    Field::TunIpv6Src,
    Field::TunIpv6Dst,
    Field::Metadata,
    Field::PktMark,
    Field::CtState,
    Field::CtZone,
    Field::CtMark,
    Field::CtLabel,
    Field::CtNwSrc,
    Field::CtNwDst,
    Field::CtIpv6Src,
    Field::CtIpv6Dst,
    Field::CtNwProto,
    Field::CtTpSrc,
    Field::CtTpDst,
];

/// The packet-in match for a packet whose flow was `key` and whose pipeline fields were
/// `meta` when it was sent, its options read through the bridge's TLV table `tlv`;
/// `in_port` only when `full` is false (OpenFlow 1.0).
pub fn metadata(key: &FlowKey, meta: &PipelineMeta, tlv: &TlvTable, full: bool) -> Match {
    // The tunnel as the pipeline had it (it may have set some of it), the rest as the
    // packet came in.
    let key = &FlowKey {
        tunnel_id: meta.tunnel_id,
        tun_src: meta.tun_src,
        tun_dst: meta.tun_dst,
        tun_ipv6_src: meta.tun_ipv6_src,
        tun_ipv6_dst: meta.tun_ipv6_dst,
        tun_opts_present: meta.tun_opts_present,
        tun_opts: meta.tun_opts,
        ..*key
    };
    let get = |f| ofproto::fields::get(key, f);
    let mut m = Match::new();
    if full {
        for f in [
            Field::TunnelId,
            Field::TunSrc,
            Field::TunDst,
            Field::TunIpv6Src,
            Field::TunIpv6Dst,
        ] {
            m = nonzero(m, f, get(f));
        }
        let mut present = key.tun_opts_present;
        while present != 0 {
            let i = present.trailing_zeros() as usize;
            present &= present - 1;
            if let Some(f) = Field::tun_metadata(i).filter(|_| tlv.slot_of(i).is_some()) {
                m = m.with(f, ofproto::tun_md::get(key, tlv, f));
            }
        }
        m = nonzero(m, Field::Metadata, u128::from(meta.metadata));
        for (i, r) in meta.regs.iter().enumerate() {
            if let Some(f) = Field::reg(i) {
                m = nonzero(m, f, u128::from(*r));
            }
        }
        m = nonzero(m, Field::PktMark, get(Field::PktMark));
    }
    m = m.with(Field::InPort, u128::from(key.in_port));
    if !full || key.ct_state == 0 {
        return m;
    }
    m = m.with(Field::CtState, u128::from(key.ct_state));
    m = m.with(Field::EthType, u128::from(key.dl_type));
    let valid = key.ct_state & (CS_NEW | CS_ESTABLISHED | CS_REPLY_DIR) != 0;
    if valid && key.ct_nw_proto != 0 {
        let tuple: &[Field] = match key.dl_type {
            ETH_TYPE_IPV4 => &[Field::CtNwSrc, Field::CtNwDst],
            ETH_TYPE_IPV6 => &[Field::CtIpv6Src, Field::CtIpv6Dst],
            _ => &[],
        };
        if !tuple.is_empty() {
            for f in tuple
                .iter()
                .chain(&[Field::CtNwProto, Field::CtTpSrc, Field::CtTpDst])
            {
                m = m.with(*f, get(*f));
            }
        }
    }
    for f in [Field::CtZone, Field::CtMark, Field::CtLabel] {
        m = nonzero(m, f, get(f));
    }
    m
}

fn nonzero(m: Match, f: Field, v: u128) -> Match {
    if v == 0 {
        m
    } else {
        m.with(f, v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::oxm::CS_TRACKED;

    fn fields(m: &Match) -> Vec<(Field, u128)> {
        m.iter().map(|x| (x.field, x.value)).collect()
    }

    #[test]
    fn ct_and_tunnel_fields_are_reported_as_ovs_does() {
        let mut key = FlowKey {
            in_port: 3,
            dl_type: ETH_TYPE_IPV4,
            ct_state: CS_TRACKED | CS_NEW,
            ct_zone: 7,
            ct_mark: 5,
            ct_nw_proto: 1,
            ct_tp_src: 8,
            // The packet came in with another tunnel id than the pipeline's.
            tunnel_id: 0x99,
            ..FlowKey::default()
        };
        key.ct_src[..4].copy_from_slice(&[10, 0, 0, 1]);
        key.ct_dst[..4].copy_from_slice(&[10, 0, 0, 2]);
        let mut meta = PipelineMeta {
            tunnel_id: 0x42,
            ..PipelineMeta::default()
        };
        meta.regs[13] = 9;
        let got = fields(&metadata(&key, &meta, &TlvTable::default(), true));
        for want in [
            (Field::InPort, 3),
            (Field::TunnelId, 0x42),
            (Field::CtState, 0x21),
            (Field::EthType, 0x0800),
            (Field::CtZone, 7),
            (Field::CtMark, 5),
            (Field::CtNwSrc, 0x0a00_0001),
            (Field::CtNwDst, 0x0a00_0002),
            (Field::CtNwProto, 1),
            (Field::CtTpSrc, 8),
            (Field::CtTpDst, 0),
        ] {
            assert!(got.contains(&want), "{want:?} in {got:?}");
        }
        assert!(got.iter().any(|(f, v)| f.is_reg() && *v == 9));
        assert!(!got
            .iter()
            .any(|(f, _)| *f == Field::CtLabel || *f == Field::PktMark));
        // An invalid connection has no tuple; untracked, no ct fields; OpenFlow 1.0, only
        // the input port.
        key.ct_state = CS_TRACKED | openflow::oxm::CS_INVALID;
        let got = fields(&metadata(&key, &meta, &TlvTable::default(), true));
        assert!(!got.iter().any(|(f, _)| *f == Field::CtNwSrc));
        key.ct_state = 0;
        let got = fields(&metadata(&key, &meta, &TlvTable::default(), true));
        assert!(!got
            .iter()
            .any(|(f, _)| *f == Field::CtState || *f == Field::CtZone));
        assert_eq!(
            fields(&metadata(&key, &meta, &TlvTable::default(), false)),
            vec![(Field::InPort, 3)]
        );
    }
    #[test]
    fn present_mapped_options_are_reported_even_when_zero() {
        use openflow::wire::nicira::{TlvMap, TlvTableCommand};
        let map = |index, len| TlvMap {
            class: 0x0102,
            type_: 0x80 + index as u8,
            len,
            index,
        };
        let mut tlv = TlvTable::default();
        tlv.apply(TlvTableCommand::Add, &[map(0, 4), map(3, 8)])
            .expect("map");
        let mut key = FlowKey {
            in_port: 1,
            ..FlowKey::default()
        };
        let t0 = Field::tun_metadata(0).expect("field");
        let t3 = Field::tun_metadata(3).expect("field");
        ofproto::tun_md::set(&mut key, &tlv, t0, 0x0001_0002, u128::MAX);
        ofproto::tun_md::set(&mut key, &tlv, t3, 0, u128::MAX);
        // Present but not mapped (the table changed since): left out.
        key.tun_opts_present |= 1 << 9;
        // The options come from the pipeline's fields, not from the packet's key.
        let mut meta = PipelineMeta {
            tun_opts_present: key.tun_opts_present,
            tun_opts: key.tun_opts,
            ..PipelineMeta::default()
        };
        let bare = FlowKey {
            in_port: 1,
            ..FlowKey::default()
        };
        let got = fields(&metadata(&bare, &meta, &tlv, true));
        assert!(got.contains(&(t0, 0x0001_0002)), "{got:?}");
        assert!(got.contains(&(t3, 0)), "{got:?}");
        assert!(!got.iter().any(|(f, _)| f.tun_metadata_index() == Some(9)));
        // Not present: not reported; OpenFlow 1.0 has no room for options at all.
        meta.tun_opts_present = 1;
        let got = fields(&metadata(&key, &meta, &tlv, true));
        assert!(got.contains(&(t0, 0x0001_0002)) && !got.iter().any(|(f, _)| *f == t3));
        assert_eq!(
            fields(&metadata(&key, &meta, &tlv, false)),
            vec![(Field::InPort, 1)]
        );
    }
}
