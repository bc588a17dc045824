//! Continuations: the state of a pipeline paused by `controller(..., pause)`, as it travels
//! to the controller in `NXT_PACKET_IN2` (`NXPINT_CONTINUATION`) and back in `NXT_RESUME`.
//!
//! A controller treats the bytes as opaque (OVS's library hands them from the packet-in to
//! the resume unchanged; ovn-controller's pinctrl does just that), so the layout is
//! ferrovs's own. It is self-contained: the switch keeps nothing per paused packet, so
//! nothing leaks when a controller never resumes. The packet and the pipeline fields
//! (`in_port`, `metadata`, registers) are not in it: they travel in the packet-in's own
//! properties, which the controller may change before resuming.
//!
//! Layout: properties as OpenFlow lays them out (type u16, length u16 counting the 4-byte
//! header, value, zeros to a multiple of 8). The top-level types are above the ones OVS
//! uses for its own continuations (0x8000-0x8008), which its tools parse when they print a
//! packet-in and skip when unknown: `ovs-ofctl monitor` prints ferrovs's packet-ins whole.
//!
//! | type     | name         | value |
//! |----------|--------------|-------|
//! | `0x8100` | KEY          | 16 bytes: the bridge's key ([`crate::recirc::RecircIds::key`]), random per bridge and process |
//! | `0x8101` | STACK        | 16 bytes, one register-stack entry (right-aligned), bottom first, one property each |
//! | `0x8102` | FRAME        | nested (4 zero bytes, then frame properties): the rest of one table's work |
//! | `0x8103` | ACTION_SET   | nested: the action set as written so far, OpenFlow 1.5 actions |
//!
//! Frames, innermost first (the table the pause happened in, then the table whose
//! `resubmit` led there, and so on), each with:
//!
//! | type     | name           | value |
//! |----------|----------------|-------|
//! | `0x8010` | TABLE_ID       | u8 (required) |
//! | `0x8011` | COOKIE         | 4 zero bytes, u64 (required) |
//! | `0x8012` | DEPTH          | u32, the resubmit depth (required, at most [`crate::xlate::MAX_DEPTH`]) |
//! | `0x8013` | IN_PORT        | u32, `in_port` in that table (required) |
//! | `0x8014` | ACTIONS        | nested: the rest of the apply-actions list, OpenFlow 1.5 actions |
//! | `0x8015` | CLEAR_ACTIONS  | flag: the rule's clear-actions instruction is still to run |
//! | `0x8016` | WRITE_ACTIONS  | nested: its write-actions instruction, still to run |
//! | `0x8017` | WRITE_METADATA | 4 zero bytes, u64 value, u64 mask |
//! | `0x8018` | GOTO_TABLE     | u8 |
//!
//! Decoding treats the bytes as hostile: every length is checked, actions go through the
//! OpenFlow decoder and the checks a flow's actions get, frames, stack entries and depth are
//! bounded as the pipeline bounds them. A malformed continuation is `OFPBPC_BAD_LEN`,
//! an unknown property `OFPBPC_BAD_TYPE`, a missing or out-of-range value
//! `OFPBPC_BAD_VALUE`, a bad action its own error; one made by another bridge or process
//! (or none at all) is `NXR_STALE`, as in OVS.

use crate::switch::N_TABLES;
use crate::xlate::{MAX_DEPTH, MAX_STACK};
use openflow::actions::{validate_actions, validate_instructions};
use openflow::messages::err::{bad_property, nx_tlv, OFPET_BAD_PROPERTY};
use openflow::wire::action::{decode_action_list, encode_action_list};
use openflow::wire::OFP15;
use openflow::{Action, Instruction, OfError};

mod prop {
    pub const KEY: u16 = 0x8100;
    pub const STACK: u16 = 0x8101;
    pub const FRAME: u16 = 0x8102;
    pub const ACTION_SET: u16 = 0x8103;
    pub const TABLE_ID: u16 = 0x8010;
    pub const COOKIE: u16 = 0x8011;
    pub const DEPTH: u16 = 0x8012;
    pub const IN_PORT: u16 = 0x8013;
    pub const ACTIONS: u16 = 0x8014;
    pub const CLEAR_ACTIONS: u16 = 0x8015;
    pub const WRITE_ACTIONS: u16 = 0x8016;
    pub const WRITE_METADATA: u16 = 0x8017;
    pub const GOTO_TABLE: u16 = 0x8018;
}

