//! Select groups as OVS 3.1 runs them, under the daemon's `vlan-limit=1` (this file is its own
//! process, so the process-wide limit is safe to set): the first select group of a pass
//! hashes and recirculates, and everything after it sees the packet parsed again. Found by
//! the differential harness (tests/integration/helpers/ovsdiff.py, seed 2002 of the wire
//! run): pushing a tag onto a frame that had two after a select group kept all three in
//! OVS and lost one in ferrovs, and rules matching L3 fields stopped matching in OVS once
//! the pushed tags exceeded the limit.

use ofproto::odp::{apply, DpAction};
use ofproto::{xlate, Ofproto};
use packet::flow::{self, ETH_TYPE_IPV4, ETH_TYPE_VLAN};
use packet::{Packet, Pool};

mod common;
use common::Udp4;

fn switch(groups: &[&str], rules: &[&str]) -> Ofproto {
    flow::set_vlan_limit(1);
    common::switch_with(4, groups, rules)
}

/// Ethernet / the given 802.1Q TCIs / IPv4 / UDP 5000 -> 53.
fn udp(tags: &[u16]) -> Vec<u8> {
    let tags = tags.iter().map(|t| (ETH_TYPE_VLAN, *t)).collect();
    Udp4 {
        tags,
        id: 1,
        dport: 53,
        ..Udp4::default()
    }
    .bytes()
}

/// Executes datapath actions on `p` as the datapath does: rewrites in order, a copy per
/// output, clones on their own copy. Collects (port, frame).
fn run(pool: &mut Pool, p: &mut Packet, acts: &[DpAction], sent: &mut Vec<(u32, Vec<u8>)>) {
    let mut offs = None;
    for a in acts {
        match a {
            DpAction::Output(port) => sent.push((*port, p.data().to_vec())),
            DpAction::Clone(sub) => {
                let mut c = pool.alloc().expect("buffer");
                c.set_frame(p.data());
                run(pool, &mut c, sub, sent);
                pool.free(c);
            }
            a => apply(p, a, &mut offs),
        }
    }
}

/// What leaves which port when `f` comes in on port 1.
fn sent(of: &Ofproto, f: &[u8]) -> (Vec<(u32, Vec<u8>)>, ofproto::XlateOut) {
    let key = flow::extract(f, 1);
    let x = xlate(of, &key, Some(f), None);
    let mut pool = Pool::new(4);
    let mut p = pool.alloc().expect("buffer");
    p.set_frame(f);
    let mut out = Vec::new();
    run(&mut pool, &mut p, &x.actions, &mut out);
    pool.free(p);
    (out, x)
}

/// The TCIs of the 802.1Q tags a frame starts with, however many.
fn tags(f: &[u8]) -> Vec<u16> {
    let mut at = 12;
    let mut v = Vec::new();
    while f[at..at + 2] == ETH_TYPE_VLAN.to_be_bytes() {
        v.push(u16::from_be_bytes([f[at + 2], f[at + 3]]));
        at += 4;
    }
    v
}

const SELECT: &str = "group_id=4,type=select,bucket=set_field:7->reg3,output:4";

#[test]
fn a_push_after_a_select_group_keeps_every_tag() {
    // One tag in (PCP 6), one pushed: two tags, of which the flow tracks both. The select
    // group re-parses: one tag seen, the other is payload. The next push then just adds a
    // third tag (OVS); it used to rebuild the stack from the two tracked tags and lose one.
    let of = switch(
        &[SELECT],
        &[
            "table=0,priority=10,in_port=1,actions=push_vlan:0x8100,output:2,group:4,resubmit(,1)",
            "table=1,priority=10,actions=push_vlan:0x8100,output:3",
        ],
    );
    let (out, x) = sent(&of, &udp(&[0xc000]));
    let port = |n: u32| -> Vec<Vec<u16>> {
        out.iter()
            .filter(|(p, _)| *p == n)
            .map(|(_, f)| tags(f))
            .collect()
    };
    assert_eq!(port(2), vec![vec![0, 0xc000]], "{:?}", x.actions);
    assert_eq!(port(4), vec![vec![0, 0xc000]], "the bucket's copy");
    assert_eq!(port(3), vec![vec![0, 0, 0xc000]], "{:?}", x.actions);
    // The frame behind the tags is intact.
    let (_, f3) = out.iter().find(|(p, _)| *p == 3).expect("port 3");
    assert_eq!(&f3[24..26], &ETH_TYPE_IPV4.to_be_bytes());
    assert!(!x.uncacheable, "decided by the flow alone");
}

