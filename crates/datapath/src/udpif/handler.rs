//! The handler threads: an upcall's xlate, its megaflow installed, its answer sent back.

use super::*;

/// Starts the handler and revalidator threads for `udpif`.
pub(super) fn start(udpif: Arc<Udpif>) -> std::io::Result<Slowpath> {
    let (up_tx, up_rx) = bounded::<Box<Upcall>>(UPCALL_QUEUE);
    let h = Arc::clone(&udpif);
    let handler = std::thread::Builder::new()
        .name("handler".into())
        .spawn(move || handler_main(&h, up_rx))?;
    let r = Arc::clone(&udpif);
    let revalidator = match std::thread::Builder::new()
        .name("revalidator".into())
        .spawn(move || revalidator_main(&r))
    {
        Ok(t) => t,
        Err(e) => {
            udpif.stop.store(true, Ordering::Release);
            let _ = handler.join();
            return Err(e);
        }
    };
    udpif.revalidating.store(true, Ordering::Release);
    Ok(Slowpath {
        udpif,
        upcalls: up_tx,
        threads: vec![handler, revalidator],
    })
}

pub(super) fn handler_main(u: &Udpif, rx: Receiver<Box<Upcall>>) {
    let mut batch: Vec<Box<Upcall>> = Vec::with_capacity(64);
    while !u.stop.load(Ordering::Acquire) {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(first) => {
                u.handling.fetch_add(1, Ordering::AcqRel);
                batch.push(first)
            }
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        }
        while batch.len() < 64 {
            match rx.try_recv() {
                Ok(x) => {
                    u.handling.fetch_add(1, Ordering::AcqRel);
                    batch.push(x)
                }
                Err(_) => break,
            }
        }
        for up in batch.drain(..) {
            let reply = up.reply.clone();
            let c = handle(u, up);
            // A lane whose poll thread went away drops the packet with its receiver.
            let _ = reply.send(c);
            u.handling.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

pub(super) fn handle(u: &Udpif, up: Box<Upcall>) -> Completed {
    let up = *up;
    u.stats.upcalls.fetch_add(1, Ordering::Relaxed);
    let now = clock::now_ms();
    let words = up.key.to_words();
    let mut idx = u.idx();
    let lane = idx.lanes.entry(up.pmd).or_default();
    if let Some(mf) = lane.peek(&words).cloned() {
        u.stats.reused.fetch_add(1, Ordering::Relaxed);
        return Completed {
            pkt: up.pkt,
            key: up.key,
            in_slot: up.in_slot,
            actions: Vec::new(),
            megaflow: Some(mf),
            install: false,
        };
    }
    let (x, version) = {
        let of = u.snapshot();
        u.stats.xlates.fetch_add(1, Ordering::Relaxed);
        (
            ofproto::xlate(&of, &up.key, Some(up.pkt.data()), None),
            of.version(),
        )
    };
    let limit = u.flow_limit.load(Ordering::Relaxed);
    if x.uncacheable || idx.len() >= limit {
        if x.uncacheable {
            u.stats.not_cached.fetch_add(1, Ordering::Relaxed);
        } else {
            u.stats.flow_limit_hits.fetch_add(1, Ordering::Relaxed);
        }
        let len = up.pkt.len() as u64;
        for r in &x.rules {
            r.credit(1, len, now);
        }
        return Completed {
            pkt: up.pkt,
            key: up.key,
            in_slot: up.in_slot,
            actions: x.actions,
            megaflow: None,
            install: false,
        };
    }
    idx.next_id += 1;
    let mut mf = Megaflow::new(
        idx.next_id,
        up.key,
        x.wc,
        x.actions,
        x.rules,
        x.buckets,
        version,
        now,
    );
    mf.pmd = up.pmd;
    let mf = Arc::new(mf);
    idx.lanes.entry(up.pmd).or_default().insert(Arc::clone(&mf));
    u.stats.installed.fetch_add(1, Ordering::Relaxed);
    Completed {
        pkt: up.pkt,
        key: up.key,
        in_slot: up.in_slot,
        actions: Vec::new(),
        megaflow: Some(mf),
        install: true,
    }
}
