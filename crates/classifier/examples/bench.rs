//! Classifier benchmark in the spirit of OVS's `test-classifier benchmark`.
//!
//! ```text
//! cargo run --release -p classifier --example bench -- l3_4k [--flows N] [--lookups M]
//! cargo run --release -p classifier --example bench -- random [--rules N] [--masks K]
//!     [--priorities P] [--lookups M] [--seed S]
//! options for both: --no-prefix --no-partition --single-stage
//! ```
//! Prints lookups/s, ns/lookup, the average number of subtables visited and of unwildcarded
//! bits per lookup, for direct lookups and for lookups through a `Reader` snapshot.

use std::hint::black_box;
use std::time::{Duration, Instant};

use classifier::{Classifier, Config, LookupStats, Match, Writer};
use packet::flow::{FlowKey, FLOW_KEY_WORDS};

const W: usize = FLOW_KEY_WORDS;

fn next(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

struct Opts {
    mode: String,
    flows: usize,
    rules: usize,
    masks: usize,
    priorities: u32,
    lookups: usize,
    seed: u64,
    prefix: bool,
    partition: bool,
    single_stage: bool,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        mode: "l3_4k".into(),
        flows: 4096,
        rules: 1000,
        masks: 20,
        priorities: 100,
        lookups: 4_000_000,
        seed: 1,
        prefix: true,
        partition: true,
        single_stage: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = |name: &str| -> Result<u64, String> {
            args.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} needs a number"))
        };
        match a.as_str() {
            "--flows" => o.flows = num("--flows")?.max(1) as usize,
            "--rules" => o.rules = num("--rules")? as usize,
            "--masks" => o.masks = num("--masks")?.max(1) as usize,
            "--priorities" => o.priorities = num("--priorities")?.max(1) as u32,
            "--lookups" => o.lookups = num("--lookups")?.max(1) as usize,
            "--seed" => o.seed = num("--seed")?,
            "--no-prefix" => o.prefix = false,
            "--no-partition" => o.partition = false,
            "--single-stage" => o.single_stage = true,
            "l3_4k" | "random" => o.mode = a,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(o)
}

fn config(o: &Opts) -> Config<W> {
    let mut c = Config::flow_key();
    if !o.prefix {
        c = c.without_prefix_fields();
    }
    if !o.partition {
        c = c.without_partitioning();
    }
    if o.single_stage {
        c = c.with_stages(&[W]).unwrap_or(c);
    }
    c
}

/// Rules and lookup keys of the W1 `l3_4k` table.
fn l3_4k(o: &Opts) -> (Vec<(Match<W>, u32)>, Vec<[u64; W]>) {
    let mut rules = Vec::new();
    let exact = FlowKey {
        in_port: u32::MAX,
        dl_type: u16::MAX,
        nw_dst: [255; 4],
        ..FlowKey::default()
    };
    for i in 0..4096u32 {
        let k = FlowKey {
            in_port: 1,
            dl_type: 0x0800,
            nw_dst: (0x0a00_0000u32 + i).to_be_bytes(),
            ..FlowKey::default()
        };
        rules.push((Match::from_flow(&k, &exact), 100));
    }
    let port = FlowKey {
        in_port: u32::MAX,
        ..FlowKey::default()
    };
    let k1 = FlowKey {
        in_port: 1,
        ..FlowKey::default()
    };
    rules.push((Match::from_flow(&k1, &port), 1));
    let keys = (0..o.flows as u32)
        .map(|i| {
            FlowKey {
                in_port: 1,
                dl_type: 0x0800,
                nw_src: [10, 1, 0, 1],
                nw_dst: (0x0a00_0000u32.wrapping_add(i)).to_be_bytes(),
                nw_proto: 17,
                nw_ttl: 64,
                tp_src: 1234,
                tp_dst: 5678,
                ..FlowKey::default()
            }
            .to_words()
        })
        .collect();
    (rules, keys)
}

fn rand_key(s: &mut u64) -> FlowKey {
    let r = next(s);
    FlowKey {
        in_port: (r % 8) as u32 + 1,
        metadata: (r >> 8) % 4,
        dl_type: 0x0800,
        nw_src: [10, (r >> 12) as u8 % 4, (r >> 16) as u8, (r >> 24) as u8],
        nw_dst: [10, (r >> 32) as u8 % 4, (r >> 40) as u8, (r >> 48) as u8],
        nw_proto: if r >> 56 & 1 == 0 { 6 } else { 17 },
        nw_ttl: 64,
        tp_src: (r >> 57) as u16 * 1000,
        tp_dst: [22, 80, 443, 8080][(r >> 61) as usize % 4],
        ..FlowKey::default()
    }
}

fn rand_mask(s: &mut u64) -> FlowKey {
    let r = next(s);
    let plen = |x: u64| -> [u8; 4] {
        let p = [8u32, 16, 24, 32][(x % 4) as usize];
        (u32::MAX << (32 - p)).to_be_bytes()
    };
    let mut m = FlowKey {
        dl_type: u16::MAX,
        ..FlowKey::default()
    };
    if r & 1 != 0 {
        m.in_port = u32::MAX;
    }
    if r & 2 != 0 {
        m.metadata = u64::MAX;
    }
    if r & 4 != 0 {
        m.nw_src = plen(r >> 8);
    }
    if r & 8 != 0 {
        m.nw_dst = plen(r >> 10);
    }
    if r & 16 != 0 {
        m.nw_proto = u8::MAX;
        if r & 32 != 0 {
            m.tp_dst = u16::MAX;
        }
        if r & 64 != 0 {
            m.tp_src = u16::MAX;
        }
    }
    m
}

fn random(o: &Opts) -> (Vec<(Match<W>, u32)>, Vec<[u64; W]>) {
    let mut s = o.seed;
    let masks: Vec<FlowKey> = (0..o.masks).map(|_| rand_mask(&mut s)).collect();
    let rules = (0..o.rules)
        .map(|i| {
            let m = &masks[i % masks.len()];
            let prio = (next(&mut s) % u64::from(o.priorities)) as u32;
            (Match::from_flow(&rand_key(&mut s), m), prio)
        })
        .collect();
    let keys = (0..o.flows.max(1))
        .map(|_| rand_key(&mut s).to_words())
        .collect();
    (rules, keys)
}

fn main() {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(2);
        }
    };
    let (rules, keys) = if o.mode == "l3_4k" {
        l3_4k(&o)
    } else {
        random(&o)
    };
    let (cls, w, took) = build(&o, &rules);
    println!(
        "mode={} rules={} subtables={} flows={} lookups={} prefix={} partition={} stages={}",
        o.mode,
        cls.len(),
        cls.n_subtables(),
        keys.len(),
        o.lookups,
        o.prefix,
        o.partition,
        if o.single_stage { 1 } else { 4 }
    );
    println!(
        "build: {:.2} ms batch insert ({:.0} ns/rule); writer batch+publish {:.2} ms",
        took[0].as_secs_f64() * 1e3,
        took[0].as_secs_f64() * 1e9 / rules.len().max(1) as f64,
        took[1].as_secs_f64() * 1e3
    );
    print_lookup_stats(&cls, &keys);
    time_direct(&cls, &keys, o.lookups);
    time_reader(&w, &keys, o.lookups);
}

