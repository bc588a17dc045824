//! The [`Port`] implementation over the AF_XDP sockets.

use super::*;

impl Port for AfxdpPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        KIND
    }

    fn rx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) -> usize {
        let nq = self.queues.len();
        let mut n = 0;
        for i in 0..nq {
            if batch.is_full() {
                break;
            }
            let q = (self.next_rxq + i) % nq;
            if self.held[q] {
                n += lock_q(&self.queues[q]).rx(pool, batch, &mut self.stats);
            }
        }
        self.next_rxq = (self.next_rxq + 1) % nq.max(1);
        n
    }

    #[inline]
    fn rxq_batch(&mut self, q: usize, pool: &mut Pool, batch: &mut Batch) -> usize {
        match (self.held.get(q), self.queues.get(q)) {
            (Some(true), Some(x)) => lock_q(x).rx(pool, batch, &mut self.stats),
            _ => 0,
        }
    }

    fn n_rxq(&self) -> usize {
        self.queues.len().max(1)
    }

    fn rxq_fd(&self, q: usize) -> Option<std::os::fd::RawFd> {
        match self.held.get(q) {
            Some(true) => self.fds.get(q).copied(),
            _ => None,
        }
    }

    fn share(&mut self) -> Option<Box<dyn Port>> {
        if self.queues.is_empty() {
            return None;
        }
        let ctl = self.ctl.try_clone().ok()?;
        let link = LinkCache::new(ctl.as_raw_fd(), &self.name, self.link.mtu());
        // Handles holding no queue spread their transmissions over the sockets (`tx_q` is
        // taken modulo the number of queues where it is used).
        self.tx_q = self.tx_q.wrapping_add(1);
        Some(Box::new(AfxdpPort {
            name: self.name.clone(),
            ifindex: self.ifindex,
            mac: self.mac,
            mode: self.mode,
            cfg: self.cfg,
            attach: None,
            queues: self.queues.clone(),
            fds: self.fds.clone(),
            held: vec![false; self.queues.len()],
            tx_q: self.tx_q % self.queues.len(),
            ctl,
            link,
            stats: PortStats::default(),
            next_rxq: 0,
        }))
    }

    fn take_rxq(&mut self, q: usize) -> Option<RxqState> {
        match self.held.get_mut(q) {
            Some(h @ true) => {
                *h = false;
                Some(Box::new(AfxdpRxq))
            }
            _ => None,
        }
    }

    fn put_rxq(&mut self, q: usize, s: RxqState) -> Result<(), RxqState> {
        match self.held.get_mut(q) {
            Some(h @ false) if s.is::<AfxdpRxq>() => {
                *h = true;
                Ok(())
            }
            _ => Err(s),
        }
    }

    fn tx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) {
        let max_len = self.link.mtu() as usize + 14;
        // A queue this handle receives on (no other thread uses its socket then), else the
        // one assigned to it.
        let q = match self.held.iter().position(|h| *h) {
            Some(q) => q,
            None => self.tx_q % self.queues.len().max(1),
        };
        match self.queues.get(q) {
            Some(x) => lock_q(x).tx(pool, batch, &mut self.stats, max_len),
            None => {
                self.stats.tx_dropped += batch.len() as u64;
                pool.free_batch(batch);
            }
        }
    }

    fn stats(&self) -> PortStats {
        let mut s = self.stats;
        // The sockets' own counters are reported once, by the handle that attached them.
        if self.attach.is_some() {
            for q in &self.queues {
                let q = lock_q(q);
                if let Some(k) = q.kernel_stats() {
                    s.rx_dropped += k.rx_dropped + k.rx_ring_full;
                    if q.is_zerocopy() {
                        s.rx_dropped += k.rx_fill_ring_empty_descs;
                    }
                    s.rx_errors += k.rx_invalid_descs;
                    s.tx_errors += k.tx_invalid_descs;
                }
            }
        }
        s
    }

    fn link_state(&self) -> LinkState {
        if self.queues.is_empty() {
            return LinkState::Down;
        }
        self.link.state(&self.ctl, &self.name)
    }

    fn mac(&self) -> Option<[u8; 6]> {
        Some(self.mac)
    }

    fn ifindex(&self) -> Option<u32> {
        Some(self.ifindex)
    }

    fn options(&self) -> Vec<(String, String)> {
        let mut o = vec![("xdp-mode".to_string(), self.cfg.mode.to_string())];
        if self.cfg.n_rxq != 1 {
            o.push(("n_rxq".into(), self.cfg.n_rxq.to_string()));
        }
        if !self.cfg.need_wakeup {
            o.push(("use-need-wakeup".into(), "false".into()));
        }
        if self.cfg.ring != RING_SIZE {
            o.push(("ring-size".into(), self.cfg.ring.to_string()));
        }
        o
    }

    fn close(&mut self) {
        // Counters of the kernel sockets die with them: keep them.
        self.stats = self.stats();
        // Detach first, then close sockets and unmap (when no other handle holds them).
        self.attach = None;
        self.queues.clear();
    }
}

impl Drop for AfxdpPort {
    fn drop(&mut self) {
        self.attach = None;
    }
}
