//! Fuzzes the pcap file reader: it must never panic, and every record it returns must lie
//! inside the bytes it kept. Each record is also run through the flow extractor, as the pcap
//! port does.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = netdev::pcapfile::parse(data.to_vec()) {
        assert_eq!(p.bytes.len(), data.len());
        for &(off, len) in &p.records {
            let rec = p.bytes.get(off..off + len).expect("record inside the file");
            assert!(len <= netdev::pcapfile::MAX_RECORD);
            let _ = packet::flow::extract(rec, 1);
        }
    }
});
