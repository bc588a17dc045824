//! Translation of the connection-tracking actions (`ct`, `ct_clear`).
//!
//! `ct_clear` forgets the packet's connection-tracking state: the flow's ct fields become
//! zero for the rest of the pass (the datapath carries ct state only across a
//! recirculation, so there is nothing to write into the packet).
//!
//! `ct(...)` is accepted, validated and printed; this translation does not yet hand the
//! packet to a connection tracker, so a flow that reaches a `ct` action fails its
//! translation and the packet is dropped (counted as a failed translation, and said so in
//! traces) rather than continuing as if it had been tracked.

use super::Ctx;
use openflow::ct::Ct;

/// `ct_state` bits that mean the packet has a connection (OVS's `CS_*` valid set).
pub(super) const CT_VALID: u8 = openflow::oxm::CS_NEW
    | openflow::oxm::CS_ESTABLISHED
    | openflow::oxm::CS_RELATED
    | openflow::oxm::CS_REPLY_DIR
    | openflow::oxm::CS_SRC_NAT
    | openflow::oxm::CS_DST_NAT;

impl Ctx<'_> {
    pub(super) fn conntrack(&mut self, ct: &Ct) {
        let text = openflow::text::format_action(&openflow::Action::Ct(Box::new(ct.clone())));
        self.fail(|| format!("{text}: connection tracking is not available in this datapath"));
    }

    pub(super) fn ct_clear(&mut self) {
        let k = &mut self.flow;
        k.ct_state = 0;
        k.ct_zone = 0;
        k.ct_mark = 0;
        k.ct_label = [0; 16];
        k.ct_nw_proto = 0;
        k.ct_tp_src = 0;
        k.ct_tp_dst = 0;
        k.ct_src = [0; 16];
        k.ct_dst = [0; 16];
        self.note(|| "ct_clear".into());
    }
}
