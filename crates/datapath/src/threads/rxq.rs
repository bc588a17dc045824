//! Receive-queue placement: which poll thread polls which queue, measured loads, affinity
//! and rebalancing (see the parent module's documentation for the rules).

use super::State;
use crate::error::Error;
use crate::report::{PmdRxqReport, RxqLoad};
use std::collections::BTreeMap;

/// The length of a load-measurement interval (see [`Datapath::tick`]).
pub const MEASURE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// How unpinned receive queues are spread over poll threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assign {
    Cycles,
    RoundRobin,
}

impl std::str::FromStr for Assign {
    type Err = Error;
    fn from_str(s: &str) -> Result<Assign, Error> {
        match s {
            "cycles" | "group" => Ok(Assign::Cycles),
            "roundrobin" => Ok(Assign::RoundRobin),
            _ => Err(Error::Setting {
                key: "pmd-rxq-assign",
                msg: format!("'{s}' is not one of cycles, group, roundrobin"),
            }),
        }
    }
}

/// Automatic load balancing settings (OVS's `pmd-auto-lb*` keys).
#[derive(Clone, Copy, Debug)]
pub struct AutoLb {
    pub enabled: bool,
    /// Busiest thread's busy percentage above which a rebalance is considered.
    pub load_threshold: u64,
    /// Required cut in the busy-percentage spread between threads, in percent.
    pub improvement_threshold: u64,
}

impl Default for AutoLb {
    fn default() -> Self {
        AutoLb {
            enabled: false,
            load_threshold: 95,
            improvement_threshold: 25,
        }
    }
}

/// One receive queue and where it is polled.
#[derive(Clone, Debug)]
pub struct RxqRec {
    pub bridge: String,
    pub port: String,
    pub slot: u16,
    pub q: u16,
    /// Index of the poll thread that polls it.
    pub pmd: usize,
    /// The core `pmd-rxq-affinity` asked for, if any.
    pub pinned: Option<usize>,
    /// Cycles it used in the last measured interval, and its cycle counter then.
    pub load: u64,
    mark: u64,
}

/// Parses `pmd-cpu-mask` (hex, optional 0x) into core numbers.
pub fn parse_cpu_mask(s: &str) -> Result<Vec<usize>, Error> {
    let bad = |msg: String| Error::Setting {
        key: "pmd-cpu-mask",
        msg,
    };
    let h = s.trim().trim_start_matches("0x").trim_start_matches("0X");
    if h.is_empty() || h.len() > 64 || !h.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(bad(format!("'{s}' is not a hexadecimal CPU mask")));
    }
    let mut cores = Vec::new();
    for (i, c) in h.chars().rev().enumerate() {
        let v = c.to_digit(16).unwrap_or(0) as usize;
        for bit in 0..4 {
            if v & (1 << bit) != 0 {
                cores.push(i * 4 + bit);
            }
        }
    }
    if cores.is_empty() {
        return Err(bad(format!("'{s}' selects no core")));
    }
    Ok(cores)
}

/// Parses `pmd-rxq-affinity` (`QUEUE:CORE[,QUEUE:CORE...]`).
pub fn parse_affinity(s: &str) -> Result<BTreeMap<u16, usize>, Error> {
    let bad = |msg: String| Error::Setting {
        key: "pmd-rxq-affinity",
        msg,
    };
    let mut m = BTreeMap::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (q, c) = part
            .split_once(':')
            .ok_or_else(|| bad(format!("'{part}' is not QUEUE:CORE")))?;
        let q: u16 = q
            .trim()
            .parse()
            .map_err(|_| bad(format!("bad queue '{q}'")))?;
        let c: usize = c
            .trim()
            .parse()
            .map_err(|_| bad(format!("bad core '{c}'")))?;
        m.insert(q, c);
    }
    Ok(m)
}

impl State {
    /// Sets `pmd-rxq-affinity` for port `port` (empty: none) and reassigns.
    pub fn set_affinity(&mut self, port: &str, spec: &str) -> Result<(), Error> {
        let m = parse_affinity(spec)?;
        let changed = if m.is_empty() {
            self.affinity.remove(port).is_some()
        } else {
            self.affinity.insert(port.to_string(), m.clone()) != Some(m)
        };
        if changed {
            for r in self.rxqs.iter_mut().filter(|r| r.port == port) {
                r.pinned = self.affinity.get(port).and_then(|a| a.get(&r.q)).copied();
            }
            self.rebalance()?;
        }
        Ok(())
    }

