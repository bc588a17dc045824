//! `check_pkt_larger(LEN)->DST` in ovs-ofctl text, both directions.
//!
//! The lexer hands the action over as ovs-ofctl's does: key `check_pkt_larger`, value
//! `LEN)->DST` (see `Tokens`). LEN is a 16-bit number (decimal or `0x` hex); DST is one bit
//! in the subfield syntax (`reg0[1]`, `NXM_NX_REG9[1]`); a wider DST is refused with
//! ovs-ofctl's words. Formatting prints the bit with its NXM name, as OVS does:
//! `check_pkt_larger(1500)->NXM_NX_REG0[0]`.

use super::actions::{format_subfield, parse_subfield};
use super::{parse_uint, TextError, Token};
use crate::actions::{Action, Subfield};

pub(crate) fn parse_check_pkt_larger(tok: &Token<'_>) -> Result<Action, TextError> {
    let text = tok.text();
    let v = tok.value.unwrap_or("");
    let (len, dst) = v
        .split_once("->")
        .ok_or_else(|| TextError::new(format!("{text}: {v}: missing `->'")))?;
    let len = len.strip_suffix(')').unwrap_or(len);
    let dst = parse_subfield(dst).map_err(|e| TextError::new(format!("{text}: {e}")))?;
    if dst.n_bits != 1 {
        return Err(TextError::new(format!(
            "{text}: Only 1-bit destination field is allowed"
        )));
    }
    let pkt_len = parse_uint(len, 16)
        .ok_or_else(|| TextError::new(format!("{text}: '{len}' is not a 16-bit length")))?;
    Ok(Action::CheckPktLarger {
        pkt_len: pkt_len as u16,
        dst,
    })
}

pub(crate) fn format_check_pkt_larger(pkt_len: u16, dst: &Subfield) -> String {
    format!("check_pkt_larger({pkt_len})->{}", format_subfield(dst))
}
