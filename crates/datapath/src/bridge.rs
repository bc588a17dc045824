//! A bridge: its ports, its switching-logic module, and the fabric that moves packets between
//! them.
//!
//! ## The forwarding pass (one contract for every module)
//! For each received batch: stamp every packet with its ingress slot and hand the batch to
//! the module's [`SwitchLogic::forward`] with a [`Delivery`] sink; the module hands every
//! packet (or copies, or nothing) to the sink, which moves each into the output batch of its
//! destination port; then each touched port's batch is sent in one burst. Modules that pick
//! one destination per packet use [`Delivery::by_dest`]: all destinations of the batch at
//! once, then one walk moving each packet to its port (flooding copies it into each other
//! port's batch, the last copy being the original) — mSwitch's two passes. Output batches
//! that fill up mid-pass are sent early. No allocation happens on this path: batches, the
//! destination array and the list of touched ports are all sized once.
//!
//! The pass has two instantiations (`forward_pass::<TRACE>`): the normal one, and the
//! traced one ([`watched`]) that hands the module one watched packet at a time and reads
//! where it went, for the fast-path trace ([`trace`], `pmd-trace`) and for packet samples.
//! A batch pays one test to choose.
//!
//! ## Ports
//! Ports live in dense slots (`u16` indices) so that per-packet work indexes arrays instead of
//! hashing names. A slot is reused after its port is removed; the module is told of removals
//! and additions so stale state never points at a new port. Each port also has an OpenFlow
//! port number (`ofport`), the number users see: requested with `ofport=N` or the lowest free
//! one from 1; the bridge's own internal port is `LOCAL` (65534), as in OVS.
//!
//! ## Mirrors
//! Port mirroring ([`crate::mirror`]) copies received batches before the module sees them and
//! output batches just before they are sent; a bridge without mirrors pays one test per batch.
//! Packet sampling ([`crate::sample`], for sFlow) sees each received batch after the mirror
//! check; a bridge without a sampler pays one test per batch too, and a batch without a
//! sample one more. A batch with samples takes the traced pass ([`watched`]), which tells each
//! sample where the module sent its packet.

use crate::mirror::{MirrorSpec, MirrorStats, Mirrors};
use crate::module::{Ctx, Dest, ModuleError, PortInfo, PortLookup, SwitchLogic, VlanMode};
use crate::sample::Sampler;
use netdev::{Port, PortStats};
use packet::{Batch, Pool, MAX_BATCH};

mod deliver;
mod mirrored;
pub mod trace;
mod watched;

pub use deliver::Delivery;

/// The ofport of a bridge's own internal port in the bridge's numbering (OVSDB's `ofport`
/// column, the number OpenFlow 1.0 gives `OFPP_LOCAL`). It is the one definition of that
/// number in this numbering space; OpenFlow 1.1+ numbers the same port
/// [`ofproto::OFPP_LOCAL`] (0xfffffffe, defined once in `openflow::actions`), and
/// `ofmodule::to_of` maps one to the other (as OVS keeps `ODPP_LOCAL` and `OFPP_LOCAL`
/// apart).
pub const LOCAL_OFPORT: u32 = 65534;
/// The in-port of a delivery pass whose packets did not come from one port (packets back
/// from a slow path, packet-outs): no port is excluded from a flood.
const NO_PORT: u16 = u16::MAX;
/// The largest ofport a user may request (OpenFlow 1.0's `OFPP_MAX`).
pub const MAX_OFPORT: u32 = 0xff00;

/// A port attached to a bridge.
pub struct PortSlot {
    pub port: Box<dyn Port>,
    pub ofport: u32,
    pub vlan: VlanMode,
    /// Carrier state last reported to the module.
    pub up: bool,
}

impl PortSlot {
    fn info(&self, idx: u16) -> PortInfo {
        PortInfo {
            idx,
            ofport: self.ofport,
            name: self.port.name().to_string(),
            vlan: self.vlan.clone(),
        }
    }
}