#[test]
fn after_a_select_group_tags_beyond_the_limit_hide_the_ip_header() {
    let rules = [
        "table=0,priority=10,in_port=1,actions=push_vlan:0x8100,set_field:4106->vlan_vid,group:4,goto_table:1",
        "table=1,priority=20,ip,actions=output:2",
        "table=1,priority=10,actions=output:3",
    ];
    let of = switch(&[SELECT], &rules);
    // Tagged in, a tag pushed: after the group OVS parses one tag, then EtherType 0x8100,
    // so the `ip` rule does not match.
    let (out, x) = sent(&of, &udp(&[0x0014]));
    let ports: Vec<u32> = out.iter().map(|(p, _)| *p).collect();
    assert_eq!(ports, vec![4, 3], "{:?}", x.actions);
    assert_eq!(tags(&out[1].1), vec![10, 0x0014]);
    // Untagged in: one tag after the push, within the limit: the IP header is still seen.
    let (out, _) = sent(&of, &udp(&[]));
    let ports: Vec<u32> = out.iter().map(|(p, _)| *p).collect();
    assert_eq!(ports, vec![4, 2]);
    // Without the select group nothing is parsed again: the flow keeps both tags and the
    // IP header (OVS likewise, with no recirculation).
    let no_group = [
        "table=0,priority=10,in_port=1,actions=push_vlan:0x8100,set_field:4106->vlan_vid,goto_table:1",
        rules[1],
        rules[2],
    ];
    let of = switch(&[SELECT], &no_group);
    let (out, _) = sent(&of, &udp(&[0x0014]));
    assert_eq!(out.iter().map(|(p, _)| *p).collect::<Vec<_>>(), vec![2]);
}

#[test]
fn a_tag_uncovered_by_a_pop_is_parsed_after_a_select_group() {
    // Two tags in: vlan-limit 1 parses the outer one only. Pop it, and the select group's
    // re-parse finds the inner tag (VID 20) and the IP header behind it.
    let of = switch(
        &[SELECT],
        &[
            "table=0,priority=10,in_port=1,actions=pop_vlan,group:4,goto_table:1",
            "table=1,priority=30,dl_vlan=20,ip,actions=output:2",
            "table=1,priority=10,actions=output:3",
        ],
    );
    let (out, x) = sent(&of, &udp(&[10, 20]));
    let ports: Vec<u32> = out.iter().map(|(p, _)| *p).collect();
    assert_eq!(ports, vec![4, 2], "{:?}", x.actions);
    assert!(x.uncacheable, "decided by bytes the flow key does not hold");
}

#[test]
fn only_the_first_select_group_reparses_and_a_bucket_keeps_its_own() {
    // A select group inside an `all` group's bucket re-parses that copy only: the main
    // pipeline still tracks both tags and matches `ip`.
    let of = switch(
        &[
            SELECT,
            "group_id=1,type=all,bucket=group:4",
            "group_id=5,type=select,bucket=output:1",
        ],
        &[
            "table=0,priority=10,in_port=1,actions=push_vlan:0x8100,group:1,goto_table:1",
            "table=1,priority=20,ip,actions=output:2",
            "table=1,priority=10,actions=output:3",
        ],
    );
    let (out, x) = sent(&of, &udp(&[0x0014]));
    let ports: Vec<u32> = out.iter().map(|(p, _)| *p).collect();
    assert_eq!(ports, vec![4, 2], "{:?}", x.actions);
}

