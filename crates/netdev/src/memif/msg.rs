//! memif control messages: the 128-byte records exchanged on the control socket.
//!
//! ## What
//! Every control message is one `SOCK_SEQPACKET` record of exactly [`MSG_SIZE`] bytes: a
//! little-endian 16-bit type followed, without padding, by that type's fields (the layout of
//! memif protocol version 2.0, as DPDK's `net_memif`, VPP and libmemif speak it). File
//! descriptors travel beside a message as `SCM_RIGHTS` ancillary data: a memfd with
//! `ADD_REGION`, an eventfd with `ADD_RING`. This module only turns bytes into [`Msg`] values
//! and back; what a value may mean in a given state is the business of [`super::ctl`].
//!
//! ## Invariants
//! * [`decode`] accepts any byte string and never panics: a record of the wrong size, an
//!   unknown type or a type the protocol never sends (`NONE`) is a [`MsgError`].
//! * Names and strings are fixed-size NUL-padded byte arrays on the wire; decoding stops at
//!   the first NUL and replaces each byte of invalid UTF-8 with `?` (so a decoded string
//!   re-encodes to the same length), encoding truncates to the field size.
//! * [`encode`] of a decoded message gives back the same record, except that bytes after a
//!   string's NUL and unused trailing bytes come back as zeros.

/// Size of every control message.
pub const MSG_SIZE: usize = 128;
/// Protocol version spoken: 2.0.
pub const VERSION: u16 = 0x0200;
/// Size of the name fields.
pub const NAME_SIZE: usize = 32;
/// Size of the secret field of `INIT`.
pub const SECRET_SIZE: usize = 24;
/// Size of the reason string of `DISCONNECT`.
pub const REASON_SIZE: usize = 96;
/// `ADD_RING` flag: the ring carries packets from client to server (S2M).
pub const RING_FLAG_S2M: u16 = 1;
/// Interface mode `ethernet`, the only one a switch port speaks.
pub const MODE_ETHERNET: u8 = 0;

const T_ACK: u16 = 1;
const T_HELLO: u16 = 2;
const T_INIT: u16 = 3;
const T_ADD_REGION: u16 = 4;
const T_ADD_RING: u16 = 5;
const T_CONNECT: u16 = 6;
const T_CONNECTED: u16 = 7;
const T_DISCONNECT: u16 = 8;

/// One decoded control message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    /// Acknowledges the previous request.
    Ack,
    /// Server to client: the server's limits (maxima are *indices*: count - 1).
    Hello {
        name: String,
        min_version: u16,
        max_version: u16,
        max_region: u16,
        max_m2s_ring: u16,
        max_s2m_ring: u16,
        max_log2_ring_size: u8,
    },
    /// Client to server: which interface it wants and how.
    Init {
        version: u16,
        id: u32,
        mode: u8,
        secret: [u8; SECRET_SIZE],
        name: String,
    },
    /// Client to server: a shared memory region (its memfd rides along).
    AddRegion { index: u16, size: u64 },
    /// Client to server: a ring inside a region (its eventfd rides along).
    AddRing {
        flags: u16,
        index: u16,
        region: u16,
        offset: u32,
        log2_ring_size: u8,
        private_hdr_size: u16,
    },
    /// Client to server: everything is announced, connect.
    Connect { if_name: String },
    /// Server to client: connected.
    Connected { if_name: String },
    /// Either way: the connection ends, and why.
    Disconnect { code: u32, reason: String },
}

/// Why a record is not a control message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MsgError {
    /// The record is not [`MSG_SIZE`] bytes.
    Size(usize),
    /// The type field names no message.
    Type(u16),
}

impl std::fmt::Display for MsgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MsgError::Size(n) => write!(f, "control message of {n} bytes (expected {MSG_SIZE})"),
            MsgError::Type(t) => write!(f, "unknown control message type {t}"),
        }
    }
}

fn u16_at(b: &[u8; MSG_SIZE], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8; MSG_SIZE], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8; MSG_SIZE], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

