//! Bodies of the non-multipart messages: the structs [`super::Message`] carries and their
//! per-version layouts.
//!
//! Each `decode_*` takes the version and a cursor over the body (the bytes after the
//! 8-byte header, exactly as long as the header says) and must consume it completely
//! where the layout is fixed; each `encode_*` appends the body. Messages whose body is a
//! model type (`FlowMod`, `GroupMod`, `MeterMod`) use those types directly; what the
//! model does not hold (OpenFlow 1.4's flow `importance`, OpenFlow 1.0's `EMERG` flag
//! semantics) is dropped on decode and written as zero.

use super::action::{
    decode_actions, decode_flow_actions, decode_instructions, encode_actions, encode_instructions,
};
use super::buf::{pad8, Rd, W};
use super::error::{DecodeError, EncodeError};
use super::oxm::{decode_of10_match, decode_ofp_match, encode_of10_match, encode_ofp_match};
use super::port::{decode_port, decode_props, encode_port, encode_props, Port, Prop};
use super::{OFP10, OFP13, OFP14, OFP15};
use crate::actions::{port_from_of10, port_to_of10, Action, Instruction, OFPP_CONTROLLER};
use crate::matches::Match;
use crate::messages::{
    Bucket, BucketCommand, FlowMod, FlowModCommand, FlowModFlags, GroupBucketMod, GroupMod,
    GroupModCommand, GroupType, MeterBand, MeterFlags, MeterMod, MeterModCommand, OFPG_BUCKET_ALL,
    OFPTT_ALL,
};
use crate::oxm::Field;

/// Hello: optional version bitmap element (other elements are ignored, as the spec says).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Hello {
    /// `OFPHET_VERSIONBITMAP` words (bit n of word i = version 32*i+n), if present.
    pub bitmap: Option<Vec<u32>>,
}

impl Hello {
    /// A hello advertising exactly these versions.
    pub fn for_versions(versions: &[u8]) -> Hello {
        let mut w = 0u32;
        for v in versions {
            if *v < 32 {
                w |= 1 << v;
            }
        }
        Hello {
            bitmap: Some(vec![w]),
        }
    }
    /// Whether the peer (header version `hdr_version`) supports `v`.
    pub fn supports(&self, hdr_version: u8, v: u8) -> bool {
        match &self.bitmap {
            Some(words) => {
                let word = words.get(usize::from(v / 32)).copied().unwrap_or(0);
                word & (1 << (v % 32)) != 0
            }
            None => v <= hdr_version,
        }
    }
}

pub(crate) fn decode_hello(rd: &mut Rd<'_>) -> Result<Hello, DecodeError> {
    let mut h = Hello::default();
    while rd.len() >= 4 {
        let ty = rd.peek_u16(0).ok_or(DecodeError::BadLength)?;
        let len = usize::from(rd.peek_u16(2).ok_or(DecodeError::BadLength)?);
        if len < 4 || len > rd.len() {
            return Err(DecodeError::BadLength);
        }
        let mut e = rd.sub(len, DecodeError::BadLength)?;
        e.skip(4)?;
        if ty == 1 && h.bitmap.is_none() {
            let mut words = Vec::with_capacity(e.len() / 4);
            while e.len() >= 4 {
                words.push(e.u32()?);
            }
            h.bitmap = Some(words);
        }
        let pad = (pad8(len) - len).min(rd.len());
        rd.skip(pad)?;
    }
    Ok(h)
}

pub(crate) fn encode_hello(out: &mut Vec<u8>, h: &Hello) {
    if let Some(words) = &h.bitmap {
        let start = out.len();
        out.u16(1);
        out.u16((4 + 4 * words.len()) as u16);
        words.iter().for_each(|w| out.u32(*w));
        out.pad8_from(start);
    }
}

/// An error message as sent on the wire (numbers of the connection's version).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ErrorMsg {
    /// Error type.
    pub type_: u16,
    /// Error code (for `OFPET_EXPERIMENTER`, the experimenter's type).
    pub code: u16,
    /// Experimenter id, for `OFPET_EXPERIMENTER` (1.2+).
    pub experimenter: Option<u32>,
    /// Usually the first 64 bytes of the failed request.
    pub data: Vec<u8>,
}

pub(crate) fn decode_error(version: u8, rd: &mut Rd<'_>) -> Result<ErrorMsg, DecodeError> {
    let type_ = rd.u16()?;
    let code = rd.u16()?;
    let experimenter = if type_ == 0xffff && version != OFP10 {
        Some(rd.u32()?)
    } else {
        None
    };
    Ok(ErrorMsg {
        type_,
        code,
        experimenter,
        data: rd.rest().to_vec(),
    })
}

pub(crate) fn encode_error(out: &mut Vec<u8>, version: u8, e: &ErrorMsg) {
    out.u16(e.type_);
    out.u16(e.code);
    if let (Some(x), true) = (e.experimenter, version != OFP10) {
        out.u32(x);
    }
    out.extend_from_slice(&e.data);
}

/// A generic experimenter (OpenFlow 1.0: vendor) message.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Experimenter {
    /// Experimenter id.
    pub experimenter: u32,
    /// Experimenter-defined type (for OpenFlow 1.0 vendor messages, the first 4 bytes
    /// of the body, which every vendor we know uses as a subtype).
    pub exp_type: u32,
    /// The rest.
    pub data: Vec<u8>,
}

