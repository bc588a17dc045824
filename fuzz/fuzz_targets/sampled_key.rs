//! Fuzzes the sampled-frame key reader (`packet::sampled`) that flow export runs on the first
//! bytes of sampled packets: never panics, is deterministic, needs exactly an Ethernet header,
//! and a longer prefix of the same frame never knows less (every field read from a prefix
//! that already held it is the same).
#![no_main]

use libfuzzer_sys::fuzz_target;
use packet::sampled::parse;

fuzz_target!(|data: &[u8]| {
    let r = parse(7, data);
    assert_eq!(r.is_some(), data.len() >= 14);
    assert_eq!(r, parse(7, data));
    if let Some((k, len)) = &r {
        assert_eq!(k.ingress, 7);
        if k.ip.is_none() {
            assert_eq!(*len, 0);
        }
        // A shorter prefix that still has an IP header agrees on its addresses.
        if let (Some(ip), Some((k2, _))) = (&k.ip, parse(7, &data[..data.len() - 1])) {
            if let Some(ip2) = &k2.ip {
                assert_eq!((ip.src, ip.dst, ip.proto), (ip2.src, ip2.dst, ip2.proto));
            }
        }
    }
});
