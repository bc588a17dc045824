//! Nicira `controller(...)` in the pipeline: a packet-in with the action's reason, id, user
//! data and meter; with `pause`, the pipeline stops and its rest travels as a continuation,
//! which [`ofproto::xlate::resume`] runs on the packet and fields the controller sends back
//! (as ovn-controller's pinctrl does for DHCP: rewrite the packet, set a register bit,
//! resume).

use ofproto::continuation::Continuation;
use ofproto::odp::{apply_all, DpAction, PinExtra};
use ofproto::switch::OfPort;
use ofproto::xlate::resume;
use ofproto::{xlate, Ofproto, XlateOut};
use openflow::messages::err::nx_tlv;
use openflow::text::parse_flow;
use openflow::{FlowModCommand, OfError};
use packet::flow::{self, FlowKey, ETH_TYPE_IPV4};
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

/// An Ethernet/IPv4/UDP frame 10.0.0.1 -> 10.0.0.2.
fn udp4() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    f.extend_from_slice(&ETH_TYPE_IPV4.to_be_bytes());
    let mut ip = vec![
        0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
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

/// What each output port receives.
fn deliveries(f: &[u8], acts: &[DpAction]) -> Vec<(u32, Vec<u8>)> {
    let mut pool = Pool::new(2);
    let mut p = pool.alloc().expect("buffer");
    p.set_frame(f);
    let mut out = Vec::new();
    for a in acts {
        match a {
            DpAction::Output(port) => out.push((*port, p.data().to_vec())),
            other => apply_all(&mut p, std::slice::from_ref(other)),
        }
    }
    pool.free(p);
    out
}

/// The packet-in a translation ends with: (its extra, the pipeline registers).
fn paused(x: &XlateOut) -> (PinExtra, [u32; flow::N_REGS], u8) {
    match x.actions.last() {
        Some(DpAction::Controller {
            extra: Some(e),
            meta,
            table_id,
            ..
        }) => ((**e).clone(), meta.regs, *table_id),
        other => panic!("no packet-in last: {other:?} in {:?}", x.actions),
    }
}

#[test]
fn packet_in_carries_reason_id_user_data_and_meter() {
    let of = switch(&[
        "in_port=1,actions=controller(reason=no_match,max_len=64,id=5,userdata=01.02,meter_id=3),output:2",
    ]);
    let x = run(&of, &udp4());
    let pin = DpAction::Controller {
        max_len: 64,
        reason: ofproto::odp::PacketInReason::Action,
        table_id: 0,
        cookie: 0,
        meta: Box::default(),
        extra: Some(Box::new(PinExtra {
            reason: 0,
            controller_id: 5,
            userdata: vec![1, 2],
            continuation: vec![],
        })),
    };
    // The meter limits the packet-in only: clone(meter, controller), then the output.
    assert_eq!(
        x.actions,
        vec![
            DpAction::Clone(vec![DpAction::Meter(3), pin]),
            DpAction::Output(2)
        ]
    );
    assert!(!x.uncacheable);
}

/// The OVN pinctrl shape: `controller(userdata=...,pause)` then more actions, reached
/// through resubmits, with a register stack and an action set; the controller rewrites the
/// packet and sets a register before resuming.
#[test]
fn pause_then_resume_runs_the_rest_with_the_controllers_packet() {
    let of = switch(&[
        "table=0,in_port=1,actions=set_field:7->reg1,push:NXM_NX_REG1[],resubmit(,1),output:3",
        "table=1,cookie=0x11,actions=controller(userdata=aa.bb,pause),set_field:1->reg0,resubmit(,2),write_actions(output:4)",
        "table=2,reg0=1,reg2=9,actions=pop:NXM_NX_REG3[],resubmit(,3)",
        "table=3,reg3=7,actions=output:2",
    ]);
    let f = udp4();
    let x = run(&of, &f);
    // Nothing but the packet-in: no output, the action set does not run.
    assert_eq!(x.actions.len(), 1, "{:?}", x.actions);
    assert!(x.uncacheable);
    let (extra, regs, table) = paused(&x);
    assert_eq!(extra.userdata, vec![0xaa, 0xbb]);
    assert_eq!(extra.reason, 1);
    assert_eq!((regs[1], table), (7, 1));
    assert!(!extra.continuation.is_empty());
    let cont = Continuation::decode(&extra.continuation, &of.recirc.key()).expect("decodes");
    assert_eq!(cont.stack, vec![7]);
    assert_eq!(cont.frames.len(), 2);
    assert_eq!((cont.frames[0].table_id, cont.frames[0].cookie), (1, 0x11));
    assert_eq!((cont.frames[1].table_id, cont.frames[1].depth), (0, 0));

    // The controller changes the destination MAC and sets reg2, then resumes.
    let mut g = f.clone();
    g[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 0x99]);
    let mut key: FlowKey = flow::extract(&g, 1);
    key.regs[1] = 7;
    key.regs[2] = 9;
    let y = resume(&of, &key, Some(&g), &cont, None);
    assert!(!y.failed, "{:?}", y.actions);
    // Table 3 via the stack, then table 0's output, then the action set.
    let got = deliveries(&g, &y.actions);
    let ports: Vec<u32> = got.iter().map(|(p, _)| *p).collect();
    assert_eq!(ports, vec![2, 3, 4], "{:?}", y.actions);
    assert!(got.iter().all(|(_, b)| *b == g));
    // Without the controller's register the rest goes elsewhere: the fields are its.
    let mut k2 = flow::extract(&g, 1);
    k2.regs[1] = 7;
    let z = resume(&of, &k2, Some(&g), &cont, None);
    let ports: Vec<u32> = deliveries(&g, &z.actions).iter().map(|(p, _)| *p).collect();
    assert_eq!(ports, vec![3, 4]);
}

