//! Running datapath actions on a packet: outputs (the last one takes the packet, the others
//! a copy), rewrites, NORMAL through the shared MAC table, CONTROLLER onto the packet-in
//! queue, meters from the lock-free published set; and the uncached pipeline's translation.

use super::lock;
use crate::learning::Learning;
use crate::module::{Delivery, Dest};
use crate::sample::FlowTag;
use crate::udpif::Udpif;
use ofproto::meter::{remark_dscp, Verdict};
use ofproto::odp::{self, DpAction};
use ofproto::switch::PacketIn;
use ofproto::Ofproto;
use ofproto::OFPCML_NO_BUFFER;
use packet::flow::{self, FlowKey, Offsets};
use packet::{Packet, Pool};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::OpenFlowStats;

/// What executing actions needs: ports, the NORMAL table, counters and shared state.
pub(super) struct Exec {
    pub(super) udpif: Arc<Udpif>,
    /// The NORMAL action's MAC table, shared by every replica of the module (one per poll
    /// thread), so an address learned on one thread is known on all.
    pub(super) normal: Arc<Mutex<Learning>>,
    pub(super) slot_of: Vec<u32>,
    /// OpenFlow port -> slot for ports below 4096 (the common case), else `of_slot_big`.
    pub(super) of_slot: Vec<u16>,
    pub(super) of_slot_big: HashMap<u32, u16>,
    pub(super) stats: OpenFlowStats,
    /// Packets to re-inject (`DpAction::Recirc`). Drained by the module after each batch
    /// (see `OpenFlow::drain_recirc`).
    pub(super) recirc: RecircQueue,
    /// Recirculations the packets being executed went through (0 on their first pass).
    pub(super) depth: u8,
    /// The `sample` action's coin (xorshift; never 0).
    pub(super) rng: u64,
    /// This poll thread's cache of connections (see `conntrack::cache`).
    pub(super) ct_cache: conntrack::ConnCache,
    /// The megaflows recirculated packets hit, for the shortcut (see `skip`).
    pub(super) next: super::skip::NextHops,
}

/// Packets queued for their next pass: the keys apart from the rest, so that a round of
/// them can become the batch's key array without a copy (see `OpenFlow::drain_recirc`).
#[derive(Default)]
pub(super) struct RecircQueue {
    /// The key of each packet.
    pub(super) keys: Vec<FlowKey>,
    /// Where its layers are, its ingress slot and the packet, for each key.
    pub(super) pkts: Vec<(Offsets, u16, Packet)>,
}

impl RecircQueue {
    pub(super) fn is_empty(&self) -> bool {
        self.pkts.is_empty()
    }
}

/// Whether action `a` leaves the packet's bytes as they are, so that the pass's key and
/// offsets still describe it (see `ct::Layers`). Only what is listed does: anything else,
/// including an action added later, is taken to change them. A meter may remark the DSCP;
/// `execute` forgets the layers when it does. `check_pkt_len` changes nothing itself: its
/// branch runs on a copy, or on the packet when nothing follows.
fn keeps_bytes(a: &DpAction) -> bool {
    match a {
        DpAction::Ct(c) => c.nat.is_none(),
        a => {
            matches!(
                a,
                DpAction::Output(_)
                    | DpAction::Normal
                    | DpAction::Recirc(_)
                    | DpAction::Controller { .. }
                    | DpAction::Learn(_)
                    | DpAction::Clone(_)
                    | DpAction::CheckPktLen(_)
                    | DpAction::Meter(_)
                    | DpAction::Sample(_)
                    | DpAction::SetQueue(_)
            ) || a.sets_tunnel()
        }
    }
}

