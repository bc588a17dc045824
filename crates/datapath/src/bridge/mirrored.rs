//! The bridge's ingress mirroring hook ([`crate::mirror`]): received batches copied to the
//! mirrors that select them, before the module sees them.

use super::{Bridge, Delivery};
use crate::module::VlanMode;
use packet::Pool;

impl Bridge {
    /// Copies the receive batch (from slot `in_port`) to the mirrors that select it. Returns
    /// false if the batch arrived on a mirror's output port: it was dropped.
    #[cold]
    #[inline(never)]
    pub(super) fn mirror_ingress(&mut self, in_port: u16, pool: &mut Pool) -> bool {
        let Bridge {
            slots,
            live,
            out,
            touched,
            dests,
            rxb,
            stats,
            mirrors,
            ..
        } = self;
        let Some(m) = mirrors.as_deref_mut() else {
            return true;
        };
        if m.is_output(in_port) {
            m.reserved_drops += rxb.len() as u64;
            pool.free_batch(rxb);
            return false;
        }
        // The port's VLAN mode only matters to VLAN-selecting mirrors (a clone may allocate).
        let vlan = match slots.get(usize::from(in_port)) {
            Some(Some(s)) if m.selects_vlans() => s.vlan.clone(),
            _ => VlanMode::Trunk(None),
        };
        let mut fab = Delivery {
            in_port,
            slots,
            live,
            out,
            touched,
            stats,
            mirrors: None,
            dests,
            by_dest_len: 0,
            tracing: false,
            note: None,
        };
        for p in rxb.packets() {
            let sel = m.ingress(in_port, &vlan, p);
            fab.copy_to_mirrors(m, sel, p, pool);
        }
        true
    }
}
