//! Nicira's `controller(...)` action: a packet-in with more to say than
//! `output:CONTROLLER` (which stays [`crate::Action::Output`]).
//!
//! Besides `max_len` it names the packet-in's reason, the controller connections that get
//! it (those whose `NXT_SET_CONTROLLER_ID` is `controller_id`; 0 is the id every connection
//! starts with), bytes the controller gets back in `NXT_PACKET_IN2`'s user data, whether
//! the pipeline pauses (the packet-in then carries a continuation the controller hands back
//! in `NXT_RESUME`), and the meter the packet-in goes through.
//!
//! Two wire forms exist: `NXAST_CONTROLLER` (max_len, id, reason: 16 bytes) and
//! `NXAST_CONTROLLER2` (properties). The second is needed for user data, `pause` and a
//! meter; a `controller` that was decoded from it keeps it ([`Controller::v2`]) so that it
//! re-encodes in the form it came in, as OVS does. Text and wire agree with ovs-ofctl
//! 3.1: a `controller(...)` whose options are all defaults (and that has no `userdata=`) is
//! parsed as `output:CONTROLLER`, and any `controller` with default reason, id, no user
//! data, no pause and no meter prints as `CONTROLLER:max_len`.

/// `OFPR_NO_MATCH`: no matching flow (table-miss).
pub const OFPR_NO_MATCH: u8 = 0;
/// `OFPR_ACTION`: an action sent it (the default).
pub const OFPR_ACTION: u8 = 1;
/// `OFPR_INVALID_TTL`: the TTL ran out.
pub const OFPR_INVALID_TTL: u8 = 2;

/// `NX_CTLR_NO_METER`: no controller meter.
pub const NX_CTLR_NO_METER: u32 = 0;

/// The longest action: its length is 16 bits and a multiple of 8.
pub const MAX_ACTION_LEN: usize = 65528;

/// A `controller(...)` action. Every field's default is what `output:CONTROLLER` does.
#[derive(Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Controller {
    /// Bytes of the packet to send (`OFPCML_NO_BUFFER`, 65535, for all).
    pub max_len: u16,
    /// The controller connections that get it: those with this id.
    pub controller_id: u16,
    /// The packet-in's reason (`OFPR_*`, OVS's numbering: 0 no_match ... 5 packet_out).
    pub reason: u8,
    /// Bytes for the packet-in's user data (`NXPINT_USERDATA`).
    pub userdata: Vec<u8>,
    /// Pause the pipeline: the packet-in carries a continuation to resume it with.
    pub pause: bool,
    /// The meter the packet-in goes through ([`NX_CTLR_NO_METER`] for none).
    pub meter_id: u32,
    /// Decoded from `NXAST_CONTROLLER2`: encode in that form even when the short one
    /// would say everything.
    pub v2: bool,
}

impl Default for Controller {
    fn default() -> Controller {
        Controller {
            max_len: crate::actions::OFPCML_NO_BUFFER,
            controller_id: 0,
            reason: OFPR_ACTION,
            userdata: Vec::new(),
            pause: false,
            meter_id: NX_CTLR_NO_METER,
            v2: false,
        }
    }
}

impl Controller {
    /// Whether only `NXAST_CONTROLLER2` can carry it.
    pub fn needs_v2(&self) -> bool {
        self.v2 || !self.userdata.is_empty() || self.pause || self.meter_id != NX_CTLR_NO_METER
    }

    /// Bytes of its `NXAST_CONTROLLER2` form: 16, then each non-default property padded to
    /// 8 (the 16-bit ones, the reason and the meter take 8; the user data 4 plus its bytes).
    pub fn v2_len(&self) -> usize {
        let fixed = [
            self.max_len != crate::actions::OFPCML_NO_BUFFER,
            self.controller_id != 0,
            self.reason != OFPR_ACTION,
            self.pause,
            self.meter_id != NX_CTLR_NO_METER,
        ]
        .iter()
        .filter(|x| **x)
        .count();
        let user = if self.userdata.is_empty() {
            0
        } else {
            (4 + self.userdata.len()).div_ceil(8) * 8
        };
        16 + 8 * fixed + user
    }

    /// Whether it fits in an action (whose length is 16 bits, a multiple of 8).
    pub fn fits(&self) -> bool {
        !self.needs_v2() || self.v2_len() <= MAX_ACTION_LEN
    }

    /// Whether it says no more than `output:CONTROLLER:max_len` (and prints as that).
    pub fn is_plain(&self) -> bool {
        self.reason == OFPR_ACTION
            && self.controller_id == 0
            && self.userdata.is_empty()
            && !self.pause
            && self.meter_id == NX_CTLR_NO_METER
    }
}

/// Reason names as ovs-ofctl reads and prints them, by number.
const REASONS: [&str; 6] = [
    "no_match",
    "action",
    "invalid_ttl",
    "action_set",
    "group",
    "packet_out",
];

/// The reason a name stands for (names only, no numbers, as ovs-ofctl reads them).
pub fn reason_from_name(s: &str) -> Option<u8> {
    REASONS.iter().position(|n| *n == s).map(|i| i as u8)
}

/// A reason as ovs-ofctl prints it: its name, nothing for OVS's internal explicit and
/// implicit table-miss reasons (6, 7), else the number.
pub fn reason_name(r: u8) -> String {
    match REASONS.get(usize::from(r)) {
        Some(n) => (*n).to_string(),
        None if r == 6 || r == 7 => String::new(),
        None => r.to_string(),
    }
}