fn str_at(b: &[u8; MSG_SIZE], at: usize, len: usize) -> String {
    let f = &b[at..at + len];
    let end = f.iter().position(|&c| c == 0).unwrap_or(len);
    // Invalid bytes become one '?' each, so the string re-encodes to the same length.
    let mut s = String::with_capacity(end);
    for chunk in f[..end].utf8_chunks() {
        s.push_str(chunk.valid());
        s.extend(std::iter::repeat_n('?', chunk.invalid().len()));
    }
    s
}

fn put_str(b: &mut [u8; MSG_SIZE], at: usize, len: usize, s: &str) {
    let s = s.as_bytes();
    let n = s.len().min(len);
    b[at..at + n].copy_from_slice(&s[..n]);
}

/// Decodes one record. See the module documentation.
pub fn decode(rec: &[u8]) -> Result<Msg, MsgError> {
    let b: &[u8; MSG_SIZE] = rec.try_into().map_err(|_| MsgError::Size(rec.len()))?;
    // Field offsets: the union starts right after the 2-byte type (the record is packed).
    Ok(match u16_at(b, 0) {
        T_ACK => Msg::Ack,
        T_HELLO => Msg::Hello {
            name: str_at(b, 2, NAME_SIZE),
            min_version: u16_at(b, 34),
            max_version: u16_at(b, 36),
            max_region: u16_at(b, 38),
            max_m2s_ring: u16_at(b, 40),
            max_s2m_ring: u16_at(b, 42),
            max_log2_ring_size: b[44],
        },
        T_INIT => {
            let mut secret = [0u8; SECRET_SIZE];
            secret.copy_from_slice(&b[9..9 + SECRET_SIZE]);
            Msg::Init {
                version: u16_at(b, 2),
                id: u32_at(b, 4),
                mode: b[8],
                secret,
                name: str_at(b, 33, NAME_SIZE),
            }
        }
        T_ADD_REGION => Msg::AddRegion {
            index: u16_at(b, 2),
            size: u64_at(b, 4),
        },
        T_ADD_RING => Msg::AddRing {
            flags: u16_at(b, 2),
            index: u16_at(b, 4),
            region: u16_at(b, 6),
            offset: u32_at(b, 8),
            log2_ring_size: b[12],
            private_hdr_size: u16_at(b, 13),
        },
        T_CONNECT => Msg::Connect {
            if_name: str_at(b, 2, NAME_SIZE),
        },
        T_CONNECTED => Msg::Connected {
            if_name: str_at(b, 2, NAME_SIZE),
        },
        T_DISCONNECT => Msg::Disconnect {
            code: u32_at(b, 2),
            reason: str_at(b, 6, REASON_SIZE),
        },
        t => return Err(MsgError::Type(t)),
    })
}

/// Encodes one message into a record.
pub fn encode(m: &Msg) -> [u8; MSG_SIZE] {
    let mut b = [0u8; MSG_SIZE];
    let put16 = |b: &mut [u8; MSG_SIZE], at: usize, v: u16| {
        b[at..at + 2].copy_from_slice(&v.to_le_bytes());
    };
    match m {
        Msg::Ack => put16(&mut b, 0, T_ACK),
        Msg::Hello {
            name,
            min_version,
            max_version,
            max_region,
            max_m2s_ring,
            max_s2m_ring,
            max_log2_ring_size,
        } => {
            put16(&mut b, 0, T_HELLO);
            put_str(&mut b, 2, NAME_SIZE, name);
            put16(&mut b, 34, *min_version);
            put16(&mut b, 36, *max_version);
            put16(&mut b, 38, *max_region);
            put16(&mut b, 40, *max_m2s_ring);
            put16(&mut b, 42, *max_s2m_ring);
            b[44] = *max_log2_ring_size;
        }
        Msg::Init {
            version,
            id,
            mode,
            secret,
            name,
        } => {
            put16(&mut b, 0, T_INIT);
            put16(&mut b, 2, *version);
            b[4..8].copy_from_slice(&id.to_le_bytes());
            b[8] = *mode;
            b[9..9 + SECRET_SIZE].copy_from_slice(secret);
            put_str(&mut b, 33, NAME_SIZE, name);
        }
        Msg::AddRegion { index, size } => {
            put16(&mut b, 0, T_ADD_REGION);
            put16(&mut b, 2, *index);
            b[4..12].copy_from_slice(&size.to_le_bytes());
        }
        Msg::AddRing {
            flags,
            index,
            region,
            offset,
            log2_ring_size,
            private_hdr_size,
        } => {
            put16(&mut b, 0, T_ADD_RING);
            put16(&mut b, 2, *flags);
            put16(&mut b, 4, *index);
            put16(&mut b, 6, *region);
            b[8..12].copy_from_slice(&offset.to_le_bytes());
            b[12] = *log2_ring_size;
            put16(&mut b, 13, *private_hdr_size);
        }
        Msg::Connect { if_name } => {
            put16(&mut b, 0, T_CONNECT);
            put_str(&mut b, 2, NAME_SIZE, if_name);
        }
        Msg::Connected { if_name } => {
            put16(&mut b, 0, T_CONNECTED);
            put_str(&mut b, 2, NAME_SIZE, if_name);
        }
        Msg::Disconnect { code, reason } => {
            put16(&mut b, 0, T_DISCONNECT);
            b[2..6].copy_from_slice(&code.to_le_bytes());
            put_str(&mut b, 6, REASON_SIZE, reason);
        }
    }
    b
}

