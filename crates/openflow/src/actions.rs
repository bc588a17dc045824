//! Actions, instructions, and the reserved port / group numbers they use.
//!
//! [`Action`] is the OpenFlow 1.3 action set (plus Nicira's `resubmit`, the one extension
//! almost every OVS pipeline uses, the other Nicira actions OVS's tools speak, and OpenFlow
//! 1.0's `enqueue`, which 1.1+ says as three actions); [`Instruction`] is the OpenFlow 1.1+
//! instruction set.
//! An OpenFlow 1.0 codec maps a plain action list to a single `ApplyActions`.
//!
//! Conventions:
//! * Ports are 32-bit (OpenFlow 1.1+). OpenFlow 1.0's 16-bit reserved ports map onto the
//!   32-bit ones by adding `0xffff0000` ([`port_from_of10`]).
//! * `SetField` carries an optional mask: `None` is OpenFlow's set-field; `Some` is a
//!   partial write (OpenFlow 1.5 masked set-field / Nicira `reg_load`), used by the text
//!   syntax `set_field:V/M->F` and `load:V->F[a..b]`. A `Some` mask covering the whole
//!   field is a `load` of the whole field: the same write, which codecs before OpenFlow
//!   1.5 send as `reg_load` (as OVS does), so that OVS's tools print it back as `load`.
//! * `Move`, `StackPush` and `StackPop` name bits of a field with a [`Subfield`]; a move
//!   into or a pop onto a register view (`xreg`, `xxreg`) writes the registers it covers.
//! * A flow's instructions are kept in *execution order* (meter, apply-actions,
//!   clear-actions, write-actions, write-metadata, goto-table), each at most once;
//!   [`validate_instructions`] checks that, [`Instruction::order`] gives the rank.
//!
//! What is checked here is what needs no packet or switch state ([`Action::validate`]):
//! argument ranges, reserved ports that cannot be output to, set-field value widths and
//! writability. Whether a `set_field`'s prerequisites hold at that point of the pipeline,
//! whether a group or meter exists, and whether a port exists are `ofproto`'s checks.

use crate::messages::{
    err::{bad_action, bad_instruction},
    OfError, OFPTT_MAX,
};
use crate::oxm::{ethertype, Field};

/// Largest physical port number.
pub const OFPP_MAX: u32 = 0xffff_ff00;
/// Send back out the input port.
pub const OFPP_IN_PORT: u32 = 0xffff_fff8;
/// Submit to the first flow table (packet-out only).
pub const OFPP_TABLE: u32 = 0xffff_fff9;
/// Traditional L2/L3 processing.
pub const OFPP_NORMAL: u32 = 0xffff_fffa;
/// All ports except the input port and those with flooding disabled.
pub const OFPP_FLOOD: u32 = 0xffff_fffb;
/// All ports except the input port.
pub const OFPP_ALL: u32 = 0xffff_fffc;
/// Send to the controller.
pub const OFPP_CONTROLLER: u32 = 0xffff_fffd;
/// The local (bridge) port.
pub const OFPP_LOCAL: u32 = 0xffff_fffe;
/// Wildcard / no port.
pub const OFPP_ANY: u32 = 0xffff_ffff;

/// `max_len` meaning "send the whole packet, don't buffer".
pub const OFPCML_NO_BUFFER: u16 = 0xffff;
/// Largest usable group id.
pub const OFPG_MAX: u32 = 0xffff_ff00;
/// All groups (delete / stats).
pub const OFPG_ALL: u32 = 0xffff_fffc;
/// Wildcard / no group.
pub const OFPG_ANY: u32 = 0xffff_ffff;

/// Reserved port names as ovs-ofctl spells them.
pub const PORT_NAMES: [(u32, &str); 8] = [
    (OFPP_IN_PORT, "IN_PORT"),
    (OFPP_TABLE, "TABLE"),
    (OFPP_NORMAL, "NORMAL"),
    (OFPP_FLOOD, "FLOOD"),
    (OFPP_ALL, "ALL"),
    (OFPP_CONTROLLER, "CONTROLLER"),
    (OFPP_LOCAL, "LOCAL"),
    (OFPP_ANY, "ANY"),
];

