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
//! The table itself is all there is so far: flows cannot yet match or set `tun_metadata`
//! fields, so no mapping is ever in use and a delete never fails with
//! `NXTTMFC_INVALID_TLV_DEL`.

use openflow::messages::err::nx_tlv;
use openflow::wire::nicira::{TlvMap, TlvTableCommand, TUN_METADATA_NUM_OPTS};
use openflow::OfError;

/// Bytes of tunnel options all maps together may name (OVS's 256).
pub const MAX_OPTION_SPACE: u32 = 256;

/// One mapped option.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Entry {
    class: u16,
    type_: u8,
    len: u8,
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
        if let Some(e) = self.entries.get_mut(usize::from(m.index)) {
            *e = Some(Entry {
                class: m.class,
                type_: m.type_,
                len: m.len,
            });
        }
        Ok(())
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
