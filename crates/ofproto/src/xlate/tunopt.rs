//! `tun_metadata` reads and writes in the pipeline (see [`crate::tun_md`]).
//!
//! A write changes the key's tunnel-options block and emits the whole set of options the
//! packet now has as one datapath action, `set(tunnel(geneve(...)))`, which a Geneve port
//! sends with; a later write in the same pass replaces that action's options. Since the
//! options emitted depend on every option the packet has, a write makes the megaflow match
//! on the present bits and on the values of the present options.

use super::Ctx;
use crate::odp::DpAction;
use crate::tun_md;
use openflow::actions::Subfield;
use openflow::oxm::{ones, Field};

impl Ctx<'_> {
    /// The bits of a `tun_metadata` subfield, marking them (and the present bit) examined.
    pub(super) fn read_tun_metadata(&mut self, sf: &Subfield) -> u128 {
        let tlv = &self.of.tlv;
        tun_md::mark(&mut self.wc, tlv, sf.field, sf.mask());
        let v = tun_md::get(&self.flow, tlv, sf.field);
        (v >> sf.ofs) & ones(u32::from(sf.n_bits))
    }

    /// `set_field` / `load` / `move` / `pop` into a `tun_metadata` field.
    pub(super) fn set_tun_metadata(&mut self, f: Field, value: u128, mask: Option<u128>) {
        let tlv = &self.of.tlv;
        let m = mask.unwrap_or(u128::MAX);
        tun_md::set(&mut self.flow, tlv, f, value, m);
        self.wc.tun_opts_present = u64::MAX;
        for g in (0..64).filter_map(Field::tun_metadata) {
            if g.tun_metadata_index()
                .is_some_and(|i| self.flow.tun_opts_present & (1u64 << i) != 0)
            {
                tun_md::mark(&mut self.wc, tlv, g, u128::MAX);
            }
        }
        let opts = tun_md::to_geneve(&self.flow, tlv).into_boxed_slice();
        if let Some(DpAction::SetTunnelOpts(last)) = self.out.last_mut() {
            *last = opts;
        } else {
            self.out.push(DpAction::SetTunnelOpts(opts));
        }
    }
}
