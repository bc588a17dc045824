//! OpenFlow error types and codes, with the OpenFlow 1.3 numbering (plus the types 1.4
//! added: bad property, async config, flow monitor and bundle failures).
//!
//! Plain constants: `OFPET_*` types at the top, each type's codes in a submodule named
//! after it. [`super::OfError`] pairs a type with a code and names them; the wire codec
//! translates the numbers for an OpenFlow 1.0 peer.

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

/// `OFPET_QUEUE_OP_FAILED` codes.
pub mod queue_op_failed {
    /// The port does not exist.
    pub const BAD_PORT: u16 = 0;
    /// The queue does not exist.
    pub const BAD_QUEUE: u16 = 1;
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

/// `OFPET_BAD_PROPERTY` codes (OpenFlow 1.4; OpenFlow 1.3 and Nicira's 1.0 numbering send
/// the first three as `OFPET_TABLE_FEATURES_FAILED` codes 2-4, the others as ONF / type 14
/// errors, as OVS does: see `wire::error_reply`).
pub mod bad_property {
    /// Unknown or unsupported property type.
    pub const BAD_TYPE: u16 = 0;
    /// Length problem in a property.
    pub const BAD_LEN: u16 = 1;
    /// Unsupported property value.
    pub const BAD_VALUE: u16 = 2;
    /// Unknown experimenter id.
    pub const BAD_EXPERIMENTER: u16 = 5;
    /// Unknown experimenter type for a known experimenter id.
    pub const BAD_EXP_TYPE: u16 = 6;
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

/// Nicira's TLV-table errors (`NXTTMFC_*`), sent as Nicira experimenter errors
/// ([`super::OfError::nx`]): the codes are the OpenFlow 1.2+ experimenter codes; OpenFlow
/// 1.0 numbers them `nx10` (a Nicira vendor error of type `OFPET_BAD_REQUEST`).
pub mod nx_tlv {
    /// The command is none of add, delete, clear.
    pub const BAD_COMMAND: u16 = 16;
    /// An option length that is not a multiple of 4 or exceeds 124.
    pub const BAD_OPT_LEN: u16 = 17;
    /// A field index beyond `tun_metadata63`.
    pub const BAD_FIELD_IDX: u16 = 18;
    /// The options would take more than the switch's option space.
    pub const TABLE_FULL: u16 = 19;
    /// An add for an index that is already mapped.
    pub const ALREADY_MAPPED: u16 = 20;
    /// An add of an option (class, type) already mapped to another index.
    pub const DUP_ENTRY: u16 = 21;
    /// A flow uses a `tun_metadata` field the table does not map (`NXFMFC_INVALID_TLV_FIELD`,
    /// a flow-mod error that OVS numbers with these).
    pub const INVALID_TLV_FIELD: u16 = 37;
    /// A delete of a mapping some flow uses.
    pub const INVALID_TLV_DEL: u16 = 38;
    /// `NXBRC_MUST_BE_ZERO`: a must-be-zero field (a Nicira action's padding) is not.
    pub const MUST_BE_ZERO: u16 = 4;
    /// `NXR_NOT_SUPPORTED`: the switch cannot resume this continuation.
    pub const RESUME_NOT_SUPPORTED: u16 = 34;
    /// `NXR_STALE`: the continuation is not one this switch made (or is from before a
    /// restart or for a bridge that is gone).
    pub const RESUME_STALE: u16 = 35;
    /// `NXST_NOT_CONFIGURED`: the statistics asked for are of something not configured
    /// (IPFIX on a bridge without it).
    pub const NOT_CONFIGURED: u16 = 36;

    /// The OpenFlow 1.0 (vendor error) code of an OpenFlow 1.2+ code.
    pub fn nx10(code: u16) -> u16 {
        match code {
            37 => 536,
            38 => 537,
            34..=36 => code + 499,
            c => c + 511,
        }
    }
}