/// A secret option value as the 24-byte field (`None` if too long).
pub fn secret_field(s: &str) -> Option<[u8; SECRET_SIZE]> {
    let mut f = [0u8; SECRET_SIZE];
    if s.len() > SECRET_SIZE || s.as_bytes().contains(&0) {
        return None;
    }
    f[..s.len()].copy_from_slice(s.as_bytes());
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips() {
        let msgs = [
            Msg::Ack,
            Msg::Hello {
                name: "ferrovs".into(),
                min_version: VERSION,
                max_version: VERSION,
                max_region: 255,
                max_m2s_ring: 15,
                max_s2m_ring: 15,
                max_log2_ring_size: 14,
            },
            Msg::Init {
                version: VERSION,
                id: 0xdead_beef,
                mode: MODE_ETHERNET,
                secret: secret_field("s3cret").expect("fits"),
                name: "client".into(),
            },
            Msg::AddRegion {
                index: 3,
                size: 1 << 40,
            },
            Msg::AddRing {
                flags: RING_FLAG_S2M,
                index: 2,
                region: 1,
                offset: 0x1234_5678,
                log2_ring_size: 10,
                private_hdr_size: 0,
            },
            Msg::Connect {
                if_name: "m0".into(),
            },
            Msg::Connected {
                if_name: "m1".into(),
            },
            Msg::Disconnect {
                code: 7,
                reason: "bye".into(),
            },
        ];
        for m in msgs {
            assert_eq!(decode(&encode(&m)), Ok(m));
        }
    }

    #[test]
    fn layout_matches_the_protocol() {
        // ADD_RING: type 5, flags, index, region, offset, log2 size, private header size.
        let r = encode(&Msg::AddRing {
            flags: 1,
            index: 2,
            region: 3,
            offset: 4,
            log2_ring_size: 10,
            private_hdr_size: 0,
        });
        assert_eq!(&r[..15], &[5, 0, 1, 0, 2, 0, 3, 0, 4, 0, 0, 0, 10, 0, 0]);
        let i = encode(&Msg::Init {
            version: VERSION,
            id: 1,
            mode: 0,
            secret: [b'x'; SECRET_SIZE],
            name: "n".into(),
        });
        assert_eq!(&i[..10], &[3, 0, 0, 2, 1, 0, 0, 0, 0, b'x']);
        assert_eq!(i[33], b'n');
    }

    #[test]
    fn bad_records_are_errors() {
        assert_eq!(decode(&[0u8; 127]), Err(MsgError::Size(127)));
        assert_eq!(decode(&[0u8; 128]), Err(MsgError::Type(0)));
        let mut r = [0u8; 128];
        r[0] = 9;
        assert_eq!(decode(&r), Err(MsgError::Type(9)));
        // An unterminated, non-UTF-8 name still decodes, and re-encodes to the same record.
        let mut r = [0xffu8; 128];
        r[0] = 6;
        r[1] = 0;
        let m = decode(&r).expect("decodes");
        assert!(matches!(&m, Msg::Connect { if_name } if if_name == &"?".repeat(NAME_SIZE)));
        assert_eq!(decode(&encode(&m)), Ok(m));
        assert_eq!(secret_field(&"x".repeat(25)), None);
    }
}
