//! The TLV table: which tunnel option (class, type, length) each `tun_metadata<N>` field
//! stands for.
//!
//! A controller edits it with Nicira's TLV-table mod (add, delete, clear) and reads it with
//! a TLV-table request; OVN maps its Geneve option (class 0x0102, type 0x80, 4 bytes) this
//! way before it installs any flow. The rules are OVS's: a mod applies all of its maps or
//! none; an add of an index already mapped is `NXTTMFC_ALREADY_MAPPED`, of an option
//! already mapped to another index `NXTTMFC_DUP_ENTRY`, and options may take at most
//! [`MAX_OPTION_SPACE`] bytes together (`NXTTMFC_TABLE_FULL`); a delete of an unmapped
//! index does nothing. The table is per bridge and lives as long as the bridge.
//!
//! ## Flows that use the fields
//! A flow (its match, its actions, nested ones included) may only name a `tun_metadata`
//! field the table maps: anything else is `NXFMFC_INVALID_TLV_FIELD`, as OVS answers when
//! it decodes such a flow. The field is then as wide as its option: a match value or mask
//! with bits beyond it is `OFPBMC_BAD_VALUE` / `OFPBMC_BAD_MASK`, a write beyond it
//! `OFPBAC_BAD_SET_ARGUMENT`, a `move`/`push`/`pop` past its end `OFPBAC_BAD_SET_LEN`.
//! [`TlvTable::check_flow`] and [`TlvTable::check_actions`] do that; [`fields_used`] is
//! the set of indexes a flow uses, and a delete or clear that would unmap one some flow
//! uses fails whole with `NXTTMFC_INVALID_TLV_DEL` ([`TlvTable::apply_in_use`]).
//!
//! ## Place in the flow key
//! Each map is also given a place in the flow key's [`TUN_OPTS_LEN`] option bytes (first
//! fit, 4-byte aligned, for as long as it lives), where a packet's value of the option is
//! kept ([`TlvTable::slot_of`]). The table may map up to 256 bytes as OVS allows; a flow that
//! names a field whose option found no room is refused with `OFPFMFC_TABLE_FULL` (a
//! ferrovs limit: the key holds 16 bytes of options, OVN uses 4).

use openflow::messages::err::flow_mod_failed;
use openflow::messages::err::{bad_action, bad_match, nx_tlv};
use openflow::wire::nicira::TUN_METADATA_NUM_OPTS;
/// The mod's command and one map, as the wire codec decodes them: re-exported so that layers
/// above `ofproto` (the datapath) need not name `openflow`.
pub use openflow::wire::nicira::{TlvMap, TlvTableCommand};
use openflow::{Action, Field, Instruction, Match, OfError};
use packet::flow::TUN_OPTS_LEN;

/// Bytes of tunnel options all maps together may name (OVS's 256).
pub const MAX_OPTION_SPACE: u32 = 256;

/// One mapped option.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Entry {
    class: u16,
    type_: u8,
    len: u8,
    /// Where the option's value sits in the flow key's option bytes, if it fits.
    slot: Option<u8>,
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct TlvTable {
    entries: [Option<Entry>; TUN_METADATA_NUM_OPTS as usize],
}

impl Default for TlvTable {
    fn default() -> Self {
        TlvTable {
            entries: [None; TUN_METADATA_NUM_OPTS as usize],
        }
    }
}

impl TlvTable {
    /// Applies a TLV-table mod: all of it, or nothing and the error.
    pub fn apply(&mut self, command: TlvTableCommand, maps: &[TlvMap]) -> Result<(), OfError> {
        let mut next = self.clone();
        match command {
            TlvTableCommand::Add => {
                for m in maps {
                    next.add(m)?;
                }
            }
            TlvTableCommand::Delete => {
                for m in maps {
                    if let Some(e) = next.entries.get_mut(usize::from(m.index)) {
                        *e = None;
                    }
                }
            }
            TlvTableCommand::Clear => next = TlvTable::default(),
        }
        *self = next;
        Ok(())
    }

