//! Flow table modifications: [`FlowMod`], its command and flags, and the table and
//! buffer constants flow_mods use.
//!
//! A [`FlowMod`] is the version-independent flow_mod: 8-bit table ids, 32-bit ports,
//! instructions in execution order. [`FlowMod::new`] gives OpenFlow's defaults;
//! [`FlowMod::validate`] checks what needs no switch state (table range, known flags,
//! the match, the instructions for anything but a delete).

use super::{err, OfError};
use crate::actions::{Action, Instruction, OFPG_ANY, OFPP_ANY};
use crate::matches::Match;

/// `OFPFC_*` flow_mod commands.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum FlowModCommand {
    /// New flow.
    Add = 0,
    /// Modify all matching flows.
    Modify = 1,
    /// Modify the flow with exactly this match and priority.
    ModifyStrict = 2,
    /// Delete all matching flows.
    Delete = 3,
    /// Delete the flow with exactly this match and priority.
    DeleteStrict = 4,
}

impl FlowModCommand {
    /// The command with this wire number.
    pub fn from_u8(v: u8) -> Option<FlowModCommand> {
        Some(match v {
            0 => FlowModCommand::Add,
            1 => FlowModCommand::Modify,
            2 => FlowModCommand::ModifyStrict,
            3 => FlowModCommand::Delete,
            4 => FlowModCommand::DeleteStrict,
            _ => return None,
        })
    }
    /// Whether the command compares matches strictly (match and priority equal).
    pub fn is_strict(self) -> bool {
        matches!(
            self,
            FlowModCommand::ModifyStrict | FlowModCommand::DeleteStrict
        )
    }
    /// Whether the command deletes.
    pub fn is_delete(self) -> bool {
        matches!(self, FlowModCommand::Delete | FlowModCommand::DeleteStrict)
    }
    /// Whether the command modifies.
    pub fn is_modify(self) -> bool {
        matches!(self, FlowModCommand::Modify | FlowModCommand::ModifyStrict)
    }
}

/// `OFPFF_*` flow_mod flags as a bit set.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, PartialOrd, Ord)]
pub struct FlowModFlags(pub u16);

impl FlowModFlags {
    /// Send a flow_removed message when the flow expires or is deleted.
    pub const SEND_FLOW_REM: FlowModFlags = FlowModFlags(1 << 0);
    /// Refuse to add a flow that overlaps another of the same priority.
    pub const CHECK_OVERLAP: FlowModFlags = FlowModFlags(1 << 1);
    /// Reset counters of modified flows.
    pub const RESET_COUNTS: FlowModFlags = FlowModFlags(1 << 2);
    /// Don't count packets.
    pub const NO_PKT_COUNTS: FlowModFlags = FlowModFlags(1 << 3);
    /// Don't count bytes.
    pub const NO_BYT_COUNTS: FlowModFlags = FlowModFlags(1 << 4);
    /// All flags OpenFlow 1.3 defines.
    pub const ALL: FlowModFlags = FlowModFlags(0x1f);
    /// ovs-ofctl names, in bit order.
    pub const NAMES: [(FlowModFlags, &'static str); 5] = [
        (FlowModFlags::SEND_FLOW_REM, "send_flow_rem"),
        (FlowModFlags::CHECK_OVERLAP, "check_overlap"),
        (FlowModFlags::RESET_COUNTS, "reset_counts"),
        (FlowModFlags::NO_PKT_COUNTS, "no_packet_counts"),
        (FlowModFlags::NO_BYT_COUNTS, "no_byte_counts"),
    ];

    /// No flags.
    pub const fn empty() -> FlowModFlags {
        FlowModFlags(0)
    }
    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: FlowModFlags) -> bool {
        self.0 & other.0 == other.0
    }
    /// Set the bits of `other`.
    pub fn insert(&mut self, other: FlowModFlags) {
        self.0 |= other.0;
    }
    /// Clear the bits of `other`.
    pub fn remove(&mut self, other: FlowModFlags) {
        self.0 &= !other.0;
    }
    /// Whether no bit is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl core::ops::BitOr for FlowModFlags {
    type Output = FlowModFlags;
    fn bitor(self, rhs: FlowModFlags) -> FlowModFlags {
        FlowModFlags(self.0 | rhs.0)
    }
}

