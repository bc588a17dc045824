//! Decode and encode errors, and how each maps onto an OpenFlow error reply.
//!
//! Every way the decoder can reject input is a [`DecodeError`] variant that names the
//! structure at fault; [`DecodeError::to_of_error`] gives the `OFPT_ERROR` type and code
//! the OpenFlow 1.3+ specification prescribes for it, so the connection layer can answer
//! a bad message with `to_of_error()` and the first bytes of the offending message and
//! carry on. (For an OpenFlow 1.0 peer, [`super::of_error_to_wire`] translates the
//! numbers.) [`EncodeError`] is what the encoder reports when a message cannot be
//! expressed in the requested version.

use crate::messages::err::{
    bad_action, bad_instruction, bad_match, bad_request, flow_mod_failed, group_mod_failed,
    meter_mod_failed, OFPET_BAD_ACTION, OFPET_BAD_INSTRUCTION, OFPET_BAD_MATCH, OFPET_BAD_REQUEST,
    OFPET_FLOW_MOD_FAILED, OFPET_GROUP_MOD_FAILED, OFPET_HELLO_FAILED, OFPET_METER_MOD_FAILED,
};
use crate::messages::OfError;
use core::fmt;

/// Why bytes could not be decoded. See the module documentation.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum DecodeError {
    /// Fewer than 8 bytes, or fewer bytes than the header's length (framing: need more).
    Truncated,
    /// A message length field < 8, > 65535, or disagreeing with the message's structure.
    BadLength,
    /// A version this codec does not speak.
    BadVersion(u8),
    /// A message type unknown in this version, or one this codec does not support.
    BadType(u8),
    /// A multipart / stats type unknown or unsupported.
    BadMultipart(u16),
    /// An experimenter (vendor) id this codec does not know.
    BadExperimenter(u32),
    /// An experimenter message subtype this codec does not know.
    BadExpType(u32),
    /// A table id out of range where one is checked.
    BadTableId(u8),
    /// Hello that shares no version (not produced by `decode`; for the connection layer).
    HelloIncompatible,
    /// The match type is neither `OFPMT_OXM` nor `OFPMT_STANDARD` as the version wants.
    BadMatchType(u16),
    /// A match's length disagrees with its contents or the bytes present.
    BadMatchLen,
    /// An OXM/NXM field this codec does not know (class, field).
    BadField(u16, u8),
    /// An OXM/NXM field with the wrong payload length for its field.
    BadFieldLen(u16, u8),
    /// A semantic match error from `Match::from_entries` (duplicate field, value wider
    /// than the field, value bits outside the mask...).
    Match(OfError),
    /// An action type unknown or unsupported.
    BadActionType(u16),
    /// An action whose length is short, not a multiple of 8, or disagrees with its type.
    BadActionLen,
    /// An experimenter action with an unknown experimenter id.
    BadActionExperimenter(u32),
    /// An experimenter action with an unknown subtype (Nicira `NXAST_*` we don't support).
    BadActionExpType(u16),
    /// An action argument that cannot be represented (e.g. a register load into a field
    /// this codec has no name for, or a set_field of an unwritable field).
    BadActionArgument,
    /// A set_field action whose field is unknown.
    BadSetType,
    /// A set_field action whose OXM length is wrong.
    BadSetLen,
    /// An instruction type unknown or unsupported.
    UnknownInstruction(u16),
    /// An instruction whose length is wrong.
    BadInstructionLen,
    /// A flow_mod command unknown in this version.
    BadFlowModCommand(u16),
    /// A group_mod command unknown or unsupported.
    BadGroupCommand(u16),
    /// A group type unknown.
    BadGroupType(u8),
    /// A bucket whose length is wrong.
    BadBucket,
    /// A meter_mod command unknown.
    BadMeterCommand(u16),
    /// A meter band type unknown or a band with a bad length.
    BadMeterBand(u16),
    /// A property list (TLVs padded to 8) whose lengths disagree with the bytes.
    BadPropertyLen,
    /// A message whose contents are refused with this error (e.g. a Nicira TLV-table
    /// mod's `NXTTMFC_*`).
    Refused(OfError),
}