/// Fabric counters of a bridge.
#[derive(Clone, Copy, Debug, Default)]
pub struct BridgeStats {
    /// Packets the module chose to drop.
    pub module_drops: u64,
    /// Extra copies made for flooding.
    pub flood_copies: u64,
    /// Copies that could not be made (pool empty).
    pub copy_failures: u64,
    /// Packets for a destination slot that no longer exists.
    pub stale_dest: u64,
    /// Output bursts handed to ports.
    pub tx_bursts: u64,
    /// Packets handed to ports.
    pub tx_packets: u64,
}

/// A receive queue this bridge polls, with the load it measured.
#[derive(Clone, Copy, Debug)]
pub struct RxEntry {
    pub slot: u16,
    pub q: u16,
    /// Cycles spent receiving and forwarding this queue's non-empty batches.
    pub cycles: u64,
    pub packets: u64,
}

/// See the module documentation.
pub struct Bridge {
    pub name: String,
    pub module: Box<dyn SwitchLogic>,
    slots: Vec<Option<PortSlot>>,
    rx_list: Vec<RxEntry>,
    /// Queues attached but not polled yet (waiting to be placed on a poll thread).
    parked: Vec<RxEntry>,
    live: Vec<u16>,
    out: Vec<Batch>,
    touched: Vec<u16>,
    dests: Vec<Dest>,
    rxb: Batch,
    pub stats: BridgeStats,
    mirrors: Option<Box<Mirrors>>,
    /// Packet samplers by owner (sFlow, IPFIX), usually none.
    samplers: Vec<(&'static str, Sampler)>,
    /// The rest of a watched batch while it is handed to the module in pieces (see
    /// [`watched`]).
    sample_rest: Batch,
    /// The fast-path trace, while one is armed or has records ([`trace`]).
    trace: Option<Box<trace::Trace>>,
}

struct SlotsView<'a>(&'a [Option<PortSlot>]);

impl PortLookup for SlotsView<'_> {
    fn resolve(&self, s: &str) -> Option<PortInfo> {
        let by_num = if s.eq_ignore_ascii_case("LOCAL") {
            Some(LOCAL_OFPORT)
        } else {
            s.parse::<u32>().ok()
        };
        self.0.iter().enumerate().find_map(|(i, sl)| {
            let sl = sl.as_ref()?;
            if sl.port.name() == s || Some(sl.ofport) == by_num {
                Some(sl.info(i as u16))
            } else {
                None
            }
        })
    }

    fn info(&self, idx: u16) -> Option<PortInfo> {
        self.0
            .get(idx as usize)
            .and_then(|s| s.as_ref())
            .map(|s| s.info(idx))
    }
}

impl Bridge {
    /// A bridge with no ports.
    pub fn new(name: &str, module: Box<dyn SwitchLogic>) -> Bridge {
        Bridge {
            name: name.to_string(),
            module,
            slots: Vec::new(),
            rx_list: Vec::new(),
            parked: Vec::new(),
            live: Vec::new(),
            out: Vec::new(),
            touched: Vec::with_capacity(64),
            dests: vec![Dest::Drop; MAX_BATCH],
            rxb: Batch::new(),
            stats: BridgeStats::default(),
            mirrors: None,
            samplers: Vec::new(),
            sample_rest: Batch::new(),
            trace: None,
        }
    }

    /// Sets or (with `None`) removes the bridge's packet sampler for `owner`
    /// ([`crate::sample`]).
    pub fn set_sampler(&mut self, owner: &'static str, s: Option<Sampler>) {
        self.samplers.retain(|(o, _)| *o != owner);
        if let Some(s) = s {
            self.samplers.push((owner, s));
        }
    }

    /// Replaces the bridge's mirrors (ports by slot); counters of mirrors that keep their name
    /// carry over.
    pub fn set_mirrors(&mut self, specs: &[MirrorSpec]) {
        let m = Mirrors::new(specs, self.mirrors.as_deref());
        self.mirrors = (!m.is_empty()).then(|| Box::new(m));
    }

    /// Each mirror's name and counters on this thread, and the packets dropped because they
    /// were sent to, or arrived on, a mirror's output port.
    pub fn mirror_stats(&self) -> (Vec<(String, MirrorStats)>, u64) {
        self.mirrors
            .as_deref()
            .map_or((Vec::new(), 0), |m| (m.stats(), m.reserved_drops))
    }