    /// Records the queues of `br`'s ports that are not known yet and places them.
    pub(super) fn add_rxqs_of(&mut self, br: &str) -> Result<(), Error> {
        let b = br.to_string();
        let found = self.call(move |sw| {
            sw.rxq_loads()
                .into_iter()
                .filter(|r| r.0 == b)
                .collect::<Vec<_>>()
        })?;
        let mut new = false;
        for (bridge, slot, port, q, cycles, _) in found {
            if self
                .rxqs
                .iter()
                .any(|r| r.bridge == bridge && r.slot == slot && r.q == q)
            {
                continue;
            }
            let pinned = self.affinity.get(&port).and_then(|a| a.get(&q)).copied();
            self.rxqs.push(RxqRec {
                bridge,
                port,
                slot,
                q,
                pmd: 0,
                pinned,
                load: 0,
                mark: cycles,
            });
            new = true;
        }
        if new {
            self.rebalance()?;
        }
        Ok(())
    }

    /// Moves queue record `i` to thread `to`. Returns false (and leaves it) if its port
    /// cannot give the queue up.
    pub(super) fn move_rxq(&mut self, i: usize, to: usize) -> bool {
        let r = self.rxqs[i].clone();
        if r.pmd == to {
            return true;
        }
        let b = r.bridge.clone();
        let taken = self
            .call_on(r.pmd, move |sw| sw.take_rxq(&b, r.slot, r.q))
            .ok()
            .flatten();
        let Some((st, load)) = taken else {
            return false;
        };
        let b = r.bridge.clone();
        let back = self
            .call_on(to, move |sw| sw.put_rxq(&b, r.slot, r.q, st, load))
            .ok();
        match back {
            Some(Ok(())) => {
                self.rxqs[i].pmd = to;
                true
            }
            Some(Err(st)) => {
                // Put it back where it was.
                let b = r.bridge.clone();
                let _ = self.call_on(r.pmd, move |sw| sw.put_rxq(&b, r.slot, r.q, st, load));
                false
            }
            None => false,
        }
    }

    /// The assignment the current loads and settings call for: a thread index per queue.
    pub(super) fn plan(&self) -> Vec<usize> {
        let n = self.pmds.len();
        let mut target: Vec<Option<usize>> = vec![None; self.rxqs.len()];
        let mut isolated = vec![false; n];
        let eligible = |r: &RxqRec| -> Vec<usize> {
            if self.is_replicated(&r.bridge) {
                (0..n).collect()
            } else {
                vec![0]
            }
        };
        for (i, r) in self.rxqs.iter().enumerate() {
            let Some(core) = r.pinned else { continue };
            if let Some(k) = eligible(r)
                .into_iter()
                .find(|&k| self.pmds[k].core == Some(core))
            {
                target[i] = Some(k);
                isolated[k] = true;
            }
        }
        let mut order: Vec<usize> = (0..self.rxqs.len())
            .filter(|&i| target[i].is_none())
            .collect();
        let mut load = vec![0u64; n];
        let mut count = vec![0usize; n];
        match self.assign {
            Assign::RoundRobin => {
                order.sort_by(|&a, &b| {
                    let (x, y) = (&self.rxqs[a], &self.rxqs[b]);
                    (&x.bridge, &x.port, x.q).cmp(&(&y.bridge, &y.port, y.q))
                });
                let mut next = 0usize;
                for i in order {
                    let el: Vec<usize> = eligible(&self.rxqs[i])
                        .into_iter()
                        .filter(|&k| !isolated[k])
                        .collect();
                    let k = if el.is_empty() {
                        0
                    } else {
                        let k = el[next % el.len()];
                        next += 1;
                        k
                    };
                    target[i] = Some(k);
                }
            }
            Assign::Cycles => {
                order.sort_by(|&a, &b| {
                    let (x, y) = (&self.rxqs[a], &self.rxqs[b]);
                    y.load
                        .cmp(&x.load)
                        .then((&x.bridge, &x.port, x.q).cmp(&(&y.bridge, &y.port, y.q)))
                });
                for i in order {
                    let el: Vec<usize> = eligible(&self.rxqs[i])
                        .into_iter()
                        .filter(|&k| !isolated[k])
                        .collect();
                    let k = el
                        .into_iter()
                        .min_by_key(|&k| (load[k], count[k], k))
                        .unwrap_or(0);
                    load[k] += self.rxqs[i].load;
                    count[k] += 1;
                    target[i] = Some(k);
                }
            }
        }
        target.into_iter().map(|t| t.unwrap_or(0)).collect()
    }

    /// Reassigns every queue by the current settings and the last measured loads.
    pub fn rebalance(&mut self) -> Result<(), Error> {
        let plan = self.plan();
        self.apply(plan)
    }

    /// Moves queues to the threads of `plan`, then starts polling every queue still parked
    /// where it is.
    pub(super) fn apply(&mut self, plan: Vec<usize>) -> Result<(), Error> {
        for (i, to) in plan.into_iter().enumerate() {
            self.move_rxq(i, to);
        }
        for r in self.rxqs.clone() {
            let b = r.bridge.clone();
            self.call_on(r.pmd, move |sw| sw.unpark_rxq(&b, r.slot, r.q))?;
        }
        Ok(())
    }

