//! Action sets, run as OVS 3.1 runs them: the one `write_actions` accumulates (executed
//! when the pipeline ends) and every group bucket (OVS treats a bucket's actions as an
//! action set too, whatever the group type).
//!
//! [`as_list`] turns a set, kept as written, into the list that runs:
//! 1. the header actions, the last of each kind, in OpenFlow's order: `copy_ttl_in`,
//!    `pop_vlan`, `pop_mpls`, `pop_pbb`, `push_mpls`, `push_pbb`, `push_vlan`,
//!    `copy_ttl_out`, `dec_ttl`, `dec_mpls_ttl`;
//! 2. every field write (`set_field`, `move`, the `mod_*` and TTL sets, `set_queue`) in
//!    the order written, none dropped;
//! 3. a meter, the last one (OVS refuses meters in a set; ferrovs runs it before the
//!    final action, where OpenFlow 1.5 puts it);
//! 4. one final action: a group if there is one, else an output, else a resubmit, else
//!    `ct_clear`, else `ct`, the last written of that kind.
//!
//! A set without a final action runs nothing at all: its rewrites would reach no port.
//! Stack actions have no place in a set (the openflow crate refuses them) and are left out.
//!
//! Threading: pure functions.

use openflow::Action;

/// The header actions' places, in execution order (see the module documentation).
fn header_slot(a: &Action) -> Option<usize> {
    Some(match a {
        Action::CopyTtlIn => 0,
        Action::PopVlan => 1,
        Action::PopMpls(_) => 2,
        Action::PopPbb => 3,
        Action::PushMpls(_) => 4,
        Action::PushPbb(_) => 5,
        Action::PushVlan(_) => 6,
        Action::CopyTtlOut => 7,
        Action::DecNwTtl | Action::DecTtlIds(_) => 8,
        Action::DecMplsTtl => 9,
        _ => return None,
    })
}

const N_HEADER_SLOTS: usize = 10;

/// The final actions' ranks: the highest present runs.
fn final_rank(a: &Action) -> Option<u8> {
    Some(match a {
        Action::Ct(_) => 1,
        Action::CtClear => 2,
        Action::Resubmit { .. } => 3,
        Action::Output { .. } => 4,
        Action::Group(_) => 5,
        _ => return None,
    })
}

fn is_write(a: &Action) -> bool {
    matches!(
        a,
        Action::SetField { .. }
            | Action::Move { .. }
            | Action::SetMplsTtl(_)
            | Action::SetNwTtl(_)
            | Action::SetQueue(_)
    )
}

/// The actions an action set runs, in order (see the module documentation).
pub(super) fn as_list(set: &[Action]) -> Vec<Action> {
    let mut slots: [Option<&Action>; N_HEADER_SLOTS] = [None; N_HEADER_SLOTS];
    let mut meter = None;
    let mut last: Option<(u8, &Action)> = None;
    for a in set {
        if let Some(i) = header_slot(a) {
            slots[i] = Some(a);
        } else if let Some(r) = final_rank(a) {
            if last.is_none_or(|(lr, _)| r >= lr) {
                last = Some((r, a));
            }
        } else if matches!(a, Action::Meter(_)) {
            meter = Some(a);
        }
    }
    let Some((_, fin)) = last else {
        return Vec::new();
    };
    let mut out: Vec<Action> = slots.iter().flatten().map(|a| (*a).clone()).collect();
    out.extend(set.iter().filter(|a| is_write(a)).cloned());
    out.extend(meter.cloned());
    out.push(fin.clone());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::oxm::Field;

    fn out(p: u32) -> Action {
        Action::Output {
            port: p,
            max_len: 0,
        }
    }

    fn reg(v: u128) -> Action {
        Action::SetField {
            field: Field::Reg0,
            value: v,
            mask: None,
        }
    }

    #[test]
    fn headers_in_order_writes_as_written_one_final_action() {
        let set = [
            out(2),
            reg(1),
            Action::PushVlan(0x8100),
            Action::DecNwTtl,
            Action::PopVlan,
            reg(2),
            out(3),
        ];
        assert_eq!(
            as_list(&set),
            vec![
                Action::PopVlan,
                Action::PushVlan(0x8100),
                Action::DecNwTtl,
                reg(1),
                reg(2),
                out(3)
            ]
        );
    }

    #[test]
    fn a_group_wins_over_an_output_and_an_output_over_a_resubmit() {
        let resubmit = Action::Resubmit {
            in_port: None,
            table: Some(1),
            ct: false,
        };
        assert_eq!(
            as_list(&[out(2), Action::Group(1), out(3)]),
            vec![Action::Group(1)]
        );
        assert_eq!(as_list(&[out(2), resubmit.clone()]), vec![out(2)]);
        assert_eq!(as_list(std::slice::from_ref(&resubmit)), vec![resubmit]);
    }

    #[test]
    fn without_a_final_action_nothing_runs() {
        assert!(as_list(&[reg(1), Action::DecNwTtl]).is_empty());
        assert!(as_list(&[]).is_empty());
    }
}
