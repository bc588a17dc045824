//! The `tun_metadata` fields in the flow key, by way of the bridge's TLV table.
//!
//! A flow key keeps tunnel options in its tunnel-options block (`packet::flow`): a bit per
//! `tun_metadata` index saying the packet has that option, and 16 bytes of values, each
//! mapped option at the place its TLV-table entry was given ([`TlvTable::slot_of`]). So
//! unlike every other field, reading or writing one needs the table; [`crate::fields`]
//! leaves them alone and this module does it:
//!
//! * [`get`] / [`set`]: a field's value (right-aligned, zero when absent) and a masked
//!   write, which makes the option present as OVS's `tun_metadata_write` does;
//! * [`mark`]: a field's bits (and its present bit) in a wildcard or rule mask;
//! * [`match_to_key`]: a rule's (value, mask) keys: a match on `tun_metadata<N>` also
//!   requires option N to be present, as in OVS, so `tun_metadata0=0` does not match a
//!   packet without the option;
//! * [`from_geneve`]: a received packet's options into its key (decapsulation), with OVS's
//!   rules: options the table does not map are ignored unless their type has the critical
//!   bit (0x80), a mapped option whose length differs from the map's is an error, and both
//!   errors drop the packet; a bridge with an empty table ignores every option;
//! * [`to_geneve`]: the options a key's present fields make, in index order, for a
//!   Geneve port to send; a received packet keeps only those too (its options are rebuilt
//!   from its key when they differ), so what it would carry on to another Geneve port is
//!   what OVS sends: the mapped options, none without a table;
//! * [`flow_text`]: a flow as traces print it, its options as `tun_metadataN=V`;
//! * [`format_geneve`]: options as the datapath prints them
//!   (`geneve({class=0x102,type=0x80,len=4,0x10002})`).

use crate::fields;
use crate::tlv::TlvTable;
use openflow::oxm::{ones, Field};
use openflow::Match;
use packet::flow::FlowKey;

/// The value of `tun_metadata` field `f` in `k` (zero when absent or unmapped).
pub fn get(k: &FlowKey, tlv: &TlvTable, f: Field) -> u128 {
    let Some((at, len)) = f.tun_metadata_index().and_then(|i| tlv.slot_of(i)) else {
        return 0;
    };
    k.tun_opts
        .get(at..at + len)
        .unwrap_or(&[])
        .iter()
        .fold(0u128, |acc, b| (acc << 8) | u128::from(*b))
}

/// Writes `value` under `mask` into `tun_metadata` field `f` of `k` and marks the option
/// present. Nothing happens for an unmapped field.
pub fn set(k: &mut FlowKey, tlv: &TlvTable, f: Field, value: u128, mask: u128) {
    let Some(i) = f.tun_metadata_index() else {
        return;
    };
    let Some((at, len)) = tlv.slot_of(i) else {
        return;
    };
    let m = mask & ones(8 * len as u32);
    let v = (get(k, tlv, f) & !m) | (value & m);
    put(k, at, len, v);
    k.tun_opts_present |= 1u64 << i;
}

/// Marks `mask`'s bits of field `f`, and its present bit, in the mask key `wc`.
pub fn mark(wc: &mut FlowKey, tlv: &TlvTable, f: Field, mask: u128) {
    let Some(i) = f.tun_metadata_index() else {
        return;
    };
    let Some((at, len)) = tlv.slot_of(i) else {
        return;
    };
    let old = get(wc, tlv, f);
    put(wc, at, len, old | (mask & ones(8 * len as u32)));
    wc.tun_opts_present |= 1u64 << i;
}

fn put(k: &mut FlowKey, at: usize, len: usize, v: u128) {
    if let Some(b) = k.tun_opts.get_mut(at..at + len) {
        for (j, byte) in b.iter_mut().enumerate() {
            *byte = (v >> (8 * (len - 1 - j))) as u8;
        }
    }
}

/// The (value, mask) keys of a rule's match, the tunnel options included.
pub fn match_to_key(m: &Match, tlv: &TlvTable) -> (FlowKey, FlowKey) {
    let (mut key, mut mask) = fields::match_to_key(m);
    for e in m.iter().filter(|e| e.field.is_tun_metadata()) {
        let bits = e.mask_bits();
        set(&mut key, tlv, e.field, e.value & bits, u128::MAX);
        mark(&mut mask, tlv, e.field, bits);
    }
    (key, mask)
}

