//! xlate: running the OpenFlow pipeline for one flow key.
//!
//! [`xlate`] looks the flow up in table 0, executes the matching rule's instructions, follows
//! `goto_table`, and finally executes the accumulated action set in the order the spec
//! prescribes. It works on the *flow* (a [`FlowKey`]), not on packet bytes: every action
//! updates the working flow (so later tables match the modified packet, as OpenFlow
//! requires) and appends a concrete [`DpAction`] to the result, e.g. `dec_ttl` becomes "set
//! TTL to 63". Alongside, it accumulates the wildcard mask: every bit of the original flow
//! that the result depends on — the bits the classifier examined in each table, plus the
//! bits xlate itself read (the TTL for `dec_ttl`, the 5-tuple for a select group, ...). Any
//! packet that agrees with this flow on those bits gets the same actions, which is what a
//! megaflow cache needs.
//!
//! Two things cannot be decided on the flow alone: popping the last MPLS label or a PBB
//! header reveals headers the flow key never saw. If the packet's bytes are given, xlate
//! re-parses them at that point and goes on; the result is then marked
//! [`XlateOut::uncacheable`], because it depends on bytes outside the key.
//!
//! `controller(..., pause)` stops the pipeline and sends its rest to the controller as a
//! continuation, which [`resume`] runs when the controller hands it back (see `pause`).
//!
//! With a trace buffer, every table visited, the rule matched and its actions are recorded
//! in the style of `ovs-appctl ofproto/trace`.
//!
//! ## Files
//! This file holds the walk's context (`Ctx`) and the entry points; `pipeline` the table
//! lookups, instructions and the final action set; `action` one action; `output` ports and
//! TTL expiry; `set_field` field writes; `group` groups; `actset`, `ct`, `learn`, `mpls`,
//! `pause`, `pktlen`, `select` and `tunopt` one feature each.

mod actset;
mod ct;
mod learn;
mod mpls;
mod pause;
mod pktlen;
mod select;
mod tunopt;

mod action;
mod group;
mod output;
mod pipeline;
mod set_field;

pub use pause::resume;

use self::ct::CT_VALID;
use crate::fields;
use crate::group::{pick_weighted, select_hash, SELECT_FIELDS};
use crate::odp::{apply_all, DpAction, PacketInReason};
use crate::rule::Rule;
use crate::switch::Ofproto;
use crate::table::TableMiss;
use openflow::actions::{
    port_from_of10, port_to_of10, Subfield, OFPCML_NO_BUFFER, OFPP_ALL, OFPP_CONTROLLER,
    OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL, OFPP_NORMAL, OFPP_TABLE,
};
use openflow::oxm::{ones, Field, CS_TRACKED};
use openflow::{Action, GroupType, Instruction};
use packet::flow::{self, FlowKey, VLAN_PRESENT};
use std::sync::Arc;

/// The most nested table lookups (resubmits, groups) one packet may cause. As in OVS, a
/// resubmit to a later table does not nest: a pipeline that only moves forward (OVN's
/// `next;` chains through a router and a second switch) cannot loop, so only a resubmit to
/// the same or an earlier table counts.
pub const MAX_DEPTH: u32 = 64;

/// The most resubmits one translation may run in all, nested or not (OVS's limit).
pub const MAX_RESUBMITS: u32 = MAX_DEPTH * MAX_DEPTH;

/// The most entries the per-packet register stack (`push`/`pop`) may hold; pushing more
/// fails the translation, as popping an empty stack does.
pub const MAX_STACK: usize = 1024;

/// What the pipeline decided for a flow.
#[derive(Clone, Debug, Default)]
pub struct XlateOut {
    pub actions: Vec<DpAction>,
    /// Bits of the input flow the result depends on.
    pub wc: FlowKey,
    /// Rules matched, in order, for statistics.
    pub rules: Vec<Arc<Rule>>,
    /// (group, bucket) pairs used, for statistics.
    pub buckets: Vec<(u32, usize)>,
    /// The flow as it leaves the pipeline.
    pub final_flow: FlowKey,
    /// The result depends on more than the flow key (see the module documentation).
    pub uncacheable: bool,
    /// The translation failed (see `Ctx::fail`): the packet is dropped, a packet-out
    /// answered with an error.
    pub failed: bool,
}

