//! OXM/NXM TLV lists on the wire (decode and encode side by side) and OpenFlow 1.1+'s `ofp_match`
//! around them.

use super::*;

/// One raw TLV from the wire.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tlv<'a> {
    class: u16,
    num: u8,
    value: &'a [u8],
    mask: Option<&'a [u8]>,
}

pub(super) fn read_tlv<'a>(rd: &mut Rd<'a>) -> Result<Tlv<'a>, DecodeError> {
    let class = rd.u16()?;
    let fh = rd.u8()?;
    let len = usize::from(rd.u8()?);
    let num = fh >> 1;
    let has_mask = fh & 1 != 0;
    let mut payload = rd.sub(len, DecodeError::BadFieldLen(class, num))?;
    if class == OFPXMC_EXPERIMENTER {
        // Experimenter id follows; no experimenter field is known here.
        return Err(DecodeError::BadField(class, num));
    }
    if has_mask {
        if !len.is_multiple_of(2) {
            return Err(DecodeError::BadFieldLen(class, num));
        }
        let v = payload.bytes(len / 2)?;
        let m = payload.bytes(len / 2)?;
        Ok(Tlv {
            class,
            num,
            value: v,
            mask: Some(m),
        })
    } else {
        Ok(Tlv {
            class,
            num,
            value: payload.rest(),
            mask: None,
        })
    }
}

/// Decode one TLV into model entries (one, or two for `NXM_OF_VLAN_TCI`).
pub(super) fn tlv_entries(t: Tlv<'_>, out: &mut Vec<MatchField>) -> Result<(), DecodeError> {
    let (field, xf, len) = lookup(t.class, t.num).ok_or(DecodeError::BadField(t.class, t.num))?;
    if field.is_tun_metadata() {
        return tun_metadata_entry(field, t, out);
    }
    if t.value.len() != len {
        return Err(DecodeError::BadFieldLen(t.class, t.num));
    }
    let v = bytes_to_value(t.value);
    let m = t.mask.map(bytes_to_value);
    match xf {
        Xf::Plain => out.push(MatchField {
            field,
            value: v,
            mask: m,
        }),
        Xf::Port16 => {
            if m.is_some() {
                return Err(DecodeError::Match(crate::OfError::bad_match(
                    crate::messages::err::bad_match::BAD_MASK,
                )));
            }
            out.push(MatchField {
                field,
                value: u128::from(port_from_of10(v as u16)),
                mask: None,
            })
        }
        Xf::Tos => {
            if v & 0x03 != 0 || m.is_some_and(|m| m & 0x03 != 0) {
                return Err(DecodeError::Match(crate::OfError::bad_match(
                    crate::messages::err::bad_match::BAD_VALUE,
                )));
            }
            out.push(MatchField {
                field,
                value: v >> 2,
                mask: m.map(|m| m >> 2),
            })
        }
        Xf::Tci => {
            let mask = m.unwrap_or(0xffff);
            let present = u128::from(OFPVID_PRESENT);
            if mask & 0x1fff != 0 {
                let vm = mask & 0x1fff;
                out.push(MatchField {
                    field: Field::VlanVid,
                    value: v & 0x1fff & vm,
                    mask: if vm == 0x1fff { None } else { Some(vm) },
                });
            }
            let no_tag = mask & present != 0 && v & present == 0;
            let pm = (mask >> 13) & 7;
            if pm != 0 && !no_tag {
                out.push(MatchField {
                    field: Field::VlanPcp,
                    value: (v >> 13) & pm,
                    mask: if pm == 7 { None } else { Some(pm) },
                });
            }
        }
    }
    Ok(())
}

/// A `tun_metadata` TLV: any payload up to 124 bytes whose value fits the model (see
/// [`crate::tun_metadata`]).
pub(super) fn tun_metadata_entry(
    field: Field,
    t: Tlv<'_>,
    out: &mut Vec<MatchField>,
) -> Result<(), DecodeError> {
    if t.value.len() > tun_metadata::MAX_LEN {
        return Err(DecodeError::BadFieldLen(t.class, t.num));
    }
    let bad = || {
        DecodeError::Match(crate::OfError::bad_match(
            crate::messages::err::bad_match::BAD_VALUE,
        ))
    };
    let value = tun_metadata::payload_value(t.value).ok_or_else(bad)?;
    let mask = match t.mask {
        Some(m) => Some(tun_metadata::payload_value(m).ok_or_else(bad)?),
        None => None,
    };
    out.push(MatchField { field, value, mask });
    Ok(())
}

/// Decode a list of TLVs filling all of `rd` (no padding).
pub(crate) fn decode_tlvs(rd: &mut Rd<'_>) -> Result<Vec<MatchField>, DecodeError> {
    let mut out = Vec::new();
    while !rd.is_empty() {
        let t = read_tlv(rd)?;
        tlv_entries(t, &mut out)?;
    }
    Ok(out)
}

/// Decode a TLV list into a [`Match`].
pub(crate) fn decode_match_tlvs(rd: &mut Rd<'_>) -> Result<Match, DecodeError> {
    let entries = decode_tlvs(rd)?;
    Match::from_entries(entries).map_err(DecodeError::Match)
}

pub(super) fn put_tlv(
    out: &mut Vec<u8>,
    class: u16,
    num: u8,
    len: usize,
    v: u128,
    m: Option<u128>,
) {
    out.u16(class);
    out.u8((num << 1) | u8::from(m.is_some()));
    out.u8(if m.is_some() { len * 2 } else { len } as u8);
    out.extend_from_slice(&value_to_bytes(v, len));
    if let Some(m) = m {
        out.extend_from_slice(&value_to_bytes(m, len));
    }
}