    /// A resolver for module commands.
    pub fn lookup_view(&self) -> impl PortLookup + '_ {
        SlotsView(&self.slots)
    }

    /// The slot of the port named `name`.
    pub fn find_port(&self, name: &str) -> Option<u16> {
        self.slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.port.name() == name))
            .map(|i| i as u16)
    }

    /// The port with OpenFlow number `ofport`.
    pub fn find_ofport(&self, ofport: u32) -> Option<u16> {
        self.slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.ofport == ofport))
            .map(|i| i as u16)
    }

    /// Ports in slot order.
    pub fn ports(&self) -> impl Iterator<Item = (u16, &PortSlot)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (i as u16, s)))
    }

    /// Number of ports.
    pub fn port_count(&self) -> usize {
        self.live.len()
    }

    /// The lowest free ofport from 1.
    pub fn free_ofport(&self) -> u32 {
        let mut n = 1;
        while self.find_ofport(n).is_some() {
            n += 1;
        }
        n
    }

    /// Attaches a port and polls all its receive queues. The caller has checked the name and
    /// ofport are free.
    pub fn attach(&mut self, port: Box<dyn Port>, ofport: u32, vlan: VlanMode) -> u16 {
        let idx = match self.slots.iter().position(|s| s.is_none()) {
            Some(i) => i,
            None => {
                self.slots.push(None);
                self.out.push(Batch::new());
                self.slots.len() - 1
            }
        };
        let rxqs = if port.has_rx() { port.n_rxq() } else { 0 };
        self.attach_at(idx, port, ofport, vlan);
        for q in 0..rxqs {
            self.rx_list.push(RxEntry {
                slot: idx as u16,
                q: q as u16,
                cycles: 0,
                packets: 0,
            });
        }
        self.rx_list.sort_unstable_by_key(|e| (e.slot, e.q));
        idx as u16
    }

    /// Attaches a shared handle of a port ([`Port::share`]) in slot `idx`, the slot the port
    /// has on its first poll thread, polling none of its queues (see [`Bridge::put_rxq`]).
    /// For a bridge replicated on another poll thread.
    pub fn attach_shared(&mut self, idx: u16, port: Box<dyn Port>, ofport: u32, vlan: VlanMode) {
        let i = usize::from(idx);
        while self.slots.len() <= i {
            self.slots.push(None);
            self.out.push(Batch::new());
        }
        if self.slots[i].is_some() {
            // The control plane keeps slots in step; a clash means a stale handle.
            let mut pool = Pool::new(0);
            self.detach(idx, &mut pool);
        }
        self.attach_at(i, port, ofport, vlan);
    }

    fn attach_at(&mut self, idx: usize, port: Box<dyn Port>, ofport: u32, vlan: VlanMode) {
        let up = port.link_state() == netdev::LinkState::Up;
        let slot = PortSlot {
            port,
            ofport,
            vlan,
            up,
        };
        let info = slot.info(idx as u16);
        self.slots[idx] = Some(slot);
        self.live.push(idx as u16);
        self.live.sort_unstable();
        self.module.port_added(&info);
    }

    /// A shared handle on the port in slot `idx`, for a replica of this bridge: (slot,
    /// ofport, VLAN mode, handle).
    pub fn share_port(&mut self, idx: u16) -> Option<(u16, u32, VlanMode, Box<dyn Port>)> {
        let s = self.slots.get_mut(usize::from(idx))?.as_mut()?;
        let h = s.port.share()?;
        Some((idx, s.ofport, s.vlan.clone(), h))
    }

    /// Stops polling receive queue `q` of slot `idx` and takes it out of the port's handle,
    /// with the load measured so far.
    pub fn take_rxq(&mut self, idx: u16, q: u16) -> Option<(netdev::RxqState, RxEntry)> {
        let hit = |e: &RxEntry| e.slot == idx && e.q == q;
        let (parked, pos) = match self.rx_list.iter().position(hit) {
            Some(p) => (false, p),
            None => (true, self.parked.iter().position(hit)?),
        };
        let slot = self.slots.get_mut(usize::from(idx))?.as_mut()?;
        let st = slot.port.take_rxq(usize::from(q))?;
        let e = if parked {
            self.parked.remove(pos)
        } else {
            self.rx_list.remove(pos)
        };
        Some((st, e))
    }

    /// Stops polling slot `idx`'s queues until [`Bridge::unpark_rxq`] (so the control plane
    /// can place them on their threads before any packet is taken).
    pub fn park_rxqs(&mut self, idx: u16) {
        let (p, keep): (Vec<RxEntry>, Vec<RxEntry>) =
            self.rx_list.iter().partition(|e| e.slot == idx);
        self.rx_list = keep;
        self.parked.extend(p);
    }

    /// Starts polling a parked queue here.
    pub fn unpark_rxq(&mut self, idx: u16, q: u16) {
        if let Some(pos) = self.parked.iter().position(|e| e.slot == idx && e.q == q) {
            let e = self.parked.remove(pos);
            self.rx_list.push(e);
            self.rx_list.sort_unstable_by_key(|e| (e.slot, e.q));
        }
    }

    /// Puts receive queue `q` into slot `idx`'s handle and starts polling it.
    pub fn put_rxq(
        &mut self,
        idx: u16,
        q: u16,
        st: netdev::RxqState,
        load: RxEntry,
    ) -> Result<(), netdev::RxqState> {
        let Some(Some(slot)) = self.slots.get_mut(usize::from(idx)) else {
            return Err(st);
        };
        slot.port.put_rxq(usize::from(q), st)?;
        self.rx_list.push(RxEntry {
            slot: idx,
            q,
            ..load
        });
        self.rx_list.sort_unstable_by_key(|e| (e.slot, e.q));
        Ok(())
    }

    /// The receive queues this bridge polls, with their measured load.
    pub fn rxqs(&self) -> &[RxEntry] {
        &self.rx_list
    }

    /// Adds the descriptors that signal traffic on every queue this bridge polls to `fds`;
    /// false if some queue has none.
    pub fn rx_fds(&self, fds: &mut Vec<std::os::fd::RawFd>) -> bool {
        for e in &self.rx_list {
            let fd = self
                .slots
                .get(usize::from(e.slot))
                .and_then(|s| s.as_ref())
                .and_then(|s| s.port.rxq_fd(usize::from(e.q)));
            match fd {
                Some(f) => fds.push(f),
                None => return false,
            }
        }
        true
    }

    /// The receive queues attached here but not polled yet.
    pub fn parked_rxqs(&self) -> &[RxEntry] {
        &self.parked
    }

    /// Port name of slot `idx`.
    pub fn port_name(&self, idx: u16) -> Option<&str> {
        self.slots
            .get(usize::from(idx))
            .and_then(|s| s.as_ref())
            .map(|s| s.port.name())
    }

    /// Detaches a port and gives it back (closed by the caller or on drop).
    pub fn detach(&mut self, idx: u16, pool: &mut Pool) -> Option<Box<dyn Port>> {
        let slot = self.slots.get_mut(idx as usize)?.take()?;
        self.live.retain(|&i| i != idx);
        self.rx_list.retain(|e| e.slot != idx);
        self.parked.retain(|e| e.slot != idx);
        if let Some(b) = self.out.get_mut(idx as usize) {
            pool.free_batch(b);
        }
        self.module.port_removed(idx);
        let mut port = slot.port;
        port.close();
        Some(port)
    }

    /// Detaches every port.
    pub fn detach_all(&mut self, pool: &mut Pool) -> Vec<Box<dyn Port>> {
        let idxs: Vec<u16> = self.live.clone();
        idxs.into_iter()
            .filter_map(|i| self.detach(i, pool))
            .collect()
    }

    /// Tells the module about ports whose carrier changed since the last call.
    pub fn check_links(&mut self) {
        for (i, s) in self.slots.iter_mut().enumerate() {
            let Some(s) = s else { continue };
            let up = s.port.link_state() == netdev::LinkState::Up;
            if up != s.up {
                s.up = up;
                self.module.port_status(i as u16, up);
            }
        }
    }

    /// Runs a module verb with this bridge's port table as the name resolver.
    pub fn module_command(
        &mut self,
        verb: &str,
        args: &[String],
        json: bool,
        ctx: &Ctx,
    ) -> Result<String, ModuleError> {
        if verb == "pmd-trace" {
            return self.arm_trace(args);
        }
        let Bridge { module, slots, .. } = self;
        module.command(verb, args, json, ctx, &SlotsView(slots))
    }

    /// `pmd-trace BR N`: traces the next `N` packets this bridge receives (on this poll
    /// thread); 0 disarms the trace and forgets its records.
    fn arm_trace(&mut self, args: &[String]) -> Result<String, ModuleError> {
        let n = match args {
            [n] => n.parse::<u64>().map_err(|_| ModuleError::BadValue {
                key: "pmd-trace".into(),
                value: n.clone(),
                expected: "a packet count".into(),
            })?,
            _ => {
                return Err(ModuleError::Usage {
                    verb: "pmd-trace".into(),
                    usage: "BR N",
                })
            }
        };
        if n == 0 {
            self.trace = None;
            return Ok(String::new());
        }
        self.trace.get_or_insert_with(Default::default).budget = n;
        Ok(String::new())
    }

    /// The fast-path trace's budget and records, if one was armed.
    pub fn trace(&self) -> Option<&trace::Trace> {
        self.trace.as_deref()
    }

    /// The fast-path trace's budget and records, as a report (empty when none was armed).
    pub fn trace_report(&self) -> trace::ThreadTrace {
        trace::report(self.trace.as_deref())
    }

    /// Counters of the port in slot `idx`.
    pub fn port_stats(&self, idx: u16) -> Option<PortStats> {
        self.slots
            .get(idx as usize)
            .and_then(|s| s.as_ref())
            .map(|s| s.port.stats())
    }

    /// Polls every receiving queue once and forwards what arrived, then lets the module emit
    /// what it has pending. Returns (packets received, pending packets handled).
    ///
    /// `cursor` is the cycle counter at the last measured point: each non-empty queue is
    /// charged the cycles since then (its receive and forwarding, plus the empty polls just
    /// before it) and moves the cursor, so a busy iteration reads the clock once per
    /// non-empty batch.
    #[inline]
    pub fn poll(&mut self, ctx: &Ctx, pool: &mut Pool, cursor: &mut u64) -> (usize, usize) {
        let mut total = 0;
        for k in 0..self.rx_list.len() {
            let e = self.rx_list[k];
            let n = self.poll_rxq(e.slot, e.q, ctx, pool);
            if n > 0 {
                let t1 = crate::cycles::now();
                let e = &mut self.rx_list[k];
                e.cycles += t1.wrapping_sub(*cursor);
                e.packets += n as u64;
                *cursor = t1;
                total += n;
            }
        }
        (total, self.poll_pending(ctx, pool))
    }

    /// Runs `f` with the module and a delivery sink onto this bridge's ports (and the
    /// receive batch), then sends every burst the module handed over. `tracing`: the pass
    /// is traced (see [`Delivery::tracing`]); `observe`, if given, is told what the pass
    /// left in the output batches before they are sent.
    #[inline(always)]
    fn with_delivery<R>(
        &mut self,
        in_port: u16,
        tracing: bool,
        pool: &mut Pool,
        f: impl FnOnce(&mut dyn SwitchLogic, &mut Batch, &mut Pool, &mut Delivery<'_>) -> R,
        observe: Option<&mut dyn FnMut(&Delivery<'_>)>,
    ) -> R {
        let Bridge {
            module,
            slots,
            live,
            out,
            touched,
            dests,
            rxb,
            stats,
            mirrors,
            ..
        } = self;
        let mut d = Delivery {
            in_port,
            slots,
            live,
            out,
            touched,
            stats,
            mirrors: mirrors.as_deref_mut(),
            dests,
            by_dest_len: 0,
            tracing,
            note: None,
        };
        let r = f(module.as_mut(), rxb, pool, &mut d);
        if let Some(o) = observe {
            o(&d);
        }
        d.flush_all(pool);
        r
    }

    /// Lets the module emit packets that did not come from a receive batch.
    fn poll_pending(&mut self, ctx: &Ctx, pool: &mut Pool) -> usize {
        self.with_delivery(
            NO_PORT,
            false,
            pool,
            |m, _, pool, out| m.poll_pending(ctx, pool, out),
            None,
        )
    }

    /// Receives one batch on queue `q` of slot `i` and forwards it.
    #[inline]
    pub fn poll_rxq(&mut self, i: u16, q: u16, ctx: &Ctx, pool: &mut Pool) -> usize {
        let Some(Some(slot)) = self.slots.get_mut(i as usize) else {
            return 0;
        };
        let n = slot.port.rxq_batch(usize::from(q), pool, &mut self.rxb);
        if n == 0 {
            return 0;
        }
        self.forward(i, ctx, pool);
        n
    }

    /// Forwards whatever is in the receive batch as coming from slot `in_port`.
    #[inline]
    fn forward(&mut self, in_port: u16, ctx: &Ctx, pool: &mut Pool) {
        for p in self.rxb.packets_mut() {
            p.in_port = in_port;
        }
        if self.mirrors.is_some() && !self.mirror_ingress(in_port, pool) {
            return;
        }
        let mut sampled = false;
        for (_, s) in self.samplers.iter_mut() {
            sampled |= s.observe(in_port, &self.rxb);
        }
        if sampled || self.trace.as_ref().is_some_and(|t| t.budget > 0) {
            self.forward_pass::<true>(in_port, ctx, pool);
        } else {
            self.forward_pass::<false>(in_port, ctx, pool);
        }
    }

    /// The forwarding pass over the receive batch: the module hands every packet to the
    /// delivery sink, then each port's run is sent as one burst. `TRACE`: the instantiation
    /// that watches packets one at a time (a trace is armed, or the batch holds packet
    /// samples; see [`watched`]); the other one has no per-packet cost for it.
    #[inline(always)]
    fn forward_pass<const TRACE: bool>(&mut self, in_port: u16, ctx: &Ctx, pool: &mut Pool) {
        if TRACE {
            self.forward_watched(in_port, ctx, pool);
            return;
        }
        self.with_delivery(
            in_port,
            false,
            pool,
            |m, rxb, pool, out| {
                m.forward(ctx, rxb, pool, out);
                // Whatever a module left in the batch is freed.
                pool.free_batch(rxb);
            },
            None,
        );
    }

    /// Runs an OpenFlow packet-out through the module (see
    /// [`SwitchLogic::packet_out`]) and sends what it emits.
    pub fn packet_out(
        &mut self,
        ctx: &Ctx,
        in_port: u32,
        frame: &[u8],
        actions: &[ofproto::DpAction],
        pool: &mut Pool,
    ) -> Result<(), ModuleError> {
        self.with_delivery(
            NO_PORT,
            false,
            pool,
            |m, _, pool, out| m.packet_out(ctx, in_port, frame, actions, pool, out),
            None,
        )
    }

    /// Forwards an outer burst a tunnel port of this thread handed over
    /// (`netdev::tunnel::direct`) as if received on slot `in_port`, the underlay's internal
    /// port, leaving `batch` empty. A uniform burst goes to the module's
    /// [`SwitchLogic::forward_uniform`] unless the bridge mirrors, samples or traces (those
    /// watch packets one at a time).
    pub fn forward_encapsulated(
        &mut self,
        in_port: u16,
        batch: &mut Batch,
        uniform: bool,
        ctx: &Ctx,
        pool: &mut Pool,
    ) {
        // Between two passes the receive batch is empty: take the burst's storage.
        pool.free_batch(&mut self.rxb);
        std::mem::swap(&mut self.rxb, batch);
        if self.rxb.is_empty() {
            return;
        }
        let plain = self.mirrors.is_none()
            && self.samplers.is_empty()
            && self.trace.as_ref().is_none_or(|t| t.budget == 0);
        if !(uniform && plain) {
            self.forward(in_port, ctx, pool);
            return;
        }
        for p in self.rxb.packets_mut() {
            p.in_port = in_port;
        }
        self.with_delivery(
            in_port,
            false,
            pool,
            |m, rxb, pool, out| {
                m.forward_uniform(ctx, rxb, pool, out);
                pool.free_batch(rxb);
            },
            None,
        );
    }

    /// Injects a batch as if received on slot `in_port` (tests and benchmarks).
    pub fn inject(&mut self, in_port: u16, batch: &mut Batch, ctx: &Ctx, pool: &mut Pool) {
        for p in batch.drain() {
            if let Err(p) = self.rxb.push(p) {
                pool.free(p);
            }
        }
        if !self.rxb.is_empty() {
            self.forward(in_port, ctx, pool);
        }
    }
}