struct Ctx<'a> {
    of: &'a Ofproto,
    flow: FlowKey,
    wc: FlowKey,
    out: Vec<DpAction>,
    rules: Vec<Arc<Rule>>,
    buckets: Vec<(u32, usize)>,
    action_set: Vec<Action>,
    /// The register stack of `push`/`pop`: values right-aligned.
    stack: Vec<u128>,
    /// The queue later outputs use (`set_queue`; 0, the packet's own, after `pop_queue`):
    /// what an `enqueue` puts back after its output.
    queue: u32,
    /// The translation failed (see `fail`): the result drops the packet.
    failed: bool,
    table_id: u8,
    cookie: u64,
    depth: u32,
    /// Every resubmit so far, for [`MAX_RESUBMITS`].
    resubmits: u32,
    stopped: bool,
    /// `stopped` was set by a TTL exception, which (as in OVS) ends only the action list of
    /// the table it happened in: a `resubmit` that ran into one carries on after it.
    ttl_stop: bool,
    uncacheable: bool,
    /// A select group already re-parsed the packet in this pass, as OVS's hash and
    /// recirculation do (see `select`): later select groups use that hash.
    dp_hashed: bool,
    /// The packet as the actions so far have made it, when xlate was given one.
    /// Borrowed until a reparse has to rewrite it (most translations never copy it).
    pkt: Option<std::borrow::Cow<'a, [u8]>>,
    /// DpActions already applied to `pkt`.
    applied: usize,
    trace: Option<&'a mut Vec<String>>,
    indent: usize,
    /// A `controller(..., pause)` stopped the pipeline: what it has left is being
    /// gathered (see `pause`).
    pausing: Option<Box<pause::Pausing>>,
    /// Inside a clone or group bucket, where `pause` does not pause.
    no_pause: u32,
    /// The next table lookup is `resubmit(,,ct)`'s: on the connection's tuple.
    ct_lookup: bool,
    /// The rule whose actions run is a table-miss rule (priority 0, catch-all match):
    /// its packet-ins are explicit misses, as in OVS.
    miss_rule: bool,
    /// Where actions run, for the packet-in reason: in a packet-out, a group bucket (depth)
    /// or the action set.
    in_packet_out: bool,
    in_group: u32,
    in_action_set: bool,
}

