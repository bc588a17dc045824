//! The asynchronous messages OpenFlow 1.4 and 1.5 added, and the table configuration they
//! report on.
//!
//! * **Role status** (1.4): when a controller becomes master, every connection it demotes
//!   from master to slave is told so (`OFPCRR_MASTER_REQUEST`) with the new generation id.
//! * **Request forward** (1.4): a group_mod or meter_mod that one controller made
//!   successfully is sent, re-encoded in each receiver's version and with the original
//!   xid, to every *other* OpenFlow 1.4+ connection whose async config asks for that
//!   reason (`OFPRFR_GROUP_MOD` 0, `OFPRFR_METER_MOD` 1). By default nobody asks.
//! * **Table status** (1.4): a table_mod may turn on vacancy events with a vacancy
//!   property (down and up thresholds, in percent of the table's capacity). The
//!   dispatcher calls [`check_vacancy`] on every tick: when a table's free space drops
//!   below `vacancy_down` a `VACANCY_DOWN` status goes out, and the next event is a
//!   `VACANCY_UP` once it rises above `vacancy_up` (hysteresis, as the spec describes).
//!   [`table_descs`] answers the table-desc multipart with the same configuration.
//! * **Controller status** (1.5): the controller-status multipart lists the bridge's
//!   controller connections (management clients are not controllers) with their role
//!   and target URI. Unsolicited controller-status messages are not sent.
//!
//! Table configuration lives in [`BridgeOf::tables`]; a write session on the OpenFlow state is taken only to
//! read table sizes.

use super::conn::{kind, Conn};
use super::role::Role;
use super::{lock, BridgeOf};
use openflow::messages::err;
use openflow::wire::of14::{role_reason, ControllerStatus, RoleStatus, TableDesc, TableStatus};
use openflow::wire::{self, Message, Prop, TableMod};
use openflow::OfError;
use std::sync::Arc;

/// `OFPTC_EVICTION`.
const OFPTC_EVICTION: u32 = 1 << 2;
/// `OFPTC_VACANCY_EVENTS`.
const OFPTC_VACANCY_EVENTS: u32 = 1 << 3;
/// `OFPTMPT_EVICTION`.
const PROP_EVICTION: u16 = 2;
/// `OFPTMPT_VACANCY`.
const PROP_VACANCY: u16 = 3;
/// `OFPTR_VACANCY_DOWN` / `_UP`.
const VACANCY_DOWN: u8 = 3;
const VACANCY_UP: u8 = 4;

/// One table's OpenFlow 1.4 configuration.
#[derive(Clone, Debug, Default)]
pub struct TableCfg {
    /// `OFPTC_*` bits as last set.
    pub config: u32,
    /// Eviction flags, if an eviction property was given.
    pub eviction: Option<u32>,
    /// (vacancy_down, vacancy_up) in percent, when vacancy events are on.
    pub vacancy: Option<(u8, u8)>,
    /// Whether the last event said the table is low on space.
    low: bool,
}

/// Sends role status to the connections `demoted` from master.
pub fn role_demoted(demoted: &[Arc<Conn>], generation_id: u64) {
    for c in demoted {
        if c.version() < wire::OFP14 {
            continue;
        }
        let want = c.wants(&lock(&c.st), kind::ROLE_STATUS, role_reason::MASTER_REQUEST);
        if want {
            c.send_async(&Message::RoleStatus(RoleStatus {
                role: Role::Slave.wire(),
                reason: role_reason::MASTER_REQUEST,
                generation_id,
                props: Vec::new(),
            }));
        }
    }
}

/// Forwards a successful group_mod or meter_mod from `from` (see the module documentation).
pub fn forward_request(b: &BridgeOf, from: &Conn, xid: u32, m: &Message) {
    let reason = match m {
        Message::GroupMod(_) | Message::GroupBucketMod(_) => 0,
        Message::MeterMod(_) => 1,
        _ => return,
    };
    let conns: Vec<Arc<Conn>> = lock(&b.conns).clone();
    for c in conns {
        let v = c.version();
        if c.id == from.id || v < wire::OFP14 {
            continue;
        }
        if !c.wants(&lock(&c.st), kind::REQUESTFORWARD, reason) {
            continue;
        }
        if let Ok(inner) = wire::encode(m, v, xid) {
            c.send_async(&Message::RequestForward(inner));
        }
    }
}