/// A second pause while resuming freezes what the first continuation still had to do.
#[test]
fn pause_again_while_resuming() {
    let of = switch(&[
        "table=0,in_port=1,actions=resubmit(,1),output:3",
        "table=1,actions=controller(userdata=01,pause),resubmit(,2),output:4",
        "table=2,actions=controller(userdata=02,pause),output:2",
    ]);
    let f = udp4();
    let x = run(&of, &f);
    let (e1, _, _) = paused(&x);
    let c1 = Continuation::decode(&e1.continuation, &of.recirc.key()).unwrap();
    let key = flow::extract(&f, 1);
    let y = resume(&of, &key, Some(&f), &c1, None);
    let (e2, _, t2) = paused(&y);
    assert_eq!((e2.userdata.as_slice(), t2), (&[2u8][..], 2));
    let c2 = Continuation::decode(&e2.continuation, &of.recirc.key()).unwrap();
    assert_eq!(
        c2.frames.iter().map(|f| f.table_id).collect::<Vec<_>>(),
        vec![2, 1, 0]
    );
    let z = resume(&of, &key, Some(&f), &c2, None);
    assert_eq!(
        z.actions,
        vec![
            DpAction::Output(2),
            DpAction::Output(4),
            DpAction::Output(3)
        ]
    );
}

/// Only the bridge (and process) that paused can resume: another bridge's key is
/// `NXR_STALE`, as OVS answers a continuation it did not make.
#[test]
fn another_bridges_continuation_is_stale() {
    let rules = ["in_port=1,actions=controller(pause),output:2"];
    let of = switch(&rules);
    let other = switch(&rules);
    let x = run(&of, &udp4());
    let (e, _, _) = paused(&x);
    assert!(Continuation::decode(&e.continuation, &of.recirc.key()).is_ok());
    assert_eq!(
        Continuation::decode(&e.continuation, &other.recirc.key()),
        Err(OfError::nx(nx_tlv::RESUME_STALE))
    );
}