/// The index of the last action of `actions` that sends the packet somewhere (an output,
/// NORMAL, or a `recirc` into the next pass), when it may take the packet without a copy:
/// nothing after it needs the packet (a clone, a packet-in, a `ct` or another send after it
/// still runs, so only rewrites and meters, which change nothing that is sent, may follow).
/// A megaflow keeps its own (`Megaflow::last_send`), so its packets do not scan for it.
pub(crate) fn last_send(actions: &[DpAction]) -> Option<usize> {
    actions
        .iter()
        .rposition(|a| {
            matches!(
                a,
                DpAction::Output(_)
                    | DpAction::Normal
                    | DpAction::Recirc(_)
                    | DpAction::TnlPop { .. }
                    | DpAction::TnlPush(_)
            )
        })
        .filter(|&i| {
            actions[i + 1..].iter().all(|a| {
                a.is_rewrite()
                    || a.sets_tunnel()
                    || matches!(a, DpAction::Meter(_) | DpAction::SetQueue(_))
            })
        })
}

/// Most recirculations a packet may go through (OVS's limit too); beyond, it is dropped
/// and counted.
pub(super) const MAX_RECIRC_DEPTH: u8 = 6;

pub(super) const NO_SLOT: u16 = u16::MAX;
pub(super) const SMALL_PORTS: u32 = 4096;

impl Exec {
    #[inline(always)]
    pub(super) fn slot(&self, ofport: u32) -> Option<u16> {
        if ofport < SMALL_PORTS {
            match self.of_slot.get(ofport as usize) {
                Some(&s) if s != NO_SLOT => Some(s),
                _ => None,
            }
        } else {
            self.of_slot_big.get(&ofport).copied()
        }
    }

    pub(super) fn map_port(&mut self, ofport: u32, slot: Option<u16>) {
        if ofport < SMALL_PORTS {
            let i = ofport as usize;
            if self.of_slot.len() <= i {
                self.of_slot.resize(i + 1, NO_SLOT);
            }
            self.of_slot[i] = slot.unwrap_or(NO_SLOT);
        } else {
            match slot {
                Some(s) => {
                    self.of_slot_big.insert(ofport, s);
                }
                None => {
                    self.of_slot_big.remove(&ofport);
                }
            }
        }
    }

    pub(super) fn of_port(&self, slot: u16) -> u32 {
        self.slot_of.get(usize::from(slot)).copied().unwrap_or(0)
    }

