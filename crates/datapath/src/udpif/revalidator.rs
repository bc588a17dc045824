//! The revalidator thread: rounds that re-run xlate over the installed megaflows, push their
//! statistics to the rules, expire idle ones and keep the flow limit.

use super::*;

pub(super) fn revalidator_main(u: &Udpif) {
    let mut seen_req = 0u64;
    // After a kick, look again every KICK_COALESCE_MS for a while: kicks coalesced away by
    // `kick_soon` are caught by these looks (a round with nothing changed is cheap).
    let mut hot_until = Instant::now();
    let mut last_expiry = Instant::now();
    while !u.stop.load(Ordering::Acquire) {
        let target = {
            let mut req = lock(&u.reval_req);
            if *req == seen_req {
                let wait = if Instant::now() < hot_until {
                    Duration::from_millis(KICK_COALESCE_MS)
                } else {
                    REVALIDATE_EVERY
                };
                req = match u.reval_cv.wait_timeout(req, wait) {
                    Ok((g, _)) => g,
                    Err(e) => e.into_inner().0,
                };
            }
            *req
        };
        if u.stop.load(Ordering::Acquire) {
            return;
        }
        if target != seen_req {
            hot_until = Instant::now() + KICK_HOT;
        }
        seen_req = target;
        counted_round(u);
        if !u.port_changes.1.is_empty() || !u.learned.1.is_empty() {
            // Queued while a write session was open and none came since.
            drop(u.try_of());
        }
        if last_expiry.elapsed() >= EXPIRE_EVERY {
            last_expiry = Instant::now();
            // Rule expiry needs a write session: take one only if it is free; otherwise the
            // control plane's next session runs it (`expiry_due`). Never wait for it.
            let expired = match u.try_of() {
                Some(mut of) => {
                    u.expiry_due.store(false, Ordering::Release);
                    of.expire(clock::now_ms())
                }
                None => {
                    u.expiry_due.store(true, Ordering::Release);
                    0
                }
            };
            if expired > 0 {
                // Their megaflows go in another round at once.
                counted_round(u);
            }
            // Expired connections: off the poll threads, bounded work per round.
            crate::ct::sweep(clock::now_ms(), 100_000);
            // Fragment lists not complete in time.
            crate::ipf::sweep(clock::now_ms());
        }
        let mut d = lock(&u.reval_done);
        *d = (*d).max(target);
        u.done_cv.notify_all();
    }
}

/// A round [`Udpif::sync`] may count on: run under its lock, and counted.
fn counted_round(u: &Udpif) {
    let _g = lock(&u.round_lock);
    u.rounds_begun.fetch_add(1, Ordering::SeqCst);
    round(u);
}

/// One revalidation round (see the module documentation).
pub fn round(u: &Udpif) {
    let t0 = Instant::now();
    let now = clock::now_ms();
    let flows: Vec<Arc<Megaflow>> = u.idx().iter().cloned().collect();
    let max_idle = u.max_idle_ms.load(Ordering::Relaxed);
    let mut kill: Vec<Arc<Megaflow>> = Vec::new();
    // Tunnels, routes or neighbours changed: `tnl_pop` decisions may have.
    let tgen = netdev::tunnel::table::generation();
    let tunnels_changed = u.tnl_gen.swap(tgen, Ordering::Relaxed) != tgen;
    // One snapshot per chunk: a write session that must change the copy this round reads
    // waits for one chunk at most, and later chunks see its changes.
    for chunk in flows.chunks(REVALIDATE_CHUNK) {
        let of = u.snapshot();
        let version = of.version();
        for mf in chunk {
            if mf.is_dead() {
                continue;
            }
            let used = push_stats(&of, mf);
            let last = used.max(mf.created_ms);
            if now.saturating_sub(last) > max_idle {
                u.stats.killed_idle.fetch_add(1, Ordering::Relaxed);
                kill.push(Arc::clone(mf));
                continue;
            }
            if tunnels_changed || mf.version.load(Ordering::Relaxed) < version {
                u.stats.revalidations.fetch_add(1, Ordering::Relaxed);
                if !still_valid(&of, mf) {
                    u.stats.killed_changed.fetch_add(1, Ordering::Relaxed);
                    kill.push(Arc::clone(mf));
                } else {
                    mf.version.store(version, Ordering::Relaxed);
                }
            }
        }
    }
    let alive = flows.len().saturating_sub(kill.len());
    over_limit(u, &flows, &mut kill, alive);
    if !kill.is_empty() {
        for m in &kill {
            m.dead.store(true, Ordering::Release);
        }
        let mut idx = u.idx();
        for m in &kill {
            idx.remove(m);
        }
    }
    adjust_flow_limit(u, t0.elapsed().as_millis() as u64, alive);
    u.stats.rounds.fetch_add(1, Ordering::Relaxed);
    u.stats
        .last_round_us
        .store(t0.elapsed().as_micros() as u64, Ordering::Relaxed);
}

