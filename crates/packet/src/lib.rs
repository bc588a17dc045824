//! # packet — the bottom layer of ferrovs
//!
//! Everything that touches packet bytes without doing I/O lives here:
//!
//! * [`buf`]: the packet buffer ([`Packet`]), the preallocated buffer pool ([`Pool`]) and the
//!   fixed-capacity [`Batch`] in which packets travel through the fabric. Steady-state
//!   forwarding allocates nothing: buffers are taken from and returned to the pool.
//! * [`flow`]: the fixed-layout flow key and its one-pass extractor, which reads every header
//!   ferrovs can match on and never panics or reads out of bounds, whatever the bytes.
//! * [`sampled`]: the flow identity (addresses, protocol, ports) of a sampled frame's first
//!   bytes, for flow export (IPFIX).
//! * [`csum`]: Internet checksums (RFC 1071) and incremental updates (RFC 1624).
//! * [`wire`]: zero-copy header views (Ethernet, IPv4, L4 ports) with checked constructors,
//!   for code that reads a few fields of one header.
//!
//! This crate depends on nothing of ours and does no I/O; it is safe to use from any thread.

#![forbid(unsafe_code)]

pub mod buf;
pub mod csum;
pub mod flow;
pub mod sampled;
pub mod wire;

pub use buf::{
    Batch, Packet, Pool, TunMeta, BUF_SIZE, HEADROOM, MAX_BATCH, MAX_FRAME, TUN_META_LEN,
    TUN_OPTS_MAX,
};
pub use flow::{extract, extract_into, FlowKey, Offsets, FLOW_KEY_SIZE, FLOW_KEY_WORDS};