pub(crate) fn decode_experimenter(rd: &mut Rd<'_>) -> Result<Experimenter, DecodeError> {
    Ok(Experimenter {
        experimenter: rd.u32()?,
        exp_type: rd.u32()?,
        data: rd.rest().to_vec(),
    })
}

pub(crate) fn encode_experimenter(out: &mut Vec<u8>, e: &Experimenter) {
    out.u32(e.experimenter);
    out.u32(e.exp_type);
    out.extend_from_slice(&e.data);
}

/// Features reply.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct SwitchFeatures {
    /// Datapath id.
    pub datapath_id: u64,
    /// Packets the switch can buffer.
    pub n_buffers: u32,
    /// Flow tables.
    pub n_tables: u8,
    /// Auxiliary connection id (1.3+).
    pub auxiliary_id: u8,
    /// `OFPC_*` bits.
    pub capabilities: u32,
    /// OpenFlow 1.0: supported action bitmap; later: reserved.
    pub actions: u32,
    /// OpenFlow 1.0 only: the ports.
    pub ports: Vec<Port>,
}

pub(crate) fn decode_features(version: u8, rd: &mut Rd<'_>) -> Result<SwitchFeatures, DecodeError> {
    let mut f = SwitchFeatures {
        datapath_id: rd.u64()?,
        n_buffers: rd.u32()?,
        n_tables: rd.u8()?,
        auxiliary_id: rd.u8()?,
        ..SwitchFeatures::default()
    };
    rd.skip(2)?;
    f.capabilities = rd.u32()?;
    f.actions = rd.u32()?;
    if version == OFP10 {
        f.auxiliary_id = 0;
        if !rd.len().is_multiple_of(48) {
            return Err(DecodeError::BadLength);
        }
        while !rd.is_empty() {
            f.ports.push(decode_port(version, rd)?);
        }
    }
    Ok(f)
}

pub(crate) fn encode_features(
    out: &mut Vec<u8>,
    version: u8,
    f: &SwitchFeatures,
) -> Result<(), EncodeError> {
    out.u64(f.datapath_id);
    out.u32(f.n_buffers);
    out.u8(f.n_tables);
    out.u8(if version == OFP10 { 0 } else { f.auxiliary_id });
    out.zeros(2);
    out.u32(f.capabilities);
    out.u32(f.actions);
    if version == OFP10 {
        for p in &f.ports {
            encode_port(out, version, p)?;
        }
    }
    Ok(())
}

/// Switch configuration (get_config reply, set_config).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct SwitchConfig {
    /// `OFPC_FRAG_*` bits.
    pub flags: u16,
    /// Bytes of a table-miss packet to send to the controller.
    pub miss_send_len: u16,
}

/// Packet-in.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PacketIn {
    /// Buffer id or `OFP_NO_BUFFER`.
    pub buffer_id: u32,
    /// Full length of the frame.
    pub total_len: u16,
    /// `OFPR_*` reason.
    pub reason: u8,
    /// Table the packet was looked up in (1.3+).
    pub table_id: u8,
    /// Cookie of the flow that sent it (1.3+).
    pub cookie: u64,
    /// Pipeline fields (in_port at least; OpenFlow 1.0 carries only in_port).
    pub match_: Match,
    /// The (possibly truncated) frame.
    pub data: Vec<u8>,
}

pub(crate) fn decode_packet_in(version: u8, rd: &mut Rd<'_>) -> Result<PacketIn, DecodeError> {
    let buffer_id = rd.u32()?;
    let total_len = rd.u16()?;
    if version == OFP10 {
        let in_port = port_from_of10(rd.u16()?);
        let reason = rd.u8()?;
        rd.skip(1)?;
        return Ok(PacketIn {
            buffer_id,
            total_len,
            reason,
            table_id: 0,
            cookie: 0,
            match_: Match::new().with(Field::InPort, u128::from(in_port)),
            data: rd.rest().to_vec(),
        });
    }
    let reason = rd.u8()?;
    let table_id = rd.u8()?;
    let cookie = rd.u64()?;
    let match_ = decode_ofp_match(rd)?;
    rd.skip(2)?;
    Ok(PacketIn {
        buffer_id,
        total_len,
        reason,
        table_id,
        cookie,
        match_,
        data: rd.rest().to_vec(),
    })
}

pub(crate) fn encode_packet_in(
    out: &mut Vec<u8>,
    version: u8,
    p: &PacketIn,
) -> Result<(), EncodeError> {
    out.u32(p.buffer_id);
    out.u16(p.total_len);
    if version == OFP10 {
        let port = p.match_.exact(Field::InPort).unwrap_or(0) as u32;
        out.u16(port_to_of10(port).ok_or(EncodeError::Unrepresentable("in_port"))?);
        out.u8(p.reason);
        out.u8(0);
    } else {
        out.u8(p.reason);
        out.u8(p.table_id);
        out.u64(p.cookie);
        encode_ofp_match(out, &p.match_);
        out.zeros(2);
    }
    out.extend_from_slice(&p.data);
    Ok(())
}

