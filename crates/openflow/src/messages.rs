//! Typed OpenFlow switch-modifying messages and errors.
//!
//! [`FlowMod`], [`GroupMod`] and [`MeterMod`] are the version-independent form of the
//! three "mod" messages: what a wire codec produces from OF1.0/1.3/1.4/1.5 bytes, what the
//! ovs-ofctl text parser produces, and what `ofproto` consumes. Field types are the widest
//! the versions use (32-bit ports, 8-bit table ids); a codec for an older version narrows
//! them and reports what it cannot express.
//!
//! [`OfError`] is an OpenFlow error as (type, code) with the OpenFlow 1.3 numbers; the
//! constants in [`err`] name them. Functions in this crate that reject a message return
//! the error the spec prescribes so that `ofproto` can send it back unchanged.
//!
//! Invariants: nothing here validates on construction. `Match::validate`,
//! `Action::validate`, [`FlowMod::validate`], [`GroupMod::validate`] and
//! [`MeterMod::validate`] check what can be checked without switch state; table sizes,
//! existing groups/meters and so on are `ofproto`'s to check.

use crate::actions::{validate_actions, Action, Instruction, OFPG_ANY, OFPG_MAX, OFPP_ANY};
use crate::matches::Match;
use core::fmt;

/// OpenFlow error types and codes (OpenFlow 1.3 numbering).
pub mod err {
    /// Hello protocol failed.
    pub const OFPET_HELLO_FAILED: u16 = 0;
    /// Request was not understood.
    pub const OFPET_BAD_REQUEST: u16 = 1;
    /// Error in action description.
    pub const OFPET_BAD_ACTION: u16 = 2;
    /// Error in instruction list.
    pub const OFPET_BAD_INSTRUCTION: u16 = 3;
    /// Error in match.
    pub const OFPET_BAD_MATCH: u16 = 4;
    /// Problem modifying a flow entry.
    pub const OFPET_FLOW_MOD_FAILED: u16 = 5;
    /// Problem modifying a group entry.
    pub const OFPET_GROUP_MOD_FAILED: u16 = 6;
    /// Port mod request failed.
    pub const OFPET_PORT_MOD_FAILED: u16 = 7;
    /// Table mod request failed.
    pub const OFPET_TABLE_MOD_FAILED: u16 = 8;
    /// Queue operation failed.
    pub const OFPET_QUEUE_OP_FAILED: u16 = 9;
    /// Switch config request failed.
    pub const OFPET_SWITCH_CONFIG_FAILED: u16 = 10;
    /// Controller role request failed.
    pub const OFPET_ROLE_REQUEST_FAILED: u16 = 11;
    /// Error in meter.
    pub const OFPET_METER_MOD_FAILED: u16 = 12;
    /// Setting table features failed.
    pub const OFPET_TABLE_FEATURES_FAILED: u16 = 13;
    /// Some property is invalid (1.4+).
    pub const OFPET_BAD_PROPERTY: u16 = 14;
    /// Asynchronous config request failed (1.4+).
    pub const OFPET_ASYNC_CONFIG_FAILED: u16 = 15;
    /// Setting flow monitor failed (1.4+).
    pub const OFPET_FLOW_MONITOR_FAILED: u16 = 16;
    /// Bundle operation failed (1.4+).
    pub const OFPET_BUNDLE_FAILED: u16 = 17;
    /// Experimenter error.
    pub const OFPET_EXPERIMENTER: u16 = 0xffff;

    /// `OFPET_BAD_REQUEST` codes.
    pub mod bad_request {
        /// Header version not supported.
        pub const BAD_VERSION: u16 = 0;
        /// Message type not supported.
        pub const BAD_TYPE: u16 = 1;
        /// Multipart type not supported.
        pub const BAD_MULTIPART: u16 = 2;
        /// Experimenter id not supported.
        pub const BAD_EXPERIMENTER: u16 = 3;
        /// Experimenter type not supported.
        pub const BAD_EXP_TYPE: u16 = 4;
        /// Permissions error.
        pub const EPERM: u16 = 5;
        /// Wrong length.
        pub const BAD_LEN: u16 = 6;
        /// Buffer already used.
        pub const BUFFER_EMPTY: u16 = 7;
        /// Unknown buffer id.
        pub const BUFFER_UNKNOWN: u16 = 8;
        /// Table id out of range.
        pub const BAD_TABLE_ID: u16 = 9;
        /// Denied because controller is a slave.
        pub const IS_SLAVE: u16 = 10;
        /// Invalid port.
        pub const BAD_PORT: u16 = 11;
        /// Invalid packet in packet-out.
        pub const BAD_PACKET: u16 = 12;
        /// Multipart request overflowed its buffer.
        pub const MULTIPART_BUFFER_OVERFLOW: u16 = 13;
    }