/// Inside a clone there is no pipeline to freeze: a plain packet-in, and the actions go on.
#[test]
fn no_pause_inside_clone() {
    let of = switch(&["in_port=1,actions=clone(controller(userdata=01,pause),output:3),output:2"]);
    let x = run(&of, &udp4());
    match x.actions.as_slice() {
        [DpAction::Clone(inner), DpAction::Output(2)] => match inner.as_slice() {
            [DpAction::Controller { extra: Some(e), .. }, DpAction::Output(3)] => {
                assert!(e.continuation.is_empty());
                assert_eq!(e.userdata, vec![1]);
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

/// OVN sends a packet back out its input port (pinctrl's DHCP offer, ARP and ND answers) by
/// setting `in_port` to ANY around the output: the output is skipped only for the port the
/// packet is in now, as in OVS (the port it came in on no longer counts).
#[test]
fn output_to_the_input_port_after_in_port_changes() {
    let of = switch(&[
        "in_port=1,actions=push:NXM_OF_IN_PORT[],set_field:ANY->in_port,output:1,pop:NXM_OF_IN_PORT[],output:1,in_port",
    ]);
    let x = run(&of, &udp4());
    assert_eq!(x.actions, vec![DpAction::Output(1), DpAction::Output(1)]);
}

/// `dec_ttl(ids)`: a TTL expiry sends one invalid-TTL packet-in per listed controller id
/// (OVS's `dec_ttl_cnt_ids`), routed like a `controller(id=N)`; plain `dec_ttl` to id 0,
/// `dec_ttl()` to none.
#[test]
fn ttl_expiry_packet_ins_go_to_each_listed_controller_id() {
    let ids = |acts: &str| {
        let mut of = switch(&[&format!("in_port=1,ip,actions={acts},output:2")]);
        of.invalid_ttl_to_controller = true;
        let mut f = udp4();
        f[22] = 1;
        run(&of, &f)
            .actions
            .iter()
            .map(|a| match a {
                DpAction::Controller {
                    reason: ofproto::odp::PacketInReason::InvalidTtl,
                    extra,
                    ..
                } => extra.as_ref().map_or(0, |e| {
                    assert_eq!(e.reason, 2);
                    e.controller_id
                }),
                other => panic!("{other:?}"),
            })
            .collect::<Vec<u16>>()
    };
    assert_eq!(ids("dec_ttl(1,2)"), vec![1, 2]);
    assert_eq!(ids("dec_ttl(0,7)"), vec![0, 7]);
    assert_eq!(ids("dec_ttl"), vec![0]);
    // An empty list (OVS decodes and prints it `dec_ttl()`) notifies nobody.
    let mut of = switch(&[]);
    of.invalid_ttl_to_controller = true;
    let mut fm = parse_flow("in_port=1,ip,actions=output:2", FlowModCommand::Add).unwrap();
    fm.instructions = vec![openflow::Instruction::ApplyActions(vec![
        openflow::Action::DecTtlIds(vec![]),
        openflow::Action::output(2),
    ])];
    of.flow_mod(&fm, 0).unwrap();
    let mut f = udp4();
    f[22] = 1;
    assert!(run(&of, &f).actions.is_empty());
}

/// With a controller meter (`OFPM_CONTROLLER`, 0xfffffffe) configured, every packet-in
/// without a meter of its own goes through it (a clone, so only packet-ins are metered); a
/// `controller(meter_id=N)` uses N; a paused one is not metered, as in OVS.
#[test]
fn controller_meter_on_the_packet_in_path() {
    use openflow::messages::{MeterModCommand, OFPM_CONTROLLER};
    let mut of = switch(&[
        "table=0,in_port=1,actions=controller(userdata=01),controller(meter_id=3),CONTROLLER:64,output:2",
        "table=0,in_port=2,actions=controller(userdata=02,pause)",
    ]);
    let mm = openflow::text::parse_meter(
        "meter=4294967294,pktps,bands=type=drop,rate=1",
        MeterModCommand::Add,
    )
    .expect("meter parses");
    assert_eq!(mm.meter_id, OFPM_CONTROLLER);
    of.meter_mod(&mm, 0).expect("controller meter");
    let meters = |x: &XlateOut| {
        x.actions
            .iter()
            .map(|a| match a {
                DpAction::Clone(v) => match v.as_slice() {
                    [DpAction::Meter(m), DpAction::Controller { .. }] => Some(*m),
                    other => panic!("{other:?}"),
                },
                DpAction::Controller { .. } | DpAction::Output(_) => None,
                other => panic!("{other:?}"),
            })
            .collect::<Vec<_>>()
    };
    let x = run(&of, &udp4());
    assert_eq!(
        meters(&x),
        vec![Some(OFPM_CONTROLLER), Some(3), Some(OFPM_CONTROLLER), None]
    );
    let key = flow::extract(&udp4(), 2);
    let y = xlate(&of, &key, Some(&udp4()), None);
    assert_eq!(meters(&y), vec![None]);
}
