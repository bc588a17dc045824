//! `tun_metadata` fields in the pipeline: flows may use only what the TLV table maps (with
//! OVS's errors), a mapping in use cannot be deleted, received Geneve options reach the
//! match through the table, writes build the options a Geneve port sends, and megaflows
//! show what was examined.

use ofproto::odp::DpAction;
use ofproto::{tun_md, xlate, Ofproto};
use openflow::messages::err::{bad_action, bad_match, flow_mod_failed, nx_tlv};
use openflow::text::parse_flow;
use openflow::wire::nicira::{TlvMap, TlvTableCommand};
use openflow::{FlowModCommand, OfError};
use packet::flow::FlowKey;

/// OVN's option: class 0x0102, type 0x80, 4 bytes, as `tun_metadata0`.
const OVN: TlvMap = TlvMap {
    class: 0x0102,
    type_: 0x80,
    len: 4,
    index: 0,
};

fn add(of: &mut Ofproto, text: &str) -> Result<(), OfError> {
    let fm = parse_flow(text, FlowModCommand::Add).expect(text);
    of.flow_mod(&fm, 0).map(|_| ())
}

fn mapped() -> Ofproto {
    let mut of = Ofproto::new();
    of.tlv_mod(TlvTableCommand::Add, &[OVN]).expect("map");
    of
}

/// A key as a Geneve port's packet with these options arrives: in_port 1, tun_id 1.
fn received(of: &Ofproto, opts: &[u8]) -> Result<FlowKey, tun_md::BadOptions> {
    let mut k = FlowKey {
        in_port: 1,
        tunnel_id: 1,
        tun_src: [192, 168, 0, 2],
        tun_dst: [192, 168, 0, 1],
        dl_type: 0x0800,
        ..FlowKey::ZERO
    };
    tun_md::from_geneve(&mut k, &of.tlv, opts)?;
    Ok(k)
}

/// OVN's option with value 0x00010002 (logical ports 1 -> 2).
const OPT: [u8; 8] = [0x01, 0x02, 0x80, 0x01, 0x00, 0x01, 0x00, 0x02];

#[test]
fn flows_may_use_only_mapped_fields_within_their_width() {
    let mut of = Ofproto::new();
    let unmapped = Err(OfError::nx(nx_tlv::INVALID_TLV_FIELD));
    assert_eq!(add(&mut of, "tun_metadata0=1,actions=drop"), unmapped);
    assert_eq!(add(&mut of, "actions=set_field:1->tun_metadata0"), unmapped);
    assert_eq!(
        add(
            &mut of,
            "actions=move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30]"
        ),
        unmapped
    );
    of.tlv_mod(TlvTableCommand::Add, &[OVN]).expect("map");
    add(
        &mut of,
        "tun_id=0x1,tun_metadata0=0x10002/0x7fffffff,actions=output:2",
    )
    .expect("ovn");
    add(
        &mut of,
        "actions=set_field:0x10002/0x7fffffff->tun_metadata0,\
         move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30],output:3",
    )
    .expect("ovn egress");
    // Four bytes: no fifth.
    assert_eq!(
        add(&mut of, "tun_metadata0=0x100000000,actions=drop"),
        Err(OfError::bad_match(bad_match::BAD_VALUE))
    );
    assert_eq!(
        add(&mut of, "tun_metadata0=0/0x100000000,actions=drop"),
        Err(OfError::bad_match(bad_match::BAD_MASK))
    );
    assert_eq!(
        add(&mut of, "actions=set_field:0x100000000->tun_metadata0"),
        Err(OfError::bad_action(bad_action::BAD_SET_ARGUMENT))
    );
    assert_eq!(
        add(
            &mut of,
            "actions=move:NXM_NX_REG0[]->NXM_NX_TUN_METADATA0[8..39]"
        ),
        Err(OfError::bad_action(bad_action::BAD_SET_LEN))
    );
    // Options beyond the 16 bytes the flow key holds are mapped but not usable.
    let big = TlvMap {
        class: 9,
        type_: 1,
        len: 16,
        index: 1,
    };
    of.tlv_mod(TlvTableCommand::Add, &[big]).expect("mapped");
    assert_eq!(
        add(&mut of, "tun_metadata1=1,actions=drop"),
        Err(OfError::flow_mod_failed(flow_mod_failed::TABLE_FULL))
    );
}

#[test]
fn a_mapping_in_use_cannot_be_deleted() {
    let mut of = mapped();
    add(&mut of, "priority=5,tun_metadata0=0x10002,actions=output:2").expect("add");
    let in_use = Err(OfError::nx(nx_tlv::INVALID_TLV_DEL));
    assert_eq!(of.tlv_mod(TlvTableCommand::Delete, &[OVN]), in_use);
    assert_eq!(of.tlv_mod(TlvTableCommand::Clear, &[]), in_use);
    let del = parse_flow(
        "priority=5,tun_metadata0=0x10002",
        FlowModCommand::DeleteStrict,
    )
    .expect("del");
    assert_eq!(of.flow_mod(&del, 0).expect("delete").deleted, 1);
    of.tlv_mod(TlvTableCommand::Delete, &[OVN])
        .expect("unused now");
    assert!(of.tlv.maps().is_empty());
}