    /// `OFPET_BAD_ACTION` codes.
    pub mod bad_action {
        /// Unknown or unsupported action type.
        pub const BAD_TYPE: u16 = 0;
        /// Length problem in actions.
        pub const BAD_LEN: u16 = 1;
        /// Unknown experimenter id.
        pub const BAD_EXPERIMENTER: u16 = 2;
        /// Unknown action for experimenter id.
        pub const BAD_EXP_TYPE: u16 = 3;
        /// Problem validating output port.
        pub const BAD_OUT_PORT: u16 = 4;
        /// Bad action argument.
        pub const BAD_ARGUMENT: u16 = 5;
        /// Permissions error.
        pub const EPERM: u16 = 6;
        /// Can't handle this many actions.
        pub const TOO_MANY: u16 = 7;
        /// Problem validating output queue.
        pub const BAD_QUEUE: u16 = 8;
        /// Invalid group id in output/group action.
        pub const BAD_OUT_GROUP: u16 = 9;
        /// Action can't apply for this match, or set-field prerequisites missing.
        pub const MATCH_INCONSISTENT: u16 = 10;
        /// Action order is unsupported for the action list.
        pub const UNSUPPORTED_ORDER: u16 = 11;
        /// Actions uses an unsupported tag/encap.
        pub const BAD_TAG: u16 = 12;
        /// Unsupported type in set-field action.
        pub const BAD_SET_TYPE: u16 = 13;
        /// Length problem in set-field action.
        pub const BAD_SET_LEN: u16 = 14;
        /// Bad argument in set-field action.
        pub const BAD_SET_ARGUMENT: u16 = 15;
    }

    /// `OFPET_BAD_INSTRUCTION` codes.
    pub mod bad_instruction {
        /// Unknown instruction.
        pub const UNKNOWN_INST: u16 = 0;
        /// Switch or table does not support the instruction.
        pub const UNSUP_INST: u16 = 1;
        /// Invalid table id specified.
        pub const BAD_TABLE_ID: u16 = 2;
        /// Metadata value unsupported by datapath.
        pub const UNSUP_METADATA: u16 = 3;
        /// Metadata mask value unsupported by datapath.
        pub const UNSUP_METADATA_MASK: u16 = 4;
        /// Unknown experimenter id.
        pub const BAD_EXPERIMENTER: u16 = 5;
        /// Unknown instruction for experimenter id.
        pub const BAD_EXP_TYPE: u16 = 6;
        /// Length problem in instructions.
        pub const BAD_LEN: u16 = 7;
        /// Permissions error.
        pub const EPERM: u16 = 8;
    }

    /// `OFPET_BAD_MATCH` codes.
    pub mod bad_match {
        /// Unsupported match type.
        pub const BAD_TYPE: u16 = 0;
        /// Length problem in match.
        pub const BAD_LEN: u16 = 1;
        /// Match uses an unsupported tag/encap.
        pub const BAD_TAG: u16 = 2;
        /// Unsupported datalink address mask.
        pub const BAD_DL_ADDR_MASK: u16 = 3;
        /// Unsupported network address mask.
        pub const BAD_NW_ADDR_MASK: u16 = 4;
        /// Unsupported combination of fields masked or omitted.
        pub const BAD_WILDCARDS: u16 = 5;
        /// Unsupported field type.
        pub const BAD_FIELD: u16 = 6;
        /// Unsupported value in a match field.
        pub const BAD_VALUE: u16 = 7;
        /// Unsupported mask.
        pub const BAD_MASK: u16 = 8;
        /// A prerequisite was not met.
        pub const BAD_PREREQ: u16 = 9;
        /// A field type was duplicated.
        pub const DUP_FIELD: u16 = 10;
        /// Permissions error.
        pub const EPERM: u16 = 11;
    }

    /// `OFPET_FLOW_MOD_FAILED` codes.
    pub mod flow_mod_failed {
        /// Unspecified error.
        pub const UNKNOWN: u16 = 0;
        /// Table is full.
        pub const TABLE_FULL: u16 = 1;
        /// Table does not exist.
        pub const BAD_TABLE_ID: u16 = 2;
        /// Attempted to add an overlapping flow with CHECK_OVERLAP.
        pub const OVERLAP: u16 = 3;
        /// Permissions error.
        pub const EPERM: u16 = 4;
        /// Unsupported idle/hard timeout.
        pub const BAD_TIMEOUT: u16 = 5;
        /// Unsupported or unknown command.
        pub const BAD_COMMAND: u16 = 6;
        /// Unsupported or unknown flags.
        pub const BAD_FLAGS: u16 = 7;
    }