/// Flow-removed notification.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FlowRemoved {
    /// Cookie.
    pub cookie: u64,
    /// Priority.
    pub priority: u16,
    /// `OFPRR_*` reason.
    pub reason: u8,
    /// Table (1.3+).
    pub table_id: u8,
    /// Time alive, seconds.
    pub duration_sec: u32,
    /// Time alive, extra nanoseconds.
    pub duration_nsec: u32,
    /// Idle timeout.
    pub idle_timeout: u16,
    /// Hard timeout (1.3+).
    pub hard_timeout: u16,
    /// Packets.
    pub packet_count: u64,
    /// Bytes.
    pub byte_count: u64,
    /// The flow's match.
    pub match_: Match,
}

pub(crate) fn decode_flow_removed(
    version: u8,
    rd: &mut Rd<'_>,
) -> Result<FlowRemoved, DecodeError> {
    if version == OFP10 {
        let match_ = decode_of10_match(rd)?;
        let cookie = rd.u64()?;
        let priority = rd.u16()?;
        let reason = rd.u8()?;
        rd.skip(1)?;
        let duration_sec = rd.u32()?;
        let duration_nsec = rd.u32()?;
        let idle_timeout = rd.u16()?;
        rd.skip(2)?;
        return Ok(FlowRemoved {
            cookie,
            priority,
            reason,
            table_id: 0,
            duration_sec,
            duration_nsec,
            idle_timeout,
            hard_timeout: 0,
            packet_count: rd.u64()?,
            byte_count: rd.u64()?,
            match_,
        });
    }
    if version == OFP15 {
        let table_id = rd.u8()?;
        let reason = rd.u8()?;
        let priority = rd.u16()?;
        let idle_timeout = rd.u16()?;
        let hard_timeout = rd.u16()?;
        let cookie = rd.u64()?;
        let match_ = decode_ofp_match(rd)?;
        let st = super::multipart::decode_oxs(rd)?;
        return Ok(FlowRemoved {
            cookie,
            priority,
            reason,
            table_id,
            duration_sec: st.duration_sec,
            duration_nsec: st.duration_nsec,
            idle_timeout,
            hard_timeout,
            packet_count: st.packet_count,
            byte_count: st.byte_count,
            match_,
        });
    }
    let cookie = rd.u64()?;
    let priority = rd.u16()?;
    let reason = rd.u8()?;
    let table_id = rd.u8()?;
    let duration_sec = rd.u32()?;
    let duration_nsec = rd.u32()?;
    let idle_timeout = rd.u16()?;
    let hard_timeout = rd.u16()?;
    let packet_count = rd.u64()?;
    let byte_count = rd.u64()?;
    let match_ = decode_ofp_match(rd)?;
    Ok(FlowRemoved {
        cookie,
        priority,
        reason,
        table_id,
        duration_sec,
        duration_nsec,
        idle_timeout,
        hard_timeout,
        packet_count,
        byte_count,
        match_,
    })
}

pub(crate) fn encode_flow_removed(
    out: &mut Vec<u8>,
    version: u8,
    f: &FlowRemoved,
) -> Result<(), EncodeError> {
    if version == OFP10 {
        encode_of10_match(out, &f.match_)?;
        out.u64(f.cookie);
        out.u16(f.priority);
        out.u8(f.reason);
        out.u8(0);
        out.u32(f.duration_sec);
        out.u32(f.duration_nsec);
        out.u16(f.idle_timeout);
        out.zeros(2);
        out.u64(f.packet_count);
        out.u64(f.byte_count);
    } else if version == OFP15 {
        out.u8(f.table_id);
        out.u8(f.reason);
        out.u16(f.priority);
        out.u16(f.idle_timeout);
        out.u16(f.hard_timeout);
        out.u64(f.cookie);
        encode_ofp_match(out, &f.match_);
        let st = super::multipart::OxsStats {
            duration_sec: f.duration_sec,
            duration_nsec: f.duration_nsec,
            packet_count: f.packet_count,
            byte_count: f.byte_count,
            ..Default::default()
        };
        super::multipart::encode_oxs(out, &st, false);
    } else {
        out.u64(f.cookie);
        out.u16(f.priority);
        out.u8(f.reason);
        out.u8(f.table_id);
        out.u32(f.duration_sec);
        out.u32(f.duration_nsec);
        out.u16(f.idle_timeout);
        out.u16(f.hard_timeout);
        out.u64(f.packet_count);
        out.u64(f.byte_count);
        encode_ofp_match(out, &f.match_);
    }
    Ok(())
}

/// Port status notification.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PortStatus {
    /// `OFPPR_ADD` 0, `DELETE` 1, `MODIFY` 2.
    pub reason: u8,
    /// The port.
    pub port: Port,
}

/// Packet-out.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PacketOut {
    /// Buffer id or `OFP_NO_BUFFER`.
    pub buffer_id: u32,
    /// Input port for the packet (`OFPP_CONTROLLER` if none).
    pub in_port: u32,
    /// OpenFlow 1.5: the other pipeline fields of the packet-out's match.
    pub match_: Match,
    /// Actions.
    pub actions: Vec<Action>,
    /// The frame, if not buffered.
    pub data: Vec<u8>,
}