/// The rest of one table's work: what follows the paused action in that table's rule.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Frame {
    /// The table.
    pub table_id: u8,
    /// The matched rule's cookie.
    pub cookie: u64,
    /// Nested lookups (resubmits) at that point.
    pub depth: u32,
    /// `in_port` in that table (a `resubmit(PORT,...)` changes it for the tables it runs).
    pub in_port: u32,
    /// The apply-actions list after the action that led to the pause.
    pub actions: Vec<Action>,
    /// The rule's instructions after its apply-actions (clear, write, write-metadata,
    /// goto-table).
    pub rest: Vec<Instruction>,
}

/// A paused pipeline (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Continuation {
    /// The bridge's key: a continuation only resumes on the bridge (and process) that made it.
    pub key: [u8; 16],
    /// The register stack, bottom first.
    pub stack: Vec<u128>,
    /// Innermost first.
    pub frames: Vec<Frame>,
    /// The action set as written.
    pub action_set: Vec<Action>,
}

/// Why a continuation could not be encoded (an action OpenFlow 1.5 cannot carry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unencodable;

fn begin(out: &mut Vec<u8>, ty: u16, nested: bool) -> usize {
    let start = out.len();
    out.extend_from_slice(&ty.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    if nested {
        out.extend_from_slice(&[0; 4]);
    }
    start
}

fn end(out: &mut Vec<u8>, start: usize) {
    let len = (out.len() - start) as u16;
    out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
    while !(out.len() - start).is_multiple_of(8) {
        out.push(0);
    }
}

fn put(out: &mut Vec<u8>, ty: u16, value: &[u8]) {
    let s = begin(out, ty, false);
    out.extend_from_slice(value);
    end(out, s);
}

fn put_actions(out: &mut Vec<u8>, ty: u16, acts: &[Action]) -> Result<(), Unencodable> {
    let bytes = encode_action_list(OFP15, acts).map_err(|_| Unencodable)?;
    let s = begin(out, ty, true);
    out.extend_from_slice(&bytes);
    end(out, s);
    Ok(())
}

impl Continuation {
    /// The bytes for `NXPINT_CONTINUATION`. Longer than a message can carry, or holding an
    /// action OpenFlow 1.5 cannot say, it is [`Unencodable`].
    pub fn encode(&self) -> Result<Vec<u8>, Unencodable> {
        let mut out = Vec::new();
        put(&mut out, prop::KEY, &self.key);
        for v in &self.stack {
            put(&mut out, prop::STACK, &v.to_be_bytes());
        }
        for f in &self.frames {
            let s = begin(&mut out, prop::FRAME, true);
            put(&mut out, prop::TABLE_ID, &[f.table_id]);
            let mut c = [0u8; 12];
            c[4..].copy_from_slice(&f.cookie.to_be_bytes());
            put(&mut out, prop::COOKIE, &c);
            put(&mut out, prop::DEPTH, &f.depth.to_be_bytes());
            put(&mut out, prop::IN_PORT, &f.in_port.to_be_bytes());
            if !f.actions.is_empty() {
                put_actions(&mut out, prop::ACTIONS, &f.actions)?;
            }
            for i in &f.rest {
                match i {
                    Instruction::ClearActions => put(&mut out, prop::CLEAR_ACTIONS, &[]),
                    Instruction::WriteActions(a) => put_actions(&mut out, prop::WRITE_ACTIONS, a)?,
                    Instruction::WriteMetadata { value, mask } => {
                        let mut v = [0u8; 20];
                        v[4..12].copy_from_slice(&value.to_be_bytes());
                        v[12..].copy_from_slice(&mask.to_be_bytes());
                        put(&mut out, prop::WRITE_METADATA, &v);
                    }
                    Instruction::GotoTable(t) => put(&mut out, prop::GOTO_TABLE, &[*t]),
                    // Never after apply-actions in a valid rule.
                    Instruction::Meter(_) | Instruction::ApplyActions(_) => {
                        return Err(Unencodable)
                    }
                }
            }
            end(&mut out, s);
        }
        if !self.action_set.is_empty() {
            put_actions(&mut out, prop::ACTION_SET, &self.action_set)?;
        }
        // The packet-in around it must fit in a message too (the packet and fields need
        // room); far below that, so it is never the reason a packet-in is lost.
        if out.len() > 32_768 {
            return Err(Unencodable);
        }
        Ok(out)
    }

    /// Decodes and checks a continuation made by the bridge whose key is `key`.
    pub fn decode(bytes: &[u8], key: &[u8; 16]) -> Result<Continuation, OfError> {
        let mut c = Continuation::default();
        let mut have_key = false;
        for p in Props::new(bytes) {
            let (ty, v) = p?;
            match ty {
                prop::KEY => {
                    c.key = v.try_into().map_err(|_| bad_len())?;
                    have_key = true;
                }
                prop::STACK => {
                    let b: [u8; 16] = v.try_into().map_err(|_| bad_len())?;
                    if c.stack.len() >= MAX_STACK {
                        return Err(bad_value());
                    }
                    c.stack.push(u128::from_be_bytes(b));
                }
                prop::FRAME => {
                    if c.frames.len() > MAX_DEPTH as usize {
                        return Err(bad_value());
                    }
                    c.frames.push(decode_frame(nested(v)?)?);
                }
                prop::ACTION_SET => {
                    c.action_set = actions(nested(v)?)?;
                    validate_instructions(&[Instruction::WriteActions(c.action_set.clone())], 0)?;
                }
                _ => return Err(prop_err(bad_property::BAD_TYPE)),
            }
        }
        if !have_key || c.key != *key {
            return Err(OfError::nx(nx_tlv::RESUME_STALE));
        }
        Ok(c)
    }
}

fn decode_frame(bytes: &[u8]) -> Result<Frame, OfError> {
    let mut f = Frame::default();
    let (mut table, mut cookie, mut depth, mut in_port) = (None, None, None, None);
    let (mut clear, mut write, mut meta, mut goto) = (false, None, None, None);
    for p in Props::new(bytes) {
        let (ty, v) = p?;
        match ty {
            prop::TABLE_ID => table = Some(exact::<1>(v)?[0]),
            prop::COOKIE => {
                let b = exact::<12>(v)?;
                cookie = Some(u64::from_be_bytes(
                    b[4..].try_into().map_err(|_| bad_len())?,
                ));
            }
            prop::DEPTH => depth = Some(u32::from_be_bytes(exact::<4>(v)?)),
            prop::IN_PORT => in_port = Some(u32::from_be_bytes(exact::<4>(v)?)),
            prop::ACTIONS => f.actions = actions(nested(v)?)?,
            prop::CLEAR_ACTIONS => {
                exact::<0>(v)?;
                clear = true;
            }
            prop::WRITE_ACTIONS => write = Some(actions(nested(v)?)?),
            prop::WRITE_METADATA => {
                let b = exact::<20>(v)?;
                let value = u64::from_be_bytes(b[4..12].try_into().map_err(|_| bad_len())?);
                let mask = u64::from_be_bytes(b[12..].try_into().map_err(|_| bad_len())?);
                meta = Some(Instruction::WriteMetadata { value, mask });
            }
            prop::GOTO_TABLE => goto = Some(exact::<1>(v)?[0]),
            _ => return Err(prop_err(bad_property::BAD_TYPE)),
        }
    }
    let (Some(table_id), Some(cookie), Some(depth), Some(in_port)) =
        (table, cookie, depth, in_port)
    else {
        return Err(bad_value());
    };
    if usize::from(table_id) >= N_TABLES || depth > MAX_DEPTH {
        return Err(bad_value());
    }
    f.table_id = table_id;
    f.cookie = cookie;
    f.depth = depth;
    f.in_port = in_port;
    if clear {
        f.rest.push(Instruction::ClearActions);
    }
    if let Some(w) = write {
        f.rest.push(Instruction::WriteActions(w));
    }
    f.rest.extend(meta);
    if let Some(t) = goto {
        f.rest.push(Instruction::GotoTable(t));
    }
    // The checks a rule's instructions get (an action set without outputs to registers,
    // a goto to a later table...).
    let mut all = vec![Instruction::ApplyActions(f.actions.clone())];
    all.extend(f.rest.iter().cloned());
    validate_instructions(&all, table_id)?;
    Ok(f)
}

fn prop_err(code: u16) -> OfError {
    OfError::new(OFPET_BAD_PROPERTY, code)
}

fn bad_len() -> OfError {
    prop_err(bad_property::BAD_LEN)
}

fn bad_value() -> OfError {
    prop_err(bad_property::BAD_VALUE)
}

fn exact<const N: usize>(v: &[u8]) -> Result<[u8; N], OfError> {
    v.try_into().map_err(|_| bad_len())
}

/// A nested property's contents: after 4 zero bytes.
fn nested(v: &[u8]) -> Result<&[u8], OfError> {
    match v.split_first_chunk::<4>() {
        Some(([0, 0, 0, 0], rest)) => Ok(rest),
        _ => Err(bad_len()),
    }
}

fn actions(bytes: &[u8]) -> Result<Vec<Action>, OfError> {
    let acts = decode_action_list(OFP15, bytes).map_err(|e| e.to_of_error())?;
    validate_actions(&acts)?;
    Ok(acts)
}

/// Properties of a list: (type, value) each, or the error that ends it.
struct Props<'a> {
    rest: &'a [u8],
    failed: bool,
}

