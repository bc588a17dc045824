//! Translation of the connection-tracking actions (`ct`, `ct_clear`) and of a
//! recirculated packet's resumption.
//!
//! `ct(...)` becomes a datapath `ct` action (zone resolved, NAT in the tracker's form,
//! mark and label writes, set-fields and moves alike, folded into one masked write each)
//! and, with `table=N`, a `recirc(ID)` whose id stands for table N plus the registers and
//! `metadata` of this moment ([`crate::recirc`]). As in OVS the pipeline forks there: the datapath re-injects
//! the tracked packet under the new id, and the current actions go on with the packet as
//! the tracker left it (translated by NAT) but without connection-tracking state, which
//! exists only in the recirculated pass. A `ct` whose zone comes from a register pins those
//! register bits in the megaflow.
//!
//! A recirculated packet's translation ([`Ctx::resume`]) restores the frozen registers and
//! `metadata` and starts in the frozen table; an unknown id fails the translation.
//!
//! `ct_clear` forgets the packet's connection-tracking state for the rest of the pass.
//!
//! `resubmit(,,ct)` looks its table up with the packet's addresses, IP protocol and ports
//! swapped with the connection's original-direction ones (`ct_nw_src`, ... `ct_tp_dst`),
//! in the flow and in the wildcards alike, and swaps them back before the matched rule's
//! actions run, as OVS does; a packet without a connection tuple (`ct_nw_proto` 0) or not
//! IP skips the resubmit.

use super::Ctx;
use crate::odp::DpAction;
use crate::odp_ct::{nat_of, CtAction};
use crate::recirc::Frozen;
use openflow::ct::{Ct, CtZone};
use openflow::oxm::Field;
use openflow::Action;

/// `ct_state` bits that mean the packet has a connection (OVS's `CS_*` valid set).
pub(super) const CT_VALID: u8 = openflow::oxm::CS_NEW
    | openflow::oxm::CS_ESTABLISHED
    | openflow::oxm::CS_RELATED
    | openflow::oxm::CS_REPLY_DIR
    | openflow::oxm::CS_SRC_NAT
    | openflow::oxm::CS_DST_NAT;

/// Folds a masked write into an accumulated (value, mask).
fn fold<T>(acc: Option<(T, T)>, v: T, m: T) -> Option<(T, T)>
where
    T: Copy
        + std::ops::BitAnd<Output = T>
        + std::ops::BitOr<Output = T>
        + std::ops::Not<Output = T>,
{
    Some(match acc {
        None => (v & m, m),
        Some((av, am)) => ((av & !m) | (v & m), am | m),
    })
}

impl Ctx<'_> {
    pub(super) fn conntrack(&mut self, ct: &Ct) {
        let zone = match ct.zone {
            CtZone::Imm(z) => z,
            CtZone::Field(sf) => self.read_bits(&sf) as u16,
        };
        let mut a = CtAction {
            zone,
            commit: ct.commit(),
            force: ct.force(),
            nat: None,
            set_mark: None,
            set_label: None,
            alg: match ct.alg {
                openflow::ct::CT_ALG_FTP => conntrack::Helper::Ftp,
                openflow::ct::CT_ALG_TFTP => conntrack::Helper::Tftp,
                _ => conntrack::Helper::None,
            },
        };
        for n in &ct.actions {
            match n {
                Action::Nat(n) => match nat_of(n) {
                    Some(x) => a.nat = Some(x),
                    None => {
                        self.fail(|| "ct: the NAT range is not usable".into());
                        return;
                    }
                },
                Action::SetField {
                    field: Field::CtMark,
                    value,
                    mask,
                } => {
                    let m = mask.unwrap_or(u128::from(u32::MAX)) as u32;
                    a.set_mark = fold(a.set_mark, *value as u32, m);
                }
                Action::SetField {
                    field: Field::CtLabel,
                    value,
                    mask,
                } => {
                    a.set_label = fold(a.set_label, *value, mask.unwrap_or(u128::MAX));
                }
                // The source's bits as this packet has them (and pinned in the megaflow),
                // written like a masked set-field.
                Action::Move { src, dst } => {
                    let v = self.read_bits(src) << dst.ofs;
                    match dst.field {
                        Field::CtMark => {
                            a.set_mark = fold(a.set_mark, v as u32, dst.mask() as u32);
                        }
                        Field::CtLabel => a.set_label = fold(a.set_label, v, dst.mask()),
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        let text = a.to_string();
        self.out.push(DpAction::Ct(Box::new(a)));
        match ct.table {
            Some(table) => {
                let frozen = Frozen {
                    table,
                    regs: self.flow.regs,
                    metadata: self.flow.metadata,
                };
                match self.of.recirc.id(&frozen) {
                    Some(id) => {
                        self.out.push(DpAction::Recirc(id));
                        self.note(|| format!("{text}, recirc({id:#x}): resumes in table {table}"));
                    }
                    None => {
                        self.fail(|| "ct: no recirculation id left".into());
                        return;
                    }
                }
            }
            None => self.note(|| text),
        }
        // The connection-tracking fields exist only in the recirculated pass.
        self.clear_ct_fields();
    }

    /// Whether `resubmit(,,ct)` has a tuple to look up (OVS's test: an IP packet whose
    /// `ct_nw_proto` is set); the fields it reads are part of the decision.
    pub(super) fn has_ct_tuple(&mut self) -> bool {
        self.wc.ct_nw_proto = 0xff;
        self.is_ip() && self.flow.ct_nw_proto != 0
    }

    /// Swaps the packet's tuple with the connection's (see the module documentation).
    pub(super) fn swap_ct_tuple(&mut self) {
        let v4 = self.flow.dl_type == packet::flow::ETH_TYPE_IPV4;
        swap_tuple(&mut self.flow, v4);
        swap_tuple(&mut self.wc, v4);
    }

    pub(super) fn ct_clear(&mut self) {
        self.clear_ct_fields();
        self.note(|| "ct_clear".into());
    }

    fn clear_ct_fields(&mut self) {
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
    }

    /// Starts the translation of a packet recirculated under `id`.
    pub(super) fn resume(&mut self, id: u32) {
        match self.of.recirc.get(id) {
            Some(f) => {
                self.flow.regs = f.regs;
                self.flow.metadata = f.metadata;
                self.note(|| format!("recirc({id:#x}): resuming in table {}", f.table));
                self.run_tables(f.table);
            }
            None => self.fail(|| format!("recirc({id:#x}): unknown recirculation id")),
        }
    }
}

fn swap_tuple(k: &mut packet::flow::FlowKey, v4: bool) {
    std::mem::swap(&mut k.nw_proto, &mut k.ct_nw_proto);
    if v4 {
        for (a, b) in k.nw_src.iter_mut().zip(k.ct_src.iter_mut()) {
            std::mem::swap(a, b);
        }
        for (a, b) in k.nw_dst.iter_mut().zip(k.ct_dst.iter_mut()) {
            std::mem::swap(a, b);
        }
    } else {
        std::mem::swap(&mut k.ipv6_src, &mut k.ct_src);
        std::mem::swap(&mut k.ipv6_dst, &mut k.ct_dst);
    }
    std::mem::swap(&mut k.tp_src, &mut k.ct_tp_src);
    std::mem::swap(&mut k.tp_dst, &mut k.ct_tp_dst);
}