pub(crate) fn decode_packet_out(version: u8, rd: &mut Rd<'_>) -> Result<PacketOut, DecodeError> {
    let buffer_id = rd.u32()?;
    let (in_port, alen, mut match_) = match version {
        OFP10 => {
            let p = port_from_of10(rd.u16()?);
            (p, rd.u16()?, Match::new())
        }
        OFP15 => {
            let alen = rd.u16()?;
            rd.skip(2)?;
            let mut m = decode_ofp_match(rd)?;
            let p = m.exact(Field::InPort).map_or(OFPP_CONTROLLER, |p| p as u32);
            m.remove(Field::InPort);
            (p, alen, m)
        }
        _ => {
            let p = rd.u32()?;
            let alen = rd.u16()?;
            rd.skip(6)?;
            (p, alen, Match::new())
        }
    };
    let mut ar = rd.sub(usize::from(alen), DecodeError::BadLength)?;
    let actions = decode_actions(version, &mut ar.clone().with_err(DecodeError::BadActionLen))?;
    ar.rest();
    if version != OFP15 {
        match_ = Match::new();
    }
    Ok(PacketOut {
        buffer_id,
        in_port,
        match_,
        actions,
        data: rd.rest().to_vec(),
    })
}

pub(crate) fn encode_packet_out(
    out: &mut Vec<u8>,
    version: u8,
    p: &PacketOut,
) -> Result<(), EncodeError> {
    let mut acts = Vec::new();
    encode_actions(&mut acts, version, &p.actions)?;
    out.u32(p.buffer_id);
    match version {
        OFP10 => {
            out.u16(port_to_of10(p.in_port).ok_or(EncodeError::Unrepresentable("in_port"))?);
            out.u16(acts.len() as u16);
        }
        OFP15 => {
            out.u16(acts.len() as u16);
            out.zeros(2);
            let m = p.match_.clone().with(Field::InPort, u128::from(p.in_port));
            encode_ofp_match(out, &m);
        }
        _ => {
            out.u32(p.in_port);
            out.u16(acts.len() as u16);
            out.zeros(6);
        }
    }
    out.extend_from_slice(&acts);
    out.extend_from_slice(&p.data);
    Ok(())
}

fn flow_mod_command(v: u16) -> Result<FlowModCommand, DecodeError> {
    u8::try_from(v)
        .ok()
        .and_then(FlowModCommand::from_u8)
        .ok_or(DecodeError::BadFlowModCommand(v))
}

/// The table an OpenFlow 1.0 flow_mod, which has no table id, means: table 0 for an add,
/// every table otherwise (as the daemon applies them). Any other table is an encode error
/// rather than a silent change of table. (Nicira's flow_mod_table_id extension, which puts a
/// table in the command's high byte, is the connection's business, not the codec's.)
fn of10_flow_mod_table(command: FlowModCommand) -> u8 {
    if command == FlowModCommand::Add {
        0
    } else {
        OFPTT_ALL
    }
}

pub(crate) fn decode_flow_mod(version: u8, rd: &mut Rd<'_>) -> Result<FlowMod, DecodeError> {
    if version == OFP10 {
        let match_ = decode_of10_match(rd)?;
        let cookie = rd.u64()?;
        let command = flow_mod_command(rd.u16()?)?;
        let mut fm = FlowMod::new(command);
        fm.table_id = of10_flow_mod_table(command);
        fm.match_ = match_;
        fm.cookie = cookie;
        fm.idle_timeout = rd.u16()?;
        fm.hard_timeout = rd.u16()?;
        fm.priority = rd.u16()?;
        fm.buffer_id = rd.u32()?;
        fm.out_port = port_from_of10(rd.u16()?);
        fm.flags = FlowModFlags(rd.u16()?);
        let acts = decode_flow_actions(
            version,
            &mut rd.clone().with_err(DecodeError::BadActionLen),
            &fm.match_,
        )?;
        rd.rest();
        if !acts.is_empty() {
            fm.instructions = vec![Instruction::ApplyActions(acts)];
        }
        return Ok(fm);
    }
    let cookie = rd.u64()?;
    let cookie_mask = rd.u64()?;
    let table_id = rd.u8()?;
    let command = flow_mod_command(u16::from(rd.u8()?))?;
    let mut fm = FlowMod::new(command);
    fm.cookie = cookie;
    fm.cookie_mask = cookie_mask;
    fm.table_id = table_id;
    fm.idle_timeout = rd.u16()?;
    fm.hard_timeout = rd.u16()?;
    fm.priority = rd.u16()?;
    fm.buffer_id = rd.u32()?;
    fm.out_port = rd.u32()?;
    fm.out_group = rd.u32()?;
    fm.flags = FlowModFlags(rd.u16()?);
    rd.skip(2)?; // pad (1.3) / importance (1.4+), not in the model
    fm.match_ = decode_ofp_match(rd)?;
    fm.instructions = decode_instructions(version, rd)?;
    Ok(fm)
}

