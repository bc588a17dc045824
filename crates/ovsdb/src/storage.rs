//! The durable log: a database file in OVSDB's standard standalone format, append-only.
//!
//! Format (ovsdb(5); framing in [`crate::record`], record contents in `filetxn`): the first
//! record is the schema, every later record one committed transaction,
//!
//! ```text
//! OVSDB JSON <length> <sha1>\n{schema}\n
//! OVSDB JSON <length> <sha1>\n{"<table>": {"<uuid>": <row>|null, …}, "_date": <ms>, …}\n
//! ```
//!
//! so OVS's own tools (`ovsdb-tool show-log`, `query`, `db-name`, ...) read our files and we
//! read theirs. A transaction record holds only what changed (new rows, changed columns,
//! deletions); a compacted file holds the schema and one record with every row.
//!
//! Durability: [`Storage::append`] writes the record with one `write` and calls `fsync` before
//! returning; the database applies the transaction in memory and acknowledges it only after
//! that, so an acknowledged transaction survives a crash, and a crash mid-write leaves at worst
//! a torn last record, which belongs to an unacknowledged transaction. A failed write is cut
//! back off the file; if even that fails the log refuses further appends rather than write
//! after garbage.
//!
//! Recovery ([`Storage::open`]): records are read and verified (header, length, SHA-1, JSON
//! object). At the first bad record the rest of the file is examined: if no valid record
//! follows, the bad tail is a torn or corrupt last write; it is cut off (the file is truncated
//! and synced, and a message saying what was wrong is logged) and every earlier record is
//! kept. If a valid record does follow, the damage is not a torn write but corruption in the
//! middle, and opening fails rather than silently dropping committed transactions. A damaged
//! schema record, a clustered database (`OVSDB CLUSTER`) and an empty file are refused.
//!
//! Files written in ferrovs's former private format (`<len> <crc> <json>` lines, see
//! `legacy`) are recognised by their first byte and loaded; the database then rewrites them in
//! the standard format at once (a compaction), so they are never appended to.
//!
//! Creation writes the schema record to `<path>.tmp`, syncs it and links it to `path` (which
//! fails if `path` exists), so `path` never names a half-written file.
//!
//! Compaction ([`Storage::compact`]): when the log has grown past `factor` times its size after
//! the last compaction (and past a minimum), the database hands over the schema and a record
//! of every row. They are written to a new file `<path>.tmp` opened for reading and appending,
//! which is synced, renamed over the log, and the directory synced. The handle of the new file
//! becomes the log: the path is never reopened, so no later transaction can be acknowledged
//! into the unlinked old file. At every instant either the old or the new file is complete
//! under `path`. Any failure before the rename removes the new file and leaves the old one in
//! use (the caller logs it, and the next attempt waits for the log to grow `factor` times
//! again); a failure to sync the directory after the rename is reported, but the new file is
//! then already the log.
//!
//! Not thread-safe by itself: the owning `Database` serialises access.

use crate::legacy;
use crate::record::{self, Bad, CLUSTER_MAGIC};
use serde_json::Value;
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
    /// Set when a failed append could not be cut back off: no more appends.
    broken: Option<String>,
    pub(crate) factor: u64,
    pub(crate) min_bytes: u64,
}

/// What recovery found.
pub(crate) struct Loaded {
    pub schema: Value,
    /// The transaction records after the schema, in order.
    pub records: Vec<Value>,
    /// Set when a torn tail was dropped: a description for the log.
    pub dropped: Option<String>,
    /// The file is in the former private format and must be rewritten before appending.
    pub legacy: bool,
}

fn invalid(path: &Path, msg: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {msg}", path.display()),
    )
}

fn sync_dir(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    File::open(dir)?.sync_all()
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    PathBuf::from(tmp)
}