impl DecodeError {
    /// The OpenFlow error (1.3+ numbering) to send back for this decode failure.
    pub fn to_of_error(&self) -> OfError {
        use DecodeError::*;
        let req = |c| OfError::new(OFPET_BAD_REQUEST, c);
        let act = |c| OfError::new(OFPET_BAD_ACTION, c);
        let inst = |c| OfError::new(OFPET_BAD_INSTRUCTION, c);
        let mat = |c| OfError::new(OFPET_BAD_MATCH, c);
        match self {
            Truncated | BadLength | BadPropertyLen => req(bad_request::BAD_LEN),
            BadVersion(_) => req(bad_request::BAD_VERSION),
            BadType(_) => req(bad_request::BAD_TYPE),
            BadMultipart(_) => req(bad_request::BAD_MULTIPART),
            BadExperimenter(_) => req(bad_request::BAD_EXPERIMENTER),
            BadExpType(_) => req(bad_request::BAD_EXP_TYPE),
            BadTableId(_) => req(bad_request::BAD_TABLE_ID),
            HelloIncompatible => OfError::new(OFPET_HELLO_FAILED, 0),
            BadMatchType(_) => mat(bad_match::BAD_TYPE),
            BadMatchLen | BadFieldLen(..) => mat(bad_match::BAD_LEN),
            BadField(..) => mat(bad_match::BAD_FIELD),
            Match(e) | Refused(e) => *e,
            BadActionType(_) => act(bad_action::BAD_TYPE),
            BadActionLen => act(bad_action::BAD_LEN),
            BadActionExperimenter(_) => act(bad_action::BAD_EXPERIMENTER),
            BadActionExpType(_) => act(bad_action::BAD_EXP_TYPE),
            BadActionArgument => act(bad_action::BAD_ARGUMENT),
            BadSetType => act(bad_action::BAD_SET_TYPE),
            BadSetLen => act(bad_action::BAD_SET_LEN),
            UnknownInstruction(_) => inst(bad_instruction::UNKNOWN_INST),
            BadInstructionLen => inst(bad_instruction::BAD_LEN),
            BadFlowModCommand(_) => {
                OfError::new(OFPET_FLOW_MOD_FAILED, flow_mod_failed::BAD_COMMAND)
            }
            BadGroupCommand(_) => {
                OfError::new(OFPET_GROUP_MOD_FAILED, group_mod_failed::BAD_COMMAND)
            }
            BadGroupType(_) => OfError::new(OFPET_GROUP_MOD_FAILED, group_mod_failed::BAD_TYPE),
            BadBucket => OfError::new(OFPET_GROUP_MOD_FAILED, group_mod_failed::BAD_BUCKET),
            BadMeterCommand(_) => {
                OfError::new(OFPET_METER_MOD_FAILED, meter_mod_failed::BAD_COMMAND)
            }
            BadMeterBand(_) => OfError::new(OFPET_METER_MOD_FAILED, meter_mod_failed::BAD_BAND),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?} ({})", self.to_of_error())
    }
}

impl std::error::Error for DecodeError {}

/// Why a message could not be encoded in the requested version.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum EncodeError {
    /// The version is not one this codec speaks.
    BadVersion(u8),
    /// The message does not exist in this version.
    NotInVersion(&'static str),
    /// A value cannot be expressed in this version (e.g. a 32-bit port in OpenFlow 1.0,
    /// a match field OpenFlow 1.0's fixed match lacks, an action with no encoding).
    Unrepresentable(&'static str),
    /// The encoded message would exceed 65535 bytes.
    TooLong,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::BadVersion(v) => write!(f, "unsupported OpenFlow version {v:#x}"),
            EncodeError::NotInVersion(m) => write!(f, "{m} does not exist in this version"),
            EncodeError::Unrepresentable(m) => write!(f, "cannot encode {m} in this version"),
            EncodeError::TooLong => f.write_str("message longer than 65535 bytes"),
        }
    }
}

impl std::error::Error for EncodeError {}