#[test]
fn received_options_are_matched_through_the_table() {
    let mut of = mapped();
    add(
        &mut of,
        "priority=10,in_port=1,tun_id=0x1,tun_metadata0=0x10002/0x7fffffff,actions=output:2",
    )
    .expect("add");
    add(&mut of, "priority=1,actions=output:9").expect("add");
    let k = received(&of, &OPT).expect("options");
    assert_eq!(
        tun_md::get(&k, &of.tlv, openflow::Field::TunMetadata0),
        0x10002
    );
    let x = xlate(&of, &k, None, None);
    assert_eq!(x.actions, vec![DpAction::Output(2)]);
    assert_eq!(
        ofproto::text::megaflow_text(&k, &x.wc, &of.tlv),
        // A received packet's key and outer addresses chose its tunnel port: they are part
        // of every megaflow for it, as in OVS's (`tunnel(tun_id=..,src=..,dst=..)`).
        "recirc_id=0,tun_id=0x1,tun_src=192.168.0.2,tun_dst=192.168.0.1,\
         tun_metadata0=0x10002/0x7fffffff,in_port=1,nw_frag=0x0"
    );
    // Without the option (or with another value) the flow does not match: a match on a
    // tun_metadata field requires the option, as in OVS.
    let none = received(&of, &[]).expect("no options");
    assert_eq!(
        xlate(&of, &none, None, None).actions,
        vec![DpAction::Output(9)]
    );
    let mut other = OPT;
    other[7] = 3;
    let k = received(&of, &other).expect("options");
    assert_eq!(
        xlate(&of, &k, None, None).actions,
        vec![DpAction::Output(9)]
    );
}

#[test]
fn received_options_follow_ovs_rules() {
    let of = mapped();
    // An unmapped option is ignored, unless critical (type & 0x80).
    let mut opts = vec![0x00, 0x05, 0x01, 0x01, 1, 2, 3, 4];
    opts.extend_from_slice(&OPT);
    let k = received(&of, &opts).expect("non-critical unknown option ignored");
    assert_eq!(k.tun_opts_present, 1);
    // What goes on with the packet: the mapped option only.
    assert_eq!(tun_md::to_geneve(&k, &of.tlv), OPT.to_vec());
    assert_eq!(
        received(&of, &[0x00, 0x05, 0x81, 0x00]),
        Err(tun_md::BadOptions)
    );
    // The mapped option with another length is an error.
    let long = [0x01, 0x02, 0x80, 0x02, 0, 0, 0, 1, 0, 0, 0, 2];
    assert_eq!(received(&of, &long), Err(tun_md::BadOptions));
    // A truncated option too.
    assert_eq!(received(&of, &OPT[..6]), Err(tun_md::BadOptions));
    // Without any map, every option is ignored.
    let k = received(&Ofproto::new(), &[0x00, 0x05, 0x81, 0x00]).expect("no table");
    assert_eq!(k.tun_opts_present, 0);
}

#[test]
fn writes_build_the_geneve_options() {
    let mut of = mapped();
    add(
        &mut of,
        "in_port=1,actions=load:0x2->NXM_NX_REG14[],set_field:0x1->tun_id,\
         set_field:0x10002/0x7fffffff->tun_metadata0,\
         move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30],output:3",
    )
    .expect("add");
    let k = FlowKey {
        in_port: 1,
        dl_type: 0x0800,
        ..FlowKey::ZERO
    };
    let x = xlate(&of, &k, None, None);
    // 0x10002 with bits 16..30 replaced by reg14 = 2: 0x20002.
    let text: Vec<String> = x.actions.iter().map(|a| a.to_string()).collect();
    assert_eq!(
        text,
        vec![
            "set(tunnel(tun_id=0x1))",
            "set(tunnel(geneve({class=0x102,type=0x80,len=4,0x20002})))",
            "3"
        ]
    );
    assert_eq!(
        x.actions[1],
        DpAction::SetTunnelOpts(vec![0x01, 0x02, 0x80, 0x01, 0, 2, 0, 2].into_boxed_slice())
    );
    // A trace's final flow names the option by its field.
    let text = tun_md::flow_text(&x.final_flow, &of.tlv);
    assert!(text.contains(",tun_metadata0=0x20002,"), "{text}");
    assert!(!text.contains("tun_opts"), "{text}");
}