    /// As [`TlvTable::apply`], but a delete or clear that would unmap an index in `in_use`
    /// (a bit per index, see [`fields_used`]) fails with `NXTTMFC_INVALID_TLV_DEL`.
    pub fn apply_in_use(
        &mut self,
        command: TlvTableCommand,
        maps: &[TlvMap],
        in_use: u64,
    ) -> Result<(), OfError> {
        let unmapped = match command {
            TlvTableCommand::Add => 0,
            TlvTableCommand::Delete => maps
                .iter()
                .filter(|m| self.len_of(usize::from(m.index)).is_some())
                .fold(0u64, |acc, m| acc | 1u64 << m.index),
            TlvTableCommand::Clear => u64::MAX,
        };
        if unmapped & in_use != 0 {
            return Err(OfError::nx(nx_tlv::INVALID_TLV_DEL));
        }
        self.apply(command, maps)
    }

    /// The mapped length per index (0 when unmapped), for encoding the switch's own flows
    /// (`openflow::tun_metadata::with_map_lengths`).
    pub fn lengths(&self) -> [u8; TUN_METADATA_NUM_OPTS as usize] {
        self.entries.map(|e| e.map_or(0, |e| e.len))
    }

    /// `m` with each `tun_metadata` mask that covers its whole mapped option made exact, as
    /// OVS stores such a match (`tun_metadata0=0x10002/0xffffffff` on a 4-byte option is
    /// `tun_metadata0=0x10002`).
    pub fn normalize(&self, m: &Match) -> Match {
        let mut out = m.clone();
        for e in m.iter() {
            let Some(len) = e.field.tun_metadata_index().and_then(|i| self.len_of(i)) else {
                continue;
            };
            let all = openflow::oxm::ones(8 * u32::from(len));
            if e.mask.is_some_and(|mk| mk & all == all && mk & !all == 0) {
                out.set_exact(e.field, e.value);
            }
        }
        out
    }

    /// Whether [`TlvTable::normalize`] would change `m`.
    pub fn needs_normalize(&self, m: &Match) -> bool {
        m.iter().any(|e| {
            e.field
                .tun_metadata_index()
                .and_then(|i| self.len_of(i))
                .is_some_and(|len| {
                    let all = openflow::oxm::ones(8 * u32::from(len));
                    e.mask.is_some_and(|mk| mk == all)
                })
        })
    }

    /// The length in bytes of the option `tun_metadata<index>` stands for, if mapped.
    pub fn len_of(&self, index: usize) -> Option<u8> {
        self.entries.get(index).copied().flatten().map(|e| e.len)
    }

    /// The (class, type, length) `tun_metadata<index>` stands for, if mapped.
    pub fn option_of(&self, index: usize) -> Option<(u16, u8, u8)> {
        self.entries
            .get(index)
            .copied()
            .flatten()
            .map(|e| (e.class, e.type_, e.len))
    }

    /// The index a received option (class, type) is mapped to, and its mapped length.
    pub fn index_of(&self, class: u16, type_: u8) -> Option<(usize, u8)> {
        self.entries.iter().enumerate().find_map(|(i, e)| {
            e.filter(|e| e.class == class && e.type_ == type_)
                .map(|e| (i, e.len))
        })
    }

    /// The width in bits of a mapped `tun_metadata` field (as much of it as a value holds),
    /// or `NXFMFC_INVALID_TLV_FIELD` when its index is unmapped.
    fn width(&self, f: Field) -> Result<Option<u32>, OfError> {
        let Some(i) = f.tun_metadata_index() else {
            return Ok(None);
        };
        let len = self
            .len_of(i)
            .ok_or(OfError::nx(nx_tlv::INVALID_TLV_FIELD))?;
        if self.slot_of(i).is_none() {
            // Mapped, but beyond the option bytes the flow key holds.
            return Err(OfError::flow_mod_failed(flow_mod_failed::TABLE_FULL));
        }
        Ok(Some((u32::from(len) * 8).min(f.bits())))
    }

