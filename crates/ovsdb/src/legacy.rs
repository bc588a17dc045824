//! Reading database files in ferrovs's former private format, so they can be converted.
//!
//! Before the standard OVSDB file format ([`crate::record`]) ferrovs wrote one record per line,
//!
//! ```text
//! <length> <crc32 as 8 hex digits> <JSON text of exactly length bytes>\n
//! ```
//!
//! first `{"schema": …}`, then `{"snapshot": {table: {uuid: row}}}` (the whole database at the
//! last compaction), then `{"txn": {table: {uuid: row|null}}, "comment": …}` per transaction,
//! every row written whole (`_version` plus its non-default columns). Such a file starts with
//! a decimal digit, which no standard file does, and that is how [`is_legacy`] tells them apart.
//!
//! [`load`] reads such a file with the recovery rules it was written under (a torn or corrupt
//! last record is ignored and reported; a bad record followed by a good one is corruption and
//! refused) and folds the records into the final contents, as one transaction-record body
//! (`{table: {uuid: row}}`, rows without `_version`), ready to be replayed into an empty
//! database and written out in the standard format. Nothing here writes.

use serde_json::{Map, Value};

/// Whether a file's first bytes are those of the former private format.
pub(crate) fn is_legacy(buf: &[u8]) -> bool {
    buf.first().is_some_and(u8::is_ascii_digit)
}

/// What [`load`] found.
pub(crate) struct Legacy {
    /// The schema JSON.
    pub schema: Value,
    /// The final contents: `{table: {uuid: row}}`.
    pub contents: Value,
    /// Set when a torn or corrupt last record was ignored.
    pub dropped: Option<String>,
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xedb8_8320 & mask);
        }
    }
    !crc
}

/// Decodes the record at `buf[0]`: the value and the record's length in bytes.
fn decode(buf: &[u8]) -> Option<(Value, usize)> {
    let sp = buf.iter().take(21).position(|&b| b == b' ')?;
    let len: usize = std::str::from_utf8(&buf[..sp]).ok()?.parse().ok()?;
    let rest = &buf[sp + 1..];
    if rest.len() < 9 || rest[8] != b' ' {
        return None;
    }
    let crc = u32::from_str_radix(std::str::from_utf8(&rest[..8]).ok()?, 16).ok()?;
    let body_start = sp + 1 + 9;
    let end = body_start.checked_add(len)?;
    if buf.len() <= end || buf[end] != b'\n' {
        return None;
    }
    let body = &buf[body_start..end];
    if crc32(body) != crc {
        return None;
    }
    let v: Value = serde_json::from_slice(body).ok()?;
    Some((v, end + 1))
}

/// Reads a whole file in the former format. Errors name what is wrong.
pub(crate) fn load(buf: &[u8]) -> Result<Legacy, String> {
    let mut pos = 0;
    let mut records = Vec::new();
    let mut dropped = None;
    while pos < buf.len() {
        if let Some((v, n)) = decode(&buf[pos..]) {
            records.push(v);
            pos += n;
            continue;
        }
        let later = buf[pos..]
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n')
            .any(|(i, _)| decode(&buf[pos + i + 1..]).is_some());
        if later {
            return Err(format!(
                "corrupt record at offset {pos} (old format) is followed by valid records; \
                 refusing to drop committed data"
            ));
        }
        dropped = Some(format!(
            "ignored {} bytes of torn or corrupt data at offset {pos} of the old-format file \
             (an unacknowledged transaction)",
            buf.len() - pos
        ));
        break;
    }
    let mut it = records.into_iter();
    let schema = match it.next().as_mut().and_then(|v| v.get_mut("schema")) {
        Some(s) => s.take(),
        None => return Err("old-format file does not start with a schema record".into()),
    };
    let mut tables: Map<String, Value> = Map::new();
    for (i, rec) in it.enumerate() {
        let (body, snapshot) = if let Some(s) = rec.get("snapshot") {
            (s, true)
        } else if let Some(t) = rec.get("txn") {
            (t, false)
        } else {
            return Err(format!(
                "old-format record {} is neither snapshot nor txn",
                i + 1
            ));
        };
        let body = body
            .as_object()
            .ok_or_else(|| format!("old-format record {} body is not an object", i + 1))?;
        if snapshot {
            tables.clear();
        }
        for (tname, rows) in body {
            let rows = rows.as_object().ok_or_else(|| {
                format!(
                    "old-format record {}: table {tname} is not an object",
                    i + 1
                )
            })?;
            let table = tables
                .entry(tname.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            let Some(table) = table.as_object_mut() else {
                continue;
            };
            for (uuid, row) in rows {
                match row {
                    Value::Null => {
                        table.remove(uuid);
                    }
                    Value::Object(o) => {
                        let mut o = o.clone();
                        o.remove("_version");
                        table.insert(uuid.clone(), Value::Object(o));
                    }
                    _ => {
                        return Err(format!(
                            "old-format record {}: row {uuid} of {tname} is neither an object \
                             nor null",
                            i + 1
                        ))
                    }
                }
            }
        }
    }
    tables.retain(|_, rows| rows.as_object().is_some_and(|o| !o.is_empty()));
    Ok(Legacy {
        schema,
        contents: Value::Object(tables),
        dropped,
    })
}

/// Frames one record in the former format.
#[cfg(test)]
fn encode(v: &Value) -> Vec<u8> {
    let body = v.to_string();
    let mut out = format!("{} {:08x} ", body.len(), crc32(body.as_bytes())).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn crc_known_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn folds_snapshot_and_txns() {
        let mut f = encode(&json!({"schema": {"name": "D"}}));
        f.extend(encode(
            &json!({"snapshot": {"A": {"u1": {"_version": "x", "n": 1}, "u2": {"n": 2}}}}),
        ));
        f.extend(encode(
            &json!({"txn": {"A": {"u1": null, "u3": {"n": 3}}}, "comment": "c"}),
        ));
        assert!(is_legacy(&f));
        let l = load(&f).unwrap();
        assert_eq!(l.schema, json!({"name": "D"}));
        assert_eq!(l.contents, json!({"A": {"u2": {"n": 2}, "u3": {"n": 3}}}));
        assert!(l.dropped.is_none());
        let torn = &f[..f.len() - 3];
        let l = load(torn).unwrap();
        assert_eq!(l.contents, json!({"A": {"u1": {"n": 1}, "u2": {"n": 2}}}));
        assert!(l.dropped.is_some());
    }
}
