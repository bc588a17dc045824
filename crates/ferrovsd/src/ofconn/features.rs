//! Table features: the multipart reply that tells a controller what each table can match,
//! do, and lead to.
//!
//! Every table (0 to 253) has the same abilities: all six instruction types (as OVS lists
//! them: no meter instruction from OpenFlow 1.5, which made the meter an action, and no
//! goto-table in the last table), the same write and apply action types (from 1.5 with the
//! meter action), every OpenFlow basic match field (maskable ones with a mask) as match,
//! wildcard and set-field, the full metadata width, and every later table as a next
//! table. The reply is about a kilobyte per table, so it goes out over several messages.
//!
//! Changing table features (a request with a body) is refused with
//! `TABLE_FEATURES_FAILED/EPERM`, whatever the connection's role.

use super::conn::Conn;
use super::BridgeOf;
use openflow::messages::err;
use openflow::oxm::Field;
use openflow::wire::multipart::TableFeatures;
use openflow::wire::{self, MpReply};
use openflow::OfError;

/// Table-features records per message (about a kilobyte each).
const PER_REPLY: usize = 40;
/// `OFPTFFC_EPERM`.
const EPERM: u16 = 5;

/// Answers a table-features request whose body (the features to set) is `set`.
pub fn reply(b: &BridgeOf, c: &Conn, xid: u32, set: &[TableFeatures]) -> Result<(), OfError> {
    if !set.is_empty() {
        return Err(OfError::new(err::OFPET_TABLE_FEATURES_FAILED, EPERM));
    }
    let recs: Vec<TableFeatures> = {
        // The published state: a connection's set-up (`ovs-ofctl` asks for table features
        // before most commands) never waits for another connection's write session.
        let of = b.udpif.snapshot();
        of.tables()
            .iter()
            .filter(|t| t.id < 254)
            .map(|t| TableFeatures {
                table_id: t.id,
                command: 0,
                name: t.name.clone(),
                metadata_match: u64::MAX,
                metadata_write: u64::MAX,
                config: 0,
                max_entries: t.reported_max_entries(),
                props: table_feature_props(t.id, c.version()),
            })
            .collect()
    };
    super::stats::send_chunked(c, xid, &recs, PER_REPLY, MpReply::TableFeatures);
    Ok(())
}

/// The table-features properties a reader requires (OpenFlow 1.3 §7.3.5.5): instructions,
/// next tables, write/apply actions, match, wildcards, write/apply set-field.
fn table_feature_props(id: u8, version: u8) -> Vec<wire::Prop> {
    let ids16 = |ts: &[u16]| -> Vec<u8> {
        ts.iter()
            .flat_map(|t| {
                let mut v = t.to_be_bytes().to_vec();
                v.extend_from_slice(&4u16.to_be_bytes());
                v
            })
            .collect()
    };
    // OFPIT_GOTO_TABLE (1) where there is a later table; OFPIT_METER (6) up to 1.4, as 1.5
    // made the meter an action.
    let instructions: Vec<u16> = (1..=6)
        .filter(|i| *i != 1 || id < 253)
        .filter(|i| *i != 6 || version < wire::OFP15)
        .collect();
    let instructions = ids16(&instructions);
    let mut action_types = vec![
        0, 11, 12, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
    ];
    if version >= wire::OFP15 {
        // OFPAT_METER: in 1.5 a meter is an action.
        action_types.push(29);
    }
    let actions = ids16(&action_types);
    let next: Vec<u8> = (id.saturating_add(1)..254).collect();
    let oxm = |masked: bool| -> Vec<u8> {
        Field::ALL
            .iter()
            .filter(|f| f.oxm().0 == 0x8000)
            .flat_map(|f| {
                let (class, field) = f.oxm();
                let m = masked && f.maskable();
                let len = f.wire_len() * if m { 2 } else { 1 };
                let h = (u32::from(class) << 16)
                    | (u32::from(field) << 9)
                    | (u32::from(m) << 8)
                    | (len as u32 & 0xff);
                h.to_be_bytes()
            })
            .collect()
    };
    let prop = |type_: u16, data: Vec<u8>| wire::Prop { type_, data };
    vec![
        prop(0, instructions),
        prop(2, next),
        prop(4, actions.clone()),
        prop(6, actions),
        prop(8, oxm(true)),
        prop(10, oxm(false)),
        prop(12, oxm(false)),
        prop(14, oxm(false)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action_ids(props: &[wire::Prop], type_: u16) -> Vec<u16> {
        props
            .iter()
            .find(|p| p.type_ == type_)
            .map(|p| {
                p.data
                    .chunks(4)
                    .map(|c| u16::from_be_bytes([c[0], c[1]]))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn instructions_as_ovs_lists_them() {
        // Instructions are property 0: goto-table is 1, meter 6.
        let ids = |table, version| action_ids(&table_feature_props(table, version), 0);
        assert_eq!(ids(0, wire::OFP13), vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(ids(0, wire::OFP15), vec![1, 2, 3, 4, 5]);
        assert_eq!(ids(253, wire::OFP13), vec![2, 3, 4, 5, 6]);
        assert_eq!(ids(253, wire::OFP15), vec![2, 3, 4, 5]);
    }

    #[test]
    fn the_meter_action_is_advertised_from_openflow15_on() {
        for (version, want) in [
            (wire::OFP13, false),
            (wire::OFP14, false),
            (wire::OFP15, true),
        ] {
            let props = table_feature_props(0, version);
            // Write-actions (4) and apply-actions (6) list the same action types.
            for t in [4, 6] {
                let ids = action_ids(&props, t);
                assert!(ids.contains(&0), "output always listed");
                assert_eq!(ids.contains(&29), want, "version {version} property {t}");
            }
        }
    }
}
