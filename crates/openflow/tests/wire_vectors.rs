//! Round trips against the binary OpenFlow test vectors shipped inside the os-ken Python
//! package (`os_ken/tests/packet_data/of10|of13|of14|of15`). The vectors are read from
//! the installed package, never copied here: set `OSKEN_PACKET_DATA` to the
//! `packet_data` directory, or have os-ken importable by `/work/main/.venv/bin/python`,
//! `python3` or `python`. Without them the tests fail (scripts/test.sh installs os-ken).
//!
//! For every file: decode must succeed and use all bytes, and re-encoding must give the
//! same bytes, or (for non-canonical input) decode to the same message. Files this codec
//! deliberately does not support are listed in `UNSUPPORTED` with the error they must
//! produce; anything else failing is a test failure.

use openflow::wire::{decode_frame, encode, DecodeError};
use std::path::PathBuf;
use std::process::Command;

/// Vectors we deliberately don't decode, with the error they yield and why.
const UNSUPPORTED: &[(&str, &str)] = &[
    // Nicira actions without a model meaning (conjunction, fin_timeout, output_trunc).
    ("ovs-ofctl-of13-action_conjunction", "BadActionExpType(34)"),
    ("ovs-ofctl-of13-action_fintimeout", "BadActionExpType(19)"),
    ("ovs-ofctl-of13-action_output_trunc", "BadActionExpType(39)"),
    // Nicira match field the model lacks (conj_id).
    ("ovs-ofctl-of13-match_conj", "BadField(1, 37)"),
    ("libofproto-OFP13-flow_mod_match_conj", "BadField(1, 37)"),
    ("libofproto-OFP15-flow_mod_match_conj", "BadField(1, 37)"),
    // Generic experimenter actions, bands and OXM fields (os-ken's made-up ids): the
    // model has no raw experimenter forms.
    ("4-2-ofp_flow_mod", "BadActionExperimenter(101)"),
    ("5-2-ofp_flow_mod", "BadActionExperimenter(101)"),
    (
        "4-12-ofp_flow_stats_reply",
        "BadActionExperimenter(98765432)",
    ),
    (
        "5-12-ofp_flow_stats_reply",
        "BadActionExperimenter(98765432)",
    ),
    ("4-45-ofp_meter_mod", "BadMeterBand(65535)"),
    ("5-43-ofp_meter_mod", "BadMeterBand(65535)"),
    ("4-59-ofp_packet_in", "BadField(65535, 0)"),
    ("4-60-ofp_flow_mod", "BadField(65535, 0)"),
    // Match fields the model lacks: PBB_UCA (OXM 41).
    ("5-57-ofp_packet_in", "BadField(32768, 41)"),
    ("5-58-ofp_flow_mod", "BadField(32768, 41)"),
    // Their tun_src (1/31) match and learn (16) actions decode; conjunction (34) does
    // not.
    (
        "libofproto-OFP13-flow_mod_conjunction",
        "BadActionExpType(34)",
    ),
    (
        "libofproto-OFP15-flow_mod_conjunction",
        "BadActionExpType(34)",
    ),
    // os-ken's ONF flow monitor request uses its own layout (match_len 0 followed by
    // match bytes); the codec speaks the layout Open vSwitch's ovs-ofctl sends.
    ("4-63-onf_flow_monitor_request", "BadMatchLen"),
    // Malformed vector: its goto_table instruction claims length 0x0808.
    ("libofproto-OFP15-flow_desc_reply", "BadInstructionLen"),
    // A deliberately truncated message.
    ("libofproto-OFP13-flow_mod.truncated64", "Truncated"),
];

/// Why the vectors are required rather than optional: a missing peer fails the run.
pub const NO_DATA: &str = "os-ken's packet_data not found: set OSKEN_PACKET_DATA, or install \
    tests/requirements.txt into .venv (scripts/test.sh does)";

fn packet_data() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("OSKEN_PACKET_DATA") {
        return Some(PathBuf::from(p));
    }
    let script = "import os, os_ken; print(os.path.dirname(os_ken.__file__))";
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv/bin/python");
    for py in [venv, "python3", "python"] {
        if let Ok(out) = Command::new(py).args(["-c", script]).output() {
            if out.status.success() {
                let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
                let p = PathBuf::from(dir).join("tests/packet_data");
                if p.is_dir() {
                    return Some(p);
                }
            }
        }
    }
    None
}

#[derive(Default, Debug)]
struct Counts {
    exact: usize,
    semantic: usize,
    unsupported: usize,
    failed: Vec<String>,
}

#[test]
fn os_ken_vectors_round_trip() {
    let root = packet_data().expect(NO_DATA);
    let mut all_failed = Vec::new();
    for dir in ["of10", "of13", "of14", "of15"] {
        let mut c = Counts::default();
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
            .expect("vector dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        for f in files {
            let name = f.file_name().unwrap().to_string_lossy().to_string();
            let bytes = std::fs::read(&f).unwrap();
            let expected = UNSUPPORTED.iter().find(|(n, _)| name.contains(n));
            match decode_frame(&bytes) {
                Err(e) => {
                    let s = format!("{e:?}");
                    match expected {
                        Some((_, want)) if s.starts_with(want) => c.unsupported += 1,
                        _ => c.failed.push(format!("{name}: decode {s}")),
                    }
                }
                Ok((h, m, n)) => {
                    if let Some((_, want)) = expected {
                        c.failed.push(format!("{name}: decoded, expected {want}"));
                        continue;
                    }
                    // A few os-ken files hold bytes past the header's length; the message
                    // is the first `n` bytes.
                    let bytes = &bytes[..n];
                    let enc = match encode(&m, h.version, h.xid) {
                        Ok(e) => e,
                        Err(e) => {
                            c.failed.push(format!("{name}: encode {e:?}"));
                            continue;
                        }
                    };
                    if enc == bytes {
                        c.exact += 1;
                        continue;
                    }
                    match decode_frame(&enc) {
                        Ok((_, m2, _)) if m2 == m => {
                            eprintln!("  semantic only: {name}");
                            c.semantic += 1
                        }
                        Ok((_, m2, _)) => c
                            .failed
                            .push(format!("{name}: re-decoded differs\n  {m:?}\n  {m2:?}")),
                        Err(e) => c.failed.push(format!("{name}: re-decode {e:?}")),
                    }
                }
            }
        }
        eprintln!(
            "{dir}: {} byte-exact, {} semantic round trips, {} unsupported (expected), {} failed",
            c.exact,
            c.semantic,
            c.unsupported,
            c.failed.len()
        );
        for f in &c.failed {
            eprintln!("  FAIL {f}");
        }
        all_failed.extend(c.failed);
    }
    assert!(all_failed.is_empty(), "{} vectors failed", all_failed.len());
}

#[test]
fn truncations_of_vectors_are_errors_not_panics() {
    let root = packet_data().expect(NO_DATA);
    for dir in ["of10", "of13", "of14", "of15"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let bytes = std::fs::read(e.unwrap().path()).unwrap();
            let n = openflow::wire::Header::parse(&bytes).map_or(0, |h| h.length as usize);
            for cut in 0..n.min(bytes.len()) {
                let r = decode_frame(&bytes[..cut]);
                assert!(matches!(
                    r,
                    Err(DecodeError::Truncated) | Err(DecodeError::BadLength)
                ));
            }
        }
    }
}
