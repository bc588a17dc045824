//! Every stored fuzz seed passes the openflow fuzz targets' check in every protocol version, so
//! that a seed which would fail the fuzz smoke fails `cargo test` first.

use openflow::wire::{decode, decode_frame, encode};

/// The fuzz targets' check: decoding never panics, and what decodes re-encodes to bytes that
/// decode to the same message.
fn check(bytes: &[u8]) -> Result<(), String> {
    if let Ok((h, m, _)) = decode_frame(bytes) {
        if let Ok(enc) = encode(&m, h.version, h.xid) {
            let (m2, n2) =
                decode(&enc).map_err(|e| format!("re-encoded does not decode: {e:?}"))?;
            if n2 != enc.len() {
                return Err(format!("re-encoded length {} decoded as {n2}", enc.len()));
            }
            if m2 != m {
                return Err(format!("round trip changed the message:\n{m:?}\n{m2:?}"));
            }
        }
    }
    Ok(())
}

#[test]
fn every_seed_round_trips_in_every_version() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/openflow");
    let mut failures = Vec::new();
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("seed directory") {
        let path = entry.expect("seed entry").path();
        let data = std::fs::read(&path).expect("seed");
        seen += 1;
        if let Err(e) = check(&data) {
            failures.push(format!("{} as is: {e}", path.display()));
        }
        if data.len() < 8 {
            continue;
        }
        for version in 1..=6u8 {
            let mut b = data.clone();
            let len = b.len().min(65535) as u16;
            b[2..4].copy_from_slice(&len.to_be_bytes());
            b[0] = version;
            if let Err(e) = check(&b) {
                failures.push(format!("{} as version {version}: {e}", path.display()));
            }
        }
    }
    assert!(seen > 10, "only {seen} seeds found in {}", dir.display());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