    /// `OFPET_GROUP_MOD_FAILED` codes.
    pub mod group_mod_failed {
        /// Group already exists.
        pub const GROUP_EXISTS: u16 = 0;
        /// Group not added: invalid group id.
        pub const INVALID_GROUP: u16 = 1;
        /// Unequal weights unsupported.
        pub const WEIGHT_UNSUPPORTED: u16 = 2;
        /// Group table full.
        pub const OUT_OF_GROUPS: u16 = 3;
        /// Too many buckets.
        pub const OUT_OF_BUCKETS: u16 = 4;
        /// Chaining unsupported.
        pub const CHAINING_UNSUPPORTED: u16 = 5;
        /// Watch port/group unsupported.
        pub const WATCH_UNSUPPORTED: u16 = 6;
        /// Group would create a loop.
        pub const LOOP: u16 = 7;
        /// Modify of a group that does not exist.
        pub const UNKNOWN_GROUP: u16 = 8;
        /// Group not deleted: another group forwards to it.
        pub const CHAINED_GROUP: u16 = 9;
        /// Unsupported or unknown group type.
        pub const BAD_TYPE: u16 = 10;
        /// Unsupported or unknown command.
        pub const BAD_COMMAND: u16 = 11;
        /// Error in bucket.
        pub const BAD_BUCKET: u16 = 12;
        /// Error in watch port/group.
        pub const BAD_WATCH: u16 = 13;
        /// Permissions error.
        pub const EPERM: u16 = 14;
        /// No bucket with the command bucket id (1.5).
        pub const UNKNOWN_BUCKET: u16 = 15;
        /// A bucket with this id already exists (1.5).
        pub const BUCKET_EXISTS: u16 = 16;
    }

    /// `OFPET_PORT_MOD_FAILED` codes.
    pub mod port_mod_failed {
        /// No such port.
        pub const BAD_PORT: u16 = 0;
        /// Hardware address mismatch.
        pub const BAD_HW_ADDR: u16 = 1;
        /// Bad config.
        pub const BAD_CONFIG: u16 = 2;
        /// Bad advertise.
        pub const BAD_ADVERTISE: u16 = 3;
        /// Permissions error.
        pub const EPERM: u16 = 4;
    }

    /// `OFPET_TABLE_MOD_FAILED` codes.
    pub mod table_mod_failed {
        /// No such table.
        pub const BAD_TABLE: u16 = 0;
        /// Bad config.
        pub const BAD_CONFIG: u16 = 1;
        /// Permissions error.
        pub const EPERM: u16 = 2;
    }

    /// `OFPET_BUNDLE_FAILED` codes.
    pub mod bundle_failed {
        /// Unspecified error.
        pub const UNKNOWN: u16 = 0;
        /// Permissions error.
        pub const EPERM: u16 = 1;
        /// Bundle id does not exist.
        pub const BAD_ID: u16 = 2;
        /// Bundle id already exists.
        pub const BUNDLE_EXIST: u16 = 3;
        /// Bundle id is closed.
        pub const BUNDLE_CLOSED: u16 = 4;
        /// Too many bundles ids.
        pub const OUT_OF_BUNDLES: u16 = 5;
        /// Unsupported or unknown bundle control type.
        pub const BAD_TYPE: u16 = 6;
        /// Unsupported, unknown or inconsistent flags.
        pub const BAD_FLAGS: u16 = 7;
        /// Length problem in the included message.
        pub const MSG_BAD_LEN: u16 = 8;
        /// Inconsistent or duplicate xid.
        pub const MSG_BAD_XID: u16 = 9;
        /// Unsupported message in this bundle.
        pub const MSG_UNSUP: u16 = 10;
        /// Unsupported message combination in this bundle.
        pub const MSG_CONFLICT: u16 = 11;
        /// Can't handle this many messages in a bundle.
        pub const MSG_TOO_MANY: u16 = 12;
        /// One message in the bundle failed.
        pub const MSG_FAILED: u16 = 13;
        /// Bundle is taking too long.
        pub const TIMEOUT: u16 = 14;
        /// Bundle is locking the resource.
        pub const BUNDLE_IN_PROGRESS: u16 = 15;
    }

