//! # Timeout policies
//!
//! ## What
//! Every connection carries an expiry time; each packet that updates it pushes the expiry
//! to `now` plus the timeout of the connection's *class* (a TCP connection being opened,
//! an established one, a UDP flow seen once, ...). The classes and their default values
//! are OVS's userspace ones, and a [`TimeoutPolicy`] names its eleven values with the keys
//! of OVSDB's `CT_Timeout_Policy.timeouts` column (`tcp_syn_sent`, ..., `icmp_reply`), in
//! seconds:
//!
//! | attribute         | default  | used for                                          |
//! |-------------------|----------|---------------------------------------------------|
//! | `tcp_syn_sent`    | 30       | TCP after its first packet                        |
//! | `tcp_syn_recv`    | 30       | TCP while either side is not yet established      |
//! | `tcp_established` | 86,400   | TCP established both ways                         |
//! | `tcp_fin_wait`    | 900      | TCP with one side closing                         |
//! | `tcp_time_wait`   | 45       | TCP with both sides closing                       |
//! | `tcp_close`       | 30       | TCP closed both ways (or reset)                   |
//! | `udp_first`       | 60       | UDP/other after the first packet                  |
//! | `udp_single`      | 60       | UDP/other with several packets one way            |
//! | `udp_multiple`    | 30       | UDP/other with packets both ways                  |
//! | `icmp_first`      | 60       | ICMP query without a reply                        |
//! | `icmp_reply`      | 30       | ICMP query answered                               |
//!
//! Generic protocols use the UDP values, as OVS does.
//!
//! ## How
//! [`Policies`] holds up to [`MAX_POLICIES`] policies in a fixed array of atomics (slot 0
//! is the default policy) and a 64 K-entry zone -> slot map of atomic bytes, so the packet
//! path reads a timeout with two relaxed loads and no lock. Changing a zone's policy takes
//! effect for its connections at their next packet. Creating and removing policies is
//! serialised by a mutex that only the control thread takes.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering::Relaxed};

/// Number of timeout attributes.
pub const N_ATTRS: usize = 11;
/// Policies that can exist at once, the default included.
pub const MAX_POLICIES: usize = 256;
const _: () = assert!(MAX_POLICIES == u8::MAX as usize + 1);
/// Zones: every `u16`.
const ZONES: usize = u16::MAX as usize + 1;

/// The attribute names, in index order (OVSDB `CT_Timeout_Policy` keys).
pub const ATTR_NAMES: [&str; N_ATTRS] = [
    "tcp_syn_sent",
    "tcp_syn_recv",
    "tcp_established",
    "tcp_fin_wait",
    "tcp_time_wait",
    "tcp_close",
    "udp_first",
    "udp_single",
    "udp_multiple",
    "icmp_first",
    "icmp_reply",
];

/// OVS's userspace defaults, seconds, in [`ATTR_NAMES`] order.
pub const DEFAULTS: [u32; N_ATTRS] = [30, 30, 86_400, 900, 45, 30, 60, 60, 30, 60, 30];

/// The timeout class of a connection; the value indexes a policy's attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Class {
    /// TCP, first packet seen.
    TcpFirst = 0,
    /// TCP, opening.
    TcpOpening = 1,
    /// TCP, established.
    TcpEstablished = 2,
    /// TCP, one side closing.
    TcpClosing = 3,
    /// TCP, both sides closing.
    TcpFinWait = 4,
    /// TCP, closed.
    TcpClosed = 5,
    /// UDP/other, first packet.
    OtherFirst = 6,
    /// UDP/other, several packets one way.
    OtherMultiple = 7,
    /// UDP/other, both ways.
    OtherBidir = 8,
    /// ICMP, first packet.
    IcmpFirst = 9,
    /// ICMP, replied.
    IcmpReply = 10,
}

/// A complete set of timeouts, seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeoutPolicy {
    /// Values in [`ATTR_NAMES`] order.
    pub values: [u32; N_ATTRS],
}

impl Default for TimeoutPolicy {
    fn default() -> Self {
        TimeoutPolicy { values: DEFAULTS }
    }
}

impl TimeoutPolicy {
    /// The defaults with `(name, seconds)` pairs applied; an unknown name is an error.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, u32)>,
    ) -> Result<TimeoutPolicy, String> {
        let mut p = TimeoutPolicy::default();
        for (name, v) in pairs {
            let i = ATTR_NAMES
                .iter()
                .position(|n| n.eq_ignore_ascii_case(name))
                .ok_or_else(|| format!("unknown timeout attribute {name}"))?;
            p.values[i] = v;
        }
        Ok(p)
    }
}

