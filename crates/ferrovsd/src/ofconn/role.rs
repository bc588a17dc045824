//! Controller roles and the master election (OpenFlow 1.3 §6.3.6), as rules over plain
//! values: no lock, no connection, no I/O.
//!
//! ## Roles
//! Every connection starts `Equal`: it may do anything and gets the asynchronous messages
//! a master gets. A `Master` is the same, and there is at most one per bridge: when a
//! connection becomes master, every other master becomes `Slave`. A slave may read but not
//! change the switch: [`Role::permits`] refuses it every request that would (flow, group,
//! meter, port and table mods, packet-outs, and bundles, which carry such changes), with
//! `BAD_REQUEST/IS_SLAVE`, and by default it is sent only port status (see
//! `conn::DEFAULT_ASYNC`).
//!
//! ## Generation id
//! A bridge remembers the generation id of the last master or slave request it granted
//! ([`Election`]). A later master or slave request whose id is older — compared as the
//! spec says, by the sign of the 64-bit difference, so the id may wrap — is refused with
//! `ROLE_REQUEST_FAILED/STALE` and changes nothing. `Equal` and "no change" requests
//! neither check nor move the id. Every role reply carries the remembered id (0 while none
//! is). An unknown role is `ROLE_REQUEST_FAILED/BAD_ROLE`.
//!
//! ## Who holds what
//! A connection's role lives in its shared state (other connections' requests demote it),
//! the [`Election`] in the bridge's; the caller holds the bridge's lock while it asks
//! [`Election::request`] and applies the [`Grant`], so two requests cannot interleave.

use openflow::messages::err::{self, bad_request};
use openflow::wire::{Message, NxMessage, RoleMsg};
use openflow::OfError;

/// `OFPCR_ROLE_NOCHANGE`.
pub const NO_CHANGE: u32 = 0;

/// `OFPRRFC_STALE`.
const STALE: u16 = 0;
/// `OFPRRFC_BAD_ROLE`.
const BAD_ROLE: u16 = 2;

/// A connection's role. See the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Role {
    #[default]
    Equal,
    Master,
    Slave,
}

impl Role {
    /// The `OFPCR_ROLE_*` number.
    pub const fn wire(self) -> u32 {
        match self {
            Role::Equal => 1,
            Role::Master => 2,
            Role::Slave => 3,
        }
    }

    /// The role numbered `n` (`None` for "no change" and unknown numbers).
    pub const fn from_wire(n: u32) -> Option<Role> {
        match n {
            1 => Some(Role::Equal),
            2 => Some(Role::Master),
            3 => Some(Role::Slave),
            _ => None,
        }
    }

    /// The name `get-controller` shows.
    pub const fn name(self) -> &'static str {
        match self {
            Role::Equal => "equal",
            Role::Master => "master",
            Role::Slave => "slave",
        }
    }

    /// Whether a connection in this role may send `m` (see the module documentation).
    pub fn permits(self, m: &Message) -> Result<(), OfError> {
        if self == Role::Slave && changes_state(m) {
            Err(OfError::bad_request(bad_request::IS_SLAVE))
        } else {
            Ok(())
        }
    }
}

/// Whether `m` is a request that changes the switch (what a slave may not send).
fn changes_state(m: &Message) -> bool {
    matches!(
        m,
        Message::FlowMod(_)
            | Message::Nx(NxMessage::FlowMod(_))
            | Message::Nx(NxMessage::TlvTableMod { .. })
            | Message::Nx(NxMessage::CtFlushZone(_))
            | Message::Nx(NxMessage::Resume(_))
            | Message::GroupMod(_)
            | Message::GroupBucketMod(_)
            | Message::MeterMod(_)
            | Message::PortMod(_)
            | Message::TableMod(_)
            | Message::PacketOut(_)
            | Message::BundleControl(_)
            | Message::BundleAdd(_)
    )
}

/// A bridge's master election state. See the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Election {
    generation_id: Option<u64>,
}

