//! Translation of `check_pkt_larger(LEN)->DST`.
//!
//! The packet's length is not in the flow key, so the translation cannot pick a value for
//! DST. As OVS does, it translates what follows twice: the rest of the action list that
//! holds the action and, after it, the rule's remaining instructions (a `goto_table` goes
//! on to later tables), then the action set, once with DST set to 1 and once with it 0.
//! The two results become the two lists of a datapath [`PktLenCheck`], which picks one
//! per packet, and the wildcards are the union of both, so one megaflow is right for
//! packets of every length.
//!
//! Each branch starts from the state at the action: the flow, the register stack and the
//! action set (OVS 3.1 lets its second branch start from the stack and set the first
//! left; ferrovs gives both the same start). After the check, that state comes back, as
//! in OVS: a `resubmit` that led to the check goes on with the flow as it was before it,
//! and the datapath runs the chosen list on a copy of the packet unless nothing follows.
//! A `controller(..., pause)` inside a branch is a plain packet-in, as inside `clone`.

use super::Ctx;
use crate::odp::{apply_all, DpAction};
use crate::odp_pktlen::PktLenCheck;
use openflow::actions::Subfield;
use openflow::{Action, Instruction};

impl Ctx<'_> {
    /// `check_pkt_larger(pkt_len)->dst`, followed in its list by `acts` and in its rule
    /// by the instructions `rest`, all of which it runs (see the module documentation).
    pub(super) fn check_pkt_larger(
        &mut self,
        pkt_len: u16,
        dst: &Subfield,
        acts: &[Action],
        rest: &[Instruction],
    ) {
        self.sync_pkt();
        let saved_flow = self.flow;
        let saved_out = std::mem::take(&mut self.out);
        let saved_applied = std::mem::replace(&mut self.applied, 0);
        let saved_pkt = self.pkt.clone();
        let saved_set = self.action_set.clone();
        let saved_stack = self.stack.clone();
        let (saved_table, saved_cookie, saved_depth) = (self.table_id, self.cookie, self.depth);
        let saved_hashed = self.dp_hashed;
        self.no_pause += 1;
        let mut lists: [Vec<DpAction>; 2] = Default::default();
        for (list, larger) in lists.iter_mut().zip([true, false]) {
            self.flow = saved_flow;
            self.pkt.clone_from(&saved_pkt);
            self.applied = 0;
            self.action_set.clone_from(&saved_set);
            self.stack.clone_from(&saved_stack);
            (self.table_id, self.cookie, self.depth) = (saved_table, saved_cookie, saved_depth);
            self.dp_hashed = saved_hashed;
            self.stopped = self.failed;
            self.ttl_stop = false;
            self.note(|| {
                let rel = if larger { ">" } else { "<=" };
                format!(" >> packet length {rel} {pkt_len}:")
            });
            self.indent += 4;
            self.set_field(dst.field, u128::from(larger) << dst.ofs, Some(dst.mask()));
            self.branch(acts, rest);
            self.run_action_set();
            self.indent -= 4;
            *list = std::mem::take(&mut self.out);
        }
        self.no_pause -= 1;
        let [greater, le] = lists;
        self.flow = saved_flow;
        self.out = saved_out;
        self.applied = saved_applied;
        self.pkt = saved_pkt;
        self.action_set = saved_set;
        self.stack = saved_stack;
        (self.table_id, self.cookie, self.depth) = (saved_table, saved_cookie, saved_depth);
        self.dp_hashed = saved_hashed;
        // The list that held the action is done; the one around it (a resubmit's) goes on.
        self.stopped = self.failed;
        self.ttl_stop = false;
        self.out.push(DpAction::CheckPktLen(Box::new(PktLenCheck {
            pkt_len,
            greater,
            le,
        })));
    }

    /// One branch: the actions after the check, then the rule's other instructions.
    fn branch(&mut self, acts: &[Action], rest: &[Instruction]) {
        if self.apply(acts, rest) || self.stopped {
            return;
        }
        let here = self.table_id;
        if let Some(t) = self.instructions(rest) {
            if t > here {
                self.indent -= 4;
                self.run_tables(t);
                self.indent += 4;
            }
        }
    }

    /// Brings the packet's bytes (when xlate has them) up to the actions so far, so that
    /// a branch can start a list of its own.
    fn sync_pkt(&mut self) {
        let pending = self.out.get(self.applied..).unwrap_or_default();
        if let Some(bytes) = self.pkt.as_mut() {
            if pending.iter().any(DpAction::is_rewrite) {
                let mut pool = packet::Pool::new(1);
                if let Some(mut p) = pool.alloc() {
                    if p.set_frame(bytes) {
                        apply_all(&mut p, pending);
                        *bytes = std::borrow::Cow::Owned(p.data().to_vec());
                    }
                    pool.free(p);
                }
            }
        }
        self.applied = self.out.len();
    }
}
