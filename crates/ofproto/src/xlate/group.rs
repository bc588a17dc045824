//! Groups: all, select, indirect and fast-failover buckets.

use super::*;

impl Ctx<'_> {
    pub(super) fn bucket(&mut self, g: u32, idx: usize, actions: &[Action]) {
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
    pub(super) fn chosen_bucket(&mut self, g: u32, idx: usize, actions: &[Action]) {
        self.note(|| format!(" -> using bucket {idx}"));
        self.bucket(g, idx, actions);
    }

    pub(super) fn group(&mut self, g: u32) {
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
}
