//! Fuzzes the ovs-ofctl text syntax: flows, matches, actions and instructions, groups and
//! meters, as `ferrovs add-flow(s)`, `mod-flows`, `del-flows`, `add-group`, `add-meter` and
//! `trace` read them from the command line or from a flows file.
//!
//! Input: UTF-8 text (invalid sequences are replaced), handed whole to every parser with every
//! command. Besides "never panics", each successful parse must survive the formatter: format
//! then parse gives back an equal value (the contract the text module documents), for
//! dump-flows lines too. A flow that validates and encodes for a protocol version must decode
//! from those bytes to the same flow_mod (up to the model's aliases, and in OpenFlow 1.0 where
//! its protocol-less transport port actions allow), and encode again to the same bytes, so
//! the text and wire forms agree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use openflow::actions::{Action, Instruction};
use openflow::messages::{
    BucketCommand, FlowMod, FlowModCommand, FlowModFlags, GroupMod, GroupModCommand,
    MeterModCommand,
};
use openflow::oxm::Field;
use openflow::text;
use openflow::wire::{self, Message};

const FLOW_COMMANDS: [FlowModCommand; 5] = [
    FlowModCommand::Add,
    FlowModCommand::Modify,
    FlowModCommand::ModifyStrict,
    FlowModCommand::Delete,
    FlowModCommand::DeleteStrict,
];

/// `fm` with the model's aliases folded: an exact full-width set_field of `nw_ttl` is
/// `mod_nw_ttl` (OpenFlow 1.0 has no native form and sends it as a Nicira register load,
/// which decodes as the set_field); from OpenFlow 1.5 on, a whole-field `load` (a set_field
/// whose mask is the whole field) is a plain set_field, as OVS sends it; in OpenFlow 1.0 a
/// whole-field set_field and load are one register load; and 1.0's implied `reset_counts`.
fn canonical(mut fm: FlowMod, version: u8) -> FlowMod {
    // OpenFlow 1.0 has no reset_counts bit: every 1.0 add resets counts, nothing else does.
    if version == wire::OFP10 {
        if fm.command == FlowModCommand::Add {
            fm.flags.insert(FlowModFlags::RESET_COUNTS);
        } else {
            fm.flags.remove(FlowModFlags::RESET_COUNTS);
        }
    }
    for i in &mut fm.instructions {
        if let Instruction::ApplyActions(acts) | Instruction::WriteActions(acts) = i {
            fold_aliases(acts, version);
        }
    }
    fm
}

/// [`canonical`]'s folding for one action list, nested `clone` lists included (they are
/// the message version's own actions).
fn fold_aliases(acts: &mut [Action], version: u8) {
    for a in acts.iter_mut() {
        if let Action::Clone(inner) = a {
            fold_aliases(inner, version);
        }
        if let Action::SetField { field, mask, .. } = a {
            let whole = Some(Field::max(*field));
            // OpenFlow 1.0 has no set_field: a whole-field write of a field without a 1.0
            // set action travels as a register load, which decodes as a whole-field load
            // (the same write).
            if (version >= wire::OFP15 || version == wire::OFP10) && *mask == whole {
                *mask = None;
            }
        }
        if let Action::SetField {
            field: Field::NwTtl,
            value,
            mask: None,
        } = *a
        {
            *a = Action::SetNwTtl(value as u8);
        }
    }
}

/// `acts` as ovs-ofctl's text carries them: a plain `controller` as an output, every NAT, nested in `ct` or not, as
/// `openflow::ct::Nat::as_printed` leaves it (the printer, like ovs-ofctl's, drops a range end equal to
/// its start and flags without a range).
fn printed(mut acts: Vec<Action>) -> Vec<Action> {
    for a in &mut acts {
        match a {
            Action::Nat(n) => **n = n.as_printed(),
            Action::Ct(ct) => ct.actions = printed(std::mem::take(&mut ct.actions)),
            Action::Clone(inner) => *inner = printed(std::mem::take(inner)),
            // ovs-ofctl prints a `controller(...)` that says no more than an output to the
            // controller (`controller(userdata=)`) as that output, and reads it back so.
            Action::Controller(c) if c.is_plain() => {
                *a = Action::Output {
                    port: openflow::actions::OFPP_CONTROLLER,
                    max_len: c.max_len,
                }
            }
            _ => {}
        }
    }
    acts
}