    /// `OFPET_FLOW_MONITOR_FAILED` codes.
    pub mod flow_monitor_failed {
        /// Unspecified error.
        pub const UNKNOWN: u16 = 0;
        /// Monitor not added because a monitor with this id already exists.
        pub const MONITOR_EXISTS: u16 = 1;
        /// Monitor not added because the switch is out of resources.
        pub const OUT_OF_MONITORS: u16 = 2;
        /// Monitor not modified or deleted: it does not exist.
        pub const UNKNOWN_MONITOR: u16 = 3;
        /// Unsupported or unknown command.
        pub const BAD_COMMAND: u16 = 4;
        /// Unsupported or unknown flags.
        pub const BAD_FLAGS: u16 = 5;
        /// Table id out of range.
        pub const BAD_TABLE_ID: u16 = 6;
        /// Invalid monitor output port.
        pub const BAD_OUT: u16 = 7;
    }

    /// `OFPET_METER_MOD_FAILED` codes.
    pub mod meter_mod_failed {
        /// Unspecified error.
        pub const UNKNOWN: u16 = 0;
        /// Meter already exists.
        pub const METER_EXISTS: u16 = 1;
        /// Meter id invalid.
        pub const INVALID_METER: u16 = 2;
        /// Modify of a meter that does not exist.
        pub const UNKNOWN_METER: u16 = 3;
        /// Unsupported or unknown command.
        pub const BAD_COMMAND: u16 = 4;
        /// Flag configuration unsupported.
        pub const BAD_FLAGS: u16 = 5;
        /// Rate unsupported.
        pub const BAD_RATE: u16 = 6;
        /// Burst size unsupported.
        pub const BAD_BURST: u16 = 7;
        /// Band unsupported.
        pub const BAD_BAND: u16 = 8;
        /// Band value unsupported.
        pub const BAD_BAND_VALUE: u16 = 9;
        /// No more meters available.
        pub const OUT_OF_METERS: u16 = 10;
        /// Too many bands.
        pub const OUT_OF_BANDS: u16 = 11;
    }
}

/// An OpenFlow error: type and code, OpenFlow 1.3 numbering.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct OfError {
    /// `OFPET_*`.
    pub type_: u16,
    /// Code within the type.
    pub code: u16,
}

impl OfError {
    /// An error of this type and code.
    pub const fn new(type_: u16, code: u16) -> OfError {
        OfError { type_, code }
    }
    /// `OFPET_BAD_REQUEST` with `code`.
    pub const fn bad_request(code: u16) -> OfError {
        OfError::new(err::OFPET_BAD_REQUEST, code)
    }
    /// `OFPET_BAD_ACTION` with `code`.
    pub const fn bad_action(code: u16) -> OfError {
        OfError::new(err::OFPET_BAD_ACTION, code)
    }
    /// `OFPET_BAD_INSTRUCTION` with `code`.
    pub const fn bad_instruction(code: u16) -> OfError {
        OfError::new(err::OFPET_BAD_INSTRUCTION, code)
    }
    /// `OFPET_BAD_MATCH` with `code`.
    pub const fn bad_match(code: u16) -> OfError {
        OfError::new(err::OFPET_BAD_MATCH, code)
    }
    /// `OFPET_FLOW_MOD_FAILED` with `code`.
    pub const fn flow_mod_failed(code: u16) -> OfError {
        OfError::new(err::OFPET_FLOW_MOD_FAILED, code)
    }
    /// `OFPET_GROUP_MOD_FAILED` with `code`.
    pub const fn group_mod_failed(code: u16) -> OfError {
        OfError::new(err::OFPET_GROUP_MOD_FAILED, code)
    }
    /// `OFPET_METER_MOD_FAILED` with `code`.
    pub const fn meter_mod_failed(code: u16) -> OfError {
        OfError::new(err::OFPET_METER_MOD_FAILED, code)
    }
    /// `OFPET_BUNDLE_FAILED` with `code`.
    pub const fn bundle_failed(code: u16) -> OfError {
        OfError::new(err::OFPET_BUNDLE_FAILED, code)
    }

