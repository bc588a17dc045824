//! Nicira's IPFIX statistics: `NXST_IPFIX_BRIDGE` (subtype 3) and `NXST_IPFIX_FLOW`
//! (subtype 4), what `ovs-ofctl dump-ipfix-bridge` and `dump-ipfix-flow` ask for.
//!
//! Both are Nicira stats in every version: OpenFlow 1.0 vendor stats (vendor id, subtype,
//! 4 pad) and from 1.1 on experimenter multiparts (experimenter id, subtype, no pad). The
//! requests have no body. A reply record is 88 bytes: ten 64-bit counters (flows exported
//! in all and cached now, packets sampled, of them IPv4 and IPv6, packets that could not
//! be sampled, of them IPv4 and IPv6, IPFIX packets sent, send errors), the collector set
//! id (32 bits, 0 for the bridge exporter) and 4 pad. The bridge reply holds one record,
//! the flow reply one per collector set; records are fixed-size and all cut before any is
//! decoded.

use crate::wire::buf::{Rd, W};
use crate::wire::error::DecodeError;
use crate::wire::record::fixed;

/// `NXST_IPFIX_BRIDGE`.
pub(super) const NXST_IPFIX_BRIDGE: u32 = 3;
/// `NXST_IPFIX_FLOW`.
pub(super) const NXST_IPFIX_FLOW: u32 = 4;
/// Bytes of one record.
const RECORD: usize = 88;

/// One IPFIX exporter's statistics (the bridge's, or one flow collector set's).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct IpfixStats {
    /// Flow records exported.
    pub total_flows: u64,
    /// Flow records in the cache now.
    pub current_flows: u64,
    /// Packets sampled.
    pub pkts: u64,
    /// Of them, IPv4.
    pub ipv4_pkts: u64,
    /// Of them, IPv6.
    pub ipv6_pkts: u64,
    /// Sampled packets that could not be turned into records.
    pub error_pkts: u64,
    /// Of them, IPv4.
    pub ipv4_error_pkts: u64,
    /// Of them, IPv6.
    pub ipv6_error_pkts: u64,
    /// IPFIX messages sent.
    pub tx_pkts: u64,
    /// IPFIX messages that failed to go out.
    pub tx_errors: u64,
    /// The collector set (flow-based IPFIX); 0 for the bridge's exporter.
    pub collector_set_id: u32,
}

fn decode_one(mut r: Rd<'_>) -> Result<IpfixStats, DecodeError> {
    let s = IpfixStats {
        total_flows: r.u64()?,
        current_flows: r.u64()?,
        pkts: r.u64()?,
        ipv4_pkts: r.u64()?,
        ipv6_pkts: r.u64()?,
        error_pkts: r.u64()?,
        ipv4_error_pkts: r.u64()?,
        ipv6_error_pkts: r.u64()?,
        tx_pkts: r.u64()?,
        tx_errors: r.u64()?,
        collector_set_id: r.u32()?,
    };
    r.skip(4)?;
    Ok(s)
}

/// Records until `rd` is used up (a length that is not a multiple of 88 is `BadLength`).
pub(super) fn decode_stats(rd: &mut Rd<'_>) -> Result<Vec<IpfixStats>, DecodeError> {
    fixed(rd, RECORD, decode_one)
}

/// The bridge reply: exactly one record.
pub(super) fn decode_bridge(rd: &mut Rd<'_>) -> Result<IpfixStats, DecodeError> {
    let r = rd.sub(RECORD, DecodeError::BadLength)?;
    if !rd.is_empty() {
        return Err(DecodeError::BadLength);
    }
    decode_one(r)
}

pub(super) fn encode_stats(out: &mut Vec<u8>, v: &[IpfixStats]) {
    for s in v {
        for c in [
            s.total_flows,
            s.current_flows,
            s.pkts,
            s.ipv4_pkts,
            s.ipv6_pkts,
            s.error_pkts,
            s.ipv4_error_pkts,
            s.ipv6_error_pkts,
            s.tx_pkts,
            s.tx_errors,
        ] {
            out.u64(c);
        }
        out.u32(s.collector_set_id);
        out.zeros(4);
    }
}
