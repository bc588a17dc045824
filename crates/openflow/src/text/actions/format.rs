//! Actions and instructions printed as ovs-ofctl prints them (OpenFlow names; see the parent
//! module).

use super::*;

/// `controller(...)` as ovs-ofctl prints it: options that differ from the defaults, in a
/// fixed order, or `CONTROLLER:max_len` when only the length could.
pub(super) fn format_controller(c: &crate::controller::Controller) -> String {
    if c.is_plain() {
        return format!("CONTROLLER:{}", c.max_len);
    }
    let mut v = Vec::new();
    if c.reason != crate::controller::OFPR_ACTION {
        v.push(format!(
            "reason={}",
            crate::controller::reason_name(c.reason)
        ));
    }
    if c.max_len != OFPCML_NO_BUFFER {
        v.push(format!("max_len={}", c.max_len));
    }
    if c.controller_id != 0 {
        v.push(format!("id={}", c.controller_id));
    }
    if !c.userdata.is_empty() {
        let hex: Vec<String> = c.userdata.iter().map(|x| format!("{x:02x}")).collect();
        v.push(format!("userdata={}", hex.join(".")));
    }
    if c.pause {
        v.push("pause".into());
    }
    if c.meter_id != crate::controller::NX_CTLR_NO_METER {
        v.push(format!("meter_id={}", c.meter_id));
    }
    format!("controller({})", v.join(","))
}

/// Format one action as ovs-ofctl does (OpenFlow names; see the module documentation).
pub fn format_action(a: &Action) -> String {
    match *a {
        Action::Ct(ref ct) => crate::text::ct::format_ct(ct),
        Action::Nat(ref n) => crate::text::ct::format_nat(n),
        Action::CtClear => "ct_clear".into(),
        Action::Sample(ref s) => crate::text::sample::format_sample(s),
        Action::Note(ref b) => {
            let hex: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
            format!("note:{}", hex.join("."))
        }
        Action::OutputReg { ref src, .. } => format!("output:{}", format_subfield(src)),
        Action::Clone(ref inner) => {
            let v: Vec<String> = inner.iter().map(format_action).collect();
            format!("clone({})", v.join(","))
        }
        Action::DecTtlIds(ref ids) => {
            let v: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
            format!("dec_ttl({})", v.join(","))
        }
        Action::Controller(ref c) => format_controller(c),
        Action::Learn(ref l) => crate::text::learn::format_learn(l),
        Action::CheckPktLarger { pkt_len, ref dst } => {
            crate::text::pktlen::format_check_pkt_larger(pkt_len, dst)
        }
        Action::Output { port, max_len } => {
            if port == OFPP_CONTROLLER {
                format!("CONTROLLER:{max_len}")
            } else if port < OFPP_MAX {
                format!("output:{port}")
            } else {
                let name = format_port(port);
                if name.bytes().all(|b| b.is_ascii_digit()) {
                    format!("output:{name}")
                } else {
                    name
                }
            }
        }
        Action::Group(g) => format!("group:{g}"),
        Action::SetQueue(q) => format!("set_queue:{q}"),
        Action::PopQueue => "pop_queue".into(),
        Action::Enqueue { port, queue } => format!("enqueue:{}:{queue}", format_port(port)),
        Action::Meter(m) => format!("meter:{m}"),
        Action::SetMplsTtl(t) => format!("set_mpls_ttl:{t}"),
        Action::DecMplsTtl => "dec_mpls_ttl".into(),
        Action::SetNwTtl(t) => format!("mod_nw_ttl:{t}"),
        Action::DecNwTtl => "dec_ttl".into(),
        Action::CopyTtlOut => "copy_ttl_out".into(),
        Action::CopyTtlIn => "copy_ttl_in".into(),
        Action::PushVlan(t) => format!("push_vlan:0x{t:04x}"),
        Action::PopVlan => "pop_vlan".into(),
        Action::PushMpls(t) => format!("push_mpls:0x{t:04x}"),
        Action::PopMpls(t) => format!("pop_mpls:0x{t:04x}"),
        Action::PushPbb(t) => format!("push_pbb:0x{t:04x}"),
        Action::PopPbb => "pop_pbb".into(),
        Action::SetField {
            field,
            value,
            mask: Some(m),
        } if m == field.max() || field == Field::InPort => match contiguous(m) {
            Some(sf) => {
                let sf = Subfield { field, ..sf };
                let v = value >> sf.ofs;
                let v = if v == 0 {
                    "0".to_string()
                } else {
                    format!("{v:#x}")
                };
                format!("load:{v}->{}", format_subfield(&sf))
            }
            None => format!("set_field:{:#x}/{m:#x}->{}", value, field.name()),
        },
        Action::SetField { field, value, mask } => {
            format!(
                "set_field:{}->{}",
                format_value(field, value, mask),
                field.name()
            )
        }
        Action::Move { src, dst } => {
            format!("move:{}->{}", format_subfield(&src), format_subfield(&dst))
        }
        Action::StackPush(sf) => format!("push:{}", format_subfield(&sf)),
        Action::StackPop(sf) => format!("pop:{}", format_subfield(&sf)),
        // With `ct` and no table OVS prints `resubmit:PORT`, which reads back without
        // `ct`; ferrovs keeps it: `resubmit(PORT,,ct)`.
        Action::Resubmit { in_port, table, ct } => match (in_port, table) {
            (Some(p), None) if !ct => format!("resubmit:{}", format_port(p)),
            (p, t) => format!(
                "resubmit({},{}{})",
                p.map(format_port).unwrap_or_default(),
                t.map(|t| t.to_string()).unwrap_or_default(),
                if ct { ",ct" } else { "" }
            ),
        },
    }
}

/// Format an action list, `drop` when empty.
pub fn format_actions(actions: &[Action]) -> String {
    if actions.is_empty() {
        return "drop".into();
    }
    actions
        .iter()
        .map(format_action)
        .collect::<Vec<_>>()
        .join(",")
}

/// Format instructions as a flow's `actions=` text, `drop` when there are none.
pub fn format_instructions(insts: &[Instruction]) -> String {
    let mut items: Vec<String> = Vec::new();
    for i in insts {
        match i {
            Instruction::Meter(m) => items.push(format!("meter:{m}")),
            Instruction::ApplyActions(a) => items.extend(a.iter().map(format_action)),
            Instruction::ClearActions => items.push("clear_actions".into()),
            Instruction::WriteActions(a) => {
                let inner: Vec<String> = a.iter().map(format_action).collect();
                items.push(format!("write_actions({})", inner.join(",")));
            }
            Instruction::WriteMetadata { value, mask } => {
                if *mask == u64::MAX {
                    items.push(format!("write_metadata:0x{value:x}"));
                } else {
                    items.push(format!("write_metadata:0x{value:x}/0x{mask:x}"));
                }
            }
            Instruction::GotoTable(t) => items.push(format!("goto_table:{t}")),
        }
    }
    if items.is_empty() {
        "drop".into()
    } else {
        items.join(",")
    }
}