pub(crate) fn encode_flow_mod(
    out: &mut Vec<u8>,
    version: u8,
    fm: &FlowMod,
) -> Result<(), EncodeError> {
    if version == OFP10 {
        if fm.table_id != of10_flow_mod_table(fm.command) {
            return Err(EncodeError::Unrepresentable("table_id"));
        }
        encode_of10_match(out, &fm.match_)?;
        out.u64(fm.cookie);
        out.u16(fm.command as u16);
        out.u16(fm.idle_timeout);
        out.u16(fm.hard_timeout);
        out.u16(fm.priority);
        out.u32(fm.buffer_id);
        out.u16(port_to_of10(fm.out_port).ok_or(EncodeError::Unrepresentable("out_port"))?);
        out.u16(fm.flags.0);
        return encode_of10_instructions(out, &fm.instructions);
    }
    out.u64(fm.cookie);
    out.u64(fm.cookie_mask);
    out.u8(fm.table_id);
    out.u8(fm.command as u8);
    out.u16(fm.idle_timeout);
    out.u16(fm.hard_timeout);
    out.u16(fm.priority);
    out.u32(fm.buffer_id);
    out.u32(fm.out_port);
    out.u32(fm.out_group);
    out.u16(fm.flags.0);
    out.zeros(2);
    encode_ofp_match(out, &fm.match_);
    encode_instructions(out, version, &fm.instructions)
}

/// OpenFlow 1.0 has no instructions: only a single apply-actions list can be sent.
pub(crate) fn encode_of10_instructions(
    out: &mut Vec<u8>,
    insts: &[Instruction],
) -> Result<(), EncodeError> {
    match insts {
        [] => Ok(()),
        [Instruction::ApplyActions(a)] => encode_actions(out, OFP10, a),
        _ => Err(EncodeError::Unrepresentable(
            "instructions other than apply_actions",
        )),
    }
}

fn group_command(v: u16) -> Result<GroupModCommand, DecodeError> {
    Ok(match v {
        0 => GroupModCommand::Add,
        1 => GroupModCommand::Modify,
        2 => GroupModCommand::Delete,
        _ => return Err(DecodeError::BadGroupCommand(v)),
    })
}

pub(crate) fn decode_buckets(
    version: u8,
    rd: &mut Rd<'_>,
    with_ids: bool,
) -> Result<Vec<Bucket>, DecodeError> {
    let mut out = Vec::new();
    while !rd.is_empty() {
        let len = usize::from(rd.peek_u16(0).ok_or(DecodeError::BadBucket)?);
        let mut b = rd.sub(len, DecodeError::BadBucket)?;
        if version == OFP15 {
            if len < 8 || !len.is_multiple_of(8) {
                return Err(DecodeError::BadBucket);
            }
            b.skip(2)?;
            let alen = usize::from(b.u16()?);
            let bucket_id = b.u32()?;
            let mut ar = b.sub(alen, DecodeError::BadBucket)?;
            let actions =
                decode_actions(version, &mut ar.clone().with_err(DecodeError::BadActionLen))?;
            ar.rest();
            let mut bk = Bucket::new(actions);
            bk.bucket_id = bucket_id;
            for p in decode_props(&mut b)? {
                let mut pr = Rd::new(&p.data, DecodeError::BadPropertyLen);
                match p.type_ {
                    0 => bk.weight = pr.u16()?,
                    1 => bk.watch_port = pr.u32()?,
                    2 => bk.watch_group = pr.u32()?,
                    _ => return Err(DecodeError::BadBucket),
                }
            }
            let _ = with_ids;
            out.push(bk);
        } else {
            if len < 16 || !len.is_multiple_of(8) {
                return Err(DecodeError::BadBucket);
            }
            b.skip(2)?;
            let weight = b.u16()?;
            let watch_port = b.u32()?;
            let watch_group = b.u32()?;
            b.skip(4)?;
            let actions = decode_actions(version, &mut b.with_err(DecodeError::BadActionLen))?;
            out.push(Bucket {
                bucket_id: 0,
                weight,
                watch_port,
                watch_group,
                actions,
            });
        }
    }
    Ok(out)
}

pub(crate) fn encode_buckets(
    out: &mut Vec<u8>,
    version: u8,
    buckets: &[Bucket],
) -> Result<(), EncodeError> {
    for b in buckets {
        let start = out.len();
        out.u16(0);
        if version == OFP15 {
            let mut acts = Vec::new();
            encode_actions(&mut acts, version, &b.actions)?;
            out.u16(acts.len() as u16);
            out.u32(b.bucket_id);
            out.extend_from_slice(&acts);
            let mut props = Vec::new();
            let mut d = Vec::new();
            d.u16(b.weight);
            d.zeros(2);
            props.push(Prop { type_: 0, data: d });
            if b.watch_port != crate::actions::OFPP_ANY {
                props.push(Prop {
                    type_: 1,
                    data: b.watch_port.to_be_bytes().to_vec(),
                });
            }
            if b.watch_group != crate::actions::OFPG_ANY {
                props.push(Prop {
                    type_: 2,
                    data: b.watch_group.to_be_bytes().to_vec(),
                });
            }
            encode_props(out, &props);
        } else {
            out.u16(b.weight);
            out.u32(b.watch_port);
            out.u32(b.watch_group);
            out.zeros(4);
            encode_actions(out, version, &b.actions)?;
        }
        let len = out.len() - start;
        out.patch_u16(start, len);
    }
    Ok(())
}

/// A group_mod, or in OpenFlow 1.5 an insert/remove-bucket one.
pub(crate) enum AnyGroupMod {
    Group(GroupMod),
    Buckets(GroupBucketMod),
}