impl<'a> Props<'a> {
    fn new(bytes: &'a [u8]) -> Props<'a> {
        Props {
            rest: bytes,
            failed: false,
        }
    }
}

impl<'a> Iterator for Props<'a> {
    type Item = Result<(u16, &'a [u8]), OfError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() || self.failed {
            return None;
        }
        let r = (|| {
            let hdr = self.rest.get(..4).ok_or_else(bad_len)?;
            let ty = u16::from_be_bytes([hdr[0], hdr[1]]);
            let len = usize::from(u16::from_be_bytes([hdr[2], hdr[3]]));
            let padded = len.div_ceil(8) * 8;
            if len < 4 || padded > self.rest.len() {
                return Err(bad_len());
            }
            let v = self.rest.get(4..len).ok_or_else(bad_len)?;
            self.rest = self.rest.get(padded..).unwrap_or_default();
            Ok((ty, v))
        })();
        self.failed = r.is_err();
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::text::parse_actions;

    fn sample() -> Continuation {
        Continuation {
            key: [7; 16],
            stack: vec![1, u128::MAX],
            frames: vec![
                Frame {
                    table_id: 9,
                    cookie: 0x1234,
                    depth: 2,
                    in_port: 3,
                    actions: parse_actions("set_field:1->reg0,resubmit(,10)", None).unwrap(),
                    rest: vec![
                        Instruction::ClearActions,
                        Instruction::WriteActions(parse_actions("output:2", None).unwrap()),
                        Instruction::WriteMetadata {
                            value: 5,
                            mask: 0xff,
                        },
                        Instruction::GotoTable(12),
                    ],
                },
                Frame {
                    table_id: 3,
                    cookie: u64::MAX,
                    depth: 1,
                    in_port: 1,
                    actions: vec![],
                    rest: vec![],
                },
            ],
            action_set: parse_actions("output:4", None).unwrap(),
        }
    }