/// All policies and the zone -> policy map.
pub struct Policies {
    /// Arrays whose length is every value of their index type (`u8` slot, `u16` zone), so
    /// the per-packet lookup ([`Policies::timeout_ms`]) has no bounds check.
    slots: Box<[[AtomicU32; N_ATTRS]; MAX_POLICIES]>,
    zone_slot: Box<[AtomicU8; ZONES]>,
    /// Slot use counts (zones per slot); slot 0 is never freed.
    users: Mutex<Vec<u32>>,
}

impl Default for Policies {
    fn default() -> Self {
        Self::new()
    }
}

impl Policies {
    /// The default policy for every zone.
    pub fn new() -> Policies {
        let slots = Box::new(std::array::from_fn(|_| DEFAULTS.map(AtomicU32::new)));
        let zone_slot = Box::new(std::array::from_fn(|_| AtomicU8::new(0)));
        Policies {
            slots,
            zone_slot,
            users: Mutex::new(vec![0; MAX_POLICIES]),
        }
    }

    /// The timeout in milliseconds of `class` for connections of `zone`.
    #[inline]
    pub fn timeout_ms(&self, zone: u16, class: Class) -> u64 {
        let slot = self.zone_slot[usize::from(zone)].load(Relaxed);
        let secs = self.slots[usize::from(slot)][class as usize].load(Relaxed);
        u64::from(secs) * 1000
    }

    /// Replaces the default policy (zones without their own).
    pub fn set_default(&self, p: &TimeoutPolicy) {
        for (a, v) in self.slots[0].iter().zip(p.values) {
            a.store(v, Relaxed);
        }
    }

    /// Gives `zone` its own policy. Fails when [`MAX_POLICIES`] are in use.
    pub fn set_zone(&self, zone: u16, p: &TimeoutPolicy) -> Result<(), String> {
        let mut users = self.users.lock();
        let cur = self.zone_slot[usize::from(zone)].load(Relaxed);
        let slot = if cur != 0 {
            cur
        } else {
            let free = (1..MAX_POLICIES)
                .find(|&i| users[i] == 0)
                .ok_or_else(|| format!("more than {} timeout policies", MAX_POLICIES - 1))?;
            users[free] += 1;
            free as u8
        };
        for (a, v) in self.slots[usize::from(slot)].iter().zip(p.values) {
            a.store(v, Relaxed);
        }
        self.zone_slot[usize::from(zone)].store(slot, Relaxed);
        Ok(())
    }

    /// Returns `zone` to the default policy.
    pub fn clear_zone(&self, zone: u16) {
        let mut users = self.users.lock();
        let cur = self.zone_slot[usize::from(zone)].swap(0, Relaxed);
        if cur != 0 {
            users[usize::from(cur)] = users[usize::from(cur)].saturating_sub(1);
        }
    }

    /// The policy `zone` uses.
    pub fn get(&self, zone: u16) -> TimeoutPolicy {
        let slot = self.zone_slot[usize::from(zone)].load(Relaxed);
        TimeoutPolicy {
            values: std::array::from_fn(|i| self.slots[usize::from(slot)][i].load(Relaxed)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_zone_policies() {
        let p = Policies::new();
        assert_eq!(p.timeout_ms(5, Class::TcpEstablished), 86_400_000);
        assert_eq!(p.timeout_ms(5, Class::OtherBidir), 30_000);
        let tp = TimeoutPolicy::from_pairs([("tcp_established", 10), ("ICMP_FIRST", 2)]).unwrap();
        p.set_zone(5, &tp).unwrap();
        assert_eq!(p.timeout_ms(5, Class::TcpEstablished), 10_000);
        assert_eq!(p.timeout_ms(5, Class::IcmpFirst), 2_000);
        assert_eq!(p.timeout_ms(6, Class::TcpEstablished), 86_400_000);
        assert_eq!(p.get(5), tp);
        p.clear_zone(5);
        assert_eq!(p.timeout_ms(5, Class::TcpEstablished), 86_400_000);
        assert!(TimeoutPolicy::from_pairs([("bogus", 1)]).is_err());
        // Slots are reused after clearing.
        for z in 0..(MAX_POLICIES as u16 - 1) {
            p.set_zone(z, &tp).unwrap();
        }
        assert!(p.set_zone(9999, &tp).is_err());
        p.clear_zone(0);
        p.set_zone(9999, &tp).unwrap();
    }
}
