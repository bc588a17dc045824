//! OpenFlow 1.0 actions, and how a flow's instructions are reported to a 1.0 peer.
//!
//! OpenFlow 1.0 actions are 8 or 16 bytes with 16-bit ports. The old "set" actions become
//! the model's [`Action::SetField`]: `set_vlan_vid` → `vlan_vid` (with `OFPVID_PRESENT`),
//! `set_vlan_pcp`, `set_dl_src/dst`, `set_nw_src/dst`, `set_nw_tos` → `ip_dscp` (`tos >>
//! 2`), `set_tp_src/dst` → `tcp_src/dst`, or `udp_*`/`sctp_*` in a flow that matches that
//! protocol (1.0's transport port actions do not name the protocol; the encoder writes
//! any of tcp/udp/sctp ports back as `set_tp_*`). `strip_vlan` is [`Action::PopVlan`].
//! `enqueue` (16 bytes: port, 6 bytes of padding, queue id) is [`Action::Enqueue`] with the
//! port moved to 32 bits; any port decodes, and [`Action::validate`] refuses those OVS
//! refuses (`OFPBAC_BAD_OUT_PORT`: reserved ports other than `IN_PORT` and `LOCAL`).
//! Everything else the model can say in 1.0 goes out as a Nicira action
//! ([`super::nicira`]); what it cannot (copy_ttl, push_vlan, the PBB actions, meter) is
//! `Unrepresentable`.
//!
//! Each action's length must be exactly its type's; arguments out of range (a VLAN id
//! above 4095, a PCP above 7, a ToS with the ECN bits set) are `BadActionArgument`.

use super::nicira::{
    decode_vendor_action, encode_nx_common, encode_nx_load, encode_nx_set_field, nx_begin,
};
use super::{at, at10, begin, encode_actions, finish, nxast, want};
use crate::actions::{port_from_of10, port_to_of10, Action, Instruction};
use crate::oxm::{Field, OFPVID_PRESENT};
use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::OFP10;

/// The UDP or SCTP field for an OpenFlow 1.0 transport port action decoded as TCP's, in a
/// flow whose match fixes `nw_proto` to `proto`.
pub(super) fn of10_l4_port(field: Field, proto: Option<u128>) -> Field {
    match (field, proto) {
        (Field::TcpSrc, Some(17)) => Field::UdpSrc,
        (Field::TcpDst, Some(17)) => Field::UdpDst,
        (Field::TcpSrc, Some(132)) => Field::SctpSrc,
        (Field::TcpDst, Some(132)) => Field::SctpDst,
        (f, _) => f,
    }
}

pub(super) fn decode_of10_action(
    ty: u16,
    len: usize,
    a: &mut Rd<'_>,
) -> Result<Action, DecodeError> {
    use at10::*;
    let sf = |field, value: u128| Action::SetField {
        field,
        value,
        mask: None,
    };
    Ok(match ty {
        OUTPUT => {
            want(len, 8)?;
            let port = port_from_of10(a.u16()?);
            Action::Output {
                port,
                max_len: a.u16()?,
            }
        }
        SET_VLAN_VID => {
            want(len, 8)?;
            let vid = a.u16()?;
            if vid > 0x0fff {
                return Err(DecodeError::BadActionArgument);
            }
            sf(Field::VlanVid, u128::from(OFPVID_PRESENT | vid))
        }
        SET_VLAN_PCP => {
            want(len, 8)?;
            let pcp = a.u8()?;
            if pcp > 7 {
                return Err(DecodeError::BadActionArgument);
            }
            sf(Field::VlanPcp, u128::from(pcp))
        }
        STRIP_VLAN => {
            want(len, 8)?;
            Action::PopVlan
        }
        SET_DL_SRC | SET_DL_DST => {
            want(len, 16)?;
            let mac = crate::oxm::mac_to_u128(a.array()?);
            sf(
                if ty == SET_DL_SRC {
                    Field::EthSrc
                } else {
                    Field::EthDst
                },
                mac,
            )
        }
        SET_NW_SRC | SET_NW_DST => {
            want(len, 8)?;
            let ip = u128::from(a.u32()?);
            sf(
                if ty == SET_NW_SRC {
                    Field::Ipv4Src
                } else {
                    Field::Ipv4Dst
                },
                ip,
            )
        }
        SET_NW_TOS => {
            want(len, 8)?;
            let tos = a.u8()?;
            if tos & 3 != 0 {
                return Err(DecodeError::BadActionArgument);
            }
            sf(Field::IpDscp, u128::from(tos >> 2))
        }
        SET_TP_SRC | SET_TP_DST => {
            want(len, 8)?;
            let p = u128::from(a.u16()?);
            sf(
                if ty == SET_TP_SRC {
                    Field::TcpSrc
                } else {
                    Field::TcpDst
                },
                p,
            )
        }
        ENQUEUE => {
            want(len, 16)?;
            let port = port_from_of10(a.u16()?);
            a.skip(6)?;
            Action::Enqueue {
                port,
                queue: a.u32()?,
            }
        }
        at::EXPERIMENTER => decode_vendor_action(len, a)?,
        other => return Err(DecodeError::BadActionType(other)),
    })
}

