//! Actions and instructions on the wire.
//!
//! Three action families meet here, each in its own file with its decoder and encoder
//! side by side:
//!
//! * `of10`: OpenFlow 1.0 actions (8 or 16 bytes, 16-bit ports), whose "set" actions
//!   become the model's [`Action::SetField`];
//! * `of11`: OpenFlow 1.1+ actions, with `set_field` carrying one OXM TLV (and 1.0's
//!   `enqueue` said as `set_queue`, `output`, Nicira `pop_queue`);
//! * `nicira`: Nicira vendor/experimenter actions (id 0x00002320), the ones with a
//!   model meaning; 1.0 reaches everything else the model says through them;
//! * `ct`: Nicira's connection-tracking actions (`ct`, `nat`, `ct_clear`), the same in
//!   every version except for the nested actions, which are the version's own;
//! * `sample`: Nicira's `sample` action in its three forms, the same in every version;
//! * `controller`: Nicira's `controller(...)` (`NXAST_CONTROLLER`, `NXAST_CONTROLLER2`),
//!   the same in every version;
//! * `learn`: Nicira's `learn` (`NXAST_LEARN`, `NXAST_LEARN2`), the same in every version;
//! * `nxext`: Nicira's `note`, `output_reg`, `clone` and `dec_ttl_cnt_ids`, the same in
//!   every version except for `clone`'s nested actions.
//!
//! `instruction` holds the OpenFlow 1.1+ instructions, which carry action lists. This
//! file walks action lists (decode and encode), knows the type numbers and writes the
//! common type-length header.
//!
//! Totality: every action and instruction length is checked to be at least the header,
//! a multiple of 8 and no longer than the bytes left (`wire::record`'s type-length
//! framing, `BadActionLen` / `BadInstructionLen`), then to be exactly the size its type
//! defines (set_field, reg_load2 and the action-carrying instructions are variable).
//! Actions are decoded one at a time: a bad action stops the walk before a later bad
//! length is seen.

mod controller;
mod ct;
mod instruction;
mod learn;
mod nicira;
mod nxext;
mod of10;
mod of11;
mod sample;

pub(crate) use instruction::{decode_instructions, encode_instructions};
pub(crate) use of10::encode_of10_report;

use super::buf::{Rd, W};
use super::error::{DecodeError, EncodeError};
use super::record::Framing;
use super::{OFP10, OFP15};
use crate::actions::Action;
use crate::matches::Match;
use crate::oxm::Field;

/// Nicira's vendor / experimenter id.
pub const NX_VENDOR_ID: u32 = 0x0000_2320;

/// `OFPAT_*` (1.1+) numbers.
mod at {
    pub const OUTPUT: u16 = 0;
    pub const COPY_TTL_OUT: u16 = 11;
    pub const COPY_TTL_IN: u16 = 12;
    pub const SET_MPLS_TTL: u16 = 15;
    pub const DEC_MPLS_TTL: u16 = 16;
    pub const PUSH_VLAN: u16 = 17;
    pub const POP_VLAN: u16 = 18;
    pub const PUSH_MPLS: u16 = 19;
    pub const POP_MPLS: u16 = 20;
    pub const SET_QUEUE: u16 = 21;
    pub const GROUP: u16 = 22;
    pub const SET_NW_TTL: u16 = 23;
    pub const DEC_NW_TTL: u16 = 24;
    pub const SET_FIELD: u16 = 25;
    pub const PUSH_PBB: u16 = 26;
    pub const POP_PBB: u16 = 27;
    /// OpenFlow 1.5 only.
    pub const COPY_FIELD: u16 = 28;
    /// OpenFlow 1.5 only.
    pub const METER: u16 = 29;
    pub const EXPERIMENTER: u16 = 0xffff;
}

/// `OFPAT10_*` numbers.
mod at10 {
    pub const OUTPUT: u16 = 0;
    pub const SET_VLAN_VID: u16 = 1;
    pub const SET_VLAN_PCP: u16 = 2;
    pub const STRIP_VLAN: u16 = 3;
    pub const SET_DL_SRC: u16 = 4;
    pub const SET_DL_DST: u16 = 5;
    pub const SET_NW_SRC: u16 = 6;
    pub const SET_NW_DST: u16 = 7;
    pub const SET_NW_TOS: u16 = 8;
    pub const SET_TP_SRC: u16 = 9;
    pub const SET_TP_DST: u16 = 10;
    pub const ENQUEUE: u16 = 11;
}