/// The 32-bit port for an OpenFlow 1.0 16-bit port number (reserved ports
/// `0xff00..=0xffff` move up to `0xffffff00..`).
pub fn port_from_of10(p: u16) -> u32 {
    if p >= 0xff00 {
        u32::from(p) + 0xffff_0000
    } else {
        u32::from(p)
    }
}

/// The OpenFlow 1.0 16-bit port for a 32-bit one, if representable.
pub fn port_to_of10(p: u32) -> Option<u16> {
    if p < 0xff00 {
        u16::try_from(p).ok()
    } else if p >= 0xffff_ff00 {
        u16::try_from(p - 0xffff_0000).ok()
    } else {
        None
    }
}

/// A run of bits of a field: `n_bits` bits starting `ofs` bits above the least significant
/// one (`reg0[8..15]` is `ofs` 8, `n_bits` 8). Valid when `1 <= n_bits` and
/// `ofs + n_bits <= field.bits()`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Subfield {
    /// The field.
    pub field: Field,
    /// Lowest bit.
    pub ofs: u16,
    /// Number of bits.
    pub n_bits: u16,
}

impl Subfield {
    /// The whole field.
    pub fn whole(field: Field) -> Subfield {
        Subfield {
            field,
            ofs: 0,
            n_bits: field.bits() as u16,
        }
    }

    /// Whether the bits lie inside the field.
    pub fn is_valid(&self) -> bool {
        self.n_bits >= 1 && u32::from(self.ofs) + u32::from(self.n_bits) <= self.field.bits()
    }

    /// Whether these are bits of `in_port`'s 16-bit OpenFlow 1.0 view (`NXM_OF_IN_PORT`):
    /// bits of `in_port` within its low 16. Reading that view gives the port as OpenFlow
    /// 1.0 numbers it (`LOCAL` is 0xfffe) and writing it sets the port that 16-bit number
    /// stands for, as OVS's 16-bit `in_port` field does; OVN saves and restores `in_port`
    /// this way (`push:NXM_OF_IN_PORT[]`, `load:0->NXM_OF_IN_PORT[]`, `pop:...`).
    pub fn is_port16(&self) -> bool {
        self.field == Field::InPort && u32::from(self.ofs) + u32::from(self.n_bits) <= 16
    }

    /// The bits as a mask of the field's value.
    pub fn mask(&self) -> u128 {
        crate::oxm::ones(u32::from(self.n_bits))
            .checked_shl(u32::from(self.ofs))
            .unwrap_or(0)
    }
}