fn printed_instructions(mut insts: Vec<Instruction>) -> Vec<Instruction> {
    for i in &mut insts {
        if let Instruction::ApplyActions(a) | Instruction::WriteActions(a) = i {
            *a = printed(std::mem::take(a));
        }
    }
    insts
}

fn printed_flow(mut fm: FlowMod) -> FlowMod {
    fm.instructions = printed_instructions(fm.instructions);
    fm
}

fn printed_group(mut g: GroupMod) -> GroupMod {
    for b in &mut g.buckets {
        b.actions = printed(std::mem::take(&mut b.actions));
    }
    g
}

fn flows(s: &str) {
    for c in FLOW_COMMANDS {
        let Ok(fm) = text::parse_flow(s, c) else {
            continue;
        };
        let out = text::format_flow(&fm);
        let fm = printed_flow(fm);
        assert_eq!(text::parse_flow(&out, c).as_ref(), Ok(&fm), "text: {out}");
        if c != FlowModCommand::Add {
            continue;
        }
        let line = text::format_flow_stats(&fm, &text::FlowCounters::default());
        assert_eq!(text::parse_flow(&line, c).as_ref(), Ok(&fm), "text: {line}");
        if fm.validate().is_err() {
            continue;
        }
        // OpenFlow 1.0's set_tp_src/dst name no protocol, so a flow that sets a port of a
        // protocol its match does not fix (which ofproto refuses anyway) cannot come back
        // the same; it must still be a fixed point from its first encoding on.
        let consistent = fm
            .instructions
            .iter()
            .flat_map(|i| match i {
                Instruction::ApplyActions(a) | Instruction::WriteActions(a) => &a[..],
                _ => &[],
            })
            .filter_map(Action::written_field)
            .all(|f| fm.match_.prereqs_met_deep(f));
        let msg = Message::FlowMod(fm);
        for v in wire::VERSIONS {
            if let Ok(bytes) = wire::encode(&msg, v, 7) {
                let (back, n) = wire::decode(&bytes).expect("an encoded flow_mod decodes");
                assert_eq!(n, bytes.len());
                if v != wire::OFP10 || consistent {
                    let (Message::FlowMod(a), Message::FlowMod(b)) = (&back, &msg) else {
                        panic!("version {v}: a flow_mod decoded as {back:?}");
                    };
                    assert_eq!(
                        canonical(a.clone(), v),
                        canonical(b.clone(), v),
                        "version {v}"
                    );
                }
                let again = wire::encode(&back, v, 7).expect("a decoded flow_mod encodes");
                assert_eq!(again, bytes, "version {v}");
            }
        }
    }
}

fn matches_and_actions(s: &str) {
    if let Ok(m) = text::parse_match(s) {
        let out = text::format_match(&m, None);
        assert_eq!(text::parse_match(&out).as_ref(), Ok(&m), "text: {out}");
    }
    if let Ok(a) = text::parse_actions(s, None) {
        let out = text::format_actions(&a);
        let a = printed(a);
        assert_eq!(
            text::parse_actions(&out, None).as_ref(),
            Ok(&a),
            "text: {out}"
        );
    }
    if let Ok(i) = text::parse_instructions(s, None) {
        let out = text::format_instructions(&i);
        let i = printed_instructions(i);
        assert_eq!(
            text::parse_instructions(&out, None).as_ref(),
            Ok(&i),
            "text: {out}"
        );
    }
    if let Some(p) = text::parse_port(s) {
        assert_eq!(text::parse_port(&text::format_port(p)), Some(p));
    }
}

fn groups_and_meters(s: &str) {
    for c in [
        GroupModCommand::Add,
        GroupModCommand::Modify,
        GroupModCommand::Delete,
    ] {
        if let Ok(g) = text::parse_group(s, c) {
            let out = text::format_group(&g);
            let g = printed_group(g);
            assert_eq!(text::parse_group(&out, c).as_ref(), Ok(&g), "text: {out}");
        }
    }
    for c in [BucketCommand::Insert, BucketCommand::Remove] {
        let _ = text::parse_group_buckets(s, c);
    }
    for c in [
        MeterModCommand::Add,
        MeterModCommand::Modify,
        MeterModCommand::Delete,
    ] {
        if let Ok(m) = text::parse_meter(s, c) {
            let out = text::format_meter(&m);
            assert_eq!(text::parse_meter(&out, c).as_ref(), Ok(&m), "text: {out}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    flows(&s);
    matches_and_actions(&s);
    groups_and_meters(&s);
});