pub(crate) fn decode_group_mod(version: u8, rd: &mut Rd<'_>) -> Result<AnyGroupMod, DecodeError> {
    let cmd = rd.u16()?;
    let bucket_cmd = match cmd {
        3 if version == OFP15 => Some(BucketCommand::Insert),
        5 if version == OFP15 => Some(BucketCommand::Remove),
        _ => None,
    };
    let command = match bucket_cmd {
        Some(_) => GroupModCommand::Modify,
        None => group_command(cmd)?,
    };
    let t = rd.u8()?;
    let group_type = GroupType::from_u8(t).ok_or(DecodeError::BadGroupType(t))?;
    rd.skip(1)?;
    let group_id = rd.u32()?;
    let mut command_bucket_id = OFPG_BUCKET_ALL;
    let buckets = if version == OFP15 {
        let blen = usize::from(rd.u16()?);
        rd.skip(2)?;
        command_bucket_id = rd.u32()?;
        let mut br = rd.sub(blen, DecodeError::BadBucket)?;
        let b = decode_buckets(version, &mut br, true)?;
        // Group properties (none defined but experimenter) are checked and dropped.
        decode_props(rd)?;
        b
    } else {
        decode_buckets(version, rd, false)?
    };
    Ok(match bucket_cmd {
        Some(command) => AnyGroupMod::Buckets(GroupBucketMod {
            command,
            group_type,
            group_id,
            command_bucket_id,
            buckets,
        }),
        None => AnyGroupMod::Group(GroupMod {
            command,
            group_type,
            group_id,
            buckets,
        }),
    })
}

/// An OpenFlow 1.5 insert/remove-bucket group_mod.
pub(crate) fn encode_group_bucket_mod(
    out: &mut Vec<u8>,
    version: u8,
    g: &GroupBucketMod,
) -> Result<(), EncodeError> {
    if version != OFP15 {
        return Err(EncodeError::NotInVersion("group bucket commands"));
    }
    out.u16(g.command as u16);
    out.u8(g.group_type as u8);
    out.u8(0);
    out.u32(g.group_id);
    let mut b = Vec::new();
    encode_buckets(&mut b, version, &g.buckets)?;
    out.u16(b.len() as u16);
    out.zeros(2);
    out.u32(g.command_bucket_id);
    out.extend_from_slice(&b);
    Ok(())
}

pub(crate) fn encode_group_mod(
    out: &mut Vec<u8>,
    version: u8,
    g: &GroupMod,
) -> Result<(), EncodeError> {
    out.u16(g.command as u16);
    out.u8(g.group_type as u8);
    out.u8(0);
    out.u32(g.group_id);
    if version == OFP15 {
        let mut b = Vec::new();
        encode_buckets(&mut b, version, &g.buckets)?;
        out.u16(b.len() as u16);
        out.zeros(2);
        out.u32(OFPG_BUCKET_ALL);
        out.extend_from_slice(&b);
        Ok(())
    } else {
        encode_buckets(out, version, &g.buckets)
    }
}

pub(crate) fn decode_bands(rd: &mut Rd<'_>) -> Result<Vec<MeterBand>, DecodeError> {
    let mut out = Vec::new();
    while !rd.is_empty() {
        let ty = rd.peek_u16(0).ok_or(DecodeError::BadMeterBand(0))?;
        let len = usize::from(rd.peek_u16(2).ok_or(DecodeError::BadMeterBand(ty))?);
        if len != 16 {
            return Err(DecodeError::BadMeterBand(ty));
        }
        let mut b = rd.sub(len, DecodeError::BadMeterBand(ty))?;
        b.skip(4)?;
        let rate = b.u32()?;
        let burst_size = b.u32()?;
        out.push(match ty {
            1 => MeterBand::Drop { rate, burst_size },
            2 => MeterBand::DscpRemark {
                rate,
                burst_size,
                prec_level: b.u8()?,
            },
            _ => return Err(DecodeError::BadMeterBand(ty)),
        });
    }
    Ok(out)
}

pub(crate) fn encode_bands(out: &mut Vec<u8>, bands: &[MeterBand]) {
    for b in bands {
        out.u16(b.band_type());
        out.u16(16);
        out.u32(b.rate());
        out.u32(b.burst_size());
        match b {
            MeterBand::DscpRemark { prec_level, .. } => {
                out.u8(*prec_level);
                out.zeros(3);
            }
            MeterBand::Drop { .. } => out.zeros(4),
        }
    }
}

pub(crate) fn decode_meter_mod(rd: &mut Rd<'_>) -> Result<MeterMod, DecodeError> {
    let c = rd.u16()?;
    let command = match c {
        0 => MeterModCommand::Add,
        1 => MeterModCommand::Modify,
        2 => MeterModCommand::Delete,
        _ => return Err(DecodeError::BadMeterCommand(c)),
    };
    let flags = MeterFlags(rd.u16()?);
    let meter_id = rd.u32()?;
    Ok(MeterMod {
        command,
        flags,
        meter_id,
        bands: decode_bands(rd)?,
    })
}

pub(crate) fn encode_meter_mod(out: &mut Vec<u8>, m: &MeterMod) {
    out.u16(m.command as u16);
    out.u16(m.flags.0);
    out.u32(m.meter_id);
    encode_bands(out, &m.bands);
}

/// Port modification.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PortMod {
    /// Port.
    pub port_no: u32,
    /// The port's MAC (a sanity check).
    pub hw_addr: [u8; 6],
    /// New `OFPPC_*` bits, under `mask`.
    pub config: u32,
    /// Which config bits to change.
    pub mask: u32,
    /// Features to advertise (0 for no change); `None` when a 1.4+ message omits the
    /// Ethernet property.
    pub advertise: Option<u32>,
    /// Other 1.4+ properties, raw.
    pub props: Vec<Prop>,
}

