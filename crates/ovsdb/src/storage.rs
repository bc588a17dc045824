//! The durable log: an append-only file of committed transactions.
//!
//! Format (our own, self-describing): one record per line,
//!
//! ```text
//! <length> <crc32 as 8 hex digits> <JSON text of exactly length bytes>\n
//! ```
//!
//! The first record is `{"schema": …}`, the second `{"snapshot": {table: {uuid: row}}}` (the
//! whole database at the last compaction), then one `{"txn": {table: {uuid: row|null}}, …}`
//! per committed transaction, each holding the full new contents of every changed row
//! (`null`: deleted). Rows are written in a compact form (`_version` plus non-default columns).
//!
//! Durability: [`Storage::append`] writes the record with one `write` and calls `fsync` before
//! returning; the database applies the transaction in memory and acknowledges it only after
//! that, so an acknowledged transaction survives a crash, and a crash mid-write leaves at worst
//! a torn last record, which belongs to an unacknowledged transaction.
//!
//! Recovery ([`Storage::open`]): records are read and verified (length, newline, CRC, JSON).
//! At the first bad record the rest of the file is examined: if no valid record follows, the
//! bad tail is a torn or corrupt last write; it is cut off (the file is truncated and synced,
//! and a message is logged) and every earlier record is kept. If a valid record does follow,
//! the damage is not a torn write but corruption in the middle, and opening fails rather than
//! silently dropping committed transactions.
//!
//! Compaction ([`Storage::compact`]): when the log has grown past `factor` times the size of
//! its last snapshot (and past a minimum), a new file holding just the schema and a snapshot
//! is written beside it, synced, renamed over the log and the directory synced: at every
//! instant either the old or the new file is complete. Not thread-safe by itself: the owning
//! `Database` serialises access.

use serde_json::{json, Value};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// An open log file.
#[derive(Debug)]
pub(crate) struct Storage {
    file: File,
    path: PathBuf,
    size: u64,
    base_size: u64,
    pub(crate) factor: u64,
    pub(crate) min_bytes: u64,
}

/// What recovery found.
pub(crate) struct Loaded {
    pub schema: Value,
    pub records: Vec<Value>,
    /// Set when a torn tail was dropped: a description for the log.
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

/// Encode one record line.
pub(crate) fn encode(v: &Value) -> Vec<u8> {
    let body = v.to_string();
    let mut out = format!("{} {:08x} ", body.len(), crc32(body.as_bytes())).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out.push(b'\n');
    out
}

/// Decode the record starting at `buf[0]`: the value and the record's length in bytes.
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

fn sync_dir(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    File::open(dir)?.sync_all()
}

impl Storage {
    /// Create a new log holding the schema and an (empty or given) snapshot. Fails if the
    /// file exists.
    pub(crate) fn create(path: &Path, schema: &Value, snapshot: &Value) -> io::Result<Storage> {
        let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
        let mut bytes = encode(&json!({ "schema": schema }));
        bytes.extend(encode(&json!({ "snapshot": snapshot })));
        file.write_all(&bytes)?;
        file.sync_all()?;
        sync_dir(path)?;
        let size = bytes.len() as u64;
        Ok(Storage {
            file,
            path: path.to_path_buf(),
            size,
            base_size: size,
            factor: 4,
            min_bytes: 1 << 20,
        })
    }

    /// Open and recover an existing log.
    pub(crate) fn open(path: &Path) -> io::Result<(Storage, Loaded)> {
        let mut file = OpenOptions::new().read(true).append(true).open(path)?;
        let mut buf = Vec::new();
        file.read_to_end(&mut buf)?;
        let mut pos = 0;
        let mut values = Vec::new();
        let mut base_size = 0u64;
        let mut dropped = None;
        while pos < buf.len() {
            match decode(&buf[pos..]) {
                Some((v, n)) => {
                    pos += n;
                    if v.get("snapshot").is_some() {
                        base_size = pos as u64;
                    }
                    values.push(v);
                }
                None => {
                    // Is there any valid record after this point?
                    let later = buf[pos..]
                        .iter()
                        .enumerate()
                        .filter(|(_, &b)| b == b'\n')
                        .any(|(i, _)| decode(&buf[pos + i + 1..]).is_some());
                    if later {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "{}: corrupt record at offset {pos} is followed by valid records; refusing to drop committed data",
                                path.display()
                            ),
                        ));
                    }
                    let msg = format!(
                        "{}: dropped {} bytes of torn or corrupt data at offset {pos} (an unacknowledged transaction)",
                        path.display(),
                        buf.len() - pos
                    );
                    file.set_len(pos as u64)?;
                    file.sync_all()?;
                    dropped = Some(msg);
                    break;
                }
            }
        }
        let mut it = values.into_iter();
        let schema = match it.next() {
            Some(mut v) => match v.get_mut("schema") {
                Some(s) => s.take(),
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "log does not start with a schema",
                    ))
                }
            },
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "log holds no schema record",
                ))
            }
        };
        let records: Vec<Value> = it.collect();
        if base_size == 0 {
            base_size = pos as u64;
        }
        let st = Storage {
            file,
            path: path.to_path_buf(),
            size: pos as u64,
            base_size,
            factor: 4,
            min_bytes: 1 << 20,
        };
        Ok((
            st,
            Loaded {
                schema,
                records,
                dropped,
            },
        ))
    }

    /// Append one record and fsync.
    pub(crate) fn append(&mut self, v: &Value) -> io::Result<()> {
        let bytes = encode(v);
        if let Err(e) = self
            .file
            .write_all(&bytes)
            .and_then(|_| self.file.sync_data())
        {
            // Undo a partial write so the next append does not follow garbage.
            let _ = self.file.set_len(self.size);
            return Err(e);
        }
        self.size += bytes.len() as u64;
        Ok(())
    }

    /// Has the log grown enough to be worth compacting?
    pub(crate) fn should_compact(&self) -> bool {
        self.size > self.min_bytes && self.size > self.base_size.saturating_mul(self.factor)
    }

    /// Replace the log by schema + snapshot.
    pub(crate) fn compact(&mut self, schema: &Value, snapshot: &Value) -> io::Result<()> {
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let _ = std::fs::remove_file(&tmp);
        let new = Storage::create(&tmp, schema, snapshot)?;
        std::fs::rename(&tmp, &self.path)?;
        sync_dir(&self.path)?;
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&self.path)?;
        self.file = file;
        self.size = new.size;
        self.base_size = new.size;
        Ok(())
    }

    /// Current file size.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_known_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn record_round_trip_and_damage() {
        let rec = encode(&json!({"txn": {"a": 1}}));
        let (v, n) = decode(&rec).unwrap();
        assert_eq!(v, json!({"txn": {"a": 1}}));
        assert_eq!(n, rec.len());
        for cut in 0..rec.len() {
            assert!(decode(&rec[..cut]).is_none(), "cut at {cut}");
        }
        for i in 0..rec.len() {
            let mut bad = rec.clone();
            bad[i] ^= 0x01;
            if let Some((v2, _)) = decode(&bad) {
                // Only a flip that keeps the bytes identical in meaning could pass; none can.
                panic!("flip at {i} accepted: {v2}");
            }
        }
    }
}