    /// Symbolic name of the type, as in the spec (`OFPET_...`), or `None` if unknown.
    pub fn type_name(&self) -> Option<&'static str> {
        Some(match self.type_ {
            0 => "OFPET_HELLO_FAILED",
            1 => "OFPET_BAD_REQUEST",
            2 => "OFPET_BAD_ACTION",
            3 => "OFPET_BAD_INSTRUCTION",
            4 => "OFPET_BAD_MATCH",
            5 => "OFPET_FLOW_MOD_FAILED",
            6 => "OFPET_GROUP_MOD_FAILED",
            7 => "OFPET_PORT_MOD_FAILED",
            8 => "OFPET_TABLE_MOD_FAILED",
            9 => "OFPET_QUEUE_OP_FAILED",
            10 => "OFPET_SWITCH_CONFIG_FAILED",
            11 => "OFPET_ROLE_REQUEST_FAILED",
            12 => "OFPET_METER_MOD_FAILED",
            13 => "OFPET_TABLE_FEATURES_FAILED",
            14 => "OFPET_BAD_PROPERTY",
            15 => "OFPET_ASYNC_CONFIG_FAILED",
            16 => "OFPET_FLOW_MONITOR_FAILED",
            17 => "OFPET_BUNDLE_FAILED",
            0xffff => "OFPET_EXPERIMENTER",
            _ => return None,
        })
    }

    /// Symbolic name of the code (`OFPBMC_BAD_PREREQ`...), or `None` if not known here.
    pub fn code_name(&self) -> Option<&'static str> {
        const BAD_REQUEST: &[&str] = &[
            "OFPBRC_BAD_VERSION",
            "OFPBRC_BAD_TYPE",
            "OFPBRC_BAD_MULTIPART",
            "OFPBRC_BAD_EXPERIMENTER",
            "OFPBRC_BAD_EXP_TYPE",
            "OFPBRC_EPERM",
            "OFPBRC_BAD_LEN",
            "OFPBRC_BUFFER_EMPTY",
            "OFPBRC_BUFFER_UNKNOWN",
            "OFPBRC_BAD_TABLE_ID",
            "OFPBRC_IS_SLAVE",
            "OFPBRC_BAD_PORT",
            "OFPBRC_BAD_PACKET",
            "OFPBRC_MULTIPART_BUFFER_OVERFLOW",
        ];
        const BAD_ACTION: &[&str] = &[
            "OFPBAC_BAD_TYPE",
            "OFPBAC_BAD_LEN",
            "OFPBAC_BAD_EXPERIMENTER",
            "OFPBAC_BAD_EXP_TYPE",
            "OFPBAC_BAD_OUT_PORT",
            "OFPBAC_BAD_ARGUMENT",
            "OFPBAC_EPERM",
            "OFPBAC_TOO_MANY",
            "OFPBAC_BAD_QUEUE",
            "OFPBAC_BAD_OUT_GROUP",
            "OFPBAC_MATCH_INCONSISTENT",
            "OFPBAC_UNSUPPORTED_ORDER",
            "OFPBAC_BAD_TAG",
            "OFPBAC_BAD_SET_TYPE",
            "OFPBAC_BAD_SET_LEN",
            "OFPBAC_BAD_SET_ARGUMENT",
        ];
        const BAD_INSTRUCTION: &[&str] = &[
            "OFPBIC_UNKNOWN_INST",
            "OFPBIC_UNSUP_INST",
            "OFPBIC_BAD_TABLE_ID",
            "OFPBIC_UNSUP_METADATA",
            "OFPBIC_UNSUP_METADATA_MASK",
            "OFPBIC_BAD_EXPERIMENTER",
            "OFPBIC_BAD_EXP_TYPE",
            "OFPBIC_BAD_LEN",
            "OFPBIC_EPERM",
        ];
        const BAD_MATCH: &[&str] = &[
            "OFPBMC_BAD_TYPE",
            "OFPBMC_BAD_LEN",
            "OFPBMC_BAD_TAG",
            "OFPBMC_BAD_DL_ADDR_MASK",
            "OFPBMC_BAD_NW_ADDR_MASK",
            "OFPBMC_BAD_WILDCARDS",
            "OFPBMC_BAD_FIELD",
            "OFPBMC_BAD_VALUE",
            "OFPBMC_BAD_MASK",
            "OFPBMC_BAD_PREREQ",
            "OFPBMC_DUP_FIELD",
            "OFPBMC_EPERM",
        ];
        const FLOW_MOD: &[&str] = &[
            "OFPFMFC_UNKNOWN",
            "OFPFMFC_TABLE_FULL",
            "OFPFMFC_BAD_TABLE_ID",
            "OFPFMFC_OVERLAP",
            "OFPFMFC_EPERM",
            "OFPFMFC_BAD_TIMEOUT",
            "OFPFMFC_BAD_COMMAND",
            "OFPFMFC_BAD_FLAGS",
        ];
        const GROUP_MOD: &[&str] = &[
            "OFPGMFC_GROUP_EXISTS",
            "OFPGMFC_INVALID_GROUP",
            "OFPGMFC_WEIGHT_UNSUPPORTED",
            "OFPGMFC_OUT_OF_GROUPS",
            "OFPGMFC_OUT_OF_BUCKETS",
            "OFPGMFC_CHAINING_UNSUPPORTED",
            "OFPGMFC_WATCH_UNSUPPORTED",
            "OFPGMFC_LOOP",
            "OFPGMFC_UNKNOWN_GROUP",
            "OFPGMFC_CHAINED_GROUP",
            "OFPGMFC_BAD_TYPE",
            "OFPGMFC_BAD_COMMAND",
            "OFPGMFC_BAD_BUCKET",
            "OFPGMFC_BAD_WATCH",
            "OFPGMFC_EPERM",
            "OFPGMFC_UNKNOWN_BUCKET",
            "OFPGMFC_BUCKET_EXISTS",
        ];
        const METER_MOD: &[&str] = &[
            "OFPMMFC_UNKNOWN",
            "OFPMMFC_METER_EXISTS",
            "OFPMMFC_INVALID_METER",
            "OFPMMFC_UNKNOWN_METER",
            "OFPMMFC_BAD_COMMAND",
            "OFPMMFC_BAD_FLAGS",
            "OFPMMFC_BAD_RATE",
            "OFPMMFC_BAD_BURST",
            "OFPMMFC_BAD_BAND",
            "OFPMMFC_BAD_BAND_VALUE",
            "OFPMMFC_OUT_OF_METERS",
            "OFPMMFC_OUT_OF_BANDS",
        ];
        const BUNDLE: &[&str] = &[
            "OFPBFC_UNKNOWN",
            "OFPBFC_EPERM",
            "OFPBFC_BAD_ID",
            "OFPBFC_BUNDLE_EXIST",
            "OFPBFC_BUNDLE_CLOSED",
            "OFPBFC_OUT_OF_BUNDLES",
            "OFPBFC_BAD_TYPE",
            "OFPBFC_BAD_FLAGS",
            "OFPBFC_MSG_BAD_LEN",
            "OFPBFC_MSG_BAD_XID",
            "OFPBFC_MSG_UNSUP",
            "OFPBFC_MSG_CONFLICT",
            "OFPBFC_MSG_TOO_MANY",
            "OFPBFC_MSG_FAILED",
            "OFPBFC_TIMEOUT",
            "OFPBFC_BUNDLE_IN_PROGRESS",
        ];
        let table = match self.type_ {
            err::OFPET_BAD_REQUEST => BAD_REQUEST,
            err::OFPET_BAD_ACTION => BAD_ACTION,
            err::OFPET_BAD_INSTRUCTION => BAD_INSTRUCTION,
            err::OFPET_BAD_MATCH => BAD_MATCH,
            err::OFPET_FLOW_MOD_FAILED => FLOW_MOD,
            err::OFPET_GROUP_MOD_FAILED => GROUP_MOD,
            err::OFPET_METER_MOD_FAILED => METER_MOD,
            err::OFPET_BUNDLE_FAILED => BUNDLE,
            _ => return None,
        };
        table.get(usize::from(self.code)).copied()
    }
}