pub(super) fn encode_of10_action(out: &mut Vec<u8>, a: &Action) -> Result<(), EncodeError> {
    use at10::*;
    let un = EncodeError::Unrepresentable;
    if encode_nx_common(out, a) {
        return Ok(());
    }
    let s;
    match *a {
        Action::Output { port, max_len } => {
            s = begin(out, OUTPUT);
            out.u16(port_to_of10(port).ok_or(un("output port"))?);
            out.u16(max_len);
        }
        Action::PopVlan => {
            s = begin(out, STRIP_VLAN);
        }
        Action::Enqueue { port, queue } => {
            s = begin(out, ENQUEUE);
            out.u16(port_to_of10(port).ok_or(un("enqueue port"))?);
            out.zeros(6);
            out.u32(queue);
        }
        Action::SetQueue(q) => {
            s = nx_begin(out, nxast::SET_QUEUE);
            out.u16(0);
            out.u32(q);
        }
        Action::DecNwTtl => s = nx_begin(out, nxast::DEC_TTL),
        Action::PushMpls(t) => {
            s = nx_begin(out, nxast::PUSH_MPLS);
            out.u16(t);
        }
        Action::PopMpls(t) => {
            s = nx_begin(out, nxast::POP_MPLS);
            out.u16(t);
        }
        Action::SetMplsTtl(t) => {
            s = nx_begin(out, nxast::SET_MPLS_TTL);
            out.u8(t);
        }
        Action::DecMplsTtl => s = nx_begin(out, nxast::DEC_MPLS_TTL),
        Action::SetField {
            field,
            value,
            mask: None,
        } => {
            encode_set_field(out, field, value);
            return Ok(());
        }
        Action::SetField {
            field,
            value,
            mask: Some(m),
        } => {
            encode_nx_load(out, field, value, Some(m));
            return Ok(());
        }
        Action::Group(g) => {
            s = nx_begin(out, nxast::GROUP);
            out.u16(0);
            out.u32(g);
        }
        Action::SetNwTtl(t) => {
            encode_nx_load(out, Field::NwTtl, u128::from(t), None);
            return Ok(());
        }
        Action::CopyTtlOut | Action::CopyTtlIn => return Err(un("copy_ttl")),
        Action::PushVlan(_) => return Err(un("push_vlan")),
        Action::PushPbb(_) | Action::PopPbb => return Err(un("pbb actions")),
        Action::Meter(_) => return Err(un("meter action")),
        Action::Resubmit { .. }
        | Action::PopQueue
        | Action::Move { .. }
        | Action::StackPush(_)
        | Action::StackPop(_) => return Ok(()),
        // Written by `ct` before this encoder is reached.
        Action::Ct(_)
        | Action::Nat(_)
        | Action::CtClear
        | Action::Sample(_)
        | Action::Note(_)
        | Action::OutputReg { .. }
        | Action::Clone(_)
        | Action::DecTtlIds(_)
        | Action::Controller(_)
        | Action::Learn(_)
        | Action::CheckPktLarger { .. } => return Ok(()),
    }
    finish(out, s);
    Ok(())
}

/// An unmasked set-field: OpenFlow 1.0's own set action for the fields that have one,
/// Nicira's MPLS and tunnel actions, a register load for the rest.
/// Whether OpenFlow 1.0 has an action of its own (or Nicira a dedicated one) for an
/// unmasked write of `field`; any other write goes out as a register load.
pub(super) fn has_own_action(field: Field) -> bool {
    of10_set_action(field).is_some()
        || matches!(field, Field::MplsLabel | Field::MplsTc | Field::TunnelId)
}

/// An unmasked set-field decoded from OpenFlow 1.0 bytes (a `reg_load2` without a mask),
/// as the model says what those bytes mean in 1.0: a write with no action of its own goes
/// back out as a whole-field `reg_load` (as OVS writes it), which decodes as a load with
/// the field's whole mask, so it is that load from the start and decodes, encodes and
/// decodes again to the same action. Fields wider than a `reg_load` (64 bits) go out as
/// several (see `nicira::split_load`); the variable-length ones stay unmasked: they go
/// back out as an unmasked `reg_load2`.
pub(super) fn of10_whole_load(a: Action) -> Action {
    match a {
        Action::SetField {
            field,
            value,
            mask: None,
        } if !has_own_action(field) && field.bits() <= 64 && !field.is_tun_metadata() => {
            Action::SetField {
                field,
                value,
                mask: Some(field.max()),
            }
        }
        a => a,
    }
}

