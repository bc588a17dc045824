//! Fuzzes the OpenFlow wire decoder with OpenFlow 1.4 layouts (see `common/openflow.rs`).
#![no_main]

#[path = "common/openflow.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| common::run(data, openflow::wire::OFP14));
