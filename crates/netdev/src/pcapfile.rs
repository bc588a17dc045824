//! Reading and writing classic pcap files (the libpcap format tcpdump and Wireshark use).
//!
//! The reader accepts both byte orders and both microsecond and nanosecond timestamp magics,
//! Ethernet link type only, and rejects anything malformed with an error that says where:
//! a truncated header, a record that runs past the end of the file, or a record longer than
//! the snap length limit. It never panics on any input.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// The largest record the reader accepts.
pub const MAX_RECORD: usize = 262_144;

/// A pcap file held in memory: one contiguous byte vector plus (offset, length) per packet.
#[derive(Debug)]
pub struct PcapData {
    pub bytes: Vec<u8>,
    pub records: Vec<(usize, usize)>,
}

/// Parses pcap bytes.
pub fn parse(bytes: Vec<u8>) -> Result<PcapData, String> {
    if bytes.len() < 24 {
        return Err(format!(
            "file too short for a pcap header ({} bytes)",
            bytes.len()
        ));
    }
    let magic_le = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let le = match magic_le {
        0xa1b2_c3d4 | 0xa1b2_3c4d => true,
        _ => match u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) {
            0xa1b2_c3d4 | 0xa1b2_3c4d => false,
            0x0a0d_0d0a => {
                return Err("pcapng files are not supported; convert with `editcap -F pcap`".into())
            }
            m => return Err(format!("not a pcap file (magic {m:#010x})")),
        },
    };
    let rd32 = |b: &[u8], at: usize| -> u32 {
        let w = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if le {
            u32::from_le_bytes(w)
        } else {
            u32::from_be_bytes(w)
        }
    };
    let linktype = rd32(&bytes, 20) & 0x0fff_ffff;
    if linktype != LINKTYPE_ETHERNET {
        return Err(format!("link type {linktype} is not Ethernet (1)"));
    }
    let mut records = Vec::new();
    let mut at = 24usize;
    while at < bytes.len() {
        if bytes.len() - at < 16 {
            return Err(format!("record header at byte {at} is truncated"));
        }
        let incl = rd32(&bytes, at + 8) as usize;
        if incl > MAX_RECORD {
            return Err(format!(
                "record at byte {at} claims {incl} bytes (limit {MAX_RECORD})"
            ));
        }
        let start = at + 16;
        if bytes.len() - start < incl {
            return Err(format!("record at byte {at} runs past the end of the file"));
        }
        records.push((start, incl));
        at = start + incl;
    }
    Ok(PcapData { bytes, records })
}

/// The largest capture [`read`] loads into memory.
pub const MAX_FILE: u64 = 1 << 30;

/// Reads and parses a pcap file (a regular file of at most [`MAX_FILE`] bytes).
pub fn read(path: &Path) -> Result<PcapData, String> {
    // Read only regular files of bounded size: a device such as /dev/zero would never end.
    let md = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !md.is_file() {
        return Err(format!("{}: not a regular file", path.display()));
    }
    if md.len() > MAX_FILE {
        return Err(format!(
            "{}: {} bytes, more than the {MAX_FILE}-byte limit",
            path.display(),
            md.len()
        ));
    }
    let mut bytes = Vec::with_capacity(md.len() as usize);
    File::open(path)
        .and_then(|f| f.take(MAX_FILE + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(format!(
            "{}: grew past the {MAX_FILE}-byte limit",
            path.display()
        ));
    }
    parse(bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes pcap records (microsecond timestamps, little-endian, Ethernet).
pub struct PcapWriter<W: Write> {
    out: W,
}

impl PcapWriter<BufWriter<File>> {
    /// Creates (truncates) a pcap file and writes its header.
    pub fn create(path: &Path) -> io::Result<Self> {
        let f = File::create(path)?;
        PcapWriter::new(BufWriter::with_capacity(1 << 20, f))
    }
}

impl<W: Write> PcapWriter<W> {
    /// Writes the global header to `out`.
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        h[16..20].copy_from_slice(&65_535u32.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out })
    }

    /// Appends one frame with the given timestamp.
    pub fn write(&mut self, ts_sec: u32, ts_usec: u32, frame: &[u8]) -> io::Result<()> {
        let mut r = [0u8; 16];
        r[0..4].copy_from_slice(&ts_sec.to_le_bytes());
        r[4..8].copy_from_slice(&ts_usec.to_le_bytes());
        r[8..12].copy_from_slice(&(frame.len() as u32).to_le_bytes());
        r[12..16].copy_from_slice(&(frame.len() as u32).to_le_bytes());
        self.out.write_all(&r)?;
        self.out.write_all(frame)
    }

    /// Flushes buffered records.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Gives back the inner writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut w = PcapWriter::new(Vec::new()).expect("hdr");
        w.write(1, 2, &[1, 2, 3]).expect("w");
        w.write(3, 4, &[4; 60]).expect("w");
        let d = parse(w.into_inner()).expect("parse");
        assert_eq!(d.records.len(), 2);
        let (o, l) = d.records[1];
        assert_eq!(&d.bytes[o..o + l], &[4; 60]);
    }

    #[test]
    fn malformed_inputs_are_errors() {
        assert!(parse(vec![0; 10]).is_err());
        assert!(parse(vec![0; 24]).unwrap_err().contains("magic"));
        let mut w = PcapWriter::new(Vec::new()).expect("hdr");
        w.write(1, 2, &[1, 2, 3]).expect("w");
        let mut b = w.into_inner();
        b.truncate(b.len() - 1);
        assert!(parse(b.clone()).unwrap_err().contains("past the end"));
        b.truncate(30);
        assert!(parse(b).unwrap_err().contains("truncated"));
    }

    #[test]
    fn never_panics_on_prefixes() {
        let mut w = PcapWriter::new(Vec::new()).expect("hdr");
        for i in 0..5u8 {
            w.write(0, 0, &vec![i; i as usize * 7]).expect("w");
        }
        let b = w.into_inner();
        for n in 0..b.len() {
            let _ = parse(b[..n].to_vec());
        }
    }
}
