//! `check_pkt_larger(LEN)->DST` in the pipeline: the translation does not know the
//! packet's length, so what follows the action is translated for both answers and the
//! datapath picks per packet (`DpAction::CheckPktLen`). One translation, and so one cached
//! megaflow, is right for small and large packets alike.

use ofproto::odp::{apply_all, DpAction};
use ofproto::odp_pktlen::PktLenCheck;
use ofproto::switch::OfPort;
use ofproto::{xlate, Ofproto, XlateOut};
use openflow::text::parse_flow;
use openflow::FlowModCommand;
use packet::flow::{self, ETH_TYPE_IPV4};
use packet::Pool;

fn switch(rules: &[&str]) -> Ofproto {
    let mut of = Ofproto::new();
    for p in 1..=4 {
        of.set_port(OfPort {
            ofport: p,
            name: format!("p{p}"),
            live: true,
            no_flood: false,
            admin_down: false,
        });
    }
    for r in rules {
        let fm = parse_flow(r, FlowModCommand::Add).unwrap_or_else(|e| panic!("{r}: {e}"));
        of.flow_mod(&fm, 0).unwrap_or_else(|e| panic!("{r}: {e:?}"));
    }
    of
}

/// An Ethernet/IPv4/UDP frame 10.0.0.1 -> 10.0.0.2 with `payload` bytes of data (padded
/// to Ethernet's 60-byte minimum, which `check_pkt_len` does not count).
fn udp4(payload: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    f.extend_from_slice(&ETH_TYPE_IPV4.to_be_bytes());
    let total = (28 + payload) as u16;
    let t = total.to_be_bytes();
    let mut ip = vec![
        0x45, 0, t[0], t[1], 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    let c = packet::csum::checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    let u = (8 + payload as u16).to_be_bytes();
    f.extend_from_slice(&[0x13, 0x88, 0x13, 0x89, u[0], u[1], 0, 0]);
    f.resize(14 + usize::from(total), 0xab);
    if f.len() < 60 {
        f.resize(60, 0);
    }
    f
}

fn run(of: &Ofproto, f: &[u8]) -> XlateOut {
    let key = flow::extract(f, 1);
    xlate(of, &key, Some(f), None)
}

/// What each output port receives when `f` goes through `acts`, as the datapath runs
/// them: clones and the chosen length branch on copies.
fn deliveries(f: &[u8], acts: &[DpAction]) -> Vec<(u32, Vec<u8>)> {
    fn walk(pool: &mut Pool, frame: &[u8], acts: &[DpAction], out: &mut Vec<(u32, Vec<u8>)>) {
        let mut p = pool.alloc().expect("buffer");
        p.set_frame(frame);
        for a in acts {
            match a {
                DpAction::Output(port) => out.push((*port, p.data().to_vec())),
                DpAction::Clone(inner) => {
                    let now = p.data().to_vec();
                    walk(pool, &now, inner, out);
                }
                DpAction::CheckPktLen(c) => {
                    let now = p.data().to_vec();
                    walk(pool, &now, c.branch(&now), out);
                }
                other => apply_all(&mut p, std::slice::from_ref(other)),
            }
        }
        pool.free(p);
    }
    let mut pool = Pool::new(8);
    let mut out = Vec::new();
    walk(&mut pool, f, acts, &mut out);
    out
}

fn ports(f: &[u8], acts: &[DpAction]) -> Vec<u32> {
    deliveries(f, acts).into_iter().map(|(p, _)| p).collect()
}

fn check(pkt_len: u16, greater: Vec<DpAction>, le: Vec<DpAction>) -> DpAction {
    DpAction::CheckPktLen(Box::new(PktLenCheck {
        pkt_len,
        greater,
        le,
    }))
}

/// OVN's shape: the bit set by the check, the next table matching on it.
const OVN_LIKE: &[&str] = &[
    "table=0,in_port=1,ip,actions=check_pkt_larger(100)->NXM_NX_REG9[1],resubmit(,1)",
    "table=1,priority=10,reg9=0x2/0x2,actions=output:2",
    "table=1,priority=5,actions=output:3",
];

#[test]
fn both_answers_are_translated_and_the_datapath_picks() {
    let of = switch(OVN_LIKE);
    let small = udp4(20);
    let large = udp4(200);
    let x = run(&of, &small);
    assert_eq!(
        x.actions,
        vec![check(
            100,
            vec![DpAction::Output(2)],
            vec![DpAction::Output(3)]
        )]
    );
    // The translation (actions and megaflow mask) does not depend on the length...
    let y = run(&of, &large);
    assert_eq!(x.actions, y.actions);
    assert_eq!(x.wc, y.wc);
    assert!(!x.uncacheable);
    // ...and the one cached result sends each packet where its length says.
    assert_eq!(ports(&small, &x.actions), vec![3]);
    assert_eq!(ports(&large, &x.actions), vec![2]);
    // Exactly at the limit is not larger: 14 + 28 + 58 = 100 bytes.
    assert_eq!(ports(&udp4(58), &x.actions), vec![3]);
    assert_eq!(ports(&udp4(59), &x.actions), vec![2]);
}

/// The rest of the rule's instructions run in the branches: a `goto_table` and the
/// action set written after the check.
#[test]
fn the_rest_of_the_rule_runs_in_each_branch() {
    let of = switch(&[
        "table=0,actions=check_pkt_larger(100)->reg0[0],write_actions(output:4),goto_table:1",
        "table=1,reg0=1,actions=mod_dl_dst:02:00:00:00:00:09,output:2",
        "table=1,reg0=0,actions=output:3",
    ]);
    let x = run(&of, &udp4(20));
    assert_eq!(
        x.actions,
        vec![check(
            100,
            vec![
                DpAction::SetEthDst([2, 0, 0, 0, 0, 9]),
                DpAction::Output(2),
                DpAction::Output(4)
            ],
            vec![DpAction::Output(3), DpAction::Output(4)]
        )]
    );
    let large = deliveries(&udp4(200), &x.actions);
    assert_eq!(large.len(), 2);
    assert_eq!(large[0].1[..6], [2, 0, 0, 0, 0, 9]);
    assert_eq!(large[1].1[..6], [2, 0, 0, 0, 0, 9], "the set runs after");
    assert_eq!(ports(&udp4(20), &x.actions), vec![3, 4]);
}

/// A `resubmit` that led to the check goes on after it, with the flow and the packet as
/// they were before it (what the branches did is theirs), as in OVS.
#[test]
fn the_resubmitting_table_goes_on_unchanged() {
    let of = switch(&[
        "table=0,actions=resubmit(,1),output:4",
        "table=1,actions=check_pkt_larger(100)->reg0[0],mod_dl_dst:02:00:00:00:00:09,resubmit(,2)",
        "table=2,reg0=1,actions=output:2",
        "table=2,reg0=0,actions=output:3",
    ]);
    let x = run(&of, &udp4(300));
    let set = DpAction::SetEthDst([2, 0, 0, 0, 0, 9]);
    assert_eq!(
        x.actions,
        vec![
            check(
                100,
                vec![set.clone(), DpAction::Output(2)],
                vec![set, DpAction::Output(3)]
            ),
            DpAction::Output(4)
        ]
    );
    let d = deliveries(&udp4(300), &x.actions);
    assert_eq!(d[0].0, 2);
    assert_eq!(d[0].1[..6], [2, 0, 0, 0, 0, 9]);
    assert_eq!(d[1].0, 4);
    assert_eq!(
        d[1].1[..6],
        [2, 0, 0, 0, 0, 2],
        "the check's rewrite stays inside"
    );
    // reg0 is back to what it was (0) after the check: the final flow says so.
    assert_eq!(x.final_flow.regs[0], 0);
}

/// Inside `clone`, the branches hold the rest of the clone's list.
#[test]
fn inside_clone() {
    let of = switch(&[
        "actions=clone(check_pkt_larger(100)->reg1[3],resubmit(,1)),output:4",
        "table=1,reg1=0x8,actions=output:2",
        "table=1,reg1=0,actions=output:3",
    ]);
    let x = run(&of, &udp4(20));
    assert_eq!(
        x.actions,
        vec![
            DpAction::Clone(vec![check(
                100,
                vec![DpAction::Output(2)],
                vec![DpAction::Output(3)]
            )]),
            DpAction::Output(4)
        ]
    );
    assert_eq!(ports(&udp4(500), &x.actions), vec![2, 4]);
}

/// A rewrite of a packet field's bit goes into each branch as a datapath write.
#[test]
fn a_packet_bit_as_destination() {
    let of = switch(&["actions=check_pkt_larger(100)->eth_src[0],output:2"]);
    let x = run(&of, &udp4(20));
    assert_eq!(
        x.actions,
        vec![check(
            100,
            vec![DpAction::SetEthSrc([2, 0, 0, 0, 0, 1]), DpAction::Output(2)],
            vec![DpAction::SetEthSrc([2, 0, 0, 0, 0, 0]), DpAction::Output(2)]
        )]
    );
}