fn vacancy_prop(down: u8, up: u8, now: u8) -> Prop {
    Prop {
        type_: PROP_VACANCY,
        data: vec![down, up, now, 0],
    }
}

/// Applies a table_mod's OpenFlow 1.4 configuration (eviction and vacancy properties).
pub fn table_mod(b: &BridgeOf, tm: &TableMod) -> Result<(), OfError> {
    let bad_config = OfError::new(err::OFPET_TABLE_MOD_FAILED, 1);
    let mut eviction = None;
    let mut vacancy = None;
    for p in &tm.props {
        match p.type_ {
            PROP_EVICTION => {
                let [a, b1, c, d] = p
                    .data
                    .get(..4)
                    .and_then(|x| x.try_into().ok())
                    .ok_or(OfError::new(err::OFPET_BAD_PROPERTY, 1))?;
                eviction = Some(u32::from_be_bytes([a, b1, c, d]));
            }
            PROP_VACANCY => {
                let (Some(&down), Some(&up)) = (p.data.first(), p.data.get(1)) else {
                    return Err(OfError::new(err::OFPET_BAD_PROPERTY, 1));
                };
                if down > up || up > 100 {
                    return Err(bad_config);
                }
                vacancy = Some((down, up));
            }
            0xfffe | 0xffff => return Err(OfError::new(err::OFPET_BAD_PROPERTY, 5)),
            _ => return Err(OfError::new(err::OFPET_BAD_PROPERTY, 0)),
        }
    }
    let events = tm.config & OFPTC_VACANCY_EVENTS != 0;
    if events && vacancy.is_none() {
        return Err(bad_config);
    }
    let ids: Vec<u8> = if tm.table_id == openflow::messages::OFPTT_ALL {
        (0..254).collect()
    } else {
        vec![tm.table_id]
    };
    let sizes = table_usage(b, &ids);
    let mut tables = lock(&b.tables);
    for (id, (len, max)) in ids.into_iter().zip(sizes) {
        let t = tables.entry(id).or_default();
        t.config = tm.config;
        if eviction.is_some() {
            t.eviction = eviction;
        }
        t.vacancy = if events { vacancy } else { None };
        if let Some((down, _)) = t.vacancy {
            t.low = vacancy_pct(len, max) < down;
        }
    }
    Ok(())
}

fn vacancy_pct(len: usize, max: usize) -> u8 {
    if max == 0 {
        return 0;
    }
    (100 - (len.min(max) * 100 / max)) as u8
}

/// (rules, capacity) of each table in `ids`.
fn table_usage(b: &BridgeOf, ids: &[u8]) -> Vec<(usize, usize)> {
    let of = b.udpif.of();
    ids.iter()
        .map(|id| of.table(*id).map_or((0, 0), |t| (t.len(), t.max_entries)))
        .collect()
}

fn desc(id: u8, t: Option<&TableCfg>, len: usize, max: usize) -> TableDesc {
    // The eviction property is always there, with OVS's flags unless a table_mod set others.
    let eviction = |f: u32| Prop {
        type_: PROP_EVICTION,
        data: f.to_be_bytes().to_vec(),
    };
    let Some(t) = t else {
        return TableDesc {
            table_id: id,
            config: 0,
            props: vec![eviction(DEFAULT_EVICTION_FLAGS)],
        };
    };
    let mut props = vec![eviction(t.eviction.unwrap_or(DEFAULT_EVICTION_FLAGS))];
    if let Some((down, up)) = t.vacancy {
        props.push(vacancy_prop(down, up, vacancy_pct(len, max)));
    }
    TableDesc {
        table_id: id,
        config: t.config & (OFPTC_EVICTION | OFPTC_VACANCY_EVENTS),
        props,
    }
}