/// Packets (in_port, group, frame) and the bucket OVS 3.1 chose for each, captured from
/// Debian's ovs-vswitchd (packet-out to TABLE through `actions=group:N`, under the harness's
/// groups 5 and 6): TCP and UDP over IPv4, TCP over IPv6, ARP, and double-tagged frames
/// (hashed on their L2 fields, the inner tag being payload under vlan-limit 1).
const OVS_PICKS: &[(u32, u32, &str, usize)] = &[
    (2, 5, "00000000000200000000000108004500002900010000400666c50a0000010a00000903e80050000000000000000050022000ff9f000078", 3),
    (2, 5, "00000000000200000000000108004500002900010000400666c40a0000020a00000903e90050000000000000000050022000ff9d000078", 1),
    (2, 5, "00000000000200000000000108004500002900010000400666c30a0000030a00000903ea0050000000000000000050022000ff9b000078", 0),
    (2, 5, "00000000000200000000000108004500002900010000400666c20a0000040a00000903eb0050000000000000000050022000ff99000078", 2),
    (2, 5, "00000000000200000000000108004500002900010000400666c10a0000050a00000903ec0050000000000000000050022000ff97000078", 0),
    (2, 5, "00000000000200000000000108004500002900010000400666c00a0000060a00000903ed0050000000000000000050022000ff95000078", 1),
    (2, 5, "00000000000200000000000108004500001d00010000401166c60a0000010a00000903e8003500096fb578", 0),
    (2, 5, "00000000000200000000000108004500001d00010000401166c50a0000020a00000903e9003500096fb378", 2),
    (2, 5, "00000000000200000000000108004500001d00010000401166c40a0000030a00000903ea003500096fb178", 2),
    (2, 5, "00000000000200000000000186dd600000000015064020010db800000000000000000000000120010db800000000000000000000009903e80050000000000000000050022000b79d000078", 2),
    (2, 5, "00000000000200000000000186dd600000000015064020010db800000000000000000000000220010db800000000000000000000009903e90050000000000000000050022000b79b000078", 2),
    (2, 5, "00000000000200000000000186dd600000000015064020010db800000000000000000000000320010db800000000000000000000009903ea0050000000000000000050022000b799000078", 3),
    (2, 5, "ffffffffffff0000000000010806000108000604000102fc000000010a0000010000000000000a00000278", 0),
    (2, 5, "ffffffffffff0000000000020806000108000604000102fc000000010a0000010000000000000a00000278", 1),
    (2, 5, "ffffffffffff0000000000030806000108000604000102fc000000010a0000010000000000000a00000278", 0),
    (2, 5, "0000000000020000000000018100000a8100001408004500001d00010000401166cd0a0000010a000002003500350009736f78", 3),
    (2, 5, "0000000000020000000000028100000b8100001408004500001d00010000401166cd0a0000010a000002003500350009736f78", 0),
    (1, 6, "00000000000200000000000108004500002900010000400666c50a0000010a00000903e80050000000000000000050022000ff9f000078", 0),
    (1, 6, "00000000000200000000000108004500002900010000400666c40a0000020a00000903e90050000000000000000050022000ff9d000078", 0),
    (1, 6, "00000000000200000000000108004500002900010000400666c30a0000030a00000903ea0050000000000000000050022000ff9b000078", 0),
    (1, 6, "00000000000200000000000108004500002900010000400666c20a0000040a00000903eb0050000000000000000050022000ff99000078", 1),
    (1, 6, "00000000000200000000000108004500002900010000400666c10a0000050a00000903ec0050000000000000000050022000ff97000078", 0),
    (1, 6, "00000000000200000000000108004500002900010000400666c00a0000060a00000903ed0050000000000000000050022000ff95000078", 0),
];

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