/// `OFP_NO_BUFFER`.
pub const OFP_NO_BUFFER: u32 = 0xffff_ffff;
/// The table id meaning "all tables" (delete and stats requests).
pub const OFPTT_ALL: u8 = 0xff;
/// Largest usable table id.
pub const OFPTT_MAX: u8 = 0xfe;
/// Default flow priority (OVS's when `priority=` is omitted).
pub const OFP_DEFAULT_PRIORITY: u16 = 0x8000;

/// A flow table modification.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FlowMod {
    /// What to do.
    pub command: FlowModCommand,
    /// Table; [`OFPTT_ALL`] for deletes across all tables.
    pub table_id: u8,
    /// Priority (ignored by non-strict modify/delete).
    pub priority: u16,
    /// Cookie to set (add) or compare (modify/delete, under `cookie_mask`).
    pub cookie: u64,
    /// Bits of `cookie` to compare for modify/delete; 0 compares nothing.
    pub cookie_mask: u64,
    /// Idle timeout in seconds, 0 for none.
    pub idle_timeout: u16,
    /// Hard timeout in seconds, 0 for none.
    pub hard_timeout: u16,
    /// `OFPFF_*` flags.
    pub flags: FlowModFlags,
    /// For delete: only flows that output to this port; [`OFPP_ANY`] for no restriction.
    pub out_port: u32,
    /// For delete: only flows that output to this group; [`OFPG_ANY`] for no restriction.
    pub out_group: u32,
    /// Buffered packet to apply to, or [`OFP_NO_BUFFER`].
    pub buffer_id: u32,
    /// The match.
    pub match_: Match,
    /// The instructions, in execution order (see [`Instruction`]).
    pub instructions: Vec<Instruction>,
}

impl FlowMod {
    /// A flow_mod with OpenFlow's defaults: table 0, default priority, no cookie, no
    /// timeouts, no flags, out_port/out_group ANY, no buffer, catch-all match, no
    /// instructions (drop).
    pub fn new(command: FlowModCommand) -> FlowMod {
        FlowMod {
            command,
            table_id: 0,
            priority: OFP_DEFAULT_PRIORITY,
            cookie: 0,
            cookie_mask: 0,
            idle_timeout: 0,
            hard_timeout: 0,
            flags: FlowModFlags::empty(),
            out_port: OFPP_ANY,
            out_group: OFPG_ANY,
            buffer_id: OFP_NO_BUFFER,
            match_: Match::new(),
            instructions: Vec::new(),
        }
    }

    /// The apply-actions list, if there is one.
    pub fn apply_actions(&self) -> Option<&[Action]> {
        self.instructions.iter().find_map(|i| match i {
            Instruction::ApplyActions(a) => Some(a.as_slice()),
            _ => None,
        })
    }

    /// Checks that need no switch state: table id range (`OFPTT_ALL` not for adds; OVS
    /// allows it for modify as well as delete),
    /// known flags, the match ([`Match::validate`]) and the instructions
    /// ([`crate::actions::validate_instructions`]). Deletes do not check instructions.
    pub fn validate(&self) -> Result<(), OfError> {
        if self.table_id == OFPTT_ALL && self.command == FlowModCommand::Add {
            return Err(OfError::flow_mod_failed(err::flow_mod_failed::BAD_TABLE_ID));
        }
        if self.flags.0 & !FlowModFlags::ALL.0 != 0 {
            return Err(OfError::flow_mod_failed(err::flow_mod_failed::BAD_FLAGS));
        }
        self.match_.validate()?;
        if !self.command.is_delete() {
            crate::actions::validate_instructions(&self.instructions, self.table_id)?;
        }
        Ok(())
    }
}