pub(crate) fn decode_port_mod(version: u8, rd: &mut Rd<'_>) -> Result<PortMod, DecodeError> {
    if version == OFP10 {
        let port_no = port_from_of10(rd.u16()?);
        let hw_addr = rd.array()?;
        let config = rd.u32()?;
        let mask = rd.u32()?;
        let advertise = Some(rd.u32()?);
        rd.skip(4)?;
        return Ok(PortMod {
            port_no,
            hw_addr,
            config,
            mask,
            advertise,
            props: Vec::new(),
        });
    }
    let port_no = rd.u32()?;
    rd.skip(4)?;
    let hw_addr = rd.array()?;
    rd.skip(2)?;
    let config = rd.u32()?;
    let mask = rd.u32()?;
    if version == OFP13 {
        let advertise = Some(rd.u32()?);
        rd.skip(4)?;
        return Ok(PortMod {
            port_no,
            hw_addr,
            config,
            mask,
            advertise,
            props: Vec::new(),
        });
    }
    let mut pm = PortMod {
        port_no,
        hw_addr,
        config,
        mask,
        advertise: None,
        props: Vec::new(),
    };
    for p in decode_props(rd)? {
        if p.type_ == 0 && pm.advertise.is_none() && p.data.len() == 4 {
            pm.advertise = Some(Rd::new(&p.data, DecodeError::BadPropertyLen).u32()?);
        } else {
            pm.props.push(p);
        }
    }
    Ok(pm)
}

pub(crate) fn encode_port_mod(
    out: &mut Vec<u8>,
    version: u8,
    p: &PortMod,
) -> Result<(), EncodeError> {
    if version == OFP10 {
        out.u16(port_to_of10(p.port_no).ok_or(EncodeError::Unrepresentable("port_no"))?);
        out.extend_from_slice(&p.hw_addr);
        out.u32(p.config);
        out.u32(p.mask);
        out.u32(p.advertise.unwrap_or(0));
        out.zeros(4);
        return Ok(());
    }
    out.u32(p.port_no);
    out.zeros(4);
    out.extend_from_slice(&p.hw_addr);
    out.zeros(2);
    out.u32(p.config);
    out.u32(p.mask);
    if version == OFP13 {
        out.u32(p.advertise.unwrap_or(0));
        out.zeros(4);
        return Ok(());
    }
    if let Some(a) = p.advertise {
        encode_props(
            out,
            &[Prop {
                type_: 0,
                data: a.to_be_bytes().to_vec(),
            }],
        );
    }
    encode_props(out, &p.props);
    Ok(())
}

/// Table modification.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct TableMod {
    /// Table (`OFPTT_ALL` for all).
    pub table_id: u8,
    /// `OFPTC_*` bits.
    pub config: u32,
    /// 1.4+ properties (eviction, vacancy...), raw.
    pub props: Vec<Prop>,
}

pub(crate) fn decode_table_mod(version: u8, rd: &mut Rd<'_>) -> Result<TableMod, DecodeError> {
    let table_id = rd.u8()?;
    rd.skip(3)?;
    let config = rd.u32()?;
    let props = if version >= OFP14 {
        decode_props(rd)?
    } else {
        Vec::new()
    };
    Ok(TableMod {
        table_id,
        config,
        props,
    })
}

pub(crate) fn encode_table_mod(out: &mut Vec<u8>, version: u8, t: &TableMod) {
    out.u8(t.table_id);
    out.zeros(3);
    out.u32(t.config);
    if version >= OFP14 {
        encode_props(out, &t.props);
    }
}

/// Role request / reply.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RoleMsg {
    /// `OFPCR_ROLE_*`: 0 no change, 1 equal, 2 master, 3 slave.
    pub role: u32,
    /// OpenFlow 1.5 short id of the controller (0 otherwise).
    pub short_id: u16,
    /// Master election generation id.
    pub generation_id: u64,
}

/// Asynchronous message configuration, as (property type, mask) pairs in OpenFlow 1.4
/// numbering (`OFPACPT_PACKET_IN_SLAVE` 0, `_MASTER` 1, `PORT_STATUS_SLAVE` 2, `_MASTER`
/// 3, `FLOW_REMOVED_SLAVE` 4, `_MASTER` 5, ...). OpenFlow 1.3's three mask pairs are the
/// first six (its index 0 is master/equal, index 1 slave).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct AsyncConfig {
    /// (type, mask) pairs in message order.
    pub masks: Vec<(u16, u32)>,
    /// 1.4+ experimenter properties (types 0xfffe, 0xffff), raw; encoded after `masks`.
    pub experimenter: Vec<Prop>,
}

impl AsyncConfig {
    /// The mask for a property type, if given.
    pub fn get(&self, ty: u16) -> Option<u32> {
        self.masks.iter().find(|m| m.0 == ty).map(|m| m.1)
    }
}

/// OpenFlow 1.3 field order: pin master, pin slave, ps master, ps slave, fr master, fr slave.
const ASYNC13: [u16; 6] = [1, 0, 3, 2, 5, 4];