#[test]
fn select_groups_pick_the_bucket_ovs_picks() {
    let of = switch(
        &[
            "group_id=5,type=select,bucket=output:1,bucket=output:2,bucket=output:3,bucket=output:4",
            "group_id=6,type=select,bucket=weight:3,output:2,bucket=weight:1,output:3",
        ],
        &[
            "table=0,priority=10,in_port=2,actions=group:5",
            "table=0,priority=10,in_port=1,actions=group:6",
        ],
    );
    for (in_port, group, hex, want) in OVS_PICKS {
        let f = unhex(hex);
        let key = flow::extract(&f, *in_port);
        let x = xlate(&of, &key, Some(&f), None);
        assert_eq!(x.buckets, vec![(*group, *want)], "{hex}");
        assert!(!x.uncacheable);
        // The megaflow holds what the hash read: a packet differing in a hashed field
        // must not share it.
        assert_eq!(x.wc.nw_frag, 0xff);
    }
}

#[test]
fn buckets_and_write_actions_run_as_ovs_action_sets() {
    let of = switch(
        &[
            // Two outputs and a rewrite between them: OVS runs the rewrite, then the last
            // output only.
            "group_id=7,type=all,bucket=output:2,mod_dl_src:02:00:00:00:00:0b,output:3,bucket=mod_dl_dst:02:00:00:00:00:0c",
        ],
        &[
            "table=0,priority=10,in_port=1,udp,actions=group:7",
            // write_actions: an output and a resubmit, the output wins; set order as written.
            "table=0,priority=10,in_port=1,ip,nw_proto=1,actions=write_actions(resubmit(,1),output:3,set_field:7->reg0,set_field:1->reg0)",
            "table=0,priority=10,in_port=2,actions=write_actions(output:3,group:7)",
            "table=0,priority=10,in_port=3,actions=write_actions(mod_dl_src:02:00:00:00:00:0d),goto_table:1",
            "table=1,priority=10,actions=output:4",
        ],
    );
    let (out, x) = sent(&of, &udp(&[]));
    assert_eq!(out.len(), 1, "{:?}", x.actions);
    assert_eq!(out[0].0, 3);
    assert_eq!(&out[0].1[6..12], &[2, 0, 0, 0, 0, 0x0b]);
    // A bucket without an output runs nothing.
    assert!(!x
        .actions
        .iter()
        .any(|a| matches!(a, DpAction::SetEthDst(_))));
    // The group wins over the output in a write_actions set.
    let mut f = udp(&[]);
    let key = flow::extract(&f, 2);
    let x = xlate(&of, &key, Some(&f), None);
    assert_eq!(
        x.buckets.iter().map(|b| b.0).collect::<Vec<_>>(),
        vec![7, 7]
    );
    // Only the output of a set that also resubmits.
    f[23] = 1;
    let key = flow::extract(&f, 1);
    let x = xlate(&of, &key, Some(&f), None);
    let outs: Vec<&DpAction> = x
        .actions
        .iter()
        .filter(|a| matches!(a, DpAction::Output(_)))
        .collect();
    assert_eq!(outs, vec![&DpAction::Output(3)], "{:?}", x.actions);
    assert_eq!(
        x.final_flow.regs[0], 1,
        "both writes ran, in the order written"
    );
}

#[test]
fn the_action_set_runs_after_a_ttl_exception() {
    // Found by the harness (seed 3016): dec_ttl on TTL 1 ends table 1's actions (its output
    // after the exception does not happen), but OVS still executes the action set written
    // in table 0.
    let of = switch(
        &["group_id=3,type=ff,bucket=watch_port:1,output:1"],
        &[
            "table=0,priority=10,in_port=4,actions=write_actions(group:3,set_field:7->reg15),goto_table:1",
            "table=1,priority=10,ip,actions=output:2,dec_ttl,output:3",
        ],
    );
    let mut f = udp(&[]);
    f[22] = 1; // TTL 1
    let key = flow::extract(&f, 4);
    let x = xlate(&of, &key, Some(&f), None);
    let mut pool = Pool::new(4);
    let mut p = pool.alloc().expect("buffer");
    p.set_frame(&f);
    let mut out = Vec::new();
    run(&mut pool, &mut p, &x.actions, &mut out);
    pool.free(p);
    let ports: Vec<u32> = out.iter().map(|(p, _)| *p).collect();
    assert_eq!(ports, vec![2, 1], "{:?}", x.actions);
    assert_eq!(x.final_flow.regs[15], 7);
}