/// `NXAST_*` subtypes.
mod nxast {
    pub const RESUBMIT: u16 = 1;
    pub const SET_TUNNEL: u16 = 2;
    pub const SET_QUEUE: u16 = 4;
    pub const POP_QUEUE: u16 = 5;
    pub const REG_MOVE: u16 = 6;
    pub const REG_LOAD: u16 = 7;
    pub const STACK_PUSH: u16 = 27;
    pub const STACK_POP: u16 = 28;
    pub const SET_TUNNEL64: u16 = 9;
    pub const RESUBMIT_TABLE: u16 = 14;
    pub const RESUBMIT_TABLE_CT: u16 = 44;
    pub const WRITE_METADATA: u16 = 22;
    pub const DEC_TTL: u16 = 18;
    pub const PUSH_MPLS: u16 = 23;
    pub const POP_MPLS: u16 = 24;
    pub const SET_MPLS_TTL: u16 = 25;
    pub const DEC_MPLS_TTL: u16 = 26;
    pub const SET_MPLS_LABEL: u16 = 30;
    pub const SET_MPLS_TC: u16 = 31;
    pub const REG_LOAD2: u16 = 33;
    /// OpenFlow 1.0's form of the group action (OpenFlow 1.1+ has its own).
    pub const GROUP: u16 = 40;
}

/// Nicira's connection-tracking subtypes (see `ct`).
mod nxast_ct {
    pub const CT: u16 = 35;
    pub const NAT: u16 = 36;
    pub const CT_CLEAR: u16 = 43;
}

/// Decode an action list filling all of `rd`.
pub(crate) fn decode_actions(version: u8, rd: &mut Rd<'_>) -> Result<Vec<Action>, DecodeError> {
    decode_actions_in(version, rd, None)
}

/// Decode the action list of a flow whose match is `m` (flow_mod, flow stats, flow monitor
/// update). The same as [`decode_actions`] except for OpenFlow 1.0's `set_tp_src/dst`, which
/// name no protocol: in a flow that matches `nw_proto` UDP or SCTP they become the UDP or
/// SCTP port fields, as OVS reads them, so that the set-field's prerequisites hold (`udp,
/// actions=mod_tp_dst:53` from an OpenFlow 1.0 controller is a valid flow); otherwise TCP.
pub(crate) fn decode_flow_actions(
    version: u8,
    rd: &mut Rd<'_>,
    m: &Match,
) -> Result<Vec<Action>, DecodeError> {
    decode_actions_in(version, rd, m.exact(Field::IpProto))
}

fn decode_actions_in(
    version: u8,
    rd: &mut Rd<'_>,
    nw_proto: Option<u128>,
) -> Result<Vec<Action>, DecodeError> {
    let acts = decode_each(version, rd, nw_proto)?;
    Ok(split_loads(version, acts))
}

/// An action list as it comes back from `version`'s bytes: before OpenFlow 1.5, a
/// set-field that goes out as several `reg_load`s (a write of more than 64 bits, a mask
/// of several runs) is those loads, one masked write each; otherwise the list itself.
pub fn split_loads(version: u8, acts: Vec<Action>) -> Vec<Action> {
    if version >= OFP15 {
        return acts;
    }
    let mut out = Vec::with_capacity(acts.len());
    for a in acts {
        nicira::split_load(version, a, &mut out);
    }
    out
}

