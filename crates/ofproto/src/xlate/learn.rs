//! Translation of `learn`: the flow a packet teaches the table.
//!
//! Each spec's source is read from the flow as it is at this point of the pipeline (a
//! field's bits are pinned in the megaflow, so every packet of the megaflow would teach the
//! same flow) or is the spec's constant; match specs build the learned flow's match, load
//! specs its register loads, output specs its output (a 16-bit OpenFlow 1.0 port number, as
//! in OVS: only real ports and `IN_PORT`, `FLOOD`, `ALL`, `LOCAL` produce one).
//!
//! The flow is not added here (translations only read the OpenFlow state): it becomes a
//! [`DpAction::Learn`], which the datapath hands to the next write session (see
//! [`crate::learn`]). `result_dst` gets whether the flow is in the table or can be added under
//! the learn's `limit`, judged against the published state, as OVS judges it at translation.

use super::Ctx;
use crate::fields;
use crate::learn::LearnedFlow;
use crate::odp::DpAction;
use openflow::actions::{port_from_of10, OFPP_MAX};
use openflow::learn::{Learn, LearnDst, LearnSrc, F_SEND_FLOW_REM};
use openflow::{Action, Match};
use std::sync::Arc;

/// OpenFlow 1.0 numbers of the reserved ports a learned output may name.
const OUTPUT_RESERVED_10: [u16; 4] = [0xfff8, 0xfffb, 0xfffc, 0xfffe];

impl Ctx<'_> {
    pub(super) fn learn(&mut self, l: &Learn) {
        let mut m = Match::new();
        let mut actions = Vec::new();
        for s in &l.specs {
            let v = match s.src {
                LearnSrc::Field(sf) => self.read_bits(&sf),
                LearnSrc::Imm(v) => v,
            };
            match s.dst {
                LearnDst::Match(d) => crate::learn::match_bits(&mut m, &d, v),
                LearnDst::Load(d) => actions.push(Action::SetField {
                    field: d.field,
                    value: v << d.ofs,
                    mask: Some(d.mask()),
                }),
                LearnDst::Output => {
                    if s.n_bits <= 16 || v >> 16 == 0 {
                        let p = v as u16;
                        if u32::from(p) < OFPP_MAX.min(0xff00) || OUTPUT_RESERVED_10.contains(&p) {
                            actions.push(Action::output(port_from_of10(p)));
                        }
                    }
                }
            }
        }
        let f = LearnedFlow::new(
            l.table_id,
            l.priority,
            l.idle_timeout,
            l.hard_timeout,
            l.cookie,
            l.flags & F_SEND_FLOW_REM != 0,
            m,
            actions,
            l.limit,
        );
        let ok = self.of.learn_allowed(&f);
        if let Some(r) = l.result_dst {
            fields::set(&mut self.flow, r.field, u128::from(ok) << r.ofs, r.mask());
        }
        self.note(|| {
            format!(
                " >> learn: table={} {} priority={} cookie={:#x} actions={}{}",
                f.table_id,
                openflow::text::format_match(&f.match_, None),
                f.priority,
                f.cookie,
                openflow::text::format_actions(&f.actions),
                if ok { "" } else { " (limit reached)" }
            )
        });
        if ok {
            self.out.push(DpAction::Learn(Arc::new(f)));
        }
    }
}