#[test]
fn the_trace_reads_like_ovs() {
    // The lines `ovs-appctl ofproto/trace` writes for the same pipeline and packet (checked
    // against OVS 3.1's): table lines without a zero cookie, nested lookups four columns in,
    // skipped outputs and TTL exceptions marked `>>`, the action set at the end.
    let of = switch(
        &[],
        &[
            "table=0,priority=0,actions=resubmit(,1),write_actions(output:3)",
            "table=1,priority=40,ip,actions=output:1,dec_ttl",
        ],
    );
    let mut f = udp(&[]);
    f[22] = 1;
    let key = flow::extract(&f, 1);
    let mut lines = Vec::new();
    xlate(&of, &key, Some(&f), Some(&mut lines));
    assert_eq!(
        lines,
        vec![
            " 0. priority 0",
            "    resubmit(,1)",
            "     1. ip, priority 40",
            "            output:1",
            "             >> skipping output to input port",
            "            dec_ttl",
            "             >> IPv4 decrement TTL exception",
            "    write_actions(output:3)",
            "     -> action set is: output:3",
            "--. Executing action set:",
            "    output:3",
        ]
    );
}

#[test]
fn the_trace_of_a_group_reads_like_ovs() {
    // OVS 3.1's lines for the harness's group 7 (an `all` group whose buckets are action
    // sets): each bucket at the group's column, its actions in set order below it, an
    // empty set as `drop`.
    let of = switch(
        &[
            "group_id=7,type=all,bucket=output:2,mod_dl_src:02:00:00:00:00:0b,output:3,\
           bucket=push_vlan:0x8100,set_field:4116->vlan_vid,output:4,\
           bucket=mod_dl_dst:02:00:00:00:00:0c",
        ],
        &["table=0,priority=0,actions=group:7"],
    );
    let f = udp(&[]);
    let key = flow::extract(&f, 1);
    let mut lines = Vec::new();
    xlate(&of, &key, Some(&f), Some(&mut lines));
    assert_eq!(
        lines,
        vec![
            " 0. priority 0",
            "    group:7",
            "    bucket 0",
            "            set_field:02:00:00:00:00:0b->eth_src",
            "            output:3",
            "    bucket 1",
            "            push_vlan:0x8100",
            "            set_field:4116->vlan_vid",
            "            output:4",
            "    bucket 2",
            "            drop",
        ]
    );
}

#[test]
fn a_label_pushed_after_a_select_group_goes_in_front_of_the_hidden_tag() {
    // Harness seed 2025: one tag in, one pushed, a select group (re-parse: the inner tag is
    // payload), then push_mpls. OVS's datapath puts the label where the parse ended, after
    // the outer tag: the hidden tag's TPID becomes 0x8847 and its TCI follows the label.
    let of = switch(
        &[SELECT],
        &["table=0,priority=10,in_port=1,actions=push_vlan:0x8100,set_field:4106->vlan_vid,group:4,push_mpls:0x8847,output:2"],
    );
    let (out, x) = sent(&of, &udp(&[0xc000]));
    let (_, f) = out.iter().find(|(p, _)| *p == 2).expect("port 2");
    assert_eq!(&f[12..16], &[0x81, 0, 0, 10], "{:?}", x.actions);
    assert_eq!(&f[16..18], &[0x88, 0x47]);
    // Label 0, TC 0, bottom of stack, TTL 64: the parse saw no IP header.
    assert_eq!(&f[18..22], &[0, 0, 0x01, 64]);
    assert_eq!(&f[22..26], &[0xc0, 0, 0x08, 0x00]);
}
