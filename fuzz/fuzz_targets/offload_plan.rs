//! Fuzzes receive-offload handling (checksum completion and GSO segmentation of frames that
//! arrive with a virtio-net header): planning and writing every output segment must never
//! panic, and every segment must fit the buffer the planner sized for it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use netdev::offload::{Plan, VnetHdr, VNET_HDR_LEN};

fuzz_target!(|data: &[u8]| {
    if data.len() < VNET_HDR_LEN + 1 {
        return;
    }
    let mut h = [0u8; VNET_HDR_LEN];
    h.copy_from_slice(&data[..VNET_HDR_LEN]);
    let v = VnetHdr::parse(&h);
    let tagged = data[VNET_HDR_LEN] & 1 != 0;
    let frame = &data[VNET_HDR_LEN + 1..];
    let tag = if tagged {
        Some([0x81, 0x00, 0x00, 0x0a])
    } else {
        None
    };
    if let Ok(plan) = Plan::new(frame, tag, &v) {
        let mut out = vec![0u8; packet::MAX_FRAME];
        for i in 0..plan.count().min(256) {
            let n = plan.len_of(i);
            assert!(n <= packet::MAX_FRAME);
            let w = plan.write(i, &mut out[..n]);
            assert!(w <= n);
            let _ = packet::flow::extract(&out[..w], 1);
        }
    }
});
