//! Semantics of the Nicira actions OVN uses beyond the OpenFlow set: `note` (nothing),
//! `output:SRC` (the port a register holds, the bits un-wildcarded), `clone(...)` (a copy
//! of packet and pipeline state whose changes do not leak out), `dec_ttl(ids)`.

use ofproto::odp::{apply_all, DpAction};
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

/// An Ethernet/IPv4/UDP frame 10.0.0.1 -> 10.0.0.2 with TTL `ttl`.
fn udp4(ttl: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    f.extend_from_slice(&ETH_TYPE_IPV4.to_be_bytes());
    let mut ip = vec![
        0x45, 0, 0, 28, 0, 0, 0, 0, ttl, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    let c = packet::csum::checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&[0x13, 0x88, 0x13, 0x89, 0, 8, 0, 0]);
    f
}

fn run(of: &Ofproto, f: &[u8]) -> XlateOut {
    let key = flow::extract(f, 1);
    xlate(of, &key, Some(f), None)
}

/// What each output port receives: the packet as the actions before the output left it
/// (nested clones run on copies).
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
                other => apply_all(&mut p, std::slice::from_ref(other)),
            }
        }
        pool.free(p);
    }
    let mut pool = Pool::new(4);
    let mut out = Vec::new();
    walk(&mut pool, f, acts, &mut out);
    out
}

#[test]
fn note_does_nothing() {
    let of = switch(&["in_port=1,actions=note:de.ad.be.ef,output:2"]);
    let x = run(&of, &udp4(64));
    assert_eq!(x.actions, vec![DpAction::Output(2)]);
}

#[test]
fn output_reg_outputs_to_the_registers_port_and_pins_its_bits() {
    let of = switch(&[
        "table=0,in_port=1,actions=load:3->reg1[16..31],output:reg1[16..31]",
        "table=0,in_port=2,actions=output:reg5[0..15]",
    ]);
    let x = run(&of, &udp4(64));
    assert_eq!(x.actions, vec![DpAction::Output(3)]);
    // A register loaded in the pipeline: its bits were written, not read from the packet.
    // A register the packet came with (reg5 = 0 here) is read: its bits are pinned.
    let mut f = udp4(64);
    let key = flow::extract(&f, 2);
    let x = xlate(&of, &key, Some(&f), None);
    assert!(
        x.actions.is_empty(),
        "port 0 outputs nothing: {:?}",
        x.actions
    );
    assert_eq!(x.wc.regs[5] & 0xffff, 0xffff);
    f[0] = 2;
    // 0xfffe in the 16-bit register is OpenFlow 1.0's LOCAL.
    let of = switch(&["in_port=1,actions=load:0xfffe->reg0[0..15],output:reg0[0..15]"]);
    let x = run(&of, &f);
    assert_eq!(
        x.actions,
        vec![DpAction::Output(openflow::actions::OFPP_LOCAL)]
    );
    // More than 16 bits of value: out of range, nothing is output (as OVS).
    let of = switch(&["in_port=1,actions=load:0x10002->reg0,output:reg0"]);
    assert!(run(&of, &f).actions.is_empty());
}

#[test]
fn clone_changes_do_not_leak_out() {
    let of = switch(&[
        "table=0,in_port=1,ip,actions=clone(mod_nw_ttl:9,set_field:7->reg3,mod_dl_dst:02:00:00:00:00:99,output:2),output:3,resubmit(,1)",
        "table=1,reg3=7,actions=output:4",
        "table=1,reg3=0,actions=output:2",
    ]);
    let f = udp4(64);
    let x = run(&of, &f);
    assert!(
        matches!(x.actions.first(), Some(DpAction::Clone(_))),
        "{:?}",
        x.actions
    );
    let got = deliveries(&f, &x.actions);
    let ports: Vec<u32> = got.iter().map(|(p, _)| *p).collect();
    // The clone's register write is not seen by table 1: reg3 is 0 there.
    assert_eq!(ports, vec![2, 3, 2]);
    // The clone's copy has the new TTL and MAC; the packet after it is untouched.
    assert_eq!(got[0].1[22], 9);
    assert_eq!(got[0].1[..6], [2, 0, 0, 0, 0, 0x99]);
    assert_eq!(got[1].1, f);
    assert_eq!(got[2].1, f);
    assert_eq!(x.final_flow.regs[3], 0);
}

#[test]
fn clone_resubmit_and_stack_stay_inside() {
    let of = switch(&[
        "table=0,in_port=1,actions=push:reg0[],clone(pop:reg2[],resubmit(,1)),pop:reg4[],resubmit(,2)",
        "table=1,actions=set_field:5->reg6,output:2",
        "table=2,reg6=0,actions=output:3",
    ]);
    let x = run(&of, &udp4(64));
    // The clone popped its own copy of the stack: the pop after it still finds the entry.
    assert!(!x.failed);
    let got = deliveries(&udp4(64), &x.actions);
    let ports: Vec<u32> = got.iter().map(|(p, _)| *p).collect();
    assert_eq!(ports, vec![2, 3]);
}

#[test]
fn dec_ttl_ids_decrements_and_stops_on_expiry() {
    let of = switch(&["in_port=1,ip,actions=dec_ttl(1,2),output:2"]);
    let f = udp4(5);
    let got = deliveries(&f, &run(&of, &f).actions);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1[22], 4);
    let x = run(&of, &udp4(1));
    assert!(
        !x.actions.iter().any(|a| matches!(a, DpAction::Output(_))),
        "{:?}",
        x.actions
    );
    assert_eq!(x.wc.nw_ttl, 0xff);
}

#[test]
fn action_set_refuses_the_extension_actions() {
    let mut of = switch(&[]);
    for acts in [
        "write_actions(note:01)",
        "write_actions(clone(output:1))",
        "write_actions(output:reg0)",
    ] {
        let r = format!("actions={acts}");
        if let Ok(fm) = parse_flow(&r, FlowModCommand::Add) {
            assert!(of.flow_mod(&fm, 0).is_err(), "{r}");
        }
    }
}