pub(crate) fn decode_async(version: u8, rd: &mut Rd<'_>) -> Result<AsyncConfig, DecodeError> {
    let mut a = AsyncConfig::default();
    if version == OFP13 {
        for ty in ASYNC13 {
            a.masks.push((ty, rd.u32()?));
        }
        return Ok(a);
    }
    for p in decode_props(rd)? {
        if p.type_ >= 0xfffe {
            a.experimenter.push(p);
            continue;
        }
        if p.data.len() != 4 {
            return Err(DecodeError::BadPropertyLen);
        }
        a.masks.push((
            p.type_,
            Rd::new(&p.data, DecodeError::BadPropertyLen).u32()?,
        ));
    }
    Ok(a)
}

pub(crate) fn encode_async(out: &mut Vec<u8>, version: u8, a: &AsyncConfig) {
    if version == OFP13 {
        for ty in ASYNC13 {
            out.u32(a.get(ty).unwrap_or(0));
        }
        return;
    }
    for (ty, m) in &a.masks {
        encode_props(
            out,
            &[Prop {
                type_: *ty,
                data: m.to_be_bytes().to_vec(),
            }],
        );
    }
    encode_props(out, &a.experimenter);
}

/// The ONF experimenter id (OpenFlow 1.3 extensions that 1.4 standardised).
pub const ONF_EXPERIMENTER_ID: u32 = 0x4f4e_4600;
/// `ONFT_BUNDLE_CONTROL`: OpenFlow 1.3 form of `OFPT_BUNDLE_CONTROL`.
pub const ONFT_BUNDLE_CONTROL: u32 = 2300;
/// `ONFT_BUNDLE_ADD_MESSAGE`: OpenFlow 1.3 form of `OFPT_BUNDLE_ADD_MESSAGE`.
pub const ONFT_BUNDLE_ADD: u32 = 2301;

/// `OFPBCT_*` bundle control types.
pub mod bct {
    /// Open a bundle.
    pub const OPEN_REQUEST: u16 = 0;
    /// Reply to an open.
    pub const OPEN_REPLY: u16 = 1;
    /// Close a bundle (no more messages).
    pub const CLOSE_REQUEST: u16 = 2;
    /// Reply to a close.
    pub const CLOSE_REPLY: u16 = 3;
    /// Apply the bundle's messages.
    pub const COMMIT_REQUEST: u16 = 4;
    /// Reply to a commit.
    pub const COMMIT_REPLY: u16 = 5;
    /// Drop the bundle.
    pub const DISCARD_REQUEST: u16 = 6;
    /// Reply to a discard.
    pub const DISCARD_REPLY: u16 = 7;
}

/// `OFPBF_ATOMIC`: apply all of the bundle or nothing.
pub const OFPBF_ATOMIC: u16 = 1;
/// `OFPBF_ORDERED`: apply in the order added.
pub const OFPBF_ORDERED: u16 = 2;

/// Bundle control (OpenFlow 1.4+).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct BundleControl {
    /// Bundle id.
    pub bundle_id: u32,
    /// `OFPBCT_*`: open/close/commit/discard requests and replies (0..7).
    pub ctrl_type: u16,
    /// `OFPBF_*` flags.
    pub flags: u16,
    /// Properties, raw.
    pub props: Vec<Prop>,
}

/// Bundle add (OpenFlow 1.4+): one message to stage in a bundle.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct BundleAdd {
    /// Bundle id.
    pub bundle_id: u32,
    /// `OFPBF_*` flags.
    pub flags: u16,
    /// The staged message, complete with its header (decode it with
    /// [`super::decode`]).
    pub message: Vec<u8>,
    /// Properties, raw.
    pub props: Vec<Prop>,
}

pub(crate) fn decode_bundle_add(rd: &mut Rd<'_>) -> Result<BundleAdd, DecodeError> {
    let bundle_id = rd.u32()?;
    rd.skip(2)?;
    let flags = rd.u16()?;
    let mlen = usize::from(rd.peek_u16(2).ok_or(DecodeError::BadLength)?);
    if mlen < 8 {
        return Err(DecodeError::BadLength);
    }
    let message = rd.bytes(mlen)?.to_vec();
    let pad = (pad8(mlen) - mlen).min(rd.len());
    if !rd.is_empty() {
        rd.skip(pad)?;
    }
    let props = decode_props(rd)?;
    Ok(BundleAdd {
        bundle_id,
        flags,
        message,
        props,
    })
}

pub(crate) fn encode_bundle_add(out: &mut Vec<u8>, b: &BundleAdd) {
    out.u32(b.bundle_id);
    out.zeros(2);
    out.u16(b.flags);
    let start = out.len();
    out.extend_from_slice(&b.message);
    if !b.props.is_empty() {
        out.pad8_from(start);
        encode_props(out, &b.props);
    }
}

pub(crate) fn decode_bundle_ctrl(rd: &mut Rd<'_>) -> Result<BundleControl, DecodeError> {
    Ok(BundleControl {
        bundle_id: rd.u32()?,
        ctrl_type: rd.u16()?,
        flags: rd.u16()?,
        props: decode_props(rd)?,
    })
}

pub(crate) fn encode_bundle_ctrl(out: &mut Vec<u8>, b: &BundleControl) {
    out.u32(b.bundle_id);
    out.u16(b.ctrl_type);
    out.u16(b.flags);
    encode_props(out, &b.props);
}
