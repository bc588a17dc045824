//! Nicira's `learn` action: a flow that adds (or refreshes) another flow, built from the
//! packet that runs it.
//!
//! A [`Learn`] names the table, priority, timeouts, cookie and flags of the flow to learn,
//! and a list of [`LearnSpec`]s, each moving `n_bits` bits from a source (a field of the
//! packet being processed, or an immediate value) to a destination:
//! * `Match`: the learned flow matches those bits (`NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[]`,
//!   `eth_type=0x800`);
//! * `Load`: the learned flow's actions load them into a field (`load:NXM_OF_IN_PORT[]->
//!   NXM_NX_REG0[0..15]`);
//! * `Output`: the learned flow outputs to the port they hold (`output:NXM_OF_IN_PORT[]`;
//!   a field source only).
//!
//! `delete_learned` ties the learned flows' lifetime to the learning flows: once no flow
//! with a `learn(table=T,cookie=C,delete_learned)` remains, the flows of table T with
//! cookie C are deleted. `limit` caps how many flows of that table and cookie the action
//! adds; `result_dst` receives 1 if the flow was learned (or already there), 0 if the limit
//! refused it. Semantics, defaults (table 1, priority 32768) and checks are Open vSwitch's.
//!
//! Immediate values are kept as `u128`: the model's widest field is 128 bits.

use crate::actions::Subfield;
use crate::messages::err::bad_action;
use crate::messages::OfError;

/// `NX_LEARN_F_SEND_FLOW_REM`: learned flows send flow_removed.
pub const F_SEND_FLOW_REM: u16 = 1;
/// `NX_LEARN_F_DELETE_LEARNED`: see the module documentation.
pub const F_DELETE_LEARNED: u16 = 2;
/// `NX_LEARN_F_WRITE_RESULT`: `result_dst` is set (only in `NXAST_LEARN2`).
pub const F_WRITE_RESULT: u16 = 4;

/// The default priority of a learned flow (OpenFlow's default).
pub const DEFAULT_PRIORITY: u16 = 0x8000;
/// The table a `learn` writes to unless told otherwise.
pub const DEFAULT_TABLE: u8 = 1;

/// Where a spec's bits come from.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum LearnSrc {
    /// Bits of the packet's flow.
    Field(Subfield),
    /// A constant, right-aligned.
    Imm(u128),
}

/// Where a spec's bits go.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum LearnDst {
    /// Matched by the learned flow.
    Match(Subfield),
    /// Loaded by the learned flow's actions.
    Load(Subfield),
    /// The learned flow outputs to the port they hold.
    Output,
}

/// One `flow_mod_spec`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct LearnSpec {
    /// Bits moved (1..=2047 on the wire; at most 128 here).
    pub n_bits: u16,
    /// Source.
    pub src: LearnSrc,
    /// Destination.
    pub dst: LearnDst,
}

/// A `learn(...)` action.
#[derive(Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Learn {
    /// Table of the learned flow (not 255).
    pub table_id: u8,
    /// Its priority.
    pub priority: u16,
    /// Its idle timeout in seconds (0: none).
    pub idle_timeout: u16,
    /// Its hard timeout in seconds (0: none).
    pub hard_timeout: u16,
    /// Idle timeout once the learned flow's TCP connection saw a FIN (0: none).
    pub fin_idle_timeout: u16,
    /// Hard timeout once it saw a FIN (0: none).
    pub fin_hard_timeout: u16,
    /// Its cookie.
    pub cookie: u64,
    /// `F_*`.
    pub flags: u16,
    /// The most flows of this table and cookie it adds (0: no limit).
    pub limit: u32,
    /// The bit set to whether learning succeeded (with [`F_WRITE_RESULT`]).
    pub result_dst: Option<Subfield>,
    /// What to match and do.
    pub specs: Vec<LearnSpec>,
    /// Decoded from `NXAST_LEARN2`: encode in that form even when the short one would do.
    pub v2: bool,
}

impl Default for Learn {
    fn default() -> Learn {
        Learn {
            table_id: DEFAULT_TABLE,
            priority: DEFAULT_PRIORITY,
            idle_timeout: 0,
            hard_timeout: 0,
            fin_idle_timeout: 0,
            fin_hard_timeout: 0,
            cookie: 0,
            flags: 0,
            limit: 0,
            result_dst: None,
            specs: Vec::new(),
            v2: false,
        }
    }
}

impl Learn {
    /// Whether only `NXAST_LEARN2` carries it.
    pub fn needs_v2(&self) -> bool {
        self.v2 || self.limit != 0 || self.result_dst.is_some()
    }

    /// Whether learned flows die with the last learning flow.
    pub fn delete_learned(&self) -> bool {
        self.flags & F_DELETE_LEARNED != 0
    }

    /// Checks what the action itself can tell (the fields' prerequisites against the
    /// learning flow's match are checked where the match is known).
    pub fn validate(&self) -> Result<(), OfError> {
        let bad = || Err(OfError::bad_action(bad_action::BAD_ARGUMENT));
        if self.table_id == 0xff {
            return bad();
        }
        if self.flags & !(F_SEND_FLOW_REM | F_DELETE_LEARNED | F_WRITE_RESULT) != 0 {
            return bad();
        }
        if (self.flags & F_WRITE_RESULT != 0) != self.result_dst.is_some() {
            return bad();
        }
        if let Some(r) = self.result_dst {
            if r.n_bits != 1 || !r.is_valid() {
                return bad();
            }
        }
        for s in &self.specs {
            if s.n_bits == 0 || s.n_bits > 128 {
                return bad();
            }
            match s.src {
                LearnSrc::Field(f) if f.n_bits != s.n_bits || !f.is_valid() => return bad(),
                LearnSrc::Imm(v) if s.n_bits < 128 && v >> s.n_bits != 0 => return bad(),
                LearnSrc::Imm(_) if matches!(s.dst, LearnDst::Output) => return bad(),
                _ => {}
            }
            match s.dst {
                LearnDst::Match(f) | LearnDst::Load(f) if f.n_bits != s.n_bits || !f.is_valid() => {
                    return bad()
                }
                _ => {}
            }
        }
        Ok(())
    }
}