/// The same rules into a plain classifier and into a writer (batch insert, then publish);
/// returns both and how long each took.
fn build(
    o: &Opts,
    rules: &[(Match<W>, u32)],
) -> (Classifier<u32, W>, Writer<u32, W>, [Duration; 2]) {
    let t = Instant::now();
    let mut cls: Classifier<u32, W> = Classifier::new(config(o));
    cls.batch(|b| {
        for (i, (m, p)) in rules.iter().enumerate() {
            b.insert(*m, *p, i as u32);
        }
    });
    let build = t.elapsed();
    let mut w: Writer<u32, W> = Writer::new(config(o));
    let t = Instant::now();
    w.batch(|b| {
        for (i, (m, p)) in rules.iter().enumerate() {
            b.insert(*m, *p, i as u32);
        }
    });
    let publish_build = t.elapsed();
    (cls, w, [build, publish_build])
}

/// One untimed pass over the keys: subtables visited, unwildcarded bits, hits.
fn print_lookup_stats(cls: &Classifier<u32, W>, keys: &[[u64; W]]) {
    let mut stats = LookupStats::default();
    let mut wc_bits = 0u64;
    let mut hits = 0u64;
    for k in keys {
        let mut wc = [0u64; W];
        if cls.lookup_traced(k, &mut wc, &mut stats).is_some() {
            hits += 1;
        }
        wc_bits += wc.iter().map(|w| u64::from(w.count_ones())).sum::<u64>();
    }
    let n = keys.len() as f64;
    println!(
        "per lookup: {:.2} subtables visited, {:.1} unwildcarded bits, {:.1}% hits, \
         {:.2} prefix-explained misses, {:.2} early-stage misses, {:.2} partition skips",
        stats.subtables_visited as f64 / n,
        wc_bits as f64 / n,
        100.0 * hits as f64 / n,
        stats.prefix_explained as f64 / n,
        stats.early_stage_misses as f64 / n,
        stats.partition_skips as f64 / n,
    );
}

/// Timed: `lookups` direct lookups, cycling over the keys.
fn time_direct(cls: &Classifier<u32, W>, keys: &[[u64; W]], lookups: usize) {
    let mut sum = 0u64;
    let t = Instant::now();
    for i in 0..lookups {
        let k = &keys[i % keys.len()];
        let mut wc = [0u64; W];
        let r = cls.lookup(k, &mut wc);
        sum = sum.wrapping_add(r.map_or(0, |r| u64::from(*r.payload()))) ^ wc[0];
    }
    let el = t.elapsed().as_secs_f64();
    black_box(sum);
    println!(
        "direct:   {:>6.2} Mlookups/s  {:>7.1} ns/lookup",
        lookups as f64 / el / 1e6,
        el * 1e9 / lookups as f64
    );
}

/// Timed: lookups through a reader, one snapshot load per batch of 32.
fn time_reader(w: &Writer<u32, W>, keys: &[[u64; W]], lookups: usize) {
    let reader = w.reader();
    let mut sum = 0u64;
    let t = Instant::now();
    let mut i = 0;
    while i < lookups {
        let snap = reader.load();
        for _ in 0..32 {
            let k = &keys[i % keys.len()];
            let mut wc = [0u64; W];
            let r = snap.lookup(k, &mut wc);
            sum = sum.wrapping_add(r.map_or(0, |r| u64::from(*r.payload()))) ^ wc[0];
            i += 1;
        }
    }
    let el = t.elapsed().as_secs_f64();
    black_box(sum);
    println!(
        "reader:   {:>6.2} Mlookups/s  {:>7.1} ns/lookup (snapshot load per 32)",
        i as f64 / el / 1e6,
        el * 1e9 / i as f64
    );
}
