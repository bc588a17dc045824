//! `ferrovs-bench`: benchmark inputs and in-memory datapath runs.
//!
//! * `ferrovs-bench gen-w1 --flows N --out FILE` writes the W1 input pcap.

mod w1gen;

use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!("usage: ferrovs-bench gen-w1 --flows N --out FILE");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("gen-w1") => {
            let mut flows = None;
            let mut out = None;
            let mut it = args[1..].iter();
            while let Some(a) = it.next() {
                match a.as_str() {
                    "--flows" => flows = it.next().and_then(|v| v.parse::<u32>().ok()),
                    "--out" => out = it.next().cloned(),
                    _ => return usage(),
                }
            }
            let (Some(flows), Some(out)) = (flows, out) else {
                return usage();
            };
            let f = match std::fs::File::create(&out) {
                Ok(f) => f,
                Err(e) => {
                    eprintln!("gen-w1: {out}: {e}");
                    return ExitCode::FAILURE;
                }
            };
            if let Err(e) = w1gen::write_w1(std::io::BufWriter::new(f), flows) {
                eprintln!("gen-w1: {out}: {e}");
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        _ => usage(),
    }
}
