//! # conntrack — the connection tracker of ferrovs
//!
//! ## What
//! A userspace connection tracker with the semantics of Open vSwitch's: it classifies
//! every packet of a `ct()` action as new, established, related, reply or invalid within a
//! zone; commits connections on request with a 32-bit mark and a 128-bit label; tracks TCP
//! with the state machine and sequence-window checks, UDP and generic protocols by what
//! has been seen in each direction, ICMP/ICMPv6 queries by id, and ICMP errors as related
//! to the connection whose datagram they quote; translates addresses and ports (SNAT,
//! DNAT, with address and port ranges) and undoes the translation for replies and for
//! related ICMP errors; enforces a global maximum and per-zone limits; and expires
//! connections by per-zone timeout policies.
//!
//! ## Shape
//! * [`key`]: connection keys and the packet parser (offsets from `packet`'s extractor).
//! * [`ipf`]: IPv4 and IPv6 fragment reassembly before tracking.
//! * [`tcp`]: the TCP state machine and window tracking.
//! * [`timeout`]: timeout classes and policies.
//! * [`table`]: the sharded, read-mostly connection table; [`cache`]: a poll thread's
//!   cache of the connections it found lately.
//! * [`alg`]: the FTP and TFTP helpers and their expectations.
//! * [`nat`]: NAT ranges and collision-free tuple allocation; [`rewrite`]: the packet edits.
//! * [`tracker`]: [`Conntrack`] and its per-packet `execute`.
//! * [`ops`]: sweep, dump, flush, statistics and limits (the `dpctl` commands).
//! * [`testpkt`]: frame builders for tests, fuzzing and benchmarks.
//!
//! ## Threading
//! No I/O and no threads: time is an argument (milliseconds, on any monotonic clock the
//! caller keeps). [`Conntrack`] is `Send + Sync`; poll threads call `execute` concurrently,
//! and the control thread calls `sweep`, `dump`, `flush` and the setters at the same time.
//! There is no global lock on the packet path (see [`table`]).
//!
//! ## Not here
//! NAT of fragmented datagrams, and the rewriting of FTP messages under NAT.
//!
//! ## Unsafe code
//! None, except one line: the prefetch hint of [`table`] (`_mm_prefetch`, which cannot
//! fault for any address), allowed where it is.

#![deny(unsafe_code)]

pub mod alg;
pub mod buckets;
pub mod cache;
pub mod ipf;
pub mod key;
pub mod key4;
pub mod nat;
mod one;
pub mod ops;
pub mod rewrite;
pub mod table;
pub mod tcp;
pub mod testpkt;
pub mod timeout;
pub mod tracker;

pub use alg::Helper;
pub use cache::ConnCache;
pub use ipf::{Ipf, IpfConfig, IpfCounts, IpfStatus, IpfVerdict, Reassembled};
pub use key::{ConnKey, PacketMeta};
pub use nat::{Nat, NatRange};
pub use ops::{ConnEntry, Flush};
pub use timeout::TimeoutPolicy;
pub use tracker::{ct_state, Config, Conntrack, CtInput, CtPacket, CtRequest, CtResult};

#[cfg(test)]
mod alg_nat_tests;
#[cfg(test)]
mod alg_tests;
#[cfg(test)]
mod batch_tests;
#[cfg(test)]
mod settled_tests;
#[cfg(test)]
mod tests;