    /// Measures each queue's and each thread's load since the last measurement.
    pub fn measure(&mut self) -> Result<(), Error> {
        let per = self.call_all(|sw| {
            let st = sw.pmd;
            (
                sw.rxq_loads(),
                st.busy_cycles,
                st.busy_cycles + st.idle_cycles,
            )
        })?;
        for (k, (loads, busy, total)) in per.into_iter().enumerate() {
            for (bridge, slot, _, q, cycles, _) in loads {
                if let Some(r) = self
                    .rxqs
                    .iter_mut()
                    .find(|r| r.bridge == bridge && r.slot == slot && r.q == q)
                {
                    r.load = cycles.saturating_sub(r.mark);
                    r.mark = cycles;
                }
            }
            let p = &mut self.pmds[k];
            let (db, dt) = (
                busy.saturating_sub(p.mark.0),
                total.saturating_sub(p.mark.1),
            );
            p.busy_pct = (db * 100).checked_div(dt).unwrap_or(0);
            p.mark = (busy, total);
        }
        self.measured = std::time::Instant::now();
        Ok(())
    }

    /// Measures, and rebalances if the busiest thread is over the load threshold and the new
    /// assignment cuts the spread of thread loads by the improvement threshold. Returns
    /// true if it moved queues.
    pub fn auto_rebalance(&mut self) -> Result<bool, Error> {
        self.measure()?;
        if !self.auto_lb.enabled || self.pmds.len() < 2 {
            return Ok(false);
        }
        let busiest = self.pmds.iter().map(|p| p.busy_pct).max().unwrap_or(0);
        if busiest < self.auto_lb.load_threshold {
            return Ok(false);
        }
        // (spread between the most and least loaded thread, load of the most loaded)
        let spread = |assign: &[usize]| -> (u64, u64) {
            let mut l = vec![0u64; self.pmds.len()];
            for (r, &k) in self.rxqs.iter().zip(assign) {
                l[k] += r.load;
            }
            let hi = l.iter().max().copied().unwrap_or(0);
            (hi - l.iter().min().copied().unwrap_or(0), hi)
        };
        let now: Vec<usize> = self.rxqs.iter().map(|r| r.pmd).collect();
        let plan = self.plan();
        let ((a, hi), (b, _)) = (spread(&now), spread(&plan));
        // Threads within 5% of each other are balanced: moving queues then only churns.
        if a == 0 || a * 100 < hi * 5 {
            return Ok(false);
        }
        if b * 100 > a * (100 - self.auto_lb.improvement_threshold.min(100)) {
            return Ok(false);
        }
        self.apply(plan)?;
        Ok(true)
    }

    /// The queues and where they are.
    pub fn rxqs(&self) -> &[RxqRec] {
        &self.rxqs
    }

    /// What `dpif-netdev/pmd-rxq-show` presents: each thread's queues and their share of its
    /// cycles in the last measured interval (measured anew if that is older than
    /// [`MEASURE_EVERY`]).
    pub fn rxq_report(&mut self) -> Result<Vec<PmdRxqReport>, Error> {
        if self.measured.elapsed() >= MEASURE_EVERY {
            self.measure()?;
        }
        let mut out = Vec::with_capacity(self.pmds.len());
        for (k, p) in self.pmds.iter().enumerate() {
            let mut mine: Vec<&RxqRec> = self.rxqs.iter().filter(|r| r.pmd == k).collect();
            let interval_total: u64 = mine.iter().map(|r| r.load).sum::<u64>().max(1);
            let isolated = mine
                .iter()
                .any(|r| r.pinned.is_some() && r.pinned == p.core);
            mine.sort_by(|a, b| (&a.port, a.q).cmp(&(&b.port, b.q)));
            let rxqs = mine
                .into_iter()
                .map(|r| RxqLoad {
                    bridge: r.bridge.clone(),
                    port: r.port.clone(),
                    queue: r.q,
                    usage_pct: r.load * p.busy_pct / interval_total,
                    cycles: r.load,
                    pinned: r.pinned,
                })
                .collect();
            out.push(PmdRxqReport {
                core_id: p.core,
                isolated,
                busy_pct: p.busy_pct,
                rxqs,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_affinity_parse() {
        assert_eq!(parse_cpu_mask("0x6"), Ok(vec![1, 2]));
        assert_eq!(parse_cpu_mask("11"), Ok(vec![0, 4]));
        assert!(parse_cpu_mask("0").is_err());
        assert!(parse_cpu_mask("xyz")
            .unwrap_err()
            .to_string()
            .contains("pmd-cpu-mask"));
        let a = parse_affinity("0:3, 1:7").expect("parse");
        assert_eq!(a.get(&0), Some(&3));
        assert_eq!(a.get(&1), Some(&7));
        assert!(parse_affinity("0-3")
            .unwrap_err()
            .to_string()
            .contains("QUEUE:CORE"));
        assert!(parse_affinity("").expect("empty").is_empty());
    }
}