/// One action.
#[derive(Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Action {
    /// Output to a port; `max_len` matters for [`OFPP_CONTROLLER`] only.
    Output {
        /// Port number or reserved port.
        port: u32,
        /// Bytes to send to the controller ([`OFPCML_NO_BUFFER`] for all).
        max_len: u16,
    },
    /// Process through a group.
    Group(u32),
    /// Set the queue for subsequent outputs.
    SetQueue(u32),
    /// Nicira `pop_queue`: later outputs use the queue the packet came with (the one before
    /// any `set_queue`).
    PopQueue,
    /// OpenFlow 1.0 `enqueue:PORT:QUEUE`: output to `port` on `queue`; the queue holds for
    /// this output only (later outputs use the queue in force before it). Ports are a
    /// physical one (below 0xff00: OpenFlow 1.0's numbers), `IN_PORT` or `LOCAL`, as OVS
    /// takes them ([`Action::validate`]). OpenFlow 1.1+ has no such action: to those peers
    /// it goes out as `set_queue:QUEUE, output:PORT, pop_queue`, as OVS sends it, which
    /// reads back as those three actions.
    Enqueue {
        /// Port number, `IN_PORT` or `LOCAL`.
        port: u32,
        /// Queue id on that port.
        queue: u32,
    },
    /// Set the MPLS TTL.
    SetMplsTtl(u8),
    /// Decrement the MPLS TTL.
    DecMplsTtl,
    /// Set the IP TTL.
    SetNwTtl(u8),
    /// Decrement the IP TTL.
    DecNwTtl,
    /// Copy TTL outwards (next-to-outermost to outermost).
    CopyTtlOut,
    /// Copy TTL inwards (outermost to next-to-outermost).
    CopyTtlIn,
    /// Push a VLAN tag with this TPID (0x8100 or 0x88a8).
    PushVlan(u16),
    /// Pop the outer VLAN tag.
    PopVlan,
    /// Push an MPLS label with this EtherType (0x8847 or 0x8848).
    PushMpls(u16),
    /// Pop the outer MPLS label; the argument is the EtherType of what follows.
    PopMpls(u16),
    /// Push a PBB service tag with this EtherType (0x88e7).
    PushPbb(u16),
    /// Pop the outer PBB service tag.
    PopPbb,
    /// Write a field (under `mask` if given).
    SetField {
        /// The field.
        field: Field,
        /// The value, right-aligned.
        value: u128,
        /// Bits to write, `None` for all.
        mask: Option<u128>,
    },
    /// OpenFlow 1.5 `OFPAT_METER`: run the packet through a meter here, as the meter
    /// instruction does at the start of a flow's instructions.
    Meter(u32),
    /// Nicira `move` (OpenFlow 1.5 copy-field): copy `src`'s bits into `dst` (both the
    /// same width).
    Move {
        /// Bits read.
        src: Subfield,
        /// Bits written.
        dst: Subfield,
    },
    /// Nicira `push`: push the bits onto the packet's register stack.
    StackPush(Subfield),
    /// Nicira `pop`: pop the top of the packet's register stack into the bits.
    StackPop(Subfield),
    /// Nicira resubmit: look the packet up again with `in_port` replaced (unless `None`)
    /// in `table` (the current table if `None`).
    Resubmit {
        /// Port to pretend the packet came in on.
        in_port: Option<u32>,
        /// Table to look up.
        table: Option<u8>,
        /// `resubmit(,,ct)` (`NXAST_RESUBMIT_TABLE_CT`): the lookup sees the connection's
        /// original-direction addresses, protocol and ports in place of the packet's; a
        /// flow with it must match a valid connection (`ct_state` +new, +est, ... or
        /// +trk-inv), else `OFPBAC_MATCH_INCONSISTENT`, as OVS checks it.
        ct: bool,
    },
    /// Nicira `ct(...)`: send the packet through the connection tracker (see [`crate::ct`]).
    Ct(Box<crate::ct::Ct>),
    /// Nicira `nat(...)`, only inside `ct(...)`.
    Nat(Box<crate::ct::Nat>),
    /// Nicira `ct_clear`: forget the packet's connection-tracking state.
    CtClear,
    /// Nicira `sample(...)`: a copy of some packets to an IPFIX collector set (see
    /// [`crate::sample`]).
    Sample(crate::sample::Sample),
    /// Nicira `note:HEX`: bytes a controller stores with the flow; does nothing. Kept as
    /// they travel (the action is padded to 8 bytes with zeros, which are part of the note,
    /// as OVS prints them).
    Note(Vec<u8>),
    /// Nicira `output:SRC`: output to the port whose OpenFlow 1.0 number the bits hold
    /// (a value above 16 bits outputs nothing); `max_len` as for [`Action::Output`].
    OutputReg {
        /// Bits holding the port.
        src: Subfield,
        /// Bytes to send if the port is the controller.
        max_len: u16,
    },
    /// Nicira `clone(...)`: run the actions on a copy of the packet and its pipeline state;
    /// nothing they change is seen after the clone.
    Clone(Vec<Action>),
    /// Nicira `dec_ttl(ID,...)`: `dec_ttl` whose TTL expiry sends a packet-in to each
    /// listed controller id (plain [`Action::DecNwTtl`] is the ids list `[0]`).
    DecTtlIds(Vec<u16>),
    /// Nicira `controller(...)`: a packet-in with a reason, controller id, user data,
    /// pause or meter (see [`crate::controller`]); the plain form is [`Action::Output`].
    Controller(crate::controller::Controller),
    /// Nicira `learn(...)`: add or refresh a flow built from the packet (see
    /// [`crate::learn`]).
    Learn(Box<crate::learn::Learn>),
    /// Nicira `check_pkt_larger(LEN)->DST`: sets the one bit `dst` to 1 if the packet is
    /// longer than `pkt_len` bytes, else to 0. The length is the Ethernet frame's (no FCS),
    /// less any padding after the IP datagram, as OVS's datapath counts it; it is decided
    /// per packet, so the rest of the actions depend on it (see `ofproto`'s xlate).
    CheckPktLarger {
        /// Bytes a packet may have without setting the bit.
        pkt_len: u16,
        /// The bit written (one bit of a writable field).
        dst: Subfield,
    },
}