impl Ctx<'_> {
    fn note(&mut self, s: impl FnOnce() -> String) {
        if let Some(t) = self.trace.as_deref_mut() {
            let pad = " ".repeat(self.indent);
            t.push(format!("{pad}{}", s()));
        }
    }

    /// A table's line, placed as `ofproto/trace` places it: nested lookups (whose actions
    /// are indented twice as deep as their level) are four columns in per level.
    fn note_table(&mut self, s: impl FnOnce() -> String) {
        if let Some(t) = self.trace.as_deref_mut() {
            let pad = " ".repeat(self.indent / 2);
            t.push(format!("{pad}{}", s()));
        }
    }

    /// The pipeline fields a packet-in sent now reports. The registers were zero when the
    /// packet came in, so their values follow from the matched flow; `metadata` likewise.
    /// The tunnel fields and options may be the packet's own, so they are pinned in the
    /// megaflow (exactly, present or not: a packet-in is not a fast path).
    fn pipeline_meta(&mut self) -> Box<crate::odp::PipelineMeta> {
        let f = &self.flow;
        self.wc.tunnel_id = u64::MAX;
        self.wc.tun_src = [0xff; 4];
        self.wc.tun_dst = [0xff; 4];
        self.wc.tun_ipv6_src = [0xff; 16];
        self.wc.tun_ipv6_dst = [0xff; 16];
        self.wc.tun_opts_present = u64::MAX;
        let tlv = &self.of.tlv;
        for g in (0..64).filter_map(Field::tun_metadata) {
            if g.tun_metadata_index()
                .is_some_and(|i| f.tun_opts_present & (1u64 << i) != 0)
            {
                crate::tun_md::mark(&mut self.wc, tlv, g, u128::MAX);
            }
        }
        Box::new(crate::odp::PipelineMeta {
            regs: f.regs,
            metadata: f.metadata,
            tunnel_id: f.tunnel_id,
            tun_src: f.tun_src,
            tun_dst: f.tun_dst,
            tun_ipv6_src: f.tun_ipv6_src,
            tun_ipv6_dst: f.tun_ipv6_dst,
            tun_opts_present: f.tun_opts_present,
            tun_opts: f.tun_opts,
        })
    }

    /// The value of a subfield's bits (right-aligned), marking them as examined.
    fn read_bits(&mut self, sf: &Subfield) -> u128 {
        if sf.field.is_tun_metadata() {
            return self.read_tun_metadata(sf);
        }
        fields::set(&mut self.wc, sf.field, sf.mask(), sf.mask());
        let v = if sf.is_port16() {
            u128::from(port_to_of10(self.flow.in_port).unwrap_or(0))
        } else {
            fields::get(&self.flow, sf.field)
        };
        (v >> sf.ofs) & ones(u32::from(sf.n_bits))
    }

    /// A translation error (OVS's stack underflow and the like): the packet is dropped,
    /// nothing the pipeline did so far takes effect.
    fn fail(&mut self, why: impl FnOnce() -> String) {
        self.note(|| format!("{}: translation failed, dropping", why()));
        self.out.clear();
        self.action_set.clear();
        self.stopped = true;
        self.failed = true;
    }

    fn unwild(&mut self, f: Field) {
        fields::unwildcard(&mut self.wc, f);
    }

    fn is_ip(&mut self) -> bool {
        self.unwild(Field::EthType);
        self.flow.dl_type == flow::ETH_TYPE_IPV4 || self.flow.dl_type == flow::ETH_TYPE_IPV6
    }

    fn is_mpls(&mut self) -> bool {
        self.unwild(Field::EthType);
        self.flow.dl_type == flow::ETH_TYPE_MPLS || self.flow.dl_type == flow::ETH_TYPE_MPLS_MCAST
    }

    /// Re-parses the packet after the headers changed in a way the flow cannot follow.
    fn reparse(&mut self) {
        self.uncacheable = true;
        let Some(bytes) = self.pkt.as_mut() else {
            return;
        };
        let mut pool = packet::Pool::new(1);
        let Some(mut p) = pool.alloc() else { return };
        if !p.set_frame(bytes) {
            return;
        }
        apply_all(&mut p, &self.out[self.applied..]);
        self.applied = self.out.len();
        *bytes = std::borrow::Cow::Owned(p.data().to_vec());
        let mut k = flow::extract(bytes, self.flow.in_port);
        // The pipeline state is not in the bytes: it carries over.
        k.metadata = self.flow.metadata;
        k.tunnel_id = self.flow.tunnel_id;
        k.tun_src = self.flow.tun_src;
        k.tun_dst = self.flow.tun_dst;
        k.tun_ipv6_src = self.flow.tun_ipv6_src;
        k.tun_ipv6_dst = self.flow.tun_ipv6_dst;
        k.tun_flags = self.flow.tun_flags;
        k.tun_gbp_id = self.flow.tun_gbp_id;
        k.tun_gbp_flags = self.flow.tun_gbp_flags;
        k.tun_opts_present = self.flow.tun_opts_present;
        k.tun_opts = self.flow.tun_opts;
        k.recirc_id = self.flow.recirc_id;
        k.pkt_mark = self.flow.pkt_mark;
        k.dp_hash = self.flow.dp_hash;
        k.regs = self.flow.regs;
        k.ct_state = self.flow.ct_state;
        k.ct_zone = self.flow.ct_zone;
        k.ct_mark = self.flow.ct_mark;
        k.ct_label = self.flow.ct_label;
        k.ct_nw_proto = self.flow.ct_nw_proto;
        k.ct_src = self.flow.ct_src;
        k.ct_dst = self.flow.ct_dst;
        k.ct_tp_src = self.flow.ct_tp_src;
        k.ct_tp_dst = self.flow.ct_tp_dst;
        self.flow = k;
        pool.free(p);
    }
}

/// Runs the pipeline for `key` (and optionally the packet's bytes, see the module
/// documentation). With `trace`, records what happened.
pub fn xlate(
    of: &Ofproto,
    key: &FlowKey,
    pkt: Option<&[u8]>,
    trace: Option<&mut Vec<String>>,
) -> XlateOut {
    run(of, key, pkt, trace, |ctx| {
        if key.recirc_id != 0 {
            ctx.resume(key.recirc_id);
        } else if of.fail_open() {
            // Standalone fail-mode without a controller: a learning switch (OVS's hidden
            // fail-open flow).
            ctx.note(|| "fail-open: NORMAL".into());
            ctx.out.push(DpAction::Normal);
        } else {
            ctx.run_tables(0);
        }
    })
}

