//! The pipeline: table lookup, instructions, `goto_table` and the action set at the end.

use super::*;

impl Ctx<'_> {
    pub(super) fn write_actions(&mut self, acts: &[Action]) {
        // Kept as written; `actset::as_list` decides what runs at the end.
        self.action_set.extend_from_slice(acts);
    }

    /// `-> action set is: ...` in the trace, what the set would run now, as OVS notes it.
    pub(super) fn note_action_set(&mut self, verb: &str) {
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

    pub(super) fn run_action_set(&mut self) {
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
    pub(super) fn lookup(&mut self, table: &crate::table::Table) -> Option<Arc<Rule>> {
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
    pub(super) fn instructions(&mut self, insts: &[Instruction]) -> Option<u8> {
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

    pub(super) fn run_tables(&mut self, first: u8) {
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
