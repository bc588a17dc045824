//! The `openflow` module: a bridge programmed with OpenFlow flow tables.
//!
//! This first version runs the full pipeline (`ofproto::xlate`) for every packet — correct
//! and complete, but slow; the exact-match and megaflow caches in front of it are the
//! caching datapath's job. Per packet: extract the flow key, xlate, credit the rules and
//! groups that matched, then execute the datapath actions on the packet: rewrites in place,
//! each output a copy (the last one takes the packet itself), `NORMAL` through a MAC
//! learning table, `CONTROLLER` onto ofproto's packet-in queue, meters by their bands.
//!
//! Port numbers: the module keeps the bridge's slot <-> OpenFlow port map; the bridge's
//! internal port (`LOCAL`, ofport 65534 in the daemon's numbering) is OpenFlow's
//! 0xfffffffe.

use crate::bridge::OFPP_LOCAL as BRIDGE_LOCAL;
use crate::learning::Learning;
use crate::module::{Ctx, Dest, Emitter, ModuleCommand, PortInfo, PortLookup, SwitchLogic};
use ofproto::meter::{remark_dscp, Verdict};
use ofproto::odp::{self, DpAction, PacketInReason};
use ofproto::switch::{OfPort, PacketIn};
use ofproto::Ofproto;
use openflow::actions::{OFPCML_NO_BUFFER, OFPP_LOCAL};
use packet::flow::{self, FlowKey};
use packet::{Batch, Packet, Pool};
use std::collections::HashMap;

/// Counters of the module.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenFlowStats {
    pub xlates: u64,
    pub packet_ins: u64,
    pub meter_drops: u64,
    pub copy_failures: u64,
    pub unknown_port: u64,
}

/// See the module documentation.
pub struct OpenFlow {
    of: Ofproto,
    normal: Learning,
    slot_of: Vec<u32>,
    of_slot: HashMap<u32, u16>,
    stats: OpenFlowStats,
}

impl Default for OpenFlow {
    fn default() -> Self {
        Self::new()
    }
}

/// The OpenFlow number of a bridge ofport.
pub fn to_of(ofport: u32) -> u32 {
    if ofport == BRIDGE_LOCAL {
        OFPP_LOCAL
    } else {
        ofport
    }
}

impl OpenFlow {
    /// A bridge whose table 0 holds `priority=0,actions=NORMAL`.
    pub fn new() -> OpenFlow {
        OpenFlow {
            of: Ofproto::with_default_flow(0),
            normal: Learning::new(),
            slot_of: Vec::new(),
            of_slot: HashMap::new(),
            stats: OpenFlowStats::default(),
        }
    }

    /// The OpenFlow state.
    pub fn ofproto(&self) -> &Ofproto {
        &self.of
    }

    /// The OpenFlow state, writable (flow_mods, group_mods...).
    pub fn ofproto_mut(&mut self) -> &mut Ofproto {
        &mut self.of
    }

    /// Module counters.
    pub fn stats(&self) -> OpenFlowStats {
        self.stats
    }

    fn slot(&self, ofport: u32) -> Option<u16> {
        self.of_slot.get(&ofport).copied()
    }

    fn of_port(&self, slot: u16) -> u32 {
        self.slot_of.get(usize::from(slot)).copied().unwrap_or(0)
    }

    /// Runs one packet through the pipeline and its actions.
    fn one(
        &mut self,
        now_ms: u64,
        in_slot: u16,
        pkt: Packet,
        pool: &mut Pool,
        out: &mut dyn Emitter,
    ) {
        let in_port = self.of_port(in_slot);
        let key = flow::extract(pkt.data(), in_port);
        self.stats.xlates += 1;
        let x = ofproto::xlate(&self.of, &key, Some(pkt.data()), None);
        let len = pkt.len() as u64;
        for r in &x.rules {
            r.stats.credit(1, len, now_ms);
        }
        for &(g, b) in &x.buckets {
            if let Some(grp) = self.of.group_mut(g) {
                grp.packet_count += 1;
                grp.byte_count += len;
                if let (Some(p), Some(by)) =
                    (grp.bucket_packets.get_mut(b), grp.bucket_bytes.get_mut(b))
                {
                    *p += 1;
                    *by += len;
                }
            }
        }
        self.execute(now_ms, in_slot, &key, &x.actions, pkt, pool, out);
    }

