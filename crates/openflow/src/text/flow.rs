//! Flows and matches in ovs-ofctl text.
//!
//! Parsing happens in two steps. First every item is read: flow_mod parameters
//! (`table=`, `priority=`, `cookie=`...), protocol shorthands (`tcp` = `dl_type=0x0800,
//! nw_proto=6`), fields under any of their names, and `actions=` (kept as text). Then the
//! names whose meaning depends on the rest of the match are resolved — `tp_src` is
//! `tcp_src`, `udp_src` or `sctp_src` after `ip_proto`; `nw_src` is `ip_src` or `arp_spa`
//! after `dl_type`; `icmp_type` is ICMPv4's or ICMPv6's — so items may come in any order.
//! Finally the match is validated and the actions parsed against it. The only thing added
//! implicitly is what OVS adds: `dl_vlan_pcp` alone also matches "a VLAN tag is present".
//!
//! Giving a field twice is accepted only if both values agree (so `ip,tcp` is fine).
//!
//! Formatting follows ovs-ofctl dump-flows: `priority=` first (omitted when it is the
//! default 32768), then a shorthand when `dl_type`/`nw_proto` allow one, then the fields
//! in OVS's order under OVS's names (`dl_src`, `nw_dst`, `tp_dst`, `nw_tos`, `dl_vlan`...).

use super::actions::{format_instructions, parse_instructions};
use super::fields::{format_port, format_value, parse_port, parse_value_raw};
use super::{need_value, parse_uint, prereq_text, uint_for, TextError, Token, Tokens};
use crate::actions::{OFPG_ALL, OFPG_ANY, OFPP_ANY};
use crate::matches::Match;
use crate::messages::{
    FlowMod, FlowModCommand, FlowModFlags, OFPTT_ALL, OFPTT_MAX, OFP_DEFAULT_PRIORITY,
};
use crate::oxm::{ethertype, ipproto, Field, OFPVID_PRESENT};
use std::time::Duration;

/// Protocol shorthands: name, EtherType, IP protocol.
const SHORTHANDS: [(&str, u16, Option<u8>); 14] = [
    ("ip", ethertype::IPV4, None),
    ("ipv6", ethertype::IPV6, None),
    ("icmp", ethertype::IPV4, Some(ipproto::ICMP)),
    ("icmp6", ethertype::IPV6, Some(ipproto::ICMPV6)),
    ("tcp", ethertype::IPV4, Some(ipproto::TCP)),
    ("tcp6", ethertype::IPV6, Some(ipproto::TCP)),
    ("udp", ethertype::IPV4, Some(ipproto::UDP)),
    ("udp6", ethertype::IPV6, Some(ipproto::UDP)),
    ("sctp", ethertype::IPV4, Some(ipproto::SCTP)),
    ("sctp6", ethertype::IPV6, Some(ipproto::SCTP)),
    ("arp", ethertype::ARP, None),
    ("rarp", ethertype::RARP, None),
    ("mpls", ethertype::MPLS, None),
    ("mplsm", ethertype::MPLS_MCAST, None),
];

/// Names whose field depends on the rest of the match.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Generic {
    NwSrc,
    NwDst,
    NwProto,
    TpSrc,
    TpDst,
    IcmpType,
    IcmpCode,
}

impl Generic {
    fn from_name(s: &str) -> Option<Generic> {
        Some(match s {
            "nw_src" => Generic::NwSrc,
            "nw_dst" => Generic::NwDst,
            "nw_proto" => Generic::NwProto,
            "tp_src" => Generic::TpSrc,
            "tp_dst" => Generic::TpDst,
            "icmp_type" => Generic::IcmpType,
            "icmp_code" => Generic::IcmpCode,
            _ => return None,
        })
    }