impl fmt::Display for OfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.type_name(), self.code_name()) {
            (_, Some(c)) => f.write_str(c),
            (Some(t), None) => write!(f, "{t}({})", self.code),
            (None, None) => write!(f, "OFPET({},{})", self.type_, self.code),
        }
    }
}

impl std::error::Error for OfError {}

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

/// `OFPGC_*` group_mod commands.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum GroupModCommand {
    /// New group.
    Add = 0,
    /// Modify all matching groups.
    Modify = 1,
    /// Delete all matching groups.
    Delete = 2,
}

/// `OFPGT_*` group types.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum GroupType {
    /// Execute all buckets.
    All = 0,
    /// Execute one bucket, chosen by the switch (weighted).
    Select = 1,
    /// Execute the one bucket.
    Indirect = 2,
    /// Execute the first live bucket.
    FastFailover = 3,
}

impl GroupType {
    /// The type with this wire number.
    pub fn from_u8(v: u8) -> Option<GroupType> {
        Some(match v {
            0 => GroupType::All,
            1 => GroupType::Select,
            2 => GroupType::Indirect,
            3 => GroupType::FastFailover,
            _ => return None,
        })
    }
    /// ovs-ofctl name.
    pub fn name(self) -> &'static str {
        match self {
            GroupType::All => "all",
            GroupType::Select => "select",
            GroupType::Indirect => "indirect",
            GroupType::FastFailover => "ff",
        }
    }
}