/// The deepest nesting of `clone` actions (and of action lists inside actions) that the
/// codecs accept: ovs-ofctl refuses text nested 100 deep ("Action nested too deeply").
pub const MAX_NESTING: usize = 99;

/// `code` unless `ok`: one condition of [`Action::validate`].
fn fault_unless(ok: bool, code: u16) -> Option<u16> {
    (!ok).then_some(code)
}

/// The check of a written subfield, as OVS's: its bits inside the field (and `shape_ok`,
/// the action's own condition on them), then a writable field (else `unwritable`).
fn destination_fault(dst: Subfield, shape_ok: bool, unwritable: u16) -> Option<u16> {
    if !dst.is_valid() || !shape_ok {
        return Some(bad_action::BAD_SET_LEN);
    }
    fault_unless(field_writable(dst.field), unwritable)
}

/// A set-field's check: a writable field outside `ct` (ct_mark and ct_label are only set
/// inside ct(exec(..)), which checks its own list), a value and mask within its width, a
/// value within its mask.
fn set_field_fault(field: Field, value: u128, mask: Option<u128>) -> Option<u16> {
    if !field_writable(field) {
        return Some(bad_action::BAD_SET_TYPE);
    }
    if matches!(field, Field::CtMark | Field::CtLabel) {
        return Some(bad_action::BAD_SET_ARGUMENT);
    }
    let max = field.max();
    let too_wide = value & !max != 0 || mask.is_some_and(|m| m & !max != 0 || value & !m != 0);
    fault_unless(!too_wide, bad_action::BAD_SET_ARGUMENT)
}

/// A port an `output` may name: a physical port or a reserved one other than `ANY`.
fn output_port_ok(port: u32) -> bool {
    !(port == 0 || port == OFPP_ANY || (port > OFPP_MAX && port < OFPP_IN_PORT))
}

/// A port an `enqueue` may name, as OVS checks it: a physical port OpenFlow 1.0 can number
/// (below its `OFPP_MAX`, 0xff00; port 0 included), `IN_PORT` or `LOCAL`.
fn enqueue_port_ok(port: u32) -> bool {
    port < 0xff00 || port == OFPP_IN_PORT || port == OFPP_LOCAL
}

/// A meter an action may name: a numbered one, or the slow-path or controller meter.
fn meter_id_ok(m: u32) -> bool {
    use crate::messages::{OFPM_CONTROLLER, OFPM_MAX, OFPM_SLOWPATH};
    (1..=OFPM_MAX).contains(&m) || m == OFPM_SLOWPATH || m == OFPM_CONTROLLER
}

/// A `clone`: nested less than [`MAX_NESTING`] deep, and its actions valid.
fn validate_clone(inner: &[Action]) -> Result<(), OfError> {
    if nesting(inner) >= MAX_NESTING {
        return Err(OfError::bad_action(bad_action::BAD_ARGUMENT));
    }
    validate_actions(inner)
}