    /// The field whose value syntax the name uses before resolution.
    fn proto_field(self) -> Field {
        match self {
            Generic::NwSrc => Field::Ipv4Src,
            Generic::NwDst => Field::Ipv4Dst,
            Generic::NwProto => Field::IpProto,
            Generic::TpSrc => Field::TcpSrc,
            Generic::TpDst => Field::TcpDst,
            Generic::IcmpType => Field::Icmpv4Type,
            Generic::IcmpCode => Field::Icmpv4Code,
        }
    }
}

fn is_arp(m: &Match) -> bool {
    matches!(
        m.exact(Field::EthType).map(|t| t as u16),
        Some(ethertype::ARP) | Some(ethertype::RARP)
    )
}

/// Resolve a context-dependent name against a match; `None` when no field fits.
fn resolve(g: Generic, m: &Match) -> Option<Field> {
    let proto = m.exact(Field::IpProto).map(|p| p as u8);
    Some(match g {
        Generic::NwSrc if is_arp(m) => Field::ArpSpa,
        Generic::NwSrc => Field::Ipv4Src,
        Generic::NwDst if is_arp(m) => Field::ArpTpa,
        Generic::NwDst => Field::Ipv4Dst,
        Generic::NwProto if is_arp(m) => Field::ArpOp,
        Generic::NwProto => Field::IpProto,
        Generic::TpSrc => match proto {
            Some(ipproto::TCP) => Field::TcpSrc,
            Some(ipproto::UDP) => Field::UdpSrc,
            Some(ipproto::SCTP) => Field::SctpSrc,
            _ => return None,
        },
        Generic::TpDst => match proto {
            Some(ipproto::TCP) => Field::TcpDst,
            Some(ipproto::UDP) => Field::UdpDst,
            Some(ipproto::SCTP) => Field::SctpDst,
            _ => return None,
        },
        Generic::IcmpType if proto == Some(ipproto::ICMPV6) => Field::Icmpv6Type,
        Generic::IcmpType => Field::Icmpv4Type,
        Generic::IcmpCode if proto == Some(ipproto::ICMPV6) => Field::Icmpv6Code,
        Generic::IcmpCode => Field::Icmpv4Code,
    })
}

struct PendingGeneric {
    g: Generic,
    value: u128,
    mask: Option<u128>,
    key: String,
    text: String,
}

/// Accumulates a match from items (see the module documentation).
#[derive(Default)]
pub(crate) struct MatchBuilder {
    m: Match,
    /// The name the user gave each field, for messages.
    names: Vec<(Field, String)>,
    generic: Vec<PendingGeneric>,
}

impl MatchBuilder {
    fn name_of(&self, f: Field) -> String {
        self.names
            .iter()
            .find(|(g, _)| *g == f)
            .map(|(_, n)| n.clone())
            .unwrap_or_else(|| f.name().to_string())
    }

    fn add(
        &mut self,
        f: Field,
        value: u128,
        mask: Option<u128>,
        key: &str,
        text: &str,
    ) -> Result<(), TextError> {
        if mask.is_some() && !f.ovs_maskable() {
            return Err(TextError::new(format!(
                "{text}: {key} does not support masking"
            )));
        }
        let mut one = Match::new();
        match mask {
            Some(m) => one.set_masked(f, value, m),
            None => one.set_exact(f, value),
        };
        if let Some(old) = self.m.get(f) {
            if Some(old) != one.get(f) {
                return Err(TextError::new(format!(
                    "{text}: conflicts with earlier {}",
                    self.name_of(f)
                )));
            }
        }
        match one.get(f) {
            Some(e) => {
                let e = *e;
                match e.mask {
                    Some(m) => self.m.set_masked(f, e.value, m),
                    None => self.m.set_exact(f, e.value),
                };
            }
            None => {
                self.m.remove(f);
            }
        }
        if !self.names.iter().any(|(g, _)| *g == f) {
            self.names.push((f, key.to_string()));
        }
        Ok(())
    }