    /// Executes `actions` on `pkt`, consuming it.
    #[allow(clippy::too_many_arguments)]
    fn execute(
        &mut self,
        now_ms: u64,
        in_slot: u16,
        key: &FlowKey,
        actions: &[DpAction],
        mut pkt: Packet,
        pool: &mut Pool,
        out: &mut dyn Emitter,
    ) {
        // The last action that sends the packet somewhere may take it without a copy.
        let last_send = actions
            .iter()
            .rposition(|a| matches!(a, DpAction::Output(_) | DpAction::Normal));
        let mut offs = None;
        for (i, a) in actions.iter().enumerate() {
            match a {
                DpAction::Output(p) => {
                    let Some(slot) = self.slot(*p) else {
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
                DpAction::Normal => {
                    if Some(i) == last_send {
                        let dest = self.normal.lookup_packet(now_ms, in_slot, &mut pkt);
                        self.normal_deliver(dest, in_slot, pkt, pool, out);
                        return;
                    }
                    match pool.clone_packet(&pkt) {
                        Some(mut c) => {
                            let dest = self.normal.lookup_packet(now_ms, in_slot, &mut c);
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
                } => {
                    let n = if *max_len == OFPCML_NO_BUFFER {
                        pkt.len()
                    } else {
                        usize::from(*max_len).min(pkt.len())
                    };
                    self.stats.packet_ins += 1;
                    self.of.push_packet_in(PacketIn {
                        data: pkt.data()[..n].to_vec(),
                        total_len: pkt.len(),
                        reason: *reason,
                        table_id: *table_id,
                        cookie: *cookie,
                        key: *key,
                    });
                }
                DpAction::Clone(sub) => match pool.clone_packet(&pkt) {
                    Some(c) => self.execute(now_ms, in_slot, key, sub, c, pool, out),
                    None => self.stats.copy_failures += 1,
                },
                DpAction::Meter(id) => {
                    let verdict = match self.of.meter_mut(*id) {
                        Some(m) => m.apply(pkt.len(), now_ms * 1000),
                        None => Verdict::Pass,
                    };
                    match verdict {
                        Verdict::Pass => {}
                        Verdict::Drop => {
                            self.stats.meter_drops += 1;
                            out.drop_packet(pkt, pool);
                            return;
                        }
                        Verdict::Remark { prec_level } => {
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
                DpAction::SetQueue(_) | DpAction::SetTunnelId(_) => {}
                rewrite => odp::apply(&mut pkt, rewrite, &mut offs),
            }
        }
        out.drop_packet(pkt, pool);
    }

    fn normal_deliver(
        &mut self,
        dest: Dest,
        in_slot: u16,
        pkt: Packet,
        pool: &mut Pool,
        out: &mut dyn Emitter,
    ) {
        match dest {
            Dest::Port(p) => out.emit(p, pkt, pool),
            Dest::Drop => out.drop_packet(pkt, pool),
            Dest::Flood => {
                let targets: Vec<u16> = (0..self.slot_of.len() as u16)
                    .filter(|&s| s != in_slot && self.slot_of[usize::from(s)] != 0)
                    .collect();
                let Some((&last, rest)) = targets.split_last() else {
                    out.drop_packet(pkt, pool);
                    return;
                };
                for &s in rest {
                    match pool.clone_packet(&pkt) {
                        Some(c) => out.emit(s, c, pool),
                        None => self.stats.copy_failures += 1,
                    }
                }
                out.emit(last, pkt, pool);
            }
        }
    }

    /// Packet-ins waiting for the connection layer.
    pub fn take_packet_ins(&mut self) -> Vec<PacketIn> {
        self.of.take_packet_ins()
    }

    /// Reason codes for packet-ins (re-exported for the connection layer).
    pub fn reason_name(r: PacketInReason) -> &'static str {
        match r {
            PacketInReason::NoMatch => "no_match",
            PacketInReason::Action => "action",
            PacketInReason::InvalidTtl => "invalid_ttl",
        }
    }
}

impl SwitchLogic for OpenFlow {
    fn name(&self) -> &'static str {
        "openflow"
    }

    fn lookup(&mut self, _ctx: &Ctx, _batch: &mut Batch, dests: &mut [Dest]) {
        // Never called: `custom_process` is true.
        dests.fill(Dest::Drop);
    }

    fn custom_process(&self) -> bool {
        true
    }

    fn process(
        &mut self,
        ctx: &Ctx,
        in_port: u16,
        batch: &mut Batch,
        pool: &mut Pool,
        out: &mut dyn Emitter,
    ) {
        for pkt in batch.drain() {
            self.one(ctx.now_ms, in_port, pkt, pool, out);
        }
    }

    fn port_added(&mut self, info: &PortInfo) {
        let i = usize::from(info.idx);
        if self.slot_of.len() <= i {
            self.slot_of.resize(i + 1, 0);
        }
        let of = to_of(info.ofport);
        self.slot_of[i] = of;
        self.of_slot.insert(of, info.idx);
        self.of.set_port(OfPort {
            ofport: of,
            name: info.name.clone(),
            live: true,
            no_flood: false,
        });
        self.normal.port_added(info);
    }

    fn port_removed(&mut self, idx: u16) {
        let of = self.of_port(idx);
        if let Some(s) = self.slot_of.get_mut(usize::from(idx)) {
            *s = 0;
        }
        self.of_slot.remove(&of);
        self.of.remove_port(of);
        self.normal.port_removed(idx);
    }

    fn port_status(&mut self, idx: u16, up: bool) {
        let of = self.of_port(idx);
        if let Some(p) = self.of.ports().get(&of).cloned() {
            self.of.set_port(OfPort { live: up, ..p });
        }
    }

    fn run(&mut self, ctx: &Ctx) {
        self.of.expire(ctx.now_ms);
        self.normal.run(ctx);
    }

    fn configure(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "mac-aging-time" | "mac-table-size" => self.normal.configure(key, value),
            _ => Err(format!(
                "module 'openflow' has no setting '{key}' (settings: mac-aging-time, mac-table-size)"
            )),
        }
    }

    fn commands(&self) -> &'static [ModuleCommand] {
        crate::ofcommands::COMMANDS
    }

    fn command(
        &mut self,
        verb: &str,
        args: &[String],
        json: bool,
        ctx: &Ctx,
        ports: &dyn PortLookup,
    ) -> Result<String, String> {
        if matches!(verb, "fdb-show" | "fdb-flush" | "fdb-stats") {
            return self.normal.command(verb, args, json, ctx, ports);
        }
        crate::ofcommands::run(self, verb, args, json, ctx)
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        vec![
            ("xlates", s.xlates),
            ("packet_ins", s.packet_ins),
            ("packet_in_overflow", self.of.packet_in_overflow),
            ("meter_drops", s.meter_drops),
            ("copy_failures", s.copy_failures),
            ("unknown_port", s.unknown_port),
        ]
    }
}