    /// The uncached pipeline: translate and execute on the poll thread, with the OpenFlow
    /// state `of` the caller got without waiting.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn uncached(
        &mut self,
        of: &Ofproto,
        now_ms: u64,
        in_slot: u16,
        key: &FlowKey,
        layers: Option<Offsets>,
        pkt: Packet,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) {
        self.stats.uncached_xlates += 1;
        let x = ofproto::xlate(of, key, Some(pkt.data()), None);
        let len = pkt.len() as u64;
        for r in &x.rules {
            r.credit(1, len, now_ms);
        }
        for &(g, b) in &x.buckets {
            if let Some(grp) = of.groups().get(&g) {
                grp.stats.credit(b, 1, len);
            }
        }
        self.execute(now_ms, in_slot, key, layers, &x.actions, pkt, pool, out);
    }

    /// Executes `actions` on `pkt`, consuming it. `key` is the pass's key; `layers`, when
    /// known, the extractor's offsets for `pkt` as it is (unchanged since `key` was
    /// extracted; see `ct::Layers`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn execute(
        &mut self,
        now_ms: u64,
        in_slot: u16,
        key: &FlowKey,
        layers: Option<Offsets>,
        actions: &[DpAction],
        pkt: Packet,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) {
        self.execute_with(now_ms, in_slot, key, layers, actions, None, pkt, pool, out);
    }

    /// [`Exec::execute`] with the actions' [`last_send`] when known (a megaflow's, made
    /// with it), `None` to find it.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn execute_with(
        &mut self,
        now_ms: u64,
        in_slot: u16,
        key: &FlowKey,
        layers: Option<Offsets>,
        actions: &[DpAction],
        known_last_send: Option<Option<usize>>,
        pkt: Packet,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) {
        self.execute_from(
            now_ms,
            in_slot,
            key,
            layers,
            actions,
            known_last_send,
            None,
            pkt,
            pool,
            out,
        );
    }

    /// [`Exec::execute_with`] after a `ct` whose verdict was `ct_done` (a released
    /// fragment's actions after the `ct`, see `frag`), or from the start with `None`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn execute_from(
        &mut self,
        now_ms: u64,
        in_slot: u16,
        key: &FlowKey,
        layers: Option<Offsets>,
        actions: &[DpAction],
        known_last_send: Option<Option<usize>>,
        ct_done: Option<conntrack::CtResult>,
        mut pkt: Packet,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) {
        // Fast case: a single output (`tnl_push`: to the tunnel port, which pushes).
        let single = match actions {
            [DpAction::Output(p)] => Some(*p),
            [DpAction::TnlPush(t)] => Some(t.port),
            [DpAction::TnlPop { normal: false, .. }] => Some(ofproto::OFPP_LOCAL),
            _ => None,
        };
        if let Some(p) = single {
            match self.slot(p) {
                Some(slot) => out.emit(slot, pkt, pool),
                None => {
                    self.stats.unknown_port += 1;
                    out.drop_packet(pkt, pool);
                }
            }
            return;
        }
        let last_send = known_last_send.unwrap_or_else(|| last_send(actions));
        let mut offs = None;
        // The verdict of the last `ct` of this pass, for a `recirc` after it.
        let mut ct_res = ct_done;
        // `key` and these offsets describe the packet until an action changes its bytes.
        let mut clean = layers;
        for (i, a) in actions.iter().enumerate() {
            let before = clean;
            if !keeps_bytes(a) {
                clean = None;
            }
            match a {
                DpAction::Ct(c) => {
                    if key.nw_frag != 0 {
                        // Reassembly first (see `frag`): the packet goes on here only
                        // when its family is not reassembled.
                        let tail = actions.get(i + 1..).unwrap_or_default();
                        match self
                            .ct_fragment(now_ms, in_slot, key, before, c, tail, pkt, pool, out)
                        {
                            Some(p) => pkt = p,
                            None => return,
                        }
                    }
                    let l = before.map(|offs| crate::ct::Layers { key, offs });
                    let r = ct_res.insert(conntrack::CtResult::default());
                    crate::ct::track(c, &mut pkt, l, now_ms, &mut self.ct_cache, r);
                    self.stats.ct_executions += 1;
                    offs = None;
                    if crate::ct::left_bytes(c, r) {
                        clean = before;
                    }
                }
                DpAction::Recirc(id) => {
                    if self.depth >= MAX_RECIRC_DEPTH {
                        self.stats.recirc_too_deep += 1;
                        continue;
                    }
                    self.stats.recirculations += 1;
                    if Some(i) == last_send {
                        if clean.is_some() && self.recirc.is_empty() {
                            let view = crate::ct::RecircWords::new(key, *id, ct_res.as_ref());
                            if let Some((m, port)) = self.next.find(*id, &view) {
                                // The recirculated pass, as its first lookup stage would
                                // have made it (see `skip`).
                                m.account(1, pkt.len() as u64, now_ms);
                                self.stats.megaflow_hits += 1;
                                self.stats.recirc_shortcuts += 1;
                                match self.slot(port) {
                                    Some(slot) => out.emit(slot, pkt, pool),
                                    None => {
                                        self.stats.unknown_port += 1;
                                        out.drop_packet(pkt, pool);
                                    }
                                }
                                return;
                            }
                        }
                        self.push_recirc(key, clean, *id, ct_res.as_ref(), in_slot, pkt);
                        return;
                    }
                    match pool.clone_packet(&pkt) {
                        Some(c) => self.push_recirc(key, clean, *id, ct_res.as_ref(), in_slot, c),
                        None => self.stats.copy_failures += 1,
                    }
                }
                DpAction::Output(_) | DpAction::TnlPush(_) => {
                    let p = match a {
                        DpAction::TnlPush(t) => t.port,
                        DpAction::Output(p) => *p,
                        _ => continue,
                    };
                    let Some(slot) = self.slot(p) else {
                        self.stats.unknown_port += 1;
                        continue;
                    };
                    if Some(i) == last_send {
                        out.emit(slot, pkt, pool);
                        return;
                    }
                    match pool.clone_packet(&pkt) {
                        Some(c) => out.emit(slot, c, pool),
                        None => self.stats.copy_failures += 1,
                    }
                }
                DpAction::TnlPop { normal, .. } => {
                    // The underlay's internal port pops what it is given on transmit
                    // (`netdev::tunnel::underlay`): the tunnel packets translation found,
                    // the same way, in bursts. NORMAL's choice also learns the source.
                    let Some(slot) = self.slot(ofproto::OFPP_LOCAL) else {
                        self.stats.unknown_port += 1;
                        continue;
                    };
                    if *normal {
                        let _ = lock(&self.normal).lookup_packet(now_ms, in_slot, &mut pkt);
                    }
                    if Some(i) == last_send {
                        out.emit(slot, pkt, pool);
                        return;
                    }
                    match pool.clone_packet(&pkt) {
                        Some(c) => out.emit(slot, c, pool),
                        None => self.stats.copy_failures += 1,
                    }
                }
                DpAction::Normal => {
                    if Some(i) == last_send {
                        let dest = lock(&self.normal).lookup_packet(now_ms, in_slot, &mut pkt);
                        self.normal_deliver(dest, in_slot, pkt, pool, out);
                        return;
                    }
                    match pool.clone_packet(&pkt) {
                        Some(mut c) => {
                            let dest = lock(&self.normal).lookup_packet(now_ms, in_slot, &mut c);
                            self.normal_deliver(dest, in_slot, c, pool, out);
                        }
                        None => self.stats.copy_failures += 1,
                    }
                }
                DpAction::Controller {
                    max_len,
                    reason,
                    table_id,
                    cookie,
                    meta,
                    extra,
                } => {
                    let n = if *max_len == OFPCML_NO_BUFFER {
                        pkt.len()
                    } else {
                        usize::from(*max_len).min(pkt.len())
                    };
                    self.stats.packet_ins += 1;
                    self.udpif.push_packet_in(PacketIn {
                        data: pkt.data()[..n].to_vec(),
                        total_len: pkt.len(),
                        reason: *reason,
                        table_id: *table_id,
                        cookie: *cookie,
                        key: *key,
                        meta: **meta,
                        extra: extra.clone(),
                    });
                }
                DpAction::Learn(f) => {
                    if f.due(now_ms) {
                        self.udpif.push_learned(Arc::clone(f));
                    }
                }
                DpAction::Clone(sub) => match pool.clone_packet(&pkt) {
                    Some(c) => self.execute(now_ms, in_slot, key, clean, sub, c, pool, out),
                    None => self.stats.copy_failures += 1,
                },
                // The list for this packet's length, on the packet itself when nothing
                // follows, else on a copy (what it does is not seen after it).
                DpAction::CheckPktLen(c) => {
                    let branch = c.branch(pkt.data());
                    if i + 1 == actions.len() {
                        self.execute(now_ms, in_slot, key, clean, branch, pkt, pool, out);
                        return;
                    }
                    match pool.clone_packet(&pkt) {
                        Some(c) => self.execute(now_ms, in_slot, key, clean, branch, c, pool, out),
                        None => self.stats.copy_failures += 1,
                    }
                }
                DpAction::Meter(id) => {
                    // Lock-free: the meters are published apart from the OpenFlow state.
                    let verdict = self.udpif.meters.apply(*id, pkt.len(), now_ms * 1000);
                    match verdict {
                        Verdict::Pass => {}
                        Verdict::Drop => {
                            self.stats.meter_drops += 1;
                            out.drop_packet(pkt, pool);
                            return;
                        }
                        Verdict::Remark { prec_level } => {
                            clean = None;
                            let mut k = FlowKey::ZERO;
                            flow::extract_into(&mut k, pkt.data(), 0);
                            let dscp = remark_dscp(k.nw_tos >> 2, prec_level);
                            odp::apply(
                                &mut pkt,
                                &DpAction::SetIpTos {
                                    tos: dscp << 2,
                                    mask: 0xfc,
                                },
                                &mut offs,
                            );
                        }
                    }
                }
                DpAction::Sample(s) => self.sample(s, in_slot, &pkt),
                DpAction::SetQueue(_) => {}
                DpAction::SetTunnelId(id) => set_tunnel(&mut pkt, |m| {
                    m.id = *id;
                    m.flags |= packet::flow::TUN_F_KEY;
                }),
                DpAction::SetTunnelSrc(a) => set_tunnel(&mut pkt, |m| m.src = *a),
                DpAction::SetTunnelDst(a) => set_tunnel(&mut pkt, |m| m.dst = *a),
                DpAction::SetTunnelIpv6Src(a) => set_tunnel(&mut pkt, |m| m.ipv6_src = *a),
                DpAction::SetTunnelIpv6Dst(a) => set_tunnel(&mut pkt, |m| m.ipv6_dst = *a),
                DpAction::SetTunnelFlags(t) => set_tunnel(&mut pkt, |m| {
                    let oam = packet::flow::TUN_F_OAM;
                    m.flags = (m.flags & !oam) | (t & oam);
                }),
                DpAction::SetTunnelGbp { id, flags } => set_tunnel(&mut pkt, |m| {
                    m.gbp_id = *id;
                    m.gbp_flags = *flags;
                }),
                DpAction::SetTunnelOpts(o) => set_tunnel(&mut pkt, |m| {
                    let n = o.len().min(m.opts.len());
                    m.opts[..n].copy_from_slice(&o[..n]);
                    m.opts_len = n as u8;
                }),
                rewrite => odp::apply(&mut pkt, rewrite, &mut offs),
            }
        }
        out.drop_packet(pkt, pool);
    }

    /// Queues `p` for its next pass under `id`, its key written in its queue slot (see
    /// `ct::recirc_key`: the 360-byte key is not copied on the way); `layers` as for
    /// `execute`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push_recirc(
        &mut self,
        first: &FlowKey,
        layers: Option<Offsets>,
        id: u32,
        res: Option<&conntrack::CtResult>,
        in_slot: u16,
        p: Packet,
    ) {
        let q = &mut self.recirc;
        let offs = match layers {
            Some(o) => {
                q.keys.push(*first);
                if let Some(k) = q.keys.last_mut() {
                    crate::ct::recirculate_in_place(k, id, res);
                }
                o
            }
            None => {
                q.keys.push(FlowKey::ZERO);
                match q.keys.last_mut() {
                    Some(k) => crate::ct::recirc_key_fresh(k, &p, first, id, res),
                    None => Offsets::default(),
                }
            }
        };
        q.pkts.push((offs, in_slot, p));
    }

    /// The `sample` action: with probability `probability / 65535`, the packet's headers to
    /// the bridge's flow-sample exporter.
    fn sample(&mut self, s: &ofproto::SampleAction, in_slot: u16, pkt: &Packet) {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        // Uniform in 0..65535: 65535 takes every packet, 1 one in 65535.
        let coin = ((self.rng >> 32) * 65535) >> 32;
        if coin >= u64::from(s.probability) {
            return;
        }
        let tag = FlowTag {
            collector_set_id: s.collector_set_id,
            obs_domain_id: s.obs_domain_id,
            obs_point_id: s.obs_point_id,
        };
        let rate = (65535 / u32::from(s.probability)).max(1);
        if self
            .udpif
            .flow_samples
            .send(tag, self.of_port(in_slot), rate, pkt.data())
        {
            self.stats.flow_samples += 1;
        } else {
            self.stats.flow_samples_unexported += 1;
        }
    }

    fn normal_deliver(
        &mut self,
        dest: Dest,
        in_slot: u16,
        pkt: Packet,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) {
        match dest {
            Dest::Port(p) => out.emit(p, pkt, pool),
            Dest::Drop => out.drop_packet(pkt, pool),
            Dest::Flood => out.flood(in_slot, pkt, pool),
        }
    }
}

/// `set(tunnel(..))`: what a tunnel port with `key=flow` or `remote_ip=flow` sends with,
/// kept in the packet's tunnel metadata with the other tunnel fields it already has.
fn set_tunnel(pkt: &mut Packet, f: impl FnOnce(&mut packet::TunMeta)) {
    let mut m = pkt.tun().unwrap_or_default();
    f(&mut m);
    // Fails only if the frame reaches into the metadata area (a packet with 160 bytes of
    // pushed headers): the key is then lost, as on a port without `key=flow`.
    let _ = pkt.set_tun(&m);
}