/// Encode one field (value, optional mask) as a TLV, in `mode`'s preferred family.
/// `vlan_pcp` / `vlan_vid` in NXM mode go through [`encode_tlvs`], which folds them.
pub(crate) fn encode_field(out: &mut Vec<u8>, f: Field, v: u128, m: Option<u128>, mode: Mode) {
    let (class, num, xf, len) = header_for(f, mode);
    match xf {
        Xf::Port16 => match (port_to_of10(v as u32), m) {
            (Some(p), None) => put_tlv(out, class, num, len, u128::from(p), None),
            // A mask or a port beyond 16 bits needs the 32-bit OXM field.
            _ => encode_field(out, f, v, m, Mode::Oxm),
        },
        Xf::Tos => put_tlv(out, class, num, len, v << 2, m.map(|m| (m << 2) & 0xfc)),
        Xf::Tci => put_tlv(out, class, num, len, v & 0x1fff, m.map(|m| m & 0x1fff)),
        Xf::Plain if f.is_tun_metadata() => {
            put_tlv(out, class, num, tun_metadata::wire_len(v, m), v, m)
        }
        Xf::Plain => put_tlv(out, class, num, len, v, m),
    }
}

/// Encode a match's entries as TLVs (no padding).
pub(crate) fn encode_tlvs(out: &mut Vec<u8>, m: &Match, mode: Mode) {
    let mut tci_done = false;
    let mut xregs_done = false;
    for e in m.iter() {
        if mode == Mode::Oxm15 && e.field.is_reg() {
            if !xregs_done {
                xregs_done = true;
                encode_packet_regs(out, m);
            }
            continue;
        }
        let is_vlan = matches!(e.field, Field::VlanVid | Field::VlanPcp);
        if mode == Mode::Nxm && is_vlan {
            if tci_done {
                continue;
            }
            tci_done = true;
            let (mut v, mut mask) = (0u128, 0u128);
            if let Some(vid) = m.get(Field::VlanVid) {
                v |= vid.value;
                mask |= vid.mask_bits();
            }
            if let Some(pcp) = m.get(Field::VlanPcp) {
                v |= pcp.value << 13;
                mask |= pcp.mask_bits() << 13;
            }
            let mask = if mask == 0xffff { None } else { Some(mask) };
            put_tlv(out, OFPXMC_NXM_0, 4, 2, v, mask);
            continue;
        }
        // A switch sends its options at their mapped lengths (see `crate::tun_metadata`).
        if let Some((len, mask)) = e
            .field
            .tun_metadata_index()
            .and_then(|i| tun_metadata::mapped_form(i, e.mask))
        {
            let (class, num) = e.field.oxm();
            put_tlv(out, class, num, len, e.value, mask);
            continue;
        }
        // OVS sends ct_state masked to its 8 defined bits even when exact.
        let mask = match (e.field, e.mask) {
            (Field::CtState, None) => Some(0xff),
            (_, m) => m,
        };
        encode_field(out, e.field, e.value, mask, mode);
    }
}

/// A match's registers as OpenFlow 1.5 packet registers: `xreg i` carries `reg 2i` (high
/// half) and `reg 2i+1`, with a mask when either half is not matched exactly.
pub(super) fn encode_packet_regs(out: &mut Vec<u8>, m: &Match) {
    let part = |i: usize| {
        Field::reg(i)
            .and_then(|f| m.get(f))
            .map_or((0, 0), |e| (e.value, e.mask_bits()))
    };
    for x in 0..8 {
        let (hv, hm) = part(2 * x);
        let (lv, lm) = part(2 * x + 1);
        let mask = (hm << 32) | lm;
        if mask == 0 {
            continue;
        }
        let value = (hv << 32) | lv;
        let num = x as u8;
        let mask = (mask != u128::from(u64::MAX)).then_some(mask);
        put_tlv(out, OFPXMC_PACKET_REGS, num, 8, value, mask);
    }
}

/// `OFPMT_OXM`.
pub const OFPMT_OXM: u16 = 1;

/// Decode an OpenFlow 1.2+ `ofp_match` (type, length, OXM TLVs, padding to 8).
pub(crate) fn decode_ofp_match(rd: &mut Rd<'_>) -> Result<Match, DecodeError> {
    let ty = rd.peek_u16(0).ok_or(DecodeError::BadMatchLen)?;
    let len = usize::from(rd.peek_u16(2).ok_or(DecodeError::BadMatchLen)?);
    if ty != OFPMT_OXM {
        return Err(DecodeError::BadMatchType(ty));
    }
    if len < 4 {
        return Err(DecodeError::BadMatchLen);
    }
    let whole = rd
        .bytes(crate::wire::buf::pad8(len))
        .map_err(|_| DecodeError::BadMatchLen)?;
    let mut body = Rd::new(
        whole.get(4..len).unwrap_or_default(),
        DecodeError::BadMatchLen,
    );
    decode_match_tlvs(&mut body)
}

/// Encode an OpenFlow 1.2+ `ofp_match` as `version` writes it.
pub(crate) fn encode_ofp_match(out: &mut Vec<u8>, m: &Match, version: u8) {
    let start = out.len();
    out.u16(OFPMT_OXM);
    out.u16(0);
    let mode = if version >= crate::wire::OFP15 {
        Mode::Oxm15
    } else {
        Mode::Oxm
    };
    encode_tlvs(out, m, mode);
    let len = out.len() - start;
    out.patch_u16(start + 2, len);
    out.pad8_from(start);
}