    /// Take one item if it is a match item; `Ok(false)` if the key is not a match key.
    pub(crate) fn item(&mut self, tok: &Token<'_>) -> Result<bool, TextError> {
        let key = tok.key;
        let text = tok.text();
        if let Some((_, eth, proto)) = SHORTHANDS.iter().find(|(n, _, _)| *n == key) {
            if tok.value.is_some() {
                return Err(TextError::new(format!("{text}: '{key}' takes no value")));
            }
            self.add(Field::EthType, u128::from(*eth), None, key, &text)?;
            if let Some(p) = proto {
                self.add(Field::IpProto, u128::from(*p), None, key, &text)?;
            }
            return Ok(true);
        }
        match key {
            // OVS's packet_type shorthand for Ethernet: what every match here means.
            "eth" if tok.value.is_none() => return Ok(true),
            "dl_vlan" => {
                let v = need_value(tok)?;
                let n = parse_uint(v, 16).ok_or_else(|| {
                    TextError::new(format!("{text}: '{v}' is not a 16-bit number"))
                })?;
                let vid = match n {
                    0xffff => u128::from(crate::oxm::OFPVID_NONE),
                    0..=4095 => n | u128::from(OFPVID_PRESENT),
                    _ => {
                        return Err(TextError::new(format!(
                            "{text}: '{v}' is not a VLAN id (0 to 4095, or 0xffff for no VLAN)"
                        )))
                    }
                };
                self.add(Field::VlanVid, vid, None, key, &text)?;
                return Ok(true);
            }
            "nw_tos" => {
                let n = uint_for(tok, 8)?;
                if n & 3 != 0 {
                    return Err(TextError::new(format!(
                        "{text}: nw_tos must be a multiple of 4 (the ECN bits are nw_ecn)"
                    )));
                }
                self.add(Field::IpDscp, n >> 2, None, key, &text)?;
                return Ok(true);
            }
            _ => {}
        }
        if let Some(g) = Generic::from_name(key) {
            let v = need_value(tok)?;
            let pf = g.proto_field();
            let (value, mask) =
                parse_value_raw(pf, v).map_err(|e| TextError::new(format!("{text}: {e}")))?;
            if mask.is_some() && !pf.ovs_maskable() {
                return Err(TextError::new(format!(
                    "{text}: {key} does not support masking"
                )));
            }
            self.generic.push(PendingGeneric {
                g,
                value,
                mask,
                key: key.to_string(),
                text,
            });
            return Ok(true);
        }
        if let Some(f) = Field::from_name(key) {
            let v = need_value(tok)?;
            let (value, mask) =
                parse_value_raw(f, v).map_err(|e| TextError::new(format!("{text}: {e}")))?;
            self.add(f, value, mask, key, &text)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Resolve context-dependent names, add the implied VLAN match, validate.
    pub(crate) fn finish(mut self) -> Result<Match, TextError> {
        let pending = std::mem::take(&mut self.generic);
        for p in &pending {
            let f = resolve(p.g, &self.m).ok_or_else(|| {
                TextError::new(format!(
                    "{} requires ip_proto=6, 17 or 132 (tcp, udp or sctp)",
                    p.key
                ))
            })?;
            if p.mask.is_some() && !f.ovs_maskable() {
                return Err(TextError::new(format!(
                    "{}: {} does not support masking",
                    p.text, p.key
                )));
            }
            if f.bits() < 32 && p.value > f.max() {
                return Err(TextError::new(format!(
                    "{}: value too large for {}",
                    p.text,
                    f.name()
                )));
            }
            self.add(f, p.value, p.mask, &p.key, &p.text)?;
        }
        if self.m.contains(Field::VlanPcp) && !self.m.contains(Field::VlanVid) {
            let p = u128::from(OFPVID_PRESENT);
            self.m.set_masked(Field::VlanVid, p, p);
        }
        if let Some(f) = self.m.first_unmet_prereq() {
            return Err(TextError::new(format!(
                "{} requires {}",
                self.name_of(f),
                prereq_text(f)
            )));
        }
        if let Err(e) = self.m.validate() {
            let culprit = self
                .m
                .get(Field::VlanVid)
                .filter(|e| e.is_exact() && e.value != 0 && e.value & 0x1000 == 0);
            return Err(TextError::new(match culprit {
                Some(v) => format!(
                    "vlan_vid={}: value lacks the 0x1000 (present) bit; use dl_vlan={} to match a VLAN",
                    v.value, v.value
                ),
                None => format!("invalid match: {e}"),
            }));
        }
        Ok(self.m)
    }
}

/// Parse a match alone (`tcp,nw_dst=10.0.0.0/8,tp_dst=80`).
pub fn parse_match(text: &str) -> Result<Match, TextError> {
    let mut b = MatchBuilder::default();
    let mut toks = Tokens::new(text);
    while let Some(tok) = toks.next_token() {
        let tok = tok?;
        if !b.item(&tok)? {
            return Err(TextError::new(format!("unknown field '{}'", tok.key)));
        }
    }
    b.finish()
}

fn cookie_parts(tok: &Token<'_>) -> Result<(u64, Option<u64>), TextError> {
    let v = need_value(tok)?;
    let bad = |s: &str| TextError::new(format!("{}: '{s}' is not a 64-bit number", tok.text()));
    let (a, m) = match v.split_once('/') {
        Some((a, m)) => (a, Some(m)),
        None => (v, None),
    };
    let c = parse_uint(a, 64).ok_or_else(|| bad(a))? as u64;
    let mask = match m {
        Some(m) => Some(parse_uint(m, 64).ok_or_else(|| bad(m))? as u64),
        None => None,
    };
    Ok((c, mask))
}

/// Parse a flow in ovs-ofctl syntax for `command` (add-flow, mod-flows, del-flows...).
///
/// Defaults: table 0 for adds and all tables for modify/delete, priority 32768, no
/// timeouts, out_port/out_group ANY. `actions=` is required for add and modify and refused
/// for delete. `cookie=V` sets the cookie of an added flow; `cookie=V/M` selects flows to
/// modify or delete (a delete keeps only `V & M`; a plain `cookie=V` on modify is kept with
/// mask 0: OpenFlow 1.1+ modify cannot change cookies). `duration`, `n_packets`, `n_bytes`,
/// `idle_age` and `hard_age` are ignored so that dump-flows output can be fed back.
pub fn parse_flow(text: &str, command: FlowModCommand) -> Result<FlowMod, TextError> {
    let mut fm = FlowMod::new(command);
    if command != FlowModCommand::Add {
        fm.table_id = OFPTT_ALL;
    }
    let mut b = MatchBuilder::default();
    let mut actions: Option<&str> = None;
    let mut toks = Tokens::new(text);
    while let Some(tok) = toks.next_token() {
        let tok = tok?;
        match tok.key {
            "actions" => {
                if tok.value.is_none() {
                    return Err(TextError::new("'actions' needs a value"));
                }
                actions = Some(toks.take_rest_from(tok.value_start));
            }
            "table" => fm.table_id = table_for(&tok, command)?,
            "priority" => fm.priority = uint_for(&tok, 16)? as u16,
            "idle_timeout" => fm.idle_timeout = uint_for(&tok, 16)? as u16,
            "hard_timeout" => fm.hard_timeout = uint_for(&tok, 16)? as u16,
            "cookie" => (fm.cookie, fm.cookie_mask) = cookie_for(&tok, command)?,
            // As ovs-ofctl: an addition selects no flows, so it takes neither.
            "out_port" | "out_group" if command == FlowModCommand::Add => {
                return Err(TextError::new(format!("unknown keyword {}", tok.key)));
            }
            "out_port" => fm.out_port = out_port_for(&tok)?,
            "out_group" => fm.out_group = out_group_for(&tok)?,
            "duration" | "n_packets" | "n_bytes" | "idle_age" | "hard_age" => {}
            _ => flag_or_field(&tok, &mut fm.flags, &mut b)?,
        }
    }
    fm.match_ = b.finish()?;
    match (actions, command.is_delete()) {
        (Some(_), true) => {
            return Err(TextError::new(
                "actions are not allowed when deleting flows",
            ));
        }
        (None, false) => return Err(TextError::new("must specify an action (actions=...)")),
        (Some(a), false) => fm.instructions = parse_instructions(a, Some(&fm.match_))?,
        (None, true) => {}
    }
    Ok(fm)
}

/// `table=N` or `table=all` (which an addition cannot take).
fn table_for(tok: &Token<'_>, command: FlowModCommand) -> Result<u8, TextError> {
    let v = need_value(tok)?;
    let t = match v {
        "all" => u128::from(OFPTT_ALL),
        _ => parse_uint(v, 8).ok_or_else(|| {
            TextError::new(format!(
                "{}: '{v}' is not a table number (0 to 254)",
                tok.text()
            ))
        })?,
    } as u8;
    if t == OFPTT_ALL && command == FlowModCommand::Add {
        return Err(TextError::new(format!(
            "{}: flows must be added to one table (0 to {OFPTT_MAX})",
            tok.text()
        )));
    }
    Ok(t)
}

/// `cookie=V[/M]` as the flow_mod's cookie and cookie mask: an addition takes no mask, a
/// delete needs one (see [`parse_flow`]).
fn cookie_for(tok: &Token<'_>, command: FlowModCommand) -> Result<(u64, u64), TextError> {
    let (c, mask) = cookie_parts(tok)?;
    match (mask, command) {
        (Some(_), FlowModCommand::Add) => {
            return Err(TextError::new(format!(
                "{}: flow additions cannot use a cookie mask",
                tok.text()
            )))
        }
        (None, FlowModCommand::Delete | FlowModCommand::DeleteStrict) => {
            return Err(TextError::new(format!(
                "{}: cannot set a cookie when deleting; use cookie=VALUE/MASK",
                tok.text()
            )))
        }
        _ => {}
    }
    // A delete selects by the cookie's masked bits alone; keeping the others would give a
    // flow_mod that prints (and parses back) differently.
    let cookie = match mask {
        Some(m) if command.is_delete() => c & m,
        _ => c,
    };
    Ok((cookie, mask.unwrap_or(0)))
}

/// `out_port=P`, a number or a reserved port's name.
fn out_port_for(tok: &Token<'_>) -> Result<u32, TextError> {
    let v = need_value(tok)?;
    parse_port(v).ok_or_else(|| {
        TextError::new(format!(
            "{}: '{v}' is not a port number or name",
            tok.text()
        ))
    })
}

/// `out_group=G`, a number, `any` or `all`.
fn out_group_for(tok: &Token<'_>) -> Result<u32, TextError> {
    Ok(match need_value(tok)? {
        "any" | "ANY" => OFPG_ANY,
        "all" | "ALL" => OFPG_ALL,
        _ => uint_for(tok, 32)? as u32,
    })
}

/// Any other item: a flow_mod flag (`send_flow_rem`...), which takes no value, or a match
/// field.
fn flag_or_field(
    tok: &Token<'_>,
    flags: &mut FlowModFlags,
    b: &mut MatchBuilder,
) -> Result<(), TextError> {
    let key = tok.key;
    if let Some((flag, _)) = FlowModFlags::NAMES.iter().find(|(_, n)| *n == key) {
        if tok.value.is_some() {
            return Err(TextError::new(format!(
                "{}: '{key}' takes no value",
                tok.text()
            )));
        }
        flags.insert(*flag);
    } else if !b.item(tok)? {
        return Err(TextError::new(format!("unknown field '{key}'")));
    }
    Ok(())
}

/// Fields printed before the protocol shorthand, in OVS's order.
const PRE_SHORTHAND: [Field; 14] = [
    Field::PktMark,
    Field::RecircId,
    Field::DpHash,
    Field::CtState,
    Field::CtZone,
    Field::CtMark,
    Field::CtLabel,
    Field::CtNwSrc,
    Field::CtNwDst,
    Field::CtIpv6Src,
    Field::CtIpv6Dst,
    Field::CtNwProto,
    Field::CtTpSrc,
    Field::CtTpDst,
];

/// Order and names in which the other fields are printed (see the module documentation).
const FORMAT_ORDER: [Field; 66] = [
    Field::Reg0,
    Field::Reg1,
    Field::Reg2,
    Field::Reg3,
    Field::Reg4,
    Field::Reg5,
    Field::Reg6,
    Field::Reg7,
    Field::Reg8,
    Field::Reg9,
    Field::Reg10,
    Field::Reg11,
    Field::Reg12,
    Field::Reg13,
    Field::Reg14,
    Field::Reg15,
    Field::TunnelId,
    Field::TunSrc,
    Field::TunDst,
    Field::TunIpv6Src,
    Field::TunIpv6Dst,
    Field::TunGbpId,
    Field::TunGbpFlags,
    Field::TunFlags,
    Field::Metadata,
    Field::InPort,
    Field::InPhyPort,
    Field::VlanVid,
    Field::VlanPcp,
    Field::EthSrc,
    Field::EthDst,
    Field::EthType,
    Field::Ipv4Src,
    Field::Ipv4Dst,
    Field::ArpSpa,
    Field::ArpTpa,
    Field::Ipv6Src,
    Field::Ipv6Dst,
    Field::Ipv6Flabel,
    Field::IpProto,
    Field::IpDscp,
    Field::IpEcn,
    Field::NwTtl,
    Field::IpFrag,
    Field::ArpOp,
    Field::ArpSha,
    Field::ArpTha,
    Field::MplsLabel,
    Field::MplsTc,
    Field::MplsBos,
    Field::PbbIsid,
    Field::Ipv6Exthdr,
    Field::TcpSrc,
    Field::UdpSrc,
    Field::SctpSrc,
    Field::TcpDst,
    Field::UdpDst,
    Field::SctpDst,
    Field::Icmpv4Type,
    Field::Icmpv6Type,
    Field::Icmpv4Code,
    Field::Icmpv6Code,
    Field::Ipv6NdTarget,
    Field::Ipv6NdSll,
    Field::Ipv6NdTll,
    Field::TcpFlags,
];

/// The shorthand for a match, and whether it covers `nw_proto` too.
fn shorthand(m: &Match) -> Option<(&'static str, bool)> {
    let eth = m.exact(Field::EthType)? as u16;
    let proto = m.exact(Field::IpProto).map(|p| p as u8);
    SHORTHANDS
        .iter()
        .find(|(_, e, p)| *e == eth && p.is_some() && *p == proto)
        .map(|(n, _, _)| (*n, true))
        .or_else(|| {
            SHORTHANDS
                .iter()
                .find(|(_, e, p)| *e == eth && p.is_none())
                .map(|(n, _, _)| (*n, false))
        })
}

/// Format a match as dump-flows does, with `priority=` first unless `priority` is `None`
/// or the default (32768). Returns the empty string for a catch-all match.
pub fn format_match(m: &Match, priority: Option<u16>) -> String {
    let mut items: Vec<String> = Vec::new();
    if let Some(p) = priority.filter(|p| *p != OFP_DEFAULT_PRIORITY) {
        items.push(format!("priority={p}"));
    }
    // OVS prints the pipeline metadata and conntrack fields before the protocol, and
    // `eth` before it once `recirc_id` is matched.
    for f in PRE_SHORTHAND {
        if let Some(e) = m.get(f) {
            items.push(format!("{}={}", f.name(), format_value(f, e.value, e.mask)));
        }
    }
    let sh = shorthand(m);
    if m.contains(Field::RecircId) && m.contains(Field::EthType) {
        items.push("eth".into());
    }
    if let Some((name, _)) = sh {
        items.push(name.to_string());
    }
    let proto = m.exact(Field::IpProto).map(|p| p as u8);
    let arp = is_arp(m);
    let pcp = m.contains(Field::VlanPcp);
    // The tunnel options follow the tunnel addresses and flags, by index.
    let order = FORMAT_ORDER.into_iter().flat_map(|f| {
        let options = if f == Field::TunFlags { 0..64 } else { 0..0 };
        core::iter::once(f).chain(options.filter_map(Field::tun_metadata))
    });
    for f in order {
        let Some(e) = m.get(f) else { continue };
        let (v, mask) = (e.value, e.mask);
        let name: &str = match f {
            Field::EthType if sh.is_some() => continue,
            Field::IpProto if sh.is_some_and(|(_, p)| p) => continue,
            Field::IpProto if arp => "ip_proto",
            Field::IpProto => "nw_proto",
            Field::EthSrc => "dl_src",
            Field::EthDst => "dl_dst",
            Field::EthType => "dl_type",
            Field::Ipv4Src if !arp => "nw_src",
            Field::Ipv4Dst if !arp => "nw_dst",
            Field::VlanPcp => "dl_vlan_pcp",
            Field::VlanVid => {
                let p = u128::from(OFPVID_PRESENT);
                if mask.is_none() && v & p != 0 {
                    items.push(format!("dl_vlan={}", v & 0xfff));
                } else if !(pcp && mask == Some(p) && v == p) {
                    items.push(format!("vlan_vid={}", format_value(f, v, mask)));
                }
                continue;
            }
            Field::IpDscp if mask.is_none() => {
                items.push(format!("nw_tos={}", v << 2));
                continue;
            }
            Field::IpEcn => "nw_ecn",
            Field::IpFrag => "nw_frag",
            // As ovs-ofctl 3.1: a matched `tun_flags` is always `+oam`/`-oam`. (It prints
            // `tun_gbp_flags` without its mask; here the mask stays, so the text reads
            // back as the same match.)
            Field::TunFlags => {
                items.push(format!("tun_flags={}", format_value(f, v, Some(1))));
                continue;
            }
            Field::TcpSrc if proto == Some(ipproto::TCP) => "tp_src",
            Field::TcpDst if proto == Some(ipproto::TCP) => "tp_dst",
            Field::UdpSrc if proto == Some(ipproto::UDP) => "tp_src",
            Field::UdpDst if proto == Some(ipproto::UDP) => "tp_dst",
            Field::SctpSrc if proto == Some(ipproto::SCTP) => "tp_src",
            Field::SctpDst if proto == Some(ipproto::SCTP) => "tp_dst",
            Field::Icmpv4Type if proto == Some(ipproto::ICMP) => "icmp_type",
            Field::Icmpv4Code if proto == Some(ipproto::ICMP) => "icmp_code",
            Field::Icmpv6Type if proto == Some(ipproto::ICMPV6) => "icmp_type",
            Field::Icmpv6Code if proto == Some(ipproto::ICMPV6) => "icmp_code",
            _ => f.name(),
        };
        items.push(format!("{name}={}", format_value(f, v, mask)));
    }
    items.join(",")
}

fn flag_names(flags: FlowModFlags) -> Vec<&'static str> {
    FlowModFlags::NAMES
        .iter()
        .filter(|(f, _)| flags.contains(*f))
        .map(|(_, n)| *n)
        .collect()
}

/// Format a flow_mod in the syntax [`parse_flow`] reads (add-flow / mod-flows / del-flows
/// style), omitting defaults. `parse_flow(&format_flow(fm), fm.command)` gives back `fm`
/// for every flow_mod `parse_flow` can produce (`buffer_id` is not part of the syntax).
pub fn format_flow(fm: &FlowMod) -> String {
    let mut items: Vec<String> = Vec::new();
    let default_table = if fm.command == FlowModCommand::Add {
        0
    } else {
        OFPTT_ALL
    };
    if fm.table_id != default_table {
        items.push(format!("table={}", fm.table_id));
    }
    if fm.cookie_mask != 0 {
        items.push(format!("cookie=0x{:x}/0x{:x}", fm.cookie, fm.cookie_mask));
    } else if fm.cookie != 0 && !fm.command.is_delete() {
        items.push(format!("cookie=0x{:x}", fm.cookie));
    }
    if fm.idle_timeout != 0 {
        items.push(format!("idle_timeout={}", fm.idle_timeout));
    }
    if fm.hard_timeout != 0 {
        items.push(format!("hard_timeout={}", fm.hard_timeout));
    }
    items.extend(flag_names(fm.flags).into_iter().map(String::from));
    if fm.out_port != OFPP_ANY {
        items.push(format!("out_port={}", format_port(fm.out_port)));
    }
    if fm.out_group != OFPG_ANY {
        items.push(format!("out_group={}", fm.out_group));
    }
    let m = format_match(&fm.match_, Some(fm.priority));
    if !m.is_empty() {
        items.push(m);
    }
    if !fm.command.is_delete() {
        items.push(format!("actions={}", format_instructions(&fm.instructions)));
    }
    items.join(",")
}

/// Counters and ages of a flow entry, for [`format_flow_stats`] (which takes the entry's
/// description as a [`FlowMod`]). Not a statistics record: the wire's flow statistics records
/// are `wire::multipart::FlowStats` (OpenFlow 1.0-1.4 and Nicira) and
/// `wire::of14::FlowStats15` (1.5's, whose counters are OXS fields and which carries no
/// instructions).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct FlowCounters {
    /// Time since the flow was added.
    pub duration: Duration,
    /// Packets matched.
    pub n_packets: u64,
    /// Bytes matched.
    pub n_bytes: u64,
    /// Seconds since the flow last matched a packet, if shown.
    pub idle_age: Option<u64>,
    /// Seconds since the flow was last modified, if shown (OVS omits it when equal to the
    /// duration).
    pub hard_age: Option<u64>,
}