fn decode_each(
    version: u8,
    rd: &mut Rd<'_>,
    nw_proto: Option<u128>,
) -> Result<Vec<Action>, DecodeError> {
    Framing::tlv8(DecodeError::BadActionLen).each(rd, |mut a| {
        let len = a.len();
        let ty = a.u16()?;
        a.skip(2)?;
        if ty == at::EXPERIMENTER {
            if let Some(sub) = ct::ct_subtype(a.peek()) {
                return ct::decode_ct_action(version, sub, len, &mut a);
            }
            if let Some(sub) = sample::sample_subtype(a.peek()) {
                return sample::decode_sample(sub, len, &mut a);
            }
            if let Some(sub) = controller::controller_subtype(a.peek()) {
                return controller::decode_controller(sub, len, &mut a);
            }
            if let Some(sub) = learn::learn_subtype(a.peek()) {
                return learn::decode_learn(sub, len, &mut a);
            }
            if let Some(sub) = nxext::nxext_subtype(a.peek()) {
                return nxext::decode_nxext(version, sub, len, &mut a);
            }
        }
        if version == OFP10 {
            Ok(
                match of10::of10_whole_load(of10::decode_of10_action(ty, len, &mut a)?) {
                    Action::SetField { field, value, mask }
                        if matches!(ty, at10::SET_TP_SRC | at10::SET_TP_DST) =>
                    {
                        Action::SetField {
                            field: of10::of10_l4_port(field, nw_proto),
                            value,
                            mask,
                        }
                    }
                    act => act,
                },
            )
        } else if (ty == at::METER || ty == at::COPY_FIELD) && version < OFP15 {
            Err(DecodeError::BadActionType(ty))
        } else if version >= OFP15 {
            // OpenFlow 1.5 has only set-field (a whole-field reg_load goes back out as one,
            // as OVS does), so a whole-field load in a 1.5 message is an unmasked set-field.
            Ok(match of11::decode_of11_action(ty, len, &mut a)? {
                Action::SetField { field, value, mask } => Action::SetField {
                    field,
                    value,
                    mask: mask.filter(|m| *m != field.max()),
                },
                act => act,
            })
        } else {
            of11::decode_of11_action(ty, len, &mut a)
        }
    })
}

/// `BadActionLen` unless an action of fixed size `expect` is `len` bytes long.
fn want(len: usize, expect: usize) -> Result<(), DecodeError> {
    if len == expect {
        Ok(())
    } else {
        Err(DecodeError::BadActionLen)
    }
}

fn begin(out: &mut Vec<u8>, ty: u16) -> usize {
    let start = out.len();
    out.u16(ty);
    out.u16(0);
    start
}

fn finish(out: &mut Vec<u8>, start: usize) {
    out.pad8_from(start);
    let len = out.len() - start;
    out.patch_u16(start + 2, len);
}

/// Encode one action for `version`.
pub(crate) fn encode_action(out: &mut Vec<u8>, version: u8, a: &Action) -> Result<(), EncodeError> {
    if let Some(r) = ct::encode_ct_action(out, version, a) {
        r
    } else if sample::encode_sample(out, a) {
        Ok(())
    } else if let Some(r) = controller::encode_controller(out, a) {
        r
    } else if let Some(r) = learn::encode_learn(out, a) {
        r
    } else if let Some(r) = nxext::encode_nxext(out, version, a) {
        r
    } else if version == OFP10 {
        of10::encode_of10_action(out, a)
    } else if matches!(a, Action::Meter(_)) && version < OFP15 {
        Err(EncodeError::Unrepresentable("meter action (OpenFlow 1.5+)"))
    } else {
        of11::encode_of11_action(out, version, a);
        Ok(())
    }
}

/// Encode an action list.
pub(crate) fn encode_actions(
    out: &mut Vec<u8>,
    version: u8,
    acts: &[Action],
) -> Result<(), EncodeError> {
    acts.iter().try_for_each(|a| encode_action(out, version, a))
}

/// Encode an action list as `version` writes it (public form of the codec's action
/// encoder, e.g. for tools and tests).
pub fn encode_action_list(version: u8, acts: &[Action]) -> Result<Vec<u8>, EncodeError> {
    let mut v = Vec::new();
    encode_actions(&mut v, version, acts)?;
    Ok(v)
}

/// Decode an action list that fills `bytes`, as `version` defines actions.
pub fn decode_action_list(version: u8, bytes: &[u8]) -> Result<Vec<Action>, DecodeError> {
    decode_actions(version, &mut Rd::new(bytes, DecodeError::BadActionLen))
}
