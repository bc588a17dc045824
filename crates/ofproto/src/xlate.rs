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

mod actset;
mod ct;
mod learn;
mod mpls;
mod pause;
mod pktlen;
mod select;
mod tunopt;

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

    fn output(&mut self, port: u32, max_len: u16) {
        match port {
            OFPP_IN_PORT => self.out.push(DpAction::Output(self.flow.in_port)),
            OFPP_NORMAL => self.out.push(DpAction::Normal),
            OFPP_FLOOD | OFPP_ALL => {
                let ports: Vec<u32> = self
                    .of
                    .ports()
                    .values()
                    .filter(|p| p.ofport != self.flow.in_port && !p.admin_down)
                    .filter(|p| port == OFPP_ALL || !p.no_flood)
                    .map(|p| p.ofport)
                    .collect();
                for p in ports {
                    self.out.push(DpAction::Output(p));
                }
            }
            OFPP_CONTROLLER => {
                let reason = if self.in_packet_out {
                    PacketInReason::PacketOut
                } else if self.in_group > 0 {
                    PacketInReason::Group
                } else if self.in_action_set {
                    PacketInReason::ActionSet
                } else if self.miss_rule {
                    PacketInReason::ExplicitMiss
                } else {
                    PacketInReason::Action
                };
                let pin = DpAction::Controller {
                    max_len,
                    reason,
                    table_id: self.table_id,
                    cookie: self.cookie,
                    meta: self.pipeline_meta(),
                    extra: None,
                };
                self.packet_in(pin, openflow::controller::NX_CTLR_NO_METER);
            }
            OFPP_TABLE => {
                // Only packet-out may output to TABLE: run the pipeline from table 0.
                let saved = self.table_id;
                self.run_tables(0);
                self.table_id = saved;
            }
            OFPP_LOCAL => {
                if self.flow.in_port == OFPP_LOCAL {
                    self.note(|| " >> skipping output to input port".into());
                } else {
                    self.out.push(DpAction::Output(OFPP_LOCAL));
                }
            }
            p if p == self.flow.in_port => {
                self.note(|| " >> skipping output to input port".into());
            }
            p if self.of.ports().get(&p).is_some_and(|x| x.admin_down) => {
                self.note(|| format!(" >> skipping output to port {p}: administratively down"));
            }
            p => self.out.push(DpAction::Output(p)),
        }
    }

    /// A TTL ran out: the action list ends; with `OFPC_INVALID_TTL_TO_CONTROLLER`, an
    /// invalid-TTL packet-in goes to the connections of each controller id in `ids` (plain
    /// `dec_ttl` is id 0; `dec_ttl()` names none).
    fn ttl_expired(&mut self, ids: &[u16]) {
        let v = if self.flow.dl_type == flow::ETH_TYPE_IPV6 {
            "IPv6"
        } else if self.is_mpls() {
            "MPLS"
        } else {
            "IPv4"
        };
        self.note(|| format!(" >> {v} decrement TTL exception"));
        self.ttl_stop = true;
        if self.of.invalid_ttl_to_controller {
            for &id in ids {
                let meta = self.pipeline_meta();
                let extra = (id != 0).then(|| {
                    Box::new(crate::odp::PinExtra {
                        reason: PacketInReason::InvalidTtl as u8,
                        controller_id: id,
                        ..Default::default()
                    })
                });
                let pin = DpAction::Controller {
                    max_len: OFPCML_NO_BUFFER,
                    reason: PacketInReason::InvalidTtl,
                    table_id: self.table_id,
                    cookie: self.cookie,
                    meta,
                    extra,
                };
                self.packet_in(pin, openflow::controller::NX_CTLR_NO_METER);
            }
        }
        self.stopped = true;
    }

    fn action(&mut self, a: &Action) {
        if self.stopped {
            return;
        }
        match *a {
            Action::Ct(ref ct) => self.conntrack(ct),
            // Only inside `ct`, which interprets it.
            Action::Nat(_) => {}
            Action::CtClear => self.ct_clear(),
            // The datapath draws the coin per packet; nothing here depends on the flow.
            Action::Sample(s) => self.out.push(DpAction::Sample(s)),
            Action::Output { port, max_len } => self.output(port, max_len),
            Action::Controller(ref c) => self.controller(c),
            Action::Learn(ref l) => self.learn(l),
            Action::Group(g) => self.group(g),
            Action::SetQueue(q) => self.out.push(DpAction::SetQueue(q)),
            // The same as the meter instruction, where the action stands.
            Action::Meter(m) => self.out.push(DpAction::Meter(m)),
            Action::SetMplsTtl(t) => {
                if self.is_mpls() {
                    self.flow.mpls_lse[0] = (self.flow.mpls_lse[0] & !0xff) | u32::from(t);
                    self.out.push(DpAction::SetMplsLse {
                        lse: u32::from(t),
                        mask: 0xff,
                    });
                }
            }
            Action::DecMplsTtl => {
                if self.is_mpls() {
                    self.wc.mpls_lse[0] |= 0xff;
                    let ttl = self.flow.mpls_lse[0] & 0xff;
                    if ttl <= 1 {
                        self.ttl_expired(&[0]);
                    } else {
                        self.flow.mpls_lse[0] = (self.flow.mpls_lse[0] & !0xff) | (ttl - 1);
                        self.out.push(DpAction::SetMplsLse {
                            lse: ttl - 1,
                            mask: 0xff,
                        });
                    }
                }
            }
            Action::SetNwTtl(t) => {
                if self.is_ip() {
                    self.flow.nw_ttl = t;
                    self.out.push(DpAction::SetIpTtl(t));
                }
            }
            Action::DecNwTtl => self.dec_nw_ttl(&[0]),
            Action::DecTtlIds(ref ids) => self.dec_nw_ttl(ids),
            Action::Note(_) => {}
            Action::OutputReg { src, max_len } => self.output_reg(&src, max_len),
            Action::Clone(ref acts) => self.clone_actions(acts),
            // Run by `apply`, which knows what follows it in its list (see `pktlen`); an
            // action set or bucket has no place for it.
            Action::CheckPktLarger { .. } => {}
            Action::CopyTtlOut => {
                if self.is_mpls() {
                    self.out.push(DpAction::CopyTtlOut);
                    self.uncacheable |= self.flow.mpls_lse[0] & 0x100 != 0;
                }
            }
            Action::CopyTtlIn => {
                if self.is_mpls() {
                    self.out.push(DpAction::CopyTtlIn);
                }
            }
            Action::PushVlan(tpid) => {
                self.wc.vlan_tci = [0xffff, 0xffff];
                self.wc.vlan_tpid = [0xffff, 0xffff];
                // As OVS: the new tag starts with VID 0 and PCP 0 (the OpenFlow
                // specification would copy them from the outer tag; controllers written
                // for OVS set them after the push).
                let tci = 0;
                if self.flow.vlan_tci[1] & VLAN_PRESENT != 0 {
                    // As OVS, whose flow holds two tags: a push onto two known tags
                    // discards the inner one. The packet follows the flow: both come off,
                    // the outer goes back on, then the new tag.
                    let (outer_tpid, outer_tci) = (self.flow.vlan_tpid[0], self.flow.vlan_tci[0]);
                    self.out.push(DpAction::PopVlan);
                    self.out.push(DpAction::PopVlan);
                    self.out.push(DpAction::PushVlan {
                        tpid: outer_tpid,
                        tci: outer_tci & !VLAN_PRESENT,
                    });
                    self.note(|| "push_vlan: two tags already, the inner one is dropped".into());
                }
                self.flow.vlan_tci = [tci | VLAN_PRESENT, self.flow.vlan_tci[0]];
                self.flow.vlan_tpid = [tpid, self.flow.vlan_tpid[0]];
                self.out.push(DpAction::PushVlan { tpid, tci });
            }
            Action::PopVlan => {
                self.wc.vlan_tci = [0xffff, 0xffff];
                if self.flow.vlan_tci[0] & VLAN_PRESENT != 0 {
                    self.flow.vlan_tci = [self.flow.vlan_tci[1], 0];
                    self.flow.vlan_tpid = [self.flow.vlan_tpid[1], 0];
                    self.out.push(DpAction::PopVlan);
                }
            }
            Action::PushMpls(ethertype) => self.push_mpls(ethertype),
            Action::PopMpls(ethertype) => self.pop_mpls(ethertype),
            Action::PushPbb(_) => {
                self.unwild(Field::PbbIsid);
                let isid = self.flow.pbb_isid;
                self.out.push(DpAction::PushPbb { isid });
                self.flow.dl_type = flow::ETH_TYPE_PBB;
                self.flow.vlan_tci = [0, 0];
                self.flow.vlan_tpid = [0, 0];
            }
            Action::PopPbb => {
                self.unwild(Field::EthType);
                if self.flow.dl_type == flow::ETH_TYPE_PBB {
                    self.out.push(DpAction::PopPbb);
                    self.reparse();
                }
            }
            Action::SetField { field, value, mask } => self.set_field(field, value, mask),
            Action::Move { src, dst } => {
                if !self.flow_has(dst.field) || !self.flow_has(src.field) {
                    self.note(|| "move: the packet lacks a field, skipped".into());
                    return;
                }
                let v = self.read_bits(&src);
                self.set_field(dst.field, v << dst.ofs, Some(dst.mask()));
            }
            Action::StackPush(sf) => {
                if self.stack.len() >= MAX_STACK {
                    self.fail(|| format!("push: stack overflow ({MAX_STACK} entries)"));
                    return;
                }
                let v = self.read_bits(&sf);
                self.stack.push(v);
            }
            Action::StackPop(sf) => match self.stack.pop() {
                Some(v) => self.set_field(
                    sf.field,
                    (v & ones(u32::from(sf.n_bits))) << sf.ofs,
                    Some(sf.mask()),
                ),
                None => self.fail(|| "pop: stack underflow".into()),
            },
            Action::Resubmit { in_port, table, ct } => {
                if self.depth >= MAX_DEPTH {
                    self.fail(|| format!("over max translation depth {MAX_DEPTH}"));
                    return;
                }
                if self.resubmits >= MAX_RESUBMITS {
                    self.fail(|| format!("over {MAX_RESUBMITS} resubmit actions"));
                    return;
                }
                if ct && !self.has_ct_tuple() {
                    // As OVS: no lookup, and the actions go on.
                    self.note(|| " >> resubmit(ct) with non-tracked or non-IP packet!".into());
                    return;
                }
                self.ct_lookup = ct;
                let saved = self.flow.in_port;
                if let Some(p) = in_port {
                    self.flow.in_port = p;
                }
                let t = table.unwrap_or(self.table_id);
                let (saved_table, saved_cookie, saved_miss) =
                    (self.table_id, self.cookie, self.miss_rule);
                // A bucket's own outputs are the group's; what its resubmits run is not.
                let saved_group = std::mem::take(&mut self.in_group);
                let deepens = u32::from(t <= self.table_id);
                self.resubmits += 1;
                self.depth += deepens;
                self.indent += 4;
                self.run_tables(t);
                self.indent -= 4;
                self.depth -= deepens;
                self.table_id = saved_table;
                self.cookie = saved_cookie;
                self.miss_rule = saved_miss;
                self.in_group = saved_group;
                self.flow.in_port = saved;
                // A TTL exception in the resubmitted table ended that table's actions only.
                if self.ttl_stop && !self.failed {
                    self.ttl_stop = false;
                    self.stopped = false;
                }
            }
        }
    }

    fn dec_nw_ttl(&mut self, ids: &[u16]) {
        if self.is_ip() {
            self.unwild(Field::NwTtl);
            let ttl = self.flow.nw_ttl;
            if ttl <= 1 {
                self.ttl_expired(ids);
            } else {
                self.flow.nw_ttl = ttl - 1;
                self.out.push(DpAction::SetIpTtl(ttl - 1));
            }
        }
    }

    /// `output:SRC`: the port is the bits' value as an OpenFlow 1.0 port number (as OVS:
    /// a value above 16 bits outputs nothing). The bits are part of the decision.
    fn output_reg(&mut self, src: &Subfield, max_len: u16) {
        let v = self.read_bits(src);
        match u16::try_from(v) {
            Ok(0) => self.note(|| " >> output port 0 does not exist, dropped".into()),
            Ok(p) => {
                let port = port_from_of10(p);
                self.note(|| format!("output port is {p}"));
                self.output(port, max_len);
            }
            Err(_) => self.note(|| format!(" >> output port {v} is out of range")),
        }
    }

    /// `clone(...)`: the actions run on a copy of the flow, the register stack and the
    /// action set, and their datapath actions on a copy of the packet (a datapath
    /// `clone`); nothing they change is seen afterwards, as in OVS.
    fn clone_actions(&mut self, acts: &[Action]) {
        let saved_flow = self.flow;
        let saved_out = std::mem::take(&mut self.out);
        let saved_stop = self.stopped;
        let saved_ttl_stop = self.ttl_stop;
        let saved_set = self.action_set.clone();
        let saved_stack = self.stack.clone();
        let saved_table = self.table_id;
        self.indent += 4;
        self.no_pause += 1;
        self.apply(acts, &[]);
        self.no_pause -= 1;
        self.indent -= 4;
        let sub = std::mem::replace(&mut self.out, saved_out);
        if !sub.is_empty() {
            self.out.push(DpAction::Clone(sub));
        }
        self.flow = saved_flow;
        self.stopped = saved_stop || self.failed;
        self.ttl_stop = saved_ttl_stop;
        self.action_set = saved_set;
        self.stack = saved_stack;
        self.table_id = saved_table;
    }

    /// True if the flow has the headers `f` lives in (the prerequisite chain, checked on
    /// the flow's values).
    fn flow_has(&mut self, f: Field) -> bool {
        use openflow::oxm::Prereq;
        match f.prereq() {
            Prereq::None | Prereq::InPort => true,
            Prereq::VlanPresent => {
                self.wc.vlan_tci[0] |= VLAN_PRESENT;
                self.flow.vlan_tci[0] & VLAN_PRESENT != 0
            }
            Prereq::EthType(types) => {
                self.unwild(Field::EthType);
                types.contains(&self.flow.dl_type)
            }
            Prereq::IpProto(p) => {
                self.unwild(Field::IpProto);
                self.is_ip() && self.flow.nw_proto == p
            }
            Prereq::Ct(types) => {
                self.unwild(Field::EthType);
                self.wc.ct_state = 0xff;
                let st = self.flow.ct_state;
                st & CT_VALID != 0 && st & CS_TRACKED != 0 && types.contains(&self.flow.dl_type)
            }
            Prereq::Icmpv6Type(types) => {
                self.unwild(Field::Icmpv6Type);
                self.flow_has(Field::Icmpv6Type)
                    && types.contains(&((self.flow.tp_src & 0xff) as u8))
            }
        }
    }

    fn set_field(&mut self, f: Field, value: u128, mask: Option<u128>) {
        if f.is_tun_metadata() {
            return self.set_tun_metadata(f, value, mask);
        }
        // As OVS: a VID set with OFPVID_PRESENT (how `mod_vlan_vid` and OpenFlow 1.0's
        // set_vlan_vid arrive) on an untagged packet pushes an 802.1Q tag first.
        if f == Field::VlanVid
            && value & u128::from(VLAN_PRESENT) != 0
            && mask.is_none_or(|m| m & u128::from(VLAN_PRESENT) != 0)
        {
            self.wc.vlan_tci[0] |= VLAN_PRESENT;
            if self.flow.vlan_tci[0] & VLAN_PRESENT == 0 {
                self.wc.vlan_tci = [0xffff, 0xffff];
                self.wc.vlan_tpid = [0xffff, 0xffff];
                self.flow.vlan_tci = [VLAN_PRESENT, self.flow.vlan_tci[0]];
                self.flow.vlan_tpid = [flow::ETH_TYPE_VLAN, self.flow.vlan_tpid[0]];
                self.out.push(DpAction::PushVlan {
                    tpid: flow::ETH_TYPE_VLAN,
                    tci: 0,
                });
            }
        }
        if !self.flow_has(f) {
            self.note(|| {
                format!(
                    "set_field:{}: the packet has no such field, skipped",
                    f.name()
                )
            });
            return;
        }
        let mut m = mask.unwrap_or(u128::MAX);
        if f == Field::InPort && m & f.max() <= 0xffff {
            // Bits of the 16-bit OpenFlow 1.0 view (`NXM_OF_IN_PORT`; see `Subfield`).
            self.unwild(f);
            let old = u128::from(port_to_of10(self.flow.in_port).unwrap_or(0));
            let new = (old & !m) | (value & m);
            self.flow.in_port = port_from_of10(new as u16);
            return;
        }
        if m & f.max() != f.max() {
            // A partial write leaves the other bits as they came, and the datapath action
            // writes the whole field: the result depends on those bits.
            self.unwild(f);
        }
        if f == Field::VlanVid {
            // Setting the VID never adds or removes the tag: the present bit stays.
            m &= 0x0fff;
        }
        fields::set(&mut self.flow, f, value, m);
        let k = &self.flow;
        let v = fields::get(k, f);
        let act = match f {
            Field::EthDst => DpAction::SetEthDst(k.dl_dst),
            Field::EthSrc => DpAction::SetEthSrc(k.dl_src),
            Field::EthType => DpAction::SetEthType(k.dl_type),
            Field::VlanVid => DpAction::SetVlanTci {
                tci: (v as u16) & 0x0fff,
                mask: 0x0fff,
            },
            Field::VlanPcp => DpAction::SetVlanTci {
                tci: (v as u16) << 13,
                mask: 0xe000,
            },
            Field::IpDscp => DpAction::SetIpTos {
                tos: (v as u8) << 2,
                mask: 0xfc,
            },
            Field::IpEcn => DpAction::SetIpTos {
                tos: v as u8,
                mask: 0x03,
            },
            Field::IpProto => DpAction::SetIpProto(v as u8),
            Field::NwTtl => DpAction::SetIpTtl(v as u8),
            Field::Ipv4Src => DpAction::SetIpv4Src(k.nw_src),
            Field::Ipv4Dst => DpAction::SetIpv4Dst(k.nw_dst),
            Field::ArpSpa => DpAction::SetArpSpa(k.nw_src),
            Field::ArpTpa => DpAction::SetArpTpa(k.nw_dst),
            Field::ArpSha => DpAction::SetArpSha(k.arp_sha),
            Field::ArpTha => DpAction::SetArpTha(k.arp_tha),
            Field::ArpOp => DpAction::SetArpOp(v as u16),
            Field::TcpSrc | Field::UdpSrc | Field::SctpSrc => DpAction::SetTpSrc(v as u16),
            Field::TcpDst | Field::UdpDst | Field::SctpDst => DpAction::SetTpDst(v as u16),
            Field::Icmpv4Type | Field::Icmpv6Type => DpAction::SetIcmpType(v as u8),
            Field::Icmpv4Code | Field::Icmpv6Code => DpAction::SetIcmpCode(v as u8),
            Field::Ipv6Src => DpAction::SetIpv6Src(k.ipv6_src),
            Field::Ipv6Dst => DpAction::SetIpv6Dst(k.ipv6_dst),
            Field::Ipv6Flabel => DpAction::SetIpv6Label(v as u32),
            Field::Ipv6NdTarget => DpAction::SetNdTarget(k.nd_target),
            Field::Ipv6NdSll => DpAction::SetNdSll(k.arp_sha),
            Field::Ipv6NdTll => DpAction::SetNdTll(k.arp_tha),
            Field::MplsLabel => DpAction::SetMplsLse {
                lse: (v as u32) << 12,
                mask: 0xffff_f000,
            },
            Field::MplsTc => DpAction::SetMplsLse {
                lse: (v as u32) << 9,
                mask: 0x0e00,
            },
            Field::MplsBos => DpAction::SetMplsLse {
                lse: (v as u32) << 8,
                mask: 0x0100,
            },
            Field::PbbIsid => DpAction::SetPbbIsid(v as u32),
            Field::TunnelId => DpAction::SetTunnelId(v as u64),
            Field::TunSrc => DpAction::SetTunnelSrc(k.tun_src),
            Field::TunDst => DpAction::SetTunnelDst(k.tun_dst),
            // Pipeline state only: nothing to write into the packet (ct_mark and
            // ct_label are written by `ct(commit,exec(..))`, never by a set_field here).
            Field::RecircId
            | Field::DpHash
            | Field::CtState
            | Field::CtZone
            | Field::CtMark
            | Field::CtLabel
            | Field::CtNwSrc
            | Field::CtNwDst
            | Field::CtIpv6Src
            | Field::CtIpv6Dst
            | Field::CtNwProto
            | Field::CtTpSrc
            | Field::CtTpDst
            | Field::Metadata
            | Field::InPort
            | Field::InPhyPort
            | Field::Ipv6Exthdr
            | Field::TcpFlags
            | Field::IpFrag
            | Field::PktMark
            | Field::Reg0
            | Field::Reg1
            | Field::Reg2
            | Field::Reg3
            | Field::Reg4
            | Field::Reg5
            | Field::Reg6
            | Field::Reg7
            | Field::Reg8
            | Field::Reg9
            | Field::Reg10
            | Field::Reg11
            | Field::Reg12
            | Field::Reg13
            | Field::Reg14
            | Field::Reg15
            | Field::Xreg0
            | Field::Xreg1
            | Field::Xreg2
            | Field::Xreg3
            | Field::Xreg4
            | Field::Xreg5
            | Field::Xreg6
            | Field::Xreg7
            | Field::Xxreg0
            | Field::Xxreg1
            | Field::Xxreg2
            | Field::Xxreg3 => return,
            // The tunnel options went to `set_tun_metadata` above.
            _ => return,
        };
        self.out.push(act);
    }

    fn bucket(&mut self, g: u32, idx: usize, actions: &[Action]) {
        self.buckets.push((g, idx));
        let saved_flow = self.flow;
        let saved_out = std::mem::take(&mut self.out);
        let saved_stop = self.stopped;
        let saved_ttl_stop = self.ttl_stop;
        let saved_hashed = self.dp_hashed;
        let saved_set = std::mem::take(&mut self.action_set);
        // A bucket works on a copy of the register stack, as OVS's do.
        let saved_stack = self.stack.clone();
        self.note(|| format!("bucket {idx}"));
        self.indent += 8;
        self.depth += 1;
        // A bucket is an action set, run as OVS runs one (see `actset`).
        let list = actset::as_list(actions);
        if list.is_empty() {
            self.note(|| "drop".into());
        }
        self.no_pause += 1;
        self.in_group += 1;
        for a in &list {
            self.note(|| crate::text::action_text(a));
            self.action(a);
        }
        self.in_group -= 1;
        self.no_pause -= 1;
        self.depth -= 1;
        self.indent -= 8;
        let sub = std::mem::replace(&mut self.out, saved_out);
        if !sub.is_empty() {
            self.out.push(DpAction::Clone(sub));
        }
        self.flow = saved_flow;
        self.stopped = saved_stop || self.failed;
        self.ttl_stop = saved_ttl_stop;
        self.dp_hashed = saved_hashed;
        self.action_set = saved_set;
        self.stack = saved_stack;
    }

    /// The one bucket a select or fast-failover group runs.
    fn chosen_bucket(&mut self, g: u32, idx: usize, actions: &[Action]) {
        self.note(|| format!(" -> using bucket {idx}"));
        self.bucket(g, idx, actions);
    }

    fn group(&mut self, g: u32) {
        if self.depth >= MAX_DEPTH {
            self.stopped = true;
            return;
        }
        let of = self.of;
        let Some(grp) = of.groups().get(&g) else {
            self.note(|| format!("group:{g}: no such group, dropped"));
            return;
        };
        match grp.kind {
            GroupType::All => {
                for (i, b) in grp.buckets.iter().enumerate() {
                    self.bucket(g, i, &b.actions);
                }
            }
            GroupType::Indirect => {
                if let Some(b) = grp.buckets.first() {
                    self.bucket(g, 0, &b.actions);
                }
            }
            GroupType::Select => {
                let live: Vec<bool> = grp.buckets.iter().map(|b| of.bucket_live(b, 0)).collect();
                if select::selects_by_dp_hash(&grp.buckets) {
                    if !self.dp_hashed {
                        self.select_reparse();
                    }
                    let slots = select::hash_slots(&grp.buckets);
                    let n = slots.len();
                    let first = self.flow.dp_hash as usize;
                    let pick = (0..n)
                        .map(|i| slots[(first + i) & (n - 1)])
                        .find(|b| live[*b]);
                    match pick {
                        Some(i) => self.chosen_bucket(g, i, &grp.buckets[i].actions),
                        None => self.note(|| " -> no live bucket".into()),
                    }
                    return;
                }
                for f in SELECT_FIELDS {
                    self.unwild(*f);
                }
                match pick_weighted(&grp.buckets, &live, select_hash(&self.flow)) {
                    Some(i) => self.chosen_bucket(g, i, &grp.buckets[i].actions),
                    None => self.note(|| " -> no live bucket".into()),
                }
            }
            GroupType::FastFailover => {
                match grp.buckets.iter().position(|b| of.bucket_live(b, 0)) {
                    Some(i) => self.chosen_bucket(g, i, &grp.buckets[i].actions),
                    None => self.note(|| " -> no live bucket".into()),
                }
            }
        }
    }

    fn write_actions(&mut self, acts: &[Action]) {
        // Kept as written; `actset::as_list` decides what runs at the end.
        self.action_set.extend_from_slice(acts);
    }

    /// `-> action set is: ...` in the trace, what the set would run now, as OVS notes it.
    fn note_action_set(&mut self, verb: &str) {
        if self.trace.is_none() {
            return;
        }
        let list = actset::as_list(&self.action_set);
        let text: Vec<String> = list.iter().map(crate::text::action_text).collect();
        self.note(|| {
            if text.is_empty() {
                format!(" -> action set {verb} empty")
            } else {
                format!(" -> action set {verb}: {}", text.join(","))
            }
        });
    }

    fn run_action_set(&mut self) {
        if self.action_set.is_empty() {
            return;
        }
        if self.stopped {
            // A TTL exception ends the action list it happened in, not the pipeline: as in
            // OVS, the action set still runs. Anything else that stopped it (a failed
            // translation, too deep a recursion) drops the set too.
            if !self.ttl_stop || self.failed {
                return;
            }
            self.stopped = false;
            self.ttl_stop = false;
        }
        let set = std::mem::take(&mut self.action_set);
        let saved = std::mem::replace(&mut self.indent, 0);
        self.note(|| "--. Executing action set:".into());
        self.indent = 4;
        self.in_action_set = true;
        for a in &actset::as_list(&set) {
            self.note(|| crate::text::action_text(a));
            self.action(a);
        }
        self.in_action_set = false;
        self.indent = saved;
    }

    /// Looks `table` up as OVS does with its default fragment handling ("normal"): a
    /// fragment, the first included, is looked up with its L4 ports (ICMP type and code) zero,
    /// since later fragments have none; the packet itself keeps them. Whether the packet is a
    /// fragment is part of every IP megaflow, so a cached decision for a whole datagram is
    /// never applied to a fragment or the reverse.
    fn lookup(&mut self, table: &crate::table::Table) -> Option<Arc<Rule>> {
        if std::mem::take(&mut self.ct_lookup) {
            self.swap_ct_tuple();
            let r = self.lookup(table);
            self.swap_ct_tuple();
            return r;
        }
        let ip = matches!(self.flow.dl_type, flow::ETH_TYPE_IPV4 | flow::ETH_TYPE_IPV6);
        if !ip {
            return table.lookup(&self.flow, &mut self.wc).cloned();
        }
        self.wc.nw_frag = 0xff;
        if self.flow.nw_frag & flow::NW_FRAG_ANY == 0 {
            return table.lookup(&self.flow, &mut self.wc).cloned();
        }
        let mut k = self.flow;
        k.tp_src = 0;
        k.tp_dst = 0;
        table.lookup(&k, &mut self.wc).cloned()
    }

    /// Runs a rule's instructions (or, resuming, the rest of them); returns the table a
    /// `goto_table` names.
    fn instructions(&mut self, insts: &[Instruction]) -> Option<u8> {
        let mut next = None;
        for (j, i) in insts.iter().enumerate() {
            if self.stopped {
                break;
            }
            match i {
                Instruction::Meter(m) => {
                    self.note(|| format!("meter:{m}"));
                    self.out.push(DpAction::Meter(*m));
                }
                Instruction::ApplyActions(acts) => {
                    // A `check_pkt_larger` ran the rest of the instructions itself.
                    if self.apply(acts, insts.get(j + 1..).unwrap_or_default()) {
                        return None;
                    }
                }
                Instruction::ClearActions => {
                    self.note(|| "clear_actions".into());
                    self.note_action_set("was");
                    self.action_set.clear();
                }
                Instruction::WriteActions(acts) => {
                    self.note(|| {
                        let v: Vec<String> = acts.iter().map(crate::text::action_text).collect();
                        format!("write_actions({})", v.join(","))
                    });
                    self.write_actions(acts);
                    self.note_action_set("is");
                }
                Instruction::WriteMetadata { value, mask } => {
                    self.note(|| format!("write_metadata:{value:#x}/{mask:#x}"));
                    self.flow.metadata = (self.flow.metadata & !mask) | (value & mask);
                }
                Instruction::GotoTable(t) => {
                    self.note(|| format!("goto_table:{t}"));
                    next = Some(*t);
                }
            }
        }
        next
    }

    fn run_tables(&mut self, first: u8) {
        let of = self.of;
        let mut tid = first;
        loop {
            if self.stopped {
                return;
            }
            self.table_id = tid;
            let Some(table) = of.table(tid) else {
                return;
            };
            let rule = self.lookup(table);
            match rule {
                None => {
                    self.note_table(|| format!("{tid:>2}. No match."));
                    match table.miss {
                        TableMiss::Drop => {
                            self.note(|| "    drop".into());
                            return;
                        }
                        TableMiss::Controller => {
                            let meta = self.pipeline_meta();
                            let pin = DpAction::Controller {
                                max_len: of.miss_send_len,
                                reason: PacketInReason::NoMatch,
                                table_id: tid,
                                cookie: u64::MAX,
                                meta,
                                extra: None,
                            };
                            self.packet_in(pin, openflow::controller::NX_CTLR_NO_METER);
                            return;
                        }
                        TableMiss::Continue => {
                            if usize::from(tid) + 1 >= crate::switch::N_TABLES {
                                return;
                            }
                            tid += 1;
                            continue;
                        }
                    }
                }
                Some(r) => {
                    self.cookie = r.cookie;
                    self.miss_rule = r.priority == 0 && r.match_.is_empty();
                    let (prio, cookie) = (r.priority, r.cookie);
                    self.note_table(|| {
                        // As OVS: the match when there is one, the cookie when not zero.
                        let text = crate::text::match_text(&r.match_);
                        let mut line = if text.is_empty() {
                            format!("{tid:>2}. priority {prio}")
                        } else {
                            format!("{tid:>2}. {text}, priority {prio}")
                        };
                        if cookie != 0 {
                            line.push_str(&format!(", cookie {cookie:#x}"));
                        }
                        line
                    });
                    self.rules.push(Arc::clone(&r));
                    // Valid rules keep their instructions in execution order (the openflow
                    // crate's validation refuses any other order).
                    self.indent += 4;
                    let next = self.instructions(&r.instructions);
                    self.indent -= 4;
                    match next {
                        Some(t) if t > tid => tid = t,
                        _ => return,
                    }
                }
            }
        }
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