    /// Checks a flow's match and instructions against the table (module documentation).
    pub fn check_flow(&self, m: &Match, insts: &[Instruction]) -> Result<(), OfError> {
        for e in m.iter() {
            if let Some(w) = self.width(e.field)? {
                let beyond = !openflow::oxm::ones(w);
                if e.value & beyond != 0 {
                    return Err(OfError::bad_match(bad_match::BAD_VALUE));
                }
                if e.mask.is_some_and(|m| m & beyond != 0) {
                    return Err(OfError::bad_match(bad_match::BAD_MASK));
                }
            }
        }
        for i in insts {
            if let Instruction::ApplyActions(a) | Instruction::WriteActions(a) = i {
                self.check_actions(a)?;
            }
        }
        Ok(())
    }

    /// Checks actions (nested ones too) against the table (module documentation).
    pub fn check_actions(&self, acts: &[Action]) -> Result<(), OfError> {
        let len_err = || OfError::bad_action(bad_action::BAD_SET_LEN);
        for a in acts {
            match a {
                Action::SetField { field, value, mask } => {
                    if let Some(w) = self.width(*field)? {
                        let beyond = !openflow::oxm::ones(w);
                        // An exact write is as wide as the option; a mask says which bits.
                        if value & beyond != 0 || mask.is_some_and(|m| m & beyond != 0) {
                            return Err(OfError::bad_action(bad_action::BAD_SET_ARGUMENT));
                        }
                    }
                }
                Action::Move { src, dst } => {
                    for sf in [src, dst] {
                        if let Some(w) = self.width(sf.field)? {
                            if u32::from(sf.ofs) + u32::from(sf.n_bits) > w {
                                return Err(len_err());
                            }
                        }
                    }
                }
                Action::StackPush(sf)
                | Action::StackPop(sf)
                | Action::OutputReg { src: sf, .. } => {
                    if let Some(w) = self.width(sf.field)? {
                        if u32::from(sf.ofs) + u32::from(sf.n_bits) > w {
                            return Err(len_err());
                        }
                    }
                }
                Action::Clone(inner) => self.check_actions(inner)?,
                Action::Ct(ct) => self.check_actions(&ct.actions)?,
                _ => {}
            }
        }
        Ok(())
    }

    fn add(&mut self, m: &TlvMap) -> Result<(), OfError> {
        let slot = self
            .entries
            .get(usize::from(m.index))
            .ok_or(OfError::nx(nx_tlv::BAD_FIELD_IDX))?;
        if slot.is_some() {
            return Err(OfError::nx(nx_tlv::ALREADY_MAPPED));
        }
        if self
            .entries
            .iter()
            .flatten()
            .any(|e| e.class == m.class && e.type_ == m.type_)
        {
            return Err(OfError::nx(nx_tlv::DUP_ENTRY));
        }
        if self.space() + u32::from(m.len) > MAX_OPTION_SPACE {
            return Err(OfError::nx(nx_tlv::TABLE_FULL));
        }
        let slot = self.free_slot(m.len);
        if let Some(e) = self.entries.get_mut(usize::from(m.index)) {
            *e = Some(Entry {
                class: m.class,
                type_: m.type_,
                len: m.len,
                slot,
            });
        }
        Ok(())
    }

    /// The first offset in the flow key's option bytes where `len` bytes are free (maps
    /// keep their place for as long as they live, so compiled rules stay right).
    fn free_slot(&self, len: u8) -> Option<u8> {
        let len = usize::from(len);
        let mut used = [false; TUN_OPTS_LEN];
        for e in self.entries.iter().flatten() {
            if let Some(at) = e.slot {
                let at = usize::from(at);
                for u in used.iter_mut().skip(at).take(usize::from(e.len)) {
                    *u = true;
                }
            }
        }
        (0..=TUN_OPTS_LEN.checked_sub(len)?)
            .step_by(4)
            .find(|&at| used[at..at + len].iter().all(|u| !u))
            .map(|at| at as u8)
    }