/// One bucket of a group.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Bucket {
    /// Relative weight (select groups); 0 for other types.
    pub weight: u16,
    /// Port whose liveness this bucket depends on (fast failover), or [`OFPP_ANY`].
    pub watch_port: u32,
    /// Group whose liveness this bucket depends on (fast failover), or [`OFPG_ANY`].
    pub watch_group: u32,
    /// The bucket's action set.
    pub actions: Vec<Action>,
    /// OpenFlow 1.5 bucket id (at most [`OFPG_BUCKET_MAX`]). Earlier versions have none
    /// and decode as 0; the switch numbers a group's buckets by position when their ids
    /// are not distinct.
    pub bucket_id: u32,
}

/// Largest bucket id.
pub const OFPG_BUCKET_MAX: u32 = 0xffff_ff00;
/// `command_bucket_id`: the first bucket.
pub const OFPG_BUCKET_FIRST: u32 = 0xffff_fffd;
/// `command_bucket_id`: the last bucket.
pub const OFPG_BUCKET_LAST: u32 = 0xffff_fffe;
/// `command_bucket_id`: every bucket.
pub const OFPG_BUCKET_ALL: u32 = 0xffff_ffff;

impl Bucket {
    /// A bucket with these actions and default parameters (weight 0 unless the caller
    /// sets it, watching nothing, id 0).
    pub fn new(actions: Vec<Action>) -> Bucket {
        Bucket {
            bucket_id: 0,
            weight: 0,
            watch_port: OFPP_ANY,
            watch_group: OFPG_ANY,
            actions,
        }
    }
}

/// A group table modification.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GroupMod {
    /// What to do.
    pub command: GroupModCommand,
    /// Group type.
    pub group_type: GroupType,
    /// Group id ([`crate::actions::OFPG_ALL`] for delete-all).
    pub group_id: u32,
    /// Buckets.
    pub buckets: Vec<Bucket>,
}

impl GroupMod {
    /// Checks that need no switch state: group id range (ALL only for delete), indirect
    /// groups have exactly one bucket, fast-failover buckets watch something, bucket
    /// actions are valid.
    pub fn validate(&self) -> Result<(), OfError> {
        use err::group_mod_failed as g;
        let id_ok = self.group_id <= OFPG_MAX
            || (self.command == GroupModCommand::Delete
                && self.group_id == crate::actions::OFPG_ALL);
        if !id_ok {
            return Err(OfError::group_mod_failed(g::INVALID_GROUP));
        }
        if self.command == GroupModCommand::Delete {
            return Ok(());
        }
        if self.group_type == GroupType::Indirect && self.buckets.len() > 1 {
            return Err(OfError::group_mod_failed(g::INVALID_GROUP));
        }
        for b in &self.buckets {
            if self.group_type == GroupType::FastFailover
                && b.watch_port == OFPP_ANY
                && b.watch_group == OFPG_ANY
            {
                return Err(OfError::group_mod_failed(g::BAD_WATCH));
            }
            if self.group_type != GroupType::Select && b.weight != 0 {
                return Err(OfError::group_mod_failed(g::BAD_BUCKET));
            }
            validate_actions(&b.actions)?;
        }
        Ok(())
    }
}

/// OpenFlow 1.5 group_mod bucket commands.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum BucketCommand {
    /// `OFPGC_INSERT_BUCKET` (3): insert buckets before the command bucket (after it for
    /// `OFPG_BUCKET_LAST`).
    Insert = 3,
    /// `OFPGC_REMOVE_BUCKET` (5): remove the command bucket (or all of them).
    Remove = 5,
}

/// An OpenFlow 1.5 insert-bucket / remove-bucket group_mod.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GroupBucketMod {
    /// Insert or remove.
    pub command: BucketCommand,
    /// Group type as sent (the group keeps its own).
    pub group_type: GroupType,
    /// Group id.
    pub group_id: u32,
    /// The bucket to operate on: an id, [`OFPG_BUCKET_FIRST`], [`OFPG_BUCKET_LAST`] or
    /// [`OFPG_BUCKET_ALL`] (remove only).
    pub command_bucket_id: u32,
    /// Buckets to insert (none for remove).
    pub buckets: Vec<Bucket>,
}

