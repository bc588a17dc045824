//! [`OfError`]: an OpenFlow error as (type, code), with the OpenFlow 1.3 numbers of
//! [`super::err`], its constructors per type, and its symbolic names.
//!
//! An `OfError` is what every check in this crate returns on rejection, so that the
//! switch can send it back unchanged; it carries no text. [`OfError::type_name`] and
//! [`OfError::code_name`] give the spec's names for the types and codes this crate knows
//! (`None` otherwise), and `Display` prints the most precise name there is.

use super::err;
use core::fmt;

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
    /// `OFPET_QUEUE_OP_FAILED` with `code`.
    pub const fn queue_op_failed(code: u16) -> OfError {
        OfError::new(err::OFPET_QUEUE_OP_FAILED, code)
    }
    /// `OFPET_BUNDLE_FAILED` with `code`.
    pub const fn bundle_failed(code: u16) -> OfError {
        OfError::new(err::OFPET_BUNDLE_FAILED, code)
    }

    /// A Nicira experimenter error (`OFPET_EXPERIMENTER`, experimenter 0x00002320) with
    /// this experimenter code ([`err::nx_tlv`]).
    pub const fn nx(code: u16) -> OfError {
        OfError::new(err::OFPET_EXPERIMENTER, code)
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
        let table = match self.type_ {
            err::OFPET_BAD_REQUEST => BAD_REQUEST_CODES,
            err::OFPET_BAD_ACTION => BAD_ACTION_CODES,
            err::OFPET_BAD_INSTRUCTION => BAD_INSTRUCTION_CODES,
            err::OFPET_BAD_MATCH => BAD_MATCH_CODES,
            err::OFPET_FLOW_MOD_FAILED => FLOW_MOD_CODES,
            err::OFPET_GROUP_MOD_FAILED => GROUP_MOD_CODES,
            err::OFPET_METER_MOD_FAILED => METER_MOD_CODES,
            err::OFPET_BUNDLE_FAILED => BUNDLE_CODES,
            err::OFPET_QUEUE_OP_FAILED => QUEUE_OP_CODES,
            err::OFPET_EXPERIMENTER => {
                return NX_CODES
                    .iter()
                    .find(|(c, _)| *c == self.code)
                    .map(|(_, n)| *n)
            }
            _ => return None,
        };
        table.get(usize::from(self.code)).copied()
    }
}

/// Names of the Nicira experimenter codes this crate sends.
const NX_CODES: &[(u16, &str)] = &[
    (err::nx_tlv::BAD_COMMAND, "NXTTMFC_BAD_COMMAND"),
    (err::nx_tlv::BAD_OPT_LEN, "NXTTMFC_BAD_OPT_LEN"),
    (err::nx_tlv::BAD_FIELD_IDX, "NXTTMFC_BAD_FIELD_IDX"),
    (err::nx_tlv::TABLE_FULL, "NXTTMFC_TABLE_FULL"),
    (err::nx_tlv::ALREADY_MAPPED, "NXTTMFC_ALREADY_MAPPED"),
    (err::nx_tlv::DUP_ENTRY, "NXTTMFC_DUP_ENTRY"),
    (err::nx_tlv::INVALID_TLV_FIELD, "NXFMFC_INVALID_TLV_FIELD"),
    (err::nx_tlv::INVALID_TLV_DEL, "NXTTMFC_INVALID_TLV_DEL"),
    (err::nx_tlv::NOT_CONFIGURED, "NXST_NOT_CONFIGURED"),
];

/// Names of the `OFPET_BAD_REQUEST` codes, by code.
const BAD_REQUEST_CODES: &[&str] = &[
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
/// Names of the `OFPET_BAD_ACTION` codes, by code.
const BAD_ACTION_CODES: &[&str] = &[
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
/// Names of the `OFPET_BAD_INSTRUCTION` codes, by code.
const BAD_INSTRUCTION_CODES: &[&str] = &[
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
/// Names of the `OFPET_BAD_MATCH` codes, by code.
const BAD_MATCH_CODES: &[&str] = &[
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
/// Names of the `OFPET_FLOW_MOD_FAILED` codes, by code.
const FLOW_MOD_CODES: &[&str] = &[
    "OFPFMFC_UNKNOWN",
    "OFPFMFC_TABLE_FULL",
    "OFPFMFC_BAD_TABLE_ID",
    "OFPFMFC_OVERLAP",
    "OFPFMFC_EPERM",
    "OFPFMFC_BAD_TIMEOUT",
    "OFPFMFC_BAD_COMMAND",
    "OFPFMFC_BAD_FLAGS",
];
/// Names of the `OFPET_GROUP_MOD_FAILED` codes, by code.
const GROUP_MOD_CODES: &[&str] = &[
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
/// Names of the `OFPET_METER_MOD_FAILED` codes, by code.
const METER_MOD_CODES: &[&str] = &[
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
/// Names of the `OFPET_BUNDLE_FAILED` codes, by code.
/// Names of the `OFPET_QUEUE_OP_FAILED` codes, by code.
const QUEUE_OP_CODES: &[&str] = &["OFPQOFC_BAD_PORT", "OFPQOFC_BAD_QUEUE", "OFPQOFC_EPERM"];

const BUNDLE_CODES: &[&str] = &[
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