/// What a granted role request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The requester's role from now on (its current one for "no change").
    pub role: Role,
    /// The generation id for the reply and for role status messages.
    pub generation_id: u64,
    /// Whether this request made the requester master (other masters step down).
    pub takes_over: bool,
}

impl Grant {
    /// The role another connection, now in `other`, has after this grant.
    pub fn other(&self, other: Role) -> Role {
        if self.takes_over && other == Role::Master {
            Role::Slave
        } else {
            other
        }
    }
}

impl Election {
    /// Decides role request `req` from a connection now in `current`; on success the
    /// election has moved on and the caller applies the [`Grant`].
    pub fn request(&mut self, current: Role, req: &RoleMsg) -> Result<Grant, OfError> {
        let failed = |code| OfError::new(err::OFPET_ROLE_REQUEST_FAILED, code);
        let role = match (req.role, Role::from_wire(req.role)) {
            (NO_CHANGE, _) => None,
            (_, Some(r)) => Some(r),
            (_, None) => return Err(failed(BAD_ROLE)),
        };
        if matches!(role, Some(Role::Master | Role::Slave)) {
            if let Some(g) = self.generation_id {
                // Older, in the wrapping order the spec defines.
                if (req.generation_id.wrapping_sub(g) as i64) < 0 {
                    return Err(failed(STALE));
                }
            }
            self.generation_id = Some(req.generation_id);
        }
        Ok(Grant {
            role: role.unwrap_or(current),
            generation_id: self.generation_id.unwrap_or(0),
            takes_over: role == Some(Role::Master),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::wire::{self, BundleAdd, BundleControl, PacketOut, PortMod, TableMod};
    use openflow::{FlowMod, FlowModCommand, Match};

    fn req(role: u32, generation_id: u64) -> RoleMsg {
        RoleMsg {
            role,
            short_id: 0,
            generation_id,
        }
    }

    fn code(r: Result<Grant, OfError>) -> (u16, u16) {
        let e = r.expect_err("refused");
        (e.type_, e.code)
    }

    const STALE_ERR: (u16, u16) = (err::OFPET_ROLE_REQUEST_FAILED, STALE);

    #[test]
    fn roles_have_their_wire_numbers() {
        for r in [Role::Equal, Role::Master, Role::Slave] {
            assert_eq!(Role::from_wire(r.wire()), Some(r));
        }
        assert_eq!(Role::from_wire(NO_CHANGE), None);
        assert_eq!(Role::from_wire(4), None);
        assert_eq!(Role::default(), Role::Equal);
        assert_eq!(Role::Slave.name(), "slave");
    }

    #[test]
    fn becoming_master_records_the_generation_id_and_demotes_other_masters() {
        let mut e = Election::default();
        assert_eq!(e.generation_id, None);
        let g = e.request(Role::Equal, &req(2, 10)).unwrap();
        assert_eq!(
            g,
            Grant {
                role: Role::Master,
                generation_id: 10,
                takes_over: true
            }
        );
        assert_eq!(e.generation_id, Some(10));
        assert_eq!(g.other(Role::Master), Role::Slave);
        assert_eq!(g.other(Role::Equal), Role::Equal);
        assert_eq!(g.other(Role::Slave), Role::Slave);
    }

    #[test]
    fn a_stale_generation_id_is_refused_and_changes_nothing() {
        let mut e = Election::default();
        e.request(Role::Equal, &req(2, 10)).unwrap();
        assert_eq!(code(e.request(Role::Equal, &req(2, 9))), STALE_ERR);
        assert_eq!(code(e.request(Role::Equal, &req(3, 5))), STALE_ERR);
        assert_eq!(e.generation_id, Some(10));
        // The same id is not older; a newer one moves the election on.
        assert_eq!(
            e.request(Role::Equal, &req(3, 10)).unwrap().role,
            Role::Slave
        );
        let g = e.request(Role::Slave, &req(2, 11)).unwrap();
        assert_eq!((g.role, g.generation_id), (Role::Master, 11));
    }

    #[test]
    fn generation_ids_compare_across_the_wrap() {
        let mut e = Election::default();
        e.request(Role::Equal, &req(2, u64::MAX - 1)).unwrap();
        // 1 comes after u64::MAX - 1 (difference 3, positive).
        assert_eq!(e.request(Role::Equal, &req(2, 1)).unwrap().generation_id, 1);
        // ... and u64::MAX - 1 is now before 1.
        assert_eq!(
            code(e.request(Role::Equal, &req(2, u64::MAX - 1))),
            STALE_ERR
        );
        // Half the space away is "older" (the sign bit is set).
        assert_eq!(
            code(e.request(Role::Equal, &req(3, 1 + (1 << 63)))),
            STALE_ERR
        );
    }

    #[test]
    fn equal_and_no_change_leave_the_generation_id_alone() {
        let mut e = Election::default();
        // No id yet: the reply says 0.
        let g = e.request(Role::Master, &req(1, 99)).unwrap();
        assert_eq!(
            (g.role, g.generation_id, g.takes_over),
            (Role::Equal, 0, false)
        );
        assert_eq!(e.generation_id, None);
        e.request(Role::Equal, &req(3, 50)).unwrap();
        // An older id is fine for equal and no-change, which do not check it.
        let g = e.request(Role::Slave, &req(1, 1)).unwrap();
        assert_eq!((g.role, g.generation_id), (Role::Equal, 50));
        let g = e.request(Role::Master, &req(NO_CHANGE, 1)).unwrap();
        assert_eq!(
            (g.role, g.generation_id, g.takes_over),
            (Role::Master, 50, false)
        );
        assert_eq!(g.other(Role::Master), Role::Master);
        assert_eq!(e.generation_id, Some(50));
    }

    #[test]
    fn an_unknown_role_is_bad_role() {
        let mut e = Election::default();
        for n in [4, 7, u32::MAX] {
            assert_eq!(
                code(e.request(Role::Equal, &req(n, 1))),
                (err::OFPET_ROLE_REQUEST_FAILED, BAD_ROLE)
            );
        }
        assert_eq!(e.generation_id, None);
    }

    #[test]
    fn a_slave_may_read_but_not_change_the_switch() {
        let fm = FlowMod::new(FlowModCommand::Add);
        let refused = [
            Message::FlowMod(fm.clone()),
            Message::Nx(NxMessage::FlowMod(fm)),
            Message::PortMod(PortMod {
                port_no: 1,
                hw_addr: [0; 6],
                config: 1,
                mask: 1,
                advertise: None,
                props: Vec::new(),
            }),
            Message::TableMod(TableMod::default()),
            Message::PacketOut(PacketOut {
                buffer_id: u32::MAX,
                in_port: 1,
                match_: Match::new(),
                actions: Vec::new(),
                data: vec![0; 14],
            }),
            Message::BundleControl(BundleControl {
                bundle_id: 1,
                ctrl_type: 4,
                flags: 0,
                props: Vec::new(),
            }),
            Message::BundleAdd(BundleAdd {
                bundle_id: 1,
                flags: 0,
                message: Vec::new(),
                props: Vec::new(),
            }),
        ];
        for m in &refused {
            let e = Role::Slave.permits(m).expect_err("refused");
            assert_eq!(
                (e.type_, e.code),
                (err::OFPET_BAD_REQUEST, bad_request::IS_SLAVE)
            );
            assert!(Role::Master.permits(m).is_ok());
            assert!(Role::Equal.permits(m).is_ok());
        }
        let allowed = [
            Message::EchoRequest(Vec::new()),
            Message::BarrierRequest,
            Message::FeaturesRequest,
            Message::GetConfigRequest,
            Message::RoleRequest(req(2, 1)),
            Message::GetAsyncRequest,
            Message::SetConfig(wire::SwitchConfig::default()),
        ];
        for m in &allowed {
            assert!(Role::Slave.permits(m).is_ok(), "{m:?}");
        }
    }
}