    #[test]
    fn round_trip() {
        let c = sample();
        let b = c.encode().unwrap();
        assert_eq!(Continuation::decode(&b, &[7; 16]), Ok(c));
    }

    #[test]
    fn another_bridges_or_none_is_stale() {
        let b = sample().encode().unwrap();
        let stale = Err(OfError::nx(nx_tlv::RESUME_STALE));
        assert_eq!(Continuation::decode(&b, &[8; 16]), stale);
        assert_eq!(Continuation::decode(&[], &[7; 16]), stale);
    }

    #[test]
    fn hostile_bytes_are_errors() {
        let b = sample().encode().unwrap();
        for n in 0..b.len() {
            let _ = Continuation::decode(&b[..n], &[7; 16]);
        }
        let mut x: u32 = 0x1234_5678;
        for _ in 0..20_000 {
            let mut t = b.clone();
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let i = x as usize % t.len();
            t[i] = (x >> 8) as u8;
            let _ = Continuation::decode(&t, &[7; 16]);
        }
        // A goto backwards, an unknown type, a missing table, a depth too big.
        let mut c = sample();
        c.frames[0].rest = vec![Instruction::GotoTable(1)];
        assert!(Continuation::decode(&c.encode().unwrap(), &[7; 16]).is_err());
        let mut bad = Vec::new();
        put(&mut bad, 0x8200, &[]);
        assert_eq!(
            Continuation::decode(&bad, &[7; 16]),
            Err(prop_err(bad_property::BAD_TYPE))
        );
        let mut c = sample();
        c.frames[1].depth = MAX_DEPTH + 1;
        assert_eq!(
            Continuation::decode(&c.encode().unwrap(), &[7; 16]),
            Err(bad_value())
        );
        let mut f = Vec::new();
        let s = begin(&mut f, prop::FRAME, true);
        put(&mut f, prop::DEPTH, &[0, 0, 0, 1]);
        end(&mut f, s);
        assert_eq!(Continuation::decode(&f, &[7; 16]), Err(bad_value()));
    }

    /// The fuzz target's seed (key, then a continuation of two frames with every frame
    /// property, a stack entry and an action set) decodes and round-trips.
    #[test]
    fn fuzz_seed_decodes() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/seeds/continuation/two_frames");
        let b = std::fs::read(p).expect("seed");
        let (key, bytes) = b.split_first_chunk::<16>().expect("key");
        let c = Continuation::decode(bytes, key).expect("decodes");
        assert_eq!(c.frames.len(), 2);
        assert_eq!(c.frames[0].rest.len(), 4);
        assert_eq!(c.stack, vec![7]);
        assert_eq!(Continuation::decode(&c.encode().unwrap(), key), Ok(c));
    }
}