/// Why [`from_geneve`] refused a packet's options (OVS drops the packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadOptions;

/// Fills `k`'s tunnel options from received Geneve options (module documentation).
pub fn from_geneve(k: &mut FlowKey, tlv: &TlvTable, opts: &[u8]) -> Result<(), BadOptions> {
    if tlv.maps().is_empty() {
        return Ok(());
    }
    let mut at = 0;
    while let Some(h) = opts.get(at..at + 4) {
        let class = u16::from_be_bytes([h[0], h[1]]);
        let type_ = h[2];
        let len = usize::from(h[3] & 0x1f) * 4;
        let value = opts.get(at + 4..at + 4 + len).ok_or(BadOptions)?;
        match tlv.index_of(class, type_) {
            Some((i, mapped)) if usize::from(mapped) == len => {
                // An option beyond the key's room is not kept (no flow can name it).
                if let Some((slot, _)) = tlv.slot_of(i) {
                    if let Some(dst) = k.tun_opts.get_mut(slot..slot + len) {
                        dst.copy_from_slice(value);
                        k.tun_opts_present |= 1u64 << i;
                    }
                }
            }
            Some(_) => return Err(BadOptions),
            None if type_ & 0x80 != 0 => return Err(BadOptions),
            None => {}
        }
        at += 4 + len;
    }
    Ok(())
}

/// The Geneve options `k`'s present `tun_metadata` fields make, in index order.
pub fn to_geneve(k: &FlowKey, tlv: &TlvTable) -> Vec<u8> {
    let mut out = [0u8; packet::TUN_OPTS_MAX];
    let n = to_geneve_into(k, tlv, &mut out);
    out[..n].to_vec()
}

/// As [`to_geneve`], into `out` without allocating; the bytes written (options that do not
/// fit are left out, which cannot happen with the key's 16 bytes of values).
pub fn to_geneve_into(k: &FlowKey, tlv: &TlvTable, out: &mut [u8; packet::TUN_OPTS_MAX]) -> usize {
    let mut n = 0;
    for i in (0..64).filter(|i| k.tun_opts_present & (1u64 << i) != 0) {
        let (Some((class, type_, len)), Some((slot, _))) = (tlv.option_of(i), tlv.slot_of(i))
        else {
            continue;
        };
        let len = usize::from(len);
        let (Some(v), Some(dst)) = (
            k.tun_opts.get(slot..slot + len),
            out.get_mut(n..n + 4 + len),
        ) else {
            continue;
        };
        dst[..2].copy_from_slice(&class.to_be_bytes());
        dst[2] = type_;
        dst[3] = (len / 4) as u8;
        dst[4..].copy_from_slice(v);
        n += 4 + len;
    }
    n
}

/// `k` as `FlowKey`'s `Display` prints it, with the raw option block (`tun_opts=...`) given
/// as the `tun_metadataN=V` fields it holds, as a trace's "Final flow" shows them.
pub fn flow_text(k: &FlowKey, tlv: &TlvTable) -> String {
    let text = k.to_string();
    if k.tun_opts_present == 0 {
        return text;
    }
    let fields: Vec<String> = (0..64)
        .filter(|i| k.tun_opts_present & (1u64 << i) != 0)
        .filter_map(Field::tun_metadata)
        .map(|f| format!("{f}={:#x}", get(k, tlv, f)))
        .collect();
    text.split(',')
        .map(|item| {
            if item.starts_with("tun_opts=") {
                fields.join(",")
            } else {
                item.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Options in wire format as the datapath prints them: `geneve({class=0x102,type=0x80,
/// len=4,0x10002})`, one `{...}` per option.
pub fn format_geneve(opts: &[u8]) -> String {
    let mut items = Vec::new();
    let mut at = 0;
    while let Some(h) = opts.get(at..at + 4) {
        let len = usize::from(h[3] & 0x1f) * 4;
        let v = opts.get(at + 4..at + 4 + len).unwrap_or(&[]);
        let hex: String = v.iter().map(|b| format!("{b:02x}")).collect();
        let hex = hex.trim_start_matches('0');
        items.push(format!(
            "{{class={:#x},type={:#x},len={len},0x{}}}",
            u16::from_be_bytes([h[0], h[1]]),
            h[2],
            if hex.is_empty() { "0" } else { hex }
        ));
        at += 4 + len;
    }
    format!("geneve({})", items.join(""))
}
