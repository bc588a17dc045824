//! Instructions (OpenFlow 1.1+): goto-table, write-metadata, write-actions,
//! apply-actions, clear-actions and meter.
//!
//! Instructions are type-length records padded to 8. Each fixed-size one must be
//! exactly its size (8; write-metadata 24), else `BadInstructionLen`; the action-carrying
//! ones hold an action list to their end. Experimenter and unknown instructions are
//! `UnknownInstruction(type)`. Instructions are decoded in any order and sorted into
//! execution order, as the model keeps them; encoding writes them in that order.
//!
//! OpenFlow 1.5 has no meter instruction: it says "meter first" with a meter action
//! leading the apply-actions. The model says it with the meter instruction whatever the
//! version, so a 1.5 decode turns that leading action into the instruction and a 1.5
//! encode turns it back; a 1.5 message carrying the instruction itself is refused (it
//! would give a flow with two meters), and so is encoding two meter instructions in 1.5.

use super::{begin, decode_actions, encode_action, finish};
use crate::actions::{Action, Instruction};
use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::record::Framing;
use crate::wire::OFP15;

/// Decode an instruction list filling all of `rd`, sorted into execution order.
pub(crate) fn decode_instructions(
    version: u8,
    rd: &mut Rd<'_>,
) -> Result<Vec<Instruction>, DecodeError> {
    let mut out = Framing::tlv8(DecodeError::BadInstructionLen).each(rd, |mut r| {
        let len = r.len();
        let ty = r.u16()?;
        r.skip(2)?;
        let fixed = |n| {
            if len == n {
                Ok(())
            } else {
                Err(DecodeError::BadInstructionLen)
            }
        };
        Ok(match ty {
            1 => {
                fixed(8)?;
                Instruction::GotoTable(r.u8()?)
            }
            2 => {
                fixed(24)?;
                r.skip(4)?;
                let value = r.u64()?;
                Instruction::WriteMetadata {
                    value,
                    mask: r.u64()?,
                }
            }
            3 | 4 => {
                r.skip(4)?;
                let mut body = r.with_err(DecodeError::BadActionLen);
                let acts = decode_actions(version, &mut body)?;
                if ty == 3 {
                    Instruction::WriteActions(acts)
                } else {
                    Instruction::ApplyActions(acts)
                }
            }
            5 => {
                fixed(8)?;
                Instruction::ClearActions
            }
            // OpenFlow 1.5 replaced the meter instruction with a meter action (as OVS, an
            // OF1.5 message carrying one is refused: decoding it next to a leading meter
            // action would give a flow with two meters).
            6 if version >= OFP15 => return Err(DecodeError::UnknownInstruction(6)),
            6 => {
                fixed(8)?;
                Instruction::Meter(r.u32()?)
            }
            other => return Err(DecodeError::UnknownInstruction(other)),
        })
    })?;
    crate::actions::sort_instructions(&mut out);
    if version >= OFP15 {
        meter_action_to_instruction(&mut out);
    }
    Ok(out)
}

/// OpenFlow 1.5 says "meter first" with a meter action leading the apply-actions; the
/// model says it with the meter instruction, as 1.3 and 1.4 do, so that a flow reads the
/// same whatever version installed it and can be dumped in any of them (as OVS does).
/// A meter action anywhere else stays an action.
fn meter_action_to_instruction(insts: &mut Vec<Instruction>) {
    if insts.iter().any(|i| matches!(i, Instruction::Meter(_))) {
        return;
    }
    let Some(pos) = insts
        .iter()
        .position(|i| matches!(i, Instruction::ApplyActions(_)))
    else {
        return;
    };
    let Some(Instruction::ApplyActions(acts)) = insts.get_mut(pos) else {
        return;
    };
    let Some(&Action::Meter(m)) = acts.first() else {
        return;
    };
    acts.remove(0);
    if acts.is_empty() {
        insts.remove(pos);
    }
    insts.insert(0, Instruction::Meter(m));
}

/// The inverse of [`meter_action_to_instruction`] for encoding in OpenFlow 1.5, which has
/// no meter instruction.
fn meter_instruction_to_action(insts: &[Instruction]) -> Vec<Instruction> {
    let mut out: Vec<Instruction> = Vec::with_capacity(insts.len() + 1);
    let mut meter = None;
    for i in insts {
        match i {
            Instruction::Meter(m) if meter.is_none() => meter = Some(*m),
            Instruction::ApplyActions(a) if meter.is_some() => {
                let mut v = Vec::with_capacity(a.len() + 1);
                v.extend(meter.take().map(Action::Meter));
                v.extend(a.iter().cloned());
                out.push(Instruction::ApplyActions(v));
            }
            other => out.push(other.clone()),
        }
    }
    if let Some(m) = meter {
        out.insert(0, Instruction::ApplyActions(vec![Action::Meter(m)]));
    }
    out
}

/// Encode instructions (OpenFlow 1.1+), in the order given; a meter action before
/// OpenFlow 1.5 is `Unrepresentable`.
pub(crate) fn encode_instructions(
    out: &mut Vec<u8>,
    version: u8,
    insts: &[Instruction],
) -> Result<(), EncodeError> {
    let converted;
    let meters = insts
        .iter()
        .filter(|i| matches!(i, Instruction::Meter(_)))
        .count();
    // OpenFlow 1.5 says "meter" only as a leading meter action: one meter instruction
    // becomes that; a second one has no OpenFlow 1.5 form.
    if version >= OFP15 && meters > 1 {
        return Err(EncodeError::Unrepresentable(
            "two meter instructions (OpenFlow 1.5)",
        ));
    }
    let insts = if version >= OFP15 && meters == 1 {
        converted = meter_instruction_to_action(insts);
        converted.as_slice()
    } else {
        insts
    };
    for i in insts {
        let s = begin(out, i.type_code());
        match i {
            Instruction::GotoTable(t) => out.u8(*t),
            Instruction::WriteMetadata { value, mask } => {
                out.zeros(4);
                out.u64(*value);
                out.u64(*mask);
            }
            Instruction::WriteActions(a) | Instruction::ApplyActions(a) => {
                out.zeros(4);
                for act in a {
                    encode_action(out, version, act)?;
                }
            }
            Instruction::ClearActions => out.zeros(4),
            Instruction::Meter(m) => out.u32(*m),
        }
        finish(out, s);
    }
    Ok(())
}