/// Pushes the megaflow's new counters to the rules and groups it came from; returns when
/// it was last used.
fn push_stats(of: &Snapshot<'_>, mf: &Megaflow) -> u64 {
    let p = mf.packets.load(Ordering::Relaxed);
    let b = mf.bytes.load(Ordering::Relaxed);
    let used = mf.used_ms.load(Ordering::Relaxed);
    let mut pushed = lock(&mf.pushed);
    let (dp, db) = (p.saturating_sub(pushed.0), b.saturating_sub(pushed.1));
    if dp > 0 {
        for r in &mf.rules {
            r.credit(dp, db, used);
        }
        for &(g, bk) in &mf.buckets {
            if let Some(grp) = of.groups().get(&g) {
                grp.stats.credit(bk, dp, db);
            }
        }
        *pushed = (p, b);
    }
    used
}

/// Whether xlate, run again on the current tables, gives the megaflow's mask, actions,
/// rules and buckets. Same actions from other rules (a new rule shadowing an old one with
/// the same treatment) must still change the megaflow: its counters belong to the new rule.
fn still_valid(of: &Snapshot<'_>, mf: &Megaflow) -> bool {
    let x = ofproto::xlate(of, &mf.flow, None, None);
    let same_rules = x.rules.len() == mf.rules.len()
        && x.rules
            .iter()
            .zip(&mf.rules)
            .all(|(a, b)| Arc::ptr_eq(a, b));
    !(x.uncacheable
        || x.wc.to_words() != mf.mask
        || x.actions != mf.actions
        || !same_rules
        || x.buckets != mf.buckets)
}

/// Over the flow limit: the least recently used of the `alive` megaflows join `kill`.
fn over_limit(u: &Udpif, flows: &[Arc<Megaflow>], kill: &mut Vec<Arc<Megaflow>>, alive: usize) {
    let limit = u.flow_limit.load(Ordering::Relaxed);
    if alive > limit {
        let mut live: Vec<&Arc<Megaflow>> = flows
            .iter()
            .filter(|m| !kill.iter().any(|k| k.id == m.id))
            .collect();
        live.sort_by_key(|m| m.used_ms.load(Ordering::Relaxed).max(m.created_ms));
        for m in live.into_iter().take(alive - limit) {
            u.stats.killed_limit.fetch_add(1, Ordering::Relaxed);
            kill.push(Arc::clone(m));
        }
    }
}

/// The dynamic flow limit (OVS's rule): shrink when a round (`dur_ms`) is slow, grow when
/// it is fast and the flows fill the limit.
fn adjust_flow_limit(u: &Udpif, dur_ms: u64, alive: usize) {
    let max = u.max_flow_limit.load(Ordering::Relaxed);
    let cur = u.flow_limit.load(Ordering::Relaxed);
    let next = if dur_ms > 2000 {
        cur / (dur_ms / 1000).max(1) as usize
    } else if dur_ms > 1300 {
        cur * 3 / 4
    } else if dur_ms < 1000 && alive > cur * 3 / 4 {
        cur + 1000
    } else {
        cur
    };
    u.flow_limit
        .store(next.clamp(1000.min(max), max), Ordering::Relaxed);
}