/// How deeply `clone` actions nest in `acts` (0 for a list without one).
pub fn nesting(acts: &[Action]) -> usize {
    acts.iter()
        .map(|a| match a {
            Action::Clone(inner) => 1 + nesting(inner),
            Action::Ct(ct) => nesting(&ct.actions),
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

impl Action {
    /// Output to `port` with the controller `max_len` OVS uses by default.
    pub const fn output(port: u32) -> Action {
        Action::Output {
            port,
            max_len: if port == OFPP_CONTROLLER {
                OFPCML_NO_BUFFER
            } else {
                0
            },
        }
    }

    /// Exact set-field.
    pub const fn set_field(field: Field, value: u128) -> Action {
        Action::SetField {
            field,
            value,
            mask: None,
        }
    }

    /// Static validity (see the module documentation): each kind's own check.
    pub fn validate(&self) -> Result<(), OfError> {
        use bad_action::*;
        let fault = match *self {
            Action::Ct(ref ct) => return ct.validate(),
            Action::Sample(ref smp) => return smp.validate(),
            Action::Learn(ref l) => return l.validate(),
            Action::Clone(ref inner) => return validate_clone(inner),
            // A NAT is only meaningful nested in a `ct` (whose validation checks it).
            Action::Nat(_) => Some(BAD_ARGUMENT),
            // Any reason, id, length, user data and meter is accepted, as OVS does, if it
            // fits in an action.
            Action::Controller(ref c) => fault_unless(c.fits(), BAD_LEN),
            Action::OutputReg { src, .. } => fault_unless(src.is_valid(), BAD_SET_LEN),
            Action::CheckPktLarger { dst, .. } => {
                destination_fault(dst, dst.n_bits == 1, BAD_SET_ARGUMENT)
            }
            Action::Output { port, .. } => fault_unless(output_port_ok(port), BAD_OUT_PORT),
            Action::Enqueue { port, .. } => fault_unless(enqueue_port_ok(port), BAD_OUT_PORT),
            Action::Group(g) => fault_unless(g <= OFPG_MAX, BAD_OUT_GROUP),
            Action::PushVlan(t) => fault_unless(
                t == ethertype::VLAN || t == ethertype::VLAN_8021AD,
                BAD_ARGUMENT,
            ),
            Action::PushMpls(t) => fault_unless(
                t == ethertype::MPLS || t == ethertype::MPLS_MCAST,
                BAD_ARGUMENT,
            ),
            Action::PushPbb(t) => fault_unless(t == ethertype::PBB, BAD_ARGUMENT),
            Action::SetField { field, value, mask } => set_field_fault(field, value, mask),
            Action::Move { src, dst } => destination_fault(
                dst,
                src.is_valid() && src.n_bits == dst.n_bits,
                BAD_SET_TYPE,
            ),
            Action::StackPush(sf) => fault_unless(sf.is_valid(), BAD_SET_LEN),
            Action::StackPop(sf) => destination_fault(sf, true, BAD_SET_TYPE),
            Action::Resubmit { in_port, table, .. } => fault_unless(
                (in_port.is_some() || table.is_some()) && table.is_none_or(|t| t <= OFPTT_MAX),
                BAD_ARGUMENT,
            ),
            Action::Meter(m) => fault_unless(meter_id_ok(m), BAD_ARGUMENT),
            // An empty `DecTtlIds` list is valid (OVS decodes and prints it as
            // `dec_ttl()`): a TTL expiry then notifies no controller.
            Action::CtClear
            | Action::Note(_)
            | Action::DecTtlIds(_)
            | Action::SetQueue(_)
            | Action::PopQueue
            | Action::SetMplsTtl(_)
            | Action::DecMplsTtl
            | Action::SetNwTtl(_)
            | Action::DecNwTtl
            | Action::CopyTtlOut
            | Action::CopyTtlIn
            | Action::PopVlan
            | Action::PopMpls(_)
            | Action::PopPbb => None,
        };
        fault.map_or(Ok(()), |code| Err(OfError::bad_action(code)))
    }

    /// The field a `SetField`, `move` or `pop` writes, whose prerequisites the packet
    /// must meet.
    pub fn written_field(&self) -> Option<Field> {
        match self {
            Action::SetField { field, .. } => Some(*field),
            Action::Move { dst, .. } | Action::StackPop(dst) => Some(dst.field),
            _ => None,
        }
    }

    /// The field a `move` or `push` reads, whose prerequisites the packet must meet.
    pub fn read_field(&self) -> Option<Field> {
        match self {
            Action::Move { src, .. } | Action::StackPush(src) | Action::OutputReg { src, .. } => {
                Some(src.field)
            }
            _ => None,
        }
    }
}

/// Whether `set_field` may write `f`. Read-only: `in_phy_port` and the pseudo-fields
/// (`ipv6_exthdr`, `ip_frag`, `tcp_flags`).
pub fn field_writable(f: Field) -> bool {
    !matches!(
        f,
        Field::InPhyPort | Field::Ipv6Exthdr | Field::IpFrag | Field::TcpFlags
    ) && !is_ct_only_or_read_only(f)
}

/// The connection-tracking and recirculation fields are read-only, except `ct_mark` and
/// `ct_label`, which only a `ct(commit,exec(...))` may write: a top-level write of those is
/// refused by [`validate_actions`] (as ovs-ofctl: "cannot set CT fields outside of ct
/// action").
fn is_ct_only_or_read_only(f: Field) -> bool {
    (f.is_ct() && !matches!(f, Field::CtMark | Field::CtLabel))
        || matches!(f, Field::RecircId | Field::DpHash)
}

/// Validate each action of a list.
pub fn validate_actions(actions: &[Action]) -> Result<(), OfError> {
    actions.iter().try_for_each(Action::validate)
}

/// One instruction.
#[derive(Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Instruction {
    /// Rate-limit through a meter first.
    Meter(u32),
    /// Apply these actions now.
    ApplyActions(Vec<Action>),
    /// Clear the action set.
    ClearActions,
    /// Merge these actions into the action set.
    WriteActions(Vec<Action>),
    /// Write metadata under mask.
    WriteMetadata {
        /// Value.
        value: u64,
        /// Bits to write.
        mask: u64,
    },
    /// Continue in a later table.
    GotoTable(u8),
}

impl Instruction {
    /// Rank in execution order (meter 0 .. goto_table 5).
    pub fn order(&self) -> u8 {
        match self {
            Instruction::Meter(_) => 0,
            Instruction::ApplyActions(_) => 1,
            Instruction::ClearActions => 2,
            Instruction::WriteActions(_) => 3,
            Instruction::WriteMetadata { .. } => 4,
            Instruction::GotoTable(_) => 5,
        }
    }

    /// `OFPIT_*` number.
    pub fn type_code(&self) -> u16 {
        match self {
            Instruction::GotoTable(_) => 1,
            Instruction::WriteMetadata { .. } => 2,
            Instruction::WriteActions(_) => 3,
            Instruction::ApplyActions(_) => 4,
            Instruction::ClearActions => 5,
            Instruction::Meter(_) => 6,
        }
    }
}

/// Sort instructions into execution order (stable; duplicates stay for the validator).
pub fn sort_instructions(insts: &mut [Instruction]) {
    insts.sort_by_key(Instruction::order);
}

/// Static checks of a flow's instructions in table `table_id`: each kind at most once and
/// in execution order (`UNSUP_INST` otherwise), `goto_table` only forward (`BAD_TABLE_ID`),
/// meter id in range, actions valid.
pub fn validate_instructions(insts: &[Instruction], table_id: u8) -> Result<(), OfError> {
    let mut last: Option<u8> = None;
    for i in insts {
        let o = i.order();
        if last.is_some_and(|l| l >= o) {
            return Err(OfError::bad_instruction(bad_instruction::UNSUP_INST));
        }
        last = Some(o);
        match i {
            Instruction::GotoTable(t) => {
                if *t <= table_id || *t > OFPTT_MAX {
                    return Err(OfError::bad_instruction(bad_instruction::BAD_TABLE_ID));
                }
            }
            // A value with bits outside its mask is taken as OVS takes it: only the masked
            // bits are written (see `xlate`), the value is kept as given for dumps.
            Instruction::WriteMetadata { .. } => {}
            Instruction::Meter(m) => {
                if *m == 0 || *m > crate::messages::OFPM_MAX && *m < crate::messages::OFPM_SLOWPATH
                {
                    return Err(OfError::meter_mod_failed(
                        crate::messages::err::meter_mod_failed::INVALID_METER,
                    ));
                }
            }
            Instruction::ApplyActions(a) => validate_actions(a)?,
            Instruction::WriteActions(a) => {
                validate_actions(a)?;
                // The action set has no slot for a sample, a note, a clone, an output
                // to a register, a `controller(...)`, `enqueue` or `pop_queue` (OVS:
                // "disallowed action in action set", OFPBAC_BAD_TYPE).
                if a.iter().any(|x| {
                    matches!(
                        x,
                        Action::Sample(_)
                            | Action::Note(_)
                            | Action::Clone(_)
                            | Action::OutputReg { .. }
                            | Action::Controller(_)
                            | Action::Learn(_)
                            | Action::CheckPktLarger { .. }
                            | Action::Enqueue { .. }
                            | Action::PopQueue
                    )
                }) {
                    return Err(OfError::bad_action(bad_action::BAD_TYPE));
                }
                // The action set has no slot for bit moves and the register stack.
                if a.iter().any(|x| {
                    matches!(
                        x,
                        Action::Move { .. } | Action::StackPush(_) | Action::StackPop(_)
                    )
                }) {
                    return Err(OfError::bad_action(bad_action::UNSUPPORTED_ORDER));
                }
            }
            Instruction::ClearActions => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn of10_ports() {
        assert_eq!(port_from_of10(0xfffe), OFPP_LOCAL);
        assert_eq!(port_from_of10(5), 5);
        assert_eq!(port_to_of10(OFPP_CONTROLLER), Some(0xfffd));
        assert_eq!(port_to_of10(70000), None);
    }

    #[test]
    fn action_checks() {
        assert!(Action::output(1).validate().is_ok());
        assert!(Action::output(0).validate().is_err());
        assert!(Action::output(OFPP_ANY).validate().is_err());
        assert!(Action::PushVlan(0x8100).validate().is_ok());
        assert!(Action::PushVlan(0x0800).validate().is_err());
        assert!(Action::set_field(Field::VlanPcp, 8).validate().is_err());
        assert!(Action::set_field(Field::TcpFlags, 1).validate().is_err());
    }

    #[test]
    fn enqueue_ports_as_ovs() {
        let enq = |port| Action::Enqueue { port, queue: 5 }.validate();
        for ok in [0, 1, 0xfeff, OFPP_IN_PORT, OFPP_LOCAL] {
            assert!(enq(ok).is_ok(), "{ok:#x}");
        }
        let bad = OfError::bad_action(bad_action::BAD_OUT_PORT);
        for no in [
            0xff00,
            70000,
            OFPP_MAX,
            OFPP_TABLE,
            OFPP_NORMAL,
            OFPP_FLOOD,
            OFPP_ALL,
            OFPP_CONTROLLER,
            OFPP_ANY,
        ] {
            assert_eq!(enq(no), Err(bad), "{no:#x}");
        }
        let set = [Instruction::WriteActions(vec![Action::PopQueue])];
        assert!(validate_instructions(&set, 0).is_err());
    }

    #[test]
    fn instruction_order() {
        let ok = [
            Instruction::Meter(1),
            Instruction::ApplyActions(vec![]),
            Instruction::GotoTable(3),
        ];
        assert!(validate_instructions(&ok, 0).is_ok());
        assert!(validate_instructions(&ok, 3).is_err());
        let bad = [Instruction::GotoTable(3), Instruction::ClearActions];
        assert!(validate_instructions(&bad, 0).is_err());
        // OVS takes a value with bits outside its mask (only the masked bits are written).
        let ok = [Instruction::WriteMetadata { value: 3, mask: 1 }];
        assert!(validate_instructions(&ok, 0).is_ok());
    }
}
