//! One action applied to the working flow, with its datapath action and the bits it read.

use super::*;

impl Ctx<'_> {
    pub(super) fn action(&mut self, a: &Action) {
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
            Action::SetQueue(q) => {
                self.queue = q;
                self.out.push(DpAction::SetQueue(q));
            }
            Action::PopQueue => self.pop_queue(),
            Action::Enqueue { port, queue } => self.enqueue(port, queue),
            // The same as the meter instruction, where the action stands.
            Action::Meter(m) => self.out.push(DpAction::Meter(m)),
            Action::SetMplsTtl(t) => self.set_mpls_ttl(t),
            Action::DecMplsTtl => self.dec_mpls_ttl(),
            Action::SetNwTtl(t) => self.set_nw_ttl(t),
            Action::DecNwTtl => self.dec_nw_ttl(&[0]),
            Action::DecTtlIds(ref ids) => self.dec_nw_ttl(ids),
            Action::Note(_) => {}
            Action::OutputReg { src, max_len } => self.output_reg(&src, max_len),
            Action::Clone(ref acts) => self.clone_actions(acts),
            // Run by `apply`, which knows what follows it in its list (see `pktlen`); an
            // action set or bucket has no place for it.
            Action::CheckPktLarger { .. } => {}
            Action::CopyTtlOut => self.copy_ttl_out(),
            Action::CopyTtlIn => self.copy_ttl_in(),
            Action::PushVlan(tpid) => self.push_vlan(tpid),
            Action::PopVlan => self.pop_vlan(),
            Action::PushMpls(ethertype) => self.push_mpls(ethertype),
            Action::PopMpls(ethertype) => self.pop_mpls(ethertype),
            Action::PushPbb(_) => self.push_pbb(),
            Action::PopPbb => self.pop_pbb(),
            Action::SetField { field, value, mask } => self.set_field(field, value, mask),
            Action::Move { src, dst } => self.move_bits(&src, &dst),
            Action::StackPush(sf) => self.stack_push(&sf),
            Action::StackPop(sf) => match self.stack.pop() {
                Some(v) => self.set_field(
                    sf.field,
                    (v & ones(u32::from(sf.n_bits))) << sf.ofs,
                    Some(sf.mask()),
                ),
                None => self.fail(|| "pop: stack underflow".into()),
            },
            Action::Resubmit { in_port, table, ct } => self.resubmit(in_port, table, ct),
        }
    }

    /// `pop_queue`: later outputs use the packet's own queue. A received packet's is 0 (as
    /// in OVS's userspace datapath, where queue N is skb priority N and a port's packets
    /// come with priority 0), so this sets queue 0, if another was set.
    fn pop_queue(&mut self) {
        if self.queue != 0 {
            self.queue = 0;
            self.out.push(DpAction::SetQueue(0));
        }
        self.note(|| " -> queue = 0".into());
    }

    /// `enqueue:PORT:QUEUE`, as OVS runs it: the packet goes out of `port` (`IN_PORT`: the
    /// input port; the input port named by number: nowhere) on `queue`, then later outputs
    /// use the queue in force before.
    fn enqueue(&mut self, port: u32, queue: u32) {
        if port != OFPP_IN_PORT && port == self.flow.in_port {
            self.note(|| " >> skipping output to input port".into());
            return;
        }
        self.out.push(DpAction::SetQueue(queue));
        self.output(port, 0);
        self.out.push(DpAction::SetQueue(self.queue));
    }

    /// `set_mpls_ttl`: the outer label's TTL.
    fn set_mpls_ttl(&mut self, t: u8) {
        if self.is_mpls() {
            self.flow.mpls_lse[0] = (self.flow.mpls_lse[0] & !0xff) | u32::from(t);
            self.out.push(DpAction::SetMplsLse {
                lse: u32::from(t),
                mask: 0xff,
            });
        }
    }

    /// `dec_mpls_ttl`, or the TTL-expiry path at 1.
    fn dec_mpls_ttl(&mut self) {
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

    /// `mod_nw_ttl`.
    fn set_nw_ttl(&mut self, t: u8) {
        if self.is_ip() {
            self.flow.nw_ttl = t;
            self.out.push(DpAction::SetIpTtl(t));
        }
    }

    /// `copy_ttl_out`; uncacheable on a bottom-of-stack label, whose TTL source (the IP
    /// header below) the key does not hold.
    fn copy_ttl_out(&mut self) {
        if self.is_mpls() {
            self.out.push(DpAction::CopyTtlOut);
            self.uncacheable |= self.flow.mpls_lse[0] & 0x100 != 0;
        }
    }

    /// `copy_ttl_in`.
    fn copy_ttl_in(&mut self) {
        if self.is_mpls() {
            self.out.push(DpAction::CopyTtlIn);
        }
    }

    /// `push_vlan`, as OVS pushes (VID and PCP 0; at most two tags).
    fn push_vlan(&mut self, tpid: u16) {
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

    /// `pop_vlan` (`strip_vlan`).
    fn pop_vlan(&mut self) {
        self.wc.vlan_tci = [0xffff, 0xffff];
        if self.flow.vlan_tci[0] & VLAN_PRESENT != 0 {
            self.flow.vlan_tci = [self.flow.vlan_tci[1], 0];
            self.flow.vlan_tpid = [self.flow.vlan_tpid[1], 0];
            self.out.push(DpAction::PopVlan);
        }
    }

    /// `push_pbb`.
    fn push_pbb(&mut self) {
        self.unwild(Field::PbbIsid);
        let isid = self.flow.pbb_isid;
        self.out.push(DpAction::PushPbb { isid });
        self.flow.dl_type = flow::ETH_TYPE_PBB;
        self.flow.vlan_tci = [0, 0];
        self.flow.vlan_tpid = [0, 0];
    }

    /// `pop_pbb`: the headers below are parsed again.
    fn pop_pbb(&mut self) {
        self.unwild(Field::EthType);
        if self.flow.dl_type == flow::ETH_TYPE_PBB {
            self.out.push(DpAction::PopPbb);
            self.reparse();
        }
    }

    /// `move:SRC->DST`, skipped when the packet lacks either field.
    fn move_bits(&mut self, src: &Subfield, dst: &Subfield) {
        if !self.flow_has(dst.field) || !self.flow_has(src.field) {
            self.note(|| "move: the packet lacks a field, skipped".into());
            return;
        }
        let v = self.read_bits(src);
        self.set_field(dst.field, v << dst.ofs, Some(dst.mask()));
    }

    /// `push:SRC`.
    fn stack_push(&mut self, sf: &Subfield) {
        if self.stack.len() >= MAX_STACK {
            self.fail(|| format!("push: stack overflow ({MAX_STACK} entries)"));
            return;
        }
        let v = self.read_bits(sf);
        self.stack.push(v);
    }

    /// `resubmit`: the tables run again from `table` (or this one), as `in_port`, one level deeper.
    fn resubmit(&mut self, in_port: Option<u32>, table: Option<u8>, ct: bool) {
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
        let (saved_table, saved_cookie, saved_miss) = (self.table_id, self.cookie, self.miss_rule);
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

    pub(super) fn dec_nw_ttl(&mut self, ids: &[u16]) {
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
    pub(super) fn output_reg(&mut self, src: &Subfield, max_len: u16) {
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
    pub(super) fn clone_actions(&mut self, acts: &[Action]) {
        let saved_flow = self.flow;
        let saved_out = std::mem::take(&mut self.out);
        let saved_stop = self.stopped;
        let saved_ttl_stop = self.ttl_stop;
        let saved_set = self.action_set.clone();
        let saved_stack = self.stack.clone();
        let saved_queue = self.queue;
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
        self.queue = saved_queue;
        self.table_id = saved_table;
    }
}