    /// Where `tun_metadata<index>`'s value sits in the flow key: (offset, length) in its
    /// option bytes, if mapped and given room.
    pub fn slot_of(&self, index: usize) -> Option<(usize, usize)> {
        let e = self.entries.get(index).copied().flatten()?;
        Some((usize::from(e.slot?), usize::from(e.len)))
    }

    /// Bytes of option space the maps take.
    pub fn space(&self) -> u32 {
        self.entries
            .iter()
            .flatten()
            .map(|e| u32::from(e.len))
            .sum()
    }

    /// The maps, by index.
    pub fn maps(&self) -> Vec<TlvMap> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                e.map(|e| TlvMap {
                    class: e.class,
                    type_: e.type_,
                    len: e.len,
                    index: i as u16,
                })
            })
            .collect()
    }
}

/// The `tun_metadata` indexes a flow names, a bit each.
pub fn fields_used(m: &Match, insts: &[Instruction]) -> u64 {
    let mut used = 0u64;
    let mut note = |f: Field| {
        if let Some(i) = f.tun_metadata_index() {
            used |= 1u64 << i;
        }
    };
    for e in m.iter() {
        note(e.field);
    }
    fn walk(acts: &[Action], note: &mut dyn FnMut(Field)) {
        for a in acts {
            match a {
                Action::SetField { field, .. } => note(*field),
                Action::Move { src, dst } => {
                    note(src.field);
                    note(dst.field);
                }
                Action::StackPush(sf)
                | Action::StackPop(sf)
                | Action::OutputReg { src: sf, .. } => note(sf.field),
                Action::Clone(inner) => walk(inner, note),
                Action::Ct(ct) => walk(&ct.actions, note),
                _ => {}
            }
        }
    }
    for i in insts {
        if let Instruction::ApplyActions(a) | Instruction::WriteActions(a) = i {
            walk(a, &mut note);
        }
    }
    used
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(class: u16, type_: u8, len: u8, index: u16) -> TlvMap {
        TlvMap {
            class,
            type_,
            len,
            index,
        }
    }

    #[test]
    fn add_delete_clear_as_ovs() {
        let mut t = TlvTable::default();
        // OVN's Geneve option.
        t.apply(TlvTableCommand::Add, &[map(0x0102, 0x80, 4, 0)])
            .expect("add");
        assert_eq!(t.maps(), vec![map(0x0102, 0x80, 4, 0)]);
        let e = |c| Err(OfError::nx(c));
        assert_eq!(
            t.apply(TlvTableCommand::Add, &[map(0xffff, 1, 4, 0)]),
            e(nx_tlv::ALREADY_MAPPED)
        );
        assert_eq!(
            t.apply(TlvTableCommand::Add, &[map(0x0102, 0x80, 8, 1)]),
            e(nx_tlv::DUP_ENTRY)
        );
        // All or nothing: the first map of a failing mod is not kept.
        assert_eq!(
            t.apply(
                TlvTableCommand::Add,
                &[map(1, 1, 4, 5), map(0x0102, 0x80, 4, 6)]
            ),
            e(nx_tlv::DUP_ENTRY)
        );
        assert_eq!(t.maps().len(), 1);
        // 256 bytes of options at most.
        assert_eq!(
            t.apply(
                TlvTableCommand::Add,
                &[map(2, 0, 124, 1), map(3, 0, 124, 2), map(4, 0, 8, 3)]
            ),
            e(nx_tlv::TABLE_FULL)
        );
        t.apply(
            TlvTableCommand::Add,
            &[map(2, 0, 124, 1), map(3, 0, 124, 2), map(4, 0, 4, 3)],
        )
        .expect("exactly full");
        assert_eq!(t.space(), 256);
        // Deleting unmapped indexes is fine; clear ignores its maps.
        t.apply(
            TlvTableCommand::Delete,
            &[map(0, 0, 0, 1), map(0, 0, 0, 40)],
        )
        .expect("delete");
        assert_eq!(t.maps().len(), 3);
        t.apply(TlvTableCommand::Clear, &[map(9, 9, 4, 9)])
            .expect("clear");
        assert!(t.maps().is_empty());
    }
}