/// `OFPMC_*` meter_mod commands.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum MeterModCommand {
    /// New meter.
    Add = 0,
    /// Modify a meter.
    Modify = 1,
    /// Delete a meter.
    Delete = 2,
}

/// `OFPMF_*` meter flags as a bit set.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct MeterFlags(pub u16);

impl MeterFlags {
    /// Rates are in kb/s.
    pub const KBPS: MeterFlags = MeterFlags(1 << 0);
    /// Rates are in packets/s.
    pub const PKTPS: MeterFlags = MeterFlags(1 << 1);
    /// Burst sizes are meaningful.
    pub const BURST: MeterFlags = MeterFlags(1 << 2);
    /// Collect statistics.
    pub const STATS: MeterFlags = MeterFlags(1 << 3);
    /// All flags.
    pub const ALL: MeterFlags = MeterFlags(0xf);

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: MeterFlags) -> bool {
        self.0 & other.0 == other.0
    }
    /// Set the bits of `other`.
    pub fn insert(&mut self, other: MeterFlags) {
        self.0 |= other.0;
    }
}

impl core::ops::BitOr for MeterFlags {
    type Output = MeterFlags;
    fn bitor(self, rhs: MeterFlags) -> MeterFlags {
        MeterFlags(self.0 | rhs.0)
    }
}

/// One meter band.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum MeterBand {
    /// Drop packets above `rate` (`OFPMBT_DROP` = 1).
    Drop {
        /// Rate in kb/s or packets/s.
        rate: u32,
        /// Burst in kb or packets.
        burst_size: u32,
    },
    /// Raise the drop precedence of packets above `rate` (`OFPMBT_DSCP_REMARK` = 2).
    DscpRemark {
        /// Rate in kb/s or packets/s.
        rate: u32,
        /// Burst in kb or packets.
        burst_size: u32,
        /// Number of precedence levels to add.
        prec_level: u8,
    },
}

impl MeterBand {
    /// `OFPMBT_*` number.
    pub fn band_type(&self) -> u16 {
        match self {
            MeterBand::Drop { .. } => 1,
            MeterBand::DscpRemark { .. } => 2,
        }
    }
    /// The band's rate.
    pub fn rate(&self) -> u32 {
        match *self {
            MeterBand::Drop { rate, .. } | MeterBand::DscpRemark { rate, .. } => rate,
        }
    }
    /// The band's burst size.
    pub fn burst_size(&self) -> u32 {
        match *self {
            MeterBand::Drop { burst_size, .. } | MeterBand::DscpRemark { burst_size, .. } => {
                burst_size
            }
        }
    }
}

/// Largest usable meter id.
pub const OFPM_MAX: u32 = 0xffff_0000;
/// Meter for slow-path datapath traffic.
pub const OFPM_SLOWPATH: u32 = 0xffff_fffd;
/// Meter for controller connection traffic.
pub const OFPM_CONTROLLER: u32 = 0xffff_fffe;
/// All meters (delete / stats).
pub const OFPM_ALL: u32 = 0xffff_ffff;

/// A meter table modification.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MeterMod {
    /// What to do.
    pub command: MeterModCommand,
    /// `OFPMF_*` flags.
    pub flags: MeterFlags,
    /// Meter id.
    pub meter_id: u32,
    /// Bands.
    pub bands: Vec<MeterBand>,
}

impl MeterMod {
    /// Checks that need no switch state: meter id range, flags (known bits, exactly one of
    /// KBPS/PKTPS), band rates non-zero, no burst size without BURST... (OVS accepts a
    /// burst size without the flag; so do we).
    pub fn validate(&self) -> Result<(), OfError> {
        use err::meter_mod_failed as m;
        let id_ok = (self.meter_id >= 1 && self.meter_id <= OFPM_MAX)
            || self.meter_id == OFPM_SLOWPATH
            || self.meter_id == OFPM_CONTROLLER
            || (self.command == MeterModCommand::Delete && self.meter_id == OFPM_ALL);
        if !id_ok {
            return Err(OfError::meter_mod_failed(m::INVALID_METER));
        }
        if self.command == MeterModCommand::Delete {
            return Ok(());
        }
        let f = self.flags;
        if f.0 & !MeterFlags::ALL.0 != 0
            || (f.contains(MeterFlags::KBPS) && f.contains(MeterFlags::PKTPS))
        {
            return Err(OfError::meter_mod_failed(m::BAD_FLAGS));
        }
        for b in &self.bands {
            if b.rate() == 0 {
                return Err(OfError::meter_mod_failed(m::BAD_RATE));
            }
        }
        Ok(())
    }
}
