//! The datapath's `check_pkt_len`: what `check_pkt_larger(LEN)->DST` compiles to.
//!
//! `check_pkt_larger` makes the rest of the pipeline depend on the packet's length, which
//! no flow key holds. As in OVS, xlate translates the rest twice, once with DST set to 1 and
//! once with it 0, and the datapath picks one of the two action lists per packet
//! ([`PktLenCheck`]); the megaflow keeps the union of both translations' wildcards, so one
//! cached flow serves packets of every length correctly.
//!
//! The length compared ([`checked_len`]) is OVS's: the Ethernet frame's bytes (no FCS) less
//! the padding a short frame carries after its IPv4 or IPv6 datagram. A packet longer than
//! `pkt_len` takes `greater`. The chosen list runs on a copy of the packet unless the check
//! is the last action (nothing it does is seen by the actions after it, as in OVS).

use crate::odp::DpAction;

/// `check_pkt_len(size=N,gt(...),le(...))`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PktLenCheck {
    /// Longest packet that takes `le`.
    pub pkt_len: u16,
    /// Actions for a packet longer than `pkt_len`.
    pub greater: Vec<DpAction>,
    /// Actions for any other packet.
    pub le: Vec<DpAction>,
}

impl PktLenCheck {
    /// The actions `frame` takes.
    pub fn branch(&self, frame: &[u8]) -> &[DpAction] {
        if checked_len(frame) > usize::from(self.pkt_len) {
            &self.greater
        } else {
            &self.le
        }
    }
}

fn rd16(b: &[u8], at: usize) -> Option<usize> {
    Some(usize::from(u16::from_be_bytes(
        *b.get(at..)?.first_chunk::<2>()?,
    )))
}

/// The frame's length as `check_pkt_len` counts it (see the module documentation): the
/// bytes after an IPv4 datagram's total length or an IPv6 datagram's payload (behind up to
/// two VLAN tags) are padding and do not count.
pub fn checked_len(frame: &[u8]) -> usize {
    let mut at = 12;
    for _ in 0..2 {
        match rd16(frame, at) {
            Some(0x8100 | 0x88a8) => at += 4,
            _ => break,
        }
    }
    let l3 = at + 2;
    let datagram = match rd16(frame, at) {
        Some(0x0800) if frame.get(l3).is_some_and(|b| b >> 4 == 4) => rd16(frame, l3 + 2),
        Some(0x86dd) if frame.get(l3).is_some_and(|b| b >> 4 == 6) => {
            rd16(frame, l3 + 4).map(|n| n + 40)
        }
        _ => None,
    };
    match datagram {
        Some(n) if l3 + n < frame.len() => l3 + n,
        _ => frame.len(),
    }
}

impl std::fmt::Display for PktLenCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |v: &[DpAction]| {
            v.iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        write!(
            f,
            "check_pkt_len(size={},gt({}),le({}))",
            self.pkt_len,
            list(&self.greater),
            list(&self.le)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4_frame(payload: usize, pad: usize, tags: usize) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        for _ in 0..tags {
            f.extend_from_slice(&[0x81, 0x00, 0, 1]);
        }
        f.extend_from_slice(&[0x08, 0x00]);
        let total = 20 + payload;
        let mut ip = vec![0u8; total];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        f.extend_from_slice(&ip);
        f.extend(std::iter::repeat_n(0, pad));
        f
    }

    #[test]
    fn padding_after_the_datagram_does_not_count() {
        // 14 + 20 + 8 = 42 bytes of datagram padded to the 60-byte minimum.
        assert_eq!(checked_len(&ipv4_frame(8, 18, 0)), 42);
        assert_eq!(checked_len(&ipv4_frame(8, 14, 1)), 46);
        assert_eq!(checked_len(&ipv4_frame(1000, 0, 0)), 1034);
        // A total length beyond the frame (truncated or lying): the frame's length.
        let mut f = ipv4_frame(8, 0, 0);
        f[16..18].copy_from_slice(&9000u16.to_be_bytes());
        assert_eq!(checked_len(&f), f.len());
        // Not IP: the whole frame.
        let mut arp = vec![0u8; 60];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(checked_len(&arp), 60);
        assert_eq!(checked_len(&[1, 2, 3]), 3);
    }

    #[test]
    fn longer_than_the_limit_takes_greater() {
        let c = PktLenCheck {
            pkt_len: 1034,
            greater: vec![DpAction::Output(2)],
            le: vec![DpAction::Output(3)],
        };
        assert_eq!(c.branch(&ipv4_frame(1000, 0, 0)), [DpAction::Output(3)]);
        assert_eq!(c.branch(&ipv4_frame(1001, 0, 0)), [DpAction::Output(2)]);
        assert_eq!(c.to_string(), "check_pkt_len(size=1034,gt(2),le(3))");
    }
}
