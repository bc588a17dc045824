//! `Ofproto::flow_mod_owned` (a bundle commit's path) does what `flow_mod` does, and an
//! add keeps the flow_mod's own match and instructions (no copy left behind to free).

use ofproto::Ofproto;
use openflow::oxm::Field;
use openflow::{Action, FlowMod, FlowModCommand, Instruction, Match};

fn flow(cmd: FlowModCommand, port: u32, prio: u16, out: u32) -> FlowMod {
    let mut fm = FlowMod::new(cmd);
    fm.priority = prio;
    fm.cookie = u64::from(port) << 8 | u64::from(out);
    fm.idle_timeout = u16::from(prio.is_multiple_of(3)) * 30;
    fm.match_ = Match::new()
        .with(Field::InPort, u128::from(port))
        .with(Field::EthType, 0x0800)
        .with_masked(Field::Ipv4Dst, 0x0a00_0000 | u128::from(out), 0xffff_ffff);
    fm.instructions = vec![Instruction::ApplyActions(vec![
        Action::output(out),
        Action::output(out + 1),
    ])];
    fm
}

fn ops() -> Vec<FlowMod> {
    let mut v = Vec::new();
    for p in 1..20u32 {
        v.push(flow(FlowModCommand::Add, p, (p % 4) as u16 + 1, p + 100));
    }
    // Replace an identical flow, modify some, delete some, re-add one.
    v.push(flow(FlowModCommand::Add, 3, 4, 103));
    v.push(flow(FlowModCommand::Modify, 5, 2, 7));
    v.push(flow(FlowModCommand::DeleteStrict, 6, 3, 106));
    v.push(flow(FlowModCommand::Add, 6, 3, 9));
    v
}

fn dump(of: &Ofproto) -> Vec<String> {
    let mut v: Vec<String> = of
        .tables()
        .iter()
        .flat_map(|t| t.rules())
        .map(|r| {
            format!(
                "{} {} {} {:?} {} {} {:?} {:?}",
                r.id,
                r.table_id,
                r.priority,
                r.match_,
                r.cookie,
                r.idle_timeout,
                r.flags,
                r.instructions
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn owned_flow_mods_give_the_same_table_without_copying() {
    let mut a = Ofproto::new();
    let mut b = Ofproto::new();
    for fm in ops() {
        let ra = a.flow_mod(&fm, 5).map(|r| (r.added, r.modified, r.deleted));
        let rb = b
            .flow_mod_owned(fm, 5)
            .map(|r| (r.added, r.modified, r.deleted));
        assert_eq!(ra, rb);
    }
    assert_eq!(dump(&a), dump(&b));
    assert!(!dump(&a).is_empty());

    // The added rule holds the very buffers the flow_mod carried.
    let fm = flow(FlowModCommand::Add, 77, 9, 1);
    let instr = fm.instructions.as_ptr();
    b.flow_mod_owned(fm, 6).expect("add");
    let r = b.tables()[0]
        .rules()
        .find(|r| r.priority == 9)
        .expect("the new rule");
    assert_eq!(r.instructions.as_ptr(), instr);

    // A refused flow_mod changes nothing either way.
    let mut bad = flow(FlowModCommand::Add, 1, 1, 1);
    bad.table_id = 255;
    assert_eq!(
        a.flow_mod(&bad, 7).map(|_| ()),
        b.flow_mod_owned(bad, 7).map(|_| ())
    );
}