/// Executes a packet-out's actions for `key` (output to TABLE runs the pipeline).
pub fn xlate_actions(
    of: &Ofproto,
    key: &FlowKey,
    actions: &[Action],
    pkt: Option<&[u8]>,
    trace: Option<&mut Vec<String>>,
) -> XlateOut {
    run(of, key, pkt, trace, |ctx| {
        ctx.apply(actions, &[]);
    })
}

/// A packet-out's datapath actions: `frame` as if received on `in_port`, through the
/// OpenFlow `actions` (an output to `TABLE` runs the pipeline, whose rules are credited with
/// the packet at `now_ms`). What the control plane hands the datapath, so the poll thread
/// never translates under the `Ofproto` lock. A translation that failed (a stack
/// underflow, too many MPLS labels, ...) is an error: OVS answers such a packet-out with
/// `OFPFMFC_UNKNOWN` and sends nothing.
pub fn packet_out(
    of: &Ofproto,
    in_port: u32,
    frame: &[u8],
    actions: &[Action],
    now_ms: u64,
) -> Result<Vec<DpAction>, XlateFailed> {
    let key = packet::flow::extract(frame, in_port);
    let x = run(of, &key, Some(frame), None, |ctx| {
        ctx.in_packet_out = true;
        ctx.apply(actions, &[]);
    });
    for r in &x.rules {
        r.credit(1, frame.len() as u64, now_ms);
    }
    if x.failed {
        return Err(XlateFailed);
    }
    Ok(x.actions)
}

/// A packet-out's translation failed (see [`packet_out`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XlateFailed;

fn run(
    of: &Ofproto,
    key: &FlowKey,
    pkt: Option<&[u8]>,
    trace: Option<&mut Vec<String>>,
    body: impl FnOnce(&mut Ctx<'_>),
) -> XlateOut {
    let mut ctx = Ctx {
        of,
        flow: *key,
        wc: FlowKey::ZERO,
        out: Vec::new(),
        rules: Vec::new(),
        buckets: Vec::new(),
        action_set: Vec::new(),
        stack: Vec::new(),
        queue: 0,
        failed: false,
        table_id: 0,
        cookie: 0,
        depth: 0,
        resubmits: 0,
        stopped: false,
        ttl_stop: false,
        uncacheable: false,
        dp_hashed: key.dp_hash != 0,
        pkt: pkt.map(std::borrow::Cow::Borrowed),
        applied: 0,
        trace,
        indent: 0,
        pausing: None,
        no_pause: 0,
        ct_lookup: false,
        miss_rule: false,
        in_packet_out: false,
        in_group: 0,
        in_action_set: false,
    };
    // The ingress port is always part of the decision (outputs exclude it), and so is
    // the pass: a megaflow of the first pass must not match a recirculated packet.
    ctx.unwild(Field::InPort);
    ctx.unwild(Field::RecircId);
    // A packet a tunnel port received was given to that port by its key and outer
    // addresses (the port that fits them best), so they are part of the decision, as in
    // OVS's megaflows (`tunnel(tun_id=..,src=..,dst=..)`).
    if key.tun_dst != [0; 4] {
        ctx.wc.tunnel_id = u64::MAX;
        ctx.wc.tun_src = [0xff; 4];
        ctx.wc.tun_dst = [0xff; 4];
    } else if key.tun_ipv6_dst != [0; 16] {
        ctx.wc.tunnel_id = u64::MAX;
        ctx.wc.tun_ipv6_src = [0xff; 16];
        ctx.wc.tun_ipv6_dst = [0xff; 16];
    }
    body(&mut ctx);
    ctx.finish_pause();
    // A TTL expiry ends the action list it happened in: what was already output stays
    // output and the action set still runs (as in OVS).
    ctx.run_action_set();
    if ctx.failed {
        ctx.out.clear();
    }
    XlateOut {
        actions: ctx.out,
        wc: ctx.wc,
        rules: ctx.rules,
        buckets: ctx.buckets,
        final_flow: ctx.flow,
        uncacheable: ctx.uncacheable,
        failed: ctx.failed,
    }
}