/// One line of `ovs-ofctl dump-flows` output for the flow `fm` (an add-style flow_mod
/// describing the installed entry) with `stats`:
/// `cookie=0x0, duration=1.500s, table=0, n_packets=3, n_bytes=180, idle_timeout=10,
/// idle_age=1, priority=100,ip,nw_dst=10.0.0.1 actions=output:2`.
/// The line parses back with [`parse_flow`] (counters are ignored).
pub fn format_flow_stats(fm: &FlowMod, stats: &FlowCounters) -> String {
    let mut s = format!(
        "cookie=0x{:x}, duration={}.{:03}s, table={}, n_packets={}, n_bytes={}, ",
        fm.cookie,
        stats.duration.as_secs(),
        stats.duration.subsec_millis(),
        fm.table_id,
        stats.n_packets,
        stats.n_bytes
    );
    if fm.idle_timeout != 0 {
        s.push_str(&format!("idle_timeout={}, ", fm.idle_timeout));
    }
    if fm.hard_timeout != 0 {
        s.push_str(&format!("hard_timeout={}, ", fm.hard_timeout));
    }
    for n in flag_names(fm.flags) {
        s.push_str(n);
        s.push_str(", ");
    }
    if let Some(a) = stats.idle_age {
        s.push_str(&format!("idle_age={a}, "));
    }
    if let Some(a) = stats.hard_age {
        s.push_str(&format!("hard_age={a}, "));
    }
    let m = format_match(&fm.match_, Some(fm.priority));
    if !m.is_empty() {
        s.push_str(&m);
        s.push(' ');
    }
    s.push_str("actions=");
    s.push_str(&format_instructions(&fm.instructions));
    s
}