/// OpenFlow 1.0's own set action for `field`, and its argument's size.
fn of10_set_action(field: Field) -> Option<(u16, usize)> {
    use at10::*;
    match field {
        Field::VlanVid => Some((SET_VLAN_VID, 2)),
        Field::VlanPcp => Some((SET_VLAN_PCP, 1)),
        Field::EthSrc => Some((SET_DL_SRC, 6)),
        Field::EthDst => Some((SET_DL_DST, 6)),
        Field::Ipv4Src => Some((SET_NW_SRC, 4)),
        Field::Ipv4Dst => Some((SET_NW_DST, 4)),
        Field::IpDscp => Some((SET_NW_TOS, 1)),
        Field::TcpSrc | Field::UdpSrc | Field::SctpSrc => Some((SET_TP_SRC, 2)),
        Field::TcpDst | Field::UdpDst | Field::SctpDst => Some((SET_TP_DST, 2)),
        _ => None,
    }
}

/// Whether 1.0's own set action for `field` says `value` exactly: a VLAN ID with the
/// present bit and 12 bits, a PCP of 3 bits, a DSCP of 6. Other values (an unmasked
/// `reg_load2` may carry any value its field's bytes hold; the switch refuses them later)
/// go out as that `reg_load2` again, which decodes to the same write.
fn own_action_says(field: Field, value: u128) -> bool {
    match field {
        Field::VlanVid => value & !0x0fff == u128::from(OFPVID_PRESENT),
        Field::VlanPcp => value <= 7,
        Field::IpDscp => value <= 0x3f,
        _ => value & !field.max() == 0,
    }
}

fn encode_set_field(out: &mut Vec<u8>, field: Field, value: u128) {
    let s;
    let ty = of10_set_action(field).filter(|_| own_action_says(field, value));
    match (ty, field) {
        (Some((t, n)), _) => {
            s = begin(out, t);
            let v = match field {
                Field::VlanVid => value & 0x0fff,
                Field::IpDscp => value << 2,
                _ => value,
            };
            out.extend_from_slice(&crate::oxm::value_to_bytes(v, n));
        }
        (None, Field::MplsLabel) => {
            s = nx_begin(out, nxast::SET_MPLS_LABEL);
            out.u16(0);
            out.u32(value as u32);
        }
        (None, Field::MplsTc) => {
            s = nx_begin(out, nxast::SET_MPLS_TC);
            out.u8(value as u8);
        }
        (None, Field::TunnelId) if value <= u128::from(u32::MAX) => {
            s = nx_begin(out, nxast::SET_TUNNEL);
            out.u16(0);
            out.u32(value as u32);
        }
        (None, Field::TunnelId) => {
            s = nx_begin(out, nxast::SET_TUNNEL64);
            out.zeros(6);
            out.u64(value as u64);
        }
        (None, _) if of10_set_action(field).is_some() => {
            encode_nx_set_field(out, field, value);
            return;
        }
        _ => {
            encode_nx_load(out, field, value, None);
            return;
        }
    }
    finish(out, s);
}

/// A flow's instructions as OpenFlow 1.0 actions, for reporting a flow (statistics,
/// monitor updates) to a 1.0 connection, as OVS does: apply-actions as they are (less the
/// actions 1.0 has no form for: push_vlan, which 1.0 implies in setting a VLAN field,
/// copy_ttl, the PBB actions and the meter action), goto-table as `resubmit(,TABLE)`,
/// write-metadata as `NXAST_WRITE_METADATA`; meter, clear-actions and write-actions have no
/// 1.0 form and are left out. Write-metadata goes last: ovs-ofctl
/// reads it back as an instruction and refuses any action (the resubmit) after it. (A
/// flow_mod is never encoded this way: there, an instruction 1.0 cannot carry is an error.)
pub(crate) fn encode_of10_report(
    out: &mut Vec<u8>,
    insts: &[Instruction],
) -> Result<(), EncodeError> {
    let mut sorted: Vec<&Instruction> = insts.iter().collect();
    sorted.sort_by_key(|i| match i {
        Instruction::WriteMetadata { .. } => u8::MAX,
        other => other.order(),
    });
    for i in sorted {
        match i {
            Instruction::ApplyActions(a) => {
                let said: Vec<Action> = a
                    .iter()
                    .filter(|x| {
                        !matches!(
                            x,
                            Action::PushVlan(_)
                                | Action::CopyTtlOut
                                | Action::CopyTtlIn
                                | Action::PushPbb(_)
                                | Action::PopPbb
                                | Action::Meter(_)
                        )
                    })
                    .cloned()
                    .collect();
                encode_actions(out, OFP10, &said)?
            }
            Instruction::WriteMetadata { value, mask } => {
                let s = nx_begin(out, nxast::WRITE_METADATA);
                out.zeros(6);
                out.u64(*value);
                out.u64(*mask);
                finish(out, s);
            }
            Instruction::GotoTable(t) => encode_actions(
                out,
                OFP10,
                &[Action::Resubmit {
                    ct: false,
                    in_port: None,
                    table: Some(*t),
                }],
            )?,
            Instruction::Meter(_) | Instruction::ClearActions | Instruction::WriteActions(_) => {}
        }
    }
    Ok(())
}