/// Writes `records` to a new file at `tmp` (which must not exist) and syncs it; returns the
/// handle, open for reading and appending, and the size. Removes the file on failure.
fn write_new(tmp: &Path, records: &[&Value]) -> io::Result<(File, u64)> {
    let res = (|| {
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(tmp)?;
        let mut bytes = Vec::new();
        for r in records {
            bytes.extend(record::encode(r));
        }
        file.write_all(&bytes)?;
        file.sync_all()?;
        Ok((file, bytes.len() as u64))
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    res
}

/// Parses a standard-format file: every valid record, where they end, and what was wrong
/// with the bytes after them (if anything).
fn parse(buf: &[u8]) -> (Vec<(Value, usize)>, Option<Bad>) {
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < buf.len() {
        match record::decode(&buf[pos..]) {
            Ok((v, n)) => {
                pos += n;
                out.push((v, pos));
            }
            Err(bad) => return (out, Some(bad)),
        }
    }
    (out, None)
}

impl Storage {
    fn with(file: File, path: &Path, size: u64, base_size: u64) -> Storage {
        Storage {
            file,
            path: path.to_path_buf(),
            size,
            base_size,
            broken: None,
            factor: 4,
            min_bytes: 1 << 20,
        }
    }

    /// Create a new log holding just the schema. Fails if the file exists.
    pub(crate) fn create(path: &Path, schema: &Value) -> io::Result<Storage> {
        if path.exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already exists", path.display()),
            ));
        }
        let tmp = tmp_path(path);
        let _ = std::fs::remove_file(&tmp);
        let (file, size) = write_new(&tmp, &[schema])?;
        let linked = std::fs::hard_link(&tmp, path);
        let _ = std::fs::remove_file(&tmp);
        linked?;
        sync_dir(path)?;
        Ok(Storage::with(file, path, size, size))
    }

    /// Open and recover an existing log.
    pub(crate) fn open(path: &Path) -> io::Result<(Storage, Loaded)> {
        let mut file = OpenOptions::new().read(true).append(true).open(path)?;
        let mut buf = Vec::new();
        file.read_to_end(&mut buf)?;
        if buf.is_empty() {
            return Err(invalid(path, "the file is empty, not an OVSDB database"));
        }
        if buf.starts_with(CLUSTER_MAGIC.as_bytes()) {
            return Err(invalid(
                path,
                "is a clustered OVSDB database; only standalone databases are supported \
                 (convert it with ovsdb-tool cluster-to-standalone)",
            ));
        }
        if legacy::is_legacy(&buf) {
            let l = legacy::load(&buf).map_err(|e| invalid(path, e))?;
            let size = buf.len() as u64;
            let loaded = Loaded {
                schema: l.schema,
                records: vec![l.contents],
                dropped: l.dropped.map(|d| format!("{}: {d}", path.display())),
                legacy: true,
            };
            return Ok((Storage::with(file, path, size, size), loaded));
        }
        let (records, bad) = parse(&buf);
        let end = records.last().map(|r| r.1).unwrap_or(0);
        let mut dropped = None;
        if let Some(bad) = bad {
            if let Some(at) =
                record::candidates(&buf, end).find(|&i| record::decode(&buf[i..]).is_ok())
            {
                return Err(invalid(
                    path,
                    format!(
                        "corrupt record at offset {end} ({bad}) is followed by a valid record at \
                         offset {at}; refusing to drop committed data"
                    ),
                ));
            }
            if records.is_empty() {
                return Err(invalid(
                    path,
                    format!("the schema record is damaged: {bad}"),
                ));
            }
            file.set_len(end as u64)?;
            file.sync_all()?;
            dropped = Some(format!(
                "{}: dropped {} bytes of torn or corrupt data at offset {end} ({bad}); it was an \
                 unacknowledged transaction",
                path.display(),
                buf.len() - end
            ));
        }
        let base_size = records.get(1).or(records.last()).map(|r| r.1).unwrap_or(0);
        let mut it = records.into_iter().map(|r| r.0);
        let schema = it
            .next()
            .ok_or_else(|| invalid(path, "the file holds no schema record"))?;
        let st = Storage::with(file, path, end as u64, base_size as u64);
        let loaded = Loaded {
            schema,
            records: it.collect(),
            dropped,
            legacy: false,
        };
        Ok((st, loaded))
    }

    /// Append one record and fsync.
    pub(crate) fn append(&mut self, v: &Value) -> io::Result<()> {
        if let Some(why) = &self.broken {
            return Err(io::Error::other(why.clone()));
        }
        let bytes = record::encode(v);
        if let Err(e) = self
            .file
            .write_all(&bytes)
            .and_then(|_| self.file.sync_data())
        {
            // Undo a partial write so the next append does not follow garbage.
            if let Err(e2) = self
                .file
                .set_len(self.size)
                .and_then(|_| self.file.sync_data())
            {
                self.broken = Some(format!(
                    "{}: a failed write ({e}) could not be cut off ({e2}); the log takes no \
                     more writes",
                    self.path.display()
                ));
            }
            return Err(e);
        }
        self.size += bytes.len() as u64;
        Ok(())
    }

    /// Has the log grown enough to be worth compacting?
    pub(crate) fn should_compact(&self) -> bool {
        self.size > self.min_bytes && self.size > self.base_size.saturating_mul(self.factor)
    }

    /// Replace the log by a new file holding `schema` and `snapshot`, keeping the new file's
    /// handle. On failure before the rename the old log stays in use.
    pub(crate) fn compact(&mut self, schema: &Value, snapshot: &Value) -> io::Result<()> {
        let tmp = tmp_path(&self.path);
        let _ = std::fs::remove_file(&tmp);
        let res =
            write_new(&tmp, &[schema, snapshot]).and_then(|(file, size)| {
                match std::fs::rename(&tmp, &self.path) {
                    Ok(()) => Ok((file, size)),
                    Err(e) => {
                        let _ = std::fs::remove_file(&tmp);
                        Err(e)
                    }
                }
            });
        let (file, size) = match res {
            Ok(x) => x,
            Err(e) => {
                // Back off: try again once the log has grown `factor` times more.
                self.base_size = self.size;
                return Err(e);
            }
        };
        // The new file is the log from here on, whatever happens next.
        self.file = file;
        self.size = size;
        self.base_size = size;
        self.broken = None;
        sync_dir(&self.path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("the compacted log is in place but syncing its directory failed: {e}"),
            )
        })
    }

    /// Current file size.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }
}