#[test]
fn a_mask_over_the_whole_option_is_stored_exact() {
    let mut of = mapped();
    add(
        &mut of,
        "priority=7,tun_metadata0=0x10002/0xffffffff,actions=drop",
    )
    .expect("add");
    let rules: Vec<String> = of
        .tables()
        .first()
        .expect("table 0")
        .iter()
        .map(|r| openflow::text::format_match(&r.match_, Some(r.priority)))
        .collect();
    assert_eq!(rules, vec!["priority=7,tun_metadata0=0x10002"]);
    // Strict commands find it written either way.
    let del = parse_flow(
        "priority=7,tun_metadata0=0x10002",
        FlowModCommand::DeleteStrict,
    )
    .expect("del");
    assert_eq!(of.flow_mod(&del, 0).expect("delete").deleted, 1);
    add(&mut of, "priority=7,tun_metadata0=0x10002,actions=drop").expect("add");
    let del = parse_flow(
        "priority=7,tun_metadata0=0x10002/0xffffffff",
        FlowModCommand::DeleteStrict,
    )
    .expect("del");
    assert_eq!(of.flow_mod(&del, 0).expect("delete").deleted, 1);
}

/// A packet-in reports the tunnel as the pipeline had it at the controller action: what it
/// set (here `tun_id` and the option), and the received packet's own fields otherwise; the
/// megaflow pins those, so a packet from another tunnel does not reuse the cached report.
#[test]
fn packet_ins_carry_the_pipelines_tunnel() {
    let mut of = mapped();
    add(
        &mut of,
        "in_port=1,actions=set_field:0x7->tun_id,set_field:0x30004->tun_metadata0,controller",
    )
    .expect("add");
    add(&mut of, "in_port=2,actions=controller").expect("add");
    let meta = |x: &ofproto::XlateOut| {
        x.actions
            .iter()
            .find_map(|a| match a {
                DpAction::Controller { meta, .. } => Some(**meta),
                _ => None,
            })
            .expect("a packet-in")
    };
    let k = received(&of, &OPT).expect("options");
    let x = xlate(&of, &k, None, None);
    let m = meta(&x);
    assert_eq!(
        (m.tunnel_id, m.tun_src, m.tun_dst),
        (7, k.tun_src, k.tun_dst)
    );
    let mut as_key = FlowKey {
        tun_opts_present: m.tun_opts_present,
        tun_opts: m.tun_opts,
        ..FlowKey::ZERO
    };
    assert_eq!(
        tun_md::get(&as_key, &of.tlv, openflow::Field::TunMetadata0),
        0x30004
    );
    // Nothing set: the received packet's tunnel, pinned in the megaflow.
    let mut k2 = received(&of, &OPT).expect("options");
    k2.in_port = 2;
    let x = xlate(&of, &k2, None, None);
    let m = meta(&x);
    assert_eq!((m.tunnel_id, m.tun_src), (1, [192, 168, 0, 2]));
    as_key.tun_opts_present = m.tun_opts_present;
    as_key.tun_opts = m.tun_opts;
    assert_eq!(
        tun_md::get(&as_key, &of.tlv, openflow::Field::TunMetadata0),
        0x10002
    );
    let mf = ofproto::text::megaflow_text(&k2, &x.wc, &of.tlv);
    assert!(
        mf.contains("tun_id=0x1") && mf.contains("tun_metadata0=0x10002"),
        "{mf}"
    );
}

/// The IPv6 tunnel addresses: matched, set (the datapath action OVS prints), pinned in the
/// megaflow only as far as examined, shown in the final flow.
#[test]
fn ipv6_tunnel_addresses_are_matched_and_set() {
    let mut of = Ofproto::new();
    add(
        &mut of,
        "priority=10,tun_ipv6_src=fd00::/64,actions=set_field:fd00::9->tun_ipv6_dst,output:3",
    )
    .expect("add");
    add(&mut of, "priority=1,actions=output:9").expect("add");
    let v6 = |s: &str| s.parse::<std::net::Ipv6Addr>().expect("ipv6").octets();
    let k = FlowKey {
        in_port: 1,
        tunnel_id: 5,
        tun_ipv6_src: v6("fd00::2"),
        tun_ipv6_dst: v6("fd00::1"),
        dl_type: 0x0800,
        ..FlowKey::ZERO
    };
    let x = xlate(&of, &k, None, None);
    let text: Vec<String> = x.actions.iter().map(|a| a.to_string()).collect();
    assert_eq!(text, vec!["set(tunnel(ipv6_dst=fd00::9))", "3"]);
    assert_eq!(x.actions[0], DpAction::SetTunnelIpv6Dst(v6("fd00::9")));
    assert_eq!(
        ofproto::text::megaflow_text(&k, &x.wc, &of.tlv),
        "recirc_id=0,tun_id=0x5,tun_ipv6_src=fd00::2,tun_ipv6_dst=fd00::1,in_port=1,nw_frag=0x0"
    );
    let flow = tun_md::flow_text(&x.final_flow, &of.tlv);
    assert!(
        flow.contains("tun_id=0x5,tun_ipv6_src=fd00::2,tun_ipv6_dst=fd00::9,"),
        "{flow}"
    );
    // Another remote (or an IPv4 one) misses.
    let other = FlowKey {
        tun_ipv6_src: v6("fd01::2"),
        ..k
    };
    assert_eq!(
        xlate(&of, &other, None, None).actions,
        vec![DpAction::Output(9)]
    );
}