/// The eviction flags a table reports when no table_mod set them: `OFPTMPEF14_OTHER`,
/// `IMPORTANCE` and `LIFETIME`, what OVS reports for every table.
const DEFAULT_EVICTION_FLAGS: u32 = 0x7;

/// The table-desc multipart's records, tables 0..=253.
pub fn table_descs(b: &BridgeOf) -> Vec<TableDesc> {
    let ids: Vec<u8> = (0..254).collect();
    let sizes = table_usage(b, &ids);
    let tables = lock(&b.tables);
    ids.into_iter()
        .zip(sizes)
        .map(|(id, (len, max))| desc(id, tables.get(&id), len, max))
        .collect()
}

/// Sends vacancy events for tables that crossed their thresholds (dispatcher, every tick).
pub fn check_vacancy(b: &BridgeOf) {
    let watched: Vec<u8> = lock(&b.tables)
        .iter()
        .filter(|(_, t)| t.vacancy.is_some())
        .map(|(id, _)| *id)
        .collect();
    if watched.is_empty() {
        return;
    }
    let sizes = table_usage(b, &watched);
    let mut events = Vec::new();
    {
        let mut tables = lock(&b.tables);
        for (id, (len, max)) in watched.into_iter().zip(sizes) {
            let Some(t) = tables.get_mut(&id) else {
                continue;
            };
            let Some((down, up)) = t.vacancy else {
                continue;
            };
            let Some(reason) = vacancy_event(t, down, up, vacancy_pct(len, max)) else {
                continue;
            };
            events.push((reason, desc(id, Some(t), len, max)));
        }
    }
    for (reason, table) in events {
        b.broadcast(|c| {
            let ok =
                c.version() >= wire::OFP14 && c.wants(&lock(&c.st), kind::TABLE_STATUS, reason);
            ok.then(|| {
                Message::TableStatus(TableStatus {
                    reason,
                    table: table.clone(),
                })
            })
        });
    }
}

/// The event a table whose free space is now `pct` percent reports, if any: `DOWN` once
/// it drops below `down`, then nothing until it rises above `up` (`UP`), and so on.
fn vacancy_event(t: &mut TableCfg, down: u8, up: u8, pct: u8) -> Option<u8> {
    if !t.low && pct < down {
        t.low = true;
        Some(VACANCY_DOWN)
    } else if t.low && pct > up {
        t.low = false;
        Some(VACANCY_UP)
    } else {
        None
    }
}

/// The controller-status multipart's records.
pub fn controller_statuses(b: &BridgeOf) -> Vec<ControllerStatus> {
    lock(&b.conns)
        .iter()
        .filter(|c| c.is_up())
        .filter_map(|c| {
            let target = c.kind.target()?;
            let st = lock(&c.st);
            Some(ControllerStatus {
                short_id: st.controller_id,
                role: st.role.wire(),
                reason: 0,
                channel_status: 0,
                props: vec![Prop {
                    type_: 0,
                    data: target.as_bytes().to_vec(),
                }],
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vacancy_events_have_hysteresis() {
        let mut t = TableCfg::default();
        let seq: Vec<Option<u8>> = [50, 25, 19, 10, 19, 60, 80, 81, 90, 79, 19]
            .into_iter()
            .map(|pct| vacancy_event(&mut t, 20, 80, pct))
            .collect();
        let (d, u) = (Some(VACANCY_DOWN), Some(VACANCY_UP));
        assert_eq!(
            seq,
            [None, None, d, None, None, None, None, u, None, None, d]
        );
    }

    #[test]
    fn vacancy_is_free_space_in_percent() {
        assert_eq!(vacancy_pct(0, 100), 100);
        assert_eq!(vacancy_pct(81, 100), 19);
        assert_eq!(vacancy_pct(200, 100), 0);
        assert_eq!(vacancy_pct(1, 0), 0);
    }
}
