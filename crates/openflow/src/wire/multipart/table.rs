//! Table statistics and table features.
//!
//! * Table statistics (`OFPMP_TABLE`, request without body) are fixed-size records: 64
//!   bytes in OpenFlow 1.0 (table id, 3 pad, name, wildcards, max entries, then the
//!   counters), 24 from 1.1 on (table id, 3 pad, active count, lookups, matches). A body
//!   that is not a whole number of records is `BadLength`.
//! * Table features (`OFPMP_TABLE_FEATURES`, request and reply alike) are records of at
//!   least 64 bytes, each starting with its length: table id, command (1.5; zero before),
//!   4 pad, a 32-byte name, metadata match and write masks, config, max entries, then
//!   properties kept raw. An empty request reads the features, a non-empty one sets them.
//!   Each record is checked and decoded in turn.

use crate::wire::buf::{Rd, W};
use crate::wire::error::DecodeError;
use crate::wire::port::{decode_props, encode_props, Prop};
use crate::wire::record::{fixed, until_empty, Framing};
use crate::wire::{OFP10, OFP15};

/// One table's statistics.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct TableStats {
    /// Table.
    pub table_id: u8,
    /// Name (OpenFlow 1.0 only).
    pub name: String,
    /// Supported wildcards (OpenFlow 1.0 only).
    pub wildcards: u32,
    /// Maximum entries (OpenFlow 1.0 only).
    pub max_entries: u32,
    /// Active entries.
    pub active_count: u32,
    /// Lookups.
    pub lookup_count: u64,
    /// Hits.
    pub matched_count: u64,
}

/// One table's features (properties kept raw).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct TableFeatures {
    /// Table.
    pub table_id: u8,
    /// 1.5: `OFPTFC_*` command; earlier: 0.
    pub command: u8,
    /// Name.
    pub name: String,
    /// Metadata bits the table can match.
    pub metadata_match: u64,
    /// Metadata bits the table can write.
    pub metadata_write: u64,
    /// `OFPTC_*` config (1.5: capabilities).
    pub config: u32,
    /// Maximum entries.
    pub max_entries: u32,
    /// Properties (instructions, next tables, actions, match fields...), raw.
    pub props: Vec<Prop>,
}

pub(super) fn decode_stats(version: u8, rd: &mut Rd<'_>) -> Result<Vec<TableStats>, DecodeError> {
    let size = if version == OFP10 { 64 } else { 24 };
    fixed(rd, size, |mut r| {
        let table_id = r.u8()?;
        r.skip(3)?;
        let mut t = TableStats {
            table_id,
            ..Default::default()
        };
        if version == OFP10 {
            t.name = r.string(32)?;
            t.wildcards = r.u32()?;
            t.max_entries = r.u32()?;
        }
        t.active_count = r.u32()?;
        t.lookup_count = r.u64()?;
        t.matched_count = r.u64()?;
        Ok(t)
    })
}

pub(super) fn encode_stats(out: &mut Vec<u8>, version: u8, v: &[TableStats]) {
    for t in v {
        out.u8(t.table_id);
        out.zeros(3);
        if version == OFP10 {
            out.string(&t.name, 32);
            out.u32(t.wildcards);
            out.u32(t.max_entries);
        }
        out.u32(t.active_count);
        out.u64(t.lookup_count);
        out.u64(t.matched_count);
    }
}

pub(super) fn decode_features(
    version: u8,
    rd: &mut Rd<'_>,
) -> Result<Vec<TableFeatures>, DecodeError> {
    until_empty(rd, |rd| decode_one_features(version, rd))
}

fn decode_one_features(version: u8, rd: &mut Rd<'_>) -> Result<TableFeatures, DecodeError> {
    let mut r = Framing::prefixed(0, 64).take(rd)?;
    r.skip(2)?;
    let table_id = r.u8()?;
    let command = if version == OFP15 {
        r.u8()?
    } else {
        r.u8().map(|_| 0)?
    };
    r.skip(4)?;
    Ok(TableFeatures {
        table_id,
        command,
        name: r.string(32)?,
        metadata_match: r.u64()?,
        metadata_write: r.u64()?,
        config: r.u32()?,
        max_entries: r.u32()?,
        props: decode_props(&mut r)?,
    })
}

pub(super) fn encode_features(out: &mut Vec<u8>, version: u8, v: &[TableFeatures]) {
    for t in v {
        let start = out.len();
        out.u16(0);
        out.u8(t.table_id);
        out.u8(if version == OFP15 { t.command } else { 0 });
        out.zeros(4);
        out.string(&t.name, 32);
        out.u64(t.metadata_match);
        out.u64(t.metadata_write);
        out.u32(t.config);
        out.u32(t.max_entries);
        encode_props(out, &t.props);
        let len = out.len() - start;
        out.patch_u16(start, len);
    }
}
