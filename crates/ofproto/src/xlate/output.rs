//! Output to a port (reserved ports included) and the TTL-expiry path to the controller.

use super::*;

impl Ctx<'_> {
    pub(super) fn output(&mut self, port: u32, max_len: u16) {
        match port {
            OFPP_IN_PORT => self.out.push(DpAction::Output(self.flow.in_port)),
            OFPP_NORMAL => match self.tnl_pop(true) {
                Some(port) => self.out.push(DpAction::TnlPop { port, normal: true }),
                None => self.out.push(DpAction::Normal),
            },
            OFPP_FLOOD | OFPP_ALL => {
                let ports: Vec<u32> = self
                    .of
                    .ports()
                    .values()
                    .filter(|p| p.ofport != self.flow.in_port && !p.admin_down)
                    .filter(|p| port == OFPP_ALL || !p.no_flood)
                    .map(|p| p.ofport)
                    .collect();
                for p in ports {
                    self.out.push(DpAction::Output(p));
                }
            }
            OFPP_CONTROLLER => {
                let reason = if self.in_packet_out {
                    PacketInReason::PacketOut
                } else if self.in_group > 0 {
                    PacketInReason::Group
                } else if self.in_action_set {
                    PacketInReason::ActionSet
                } else if self.miss_rule {
                    PacketInReason::ExplicitMiss
                } else {
                    PacketInReason::Action
                };
                let pin = DpAction::Controller {
                    max_len,
                    reason,
                    table_id: self.table_id,
                    cookie: self.cookie,
                    meta: self.pipeline_meta(),
                    extra: None,
                };
                self.packet_in(pin, openflow::controller::NX_CTLR_NO_METER);
            }
            OFPP_TABLE => {
                // Only packet-out may output to TABLE: run the pipeline from table 0.
                let saved = self.table_id;
                self.run_tables(0);
                self.table_id = saved;
            }
            OFPP_LOCAL => {
                if self.flow.in_port == OFPP_LOCAL {
                    self.note(|| " >> skipping output to input port".into());
                } else if let Some(port) = self.tnl_pop(false) {
                    self.out.push(DpAction::TnlPop {
                        port,
                        normal: false,
                    });
                } else {
                    self.out.push(DpAction::Output(OFPP_LOCAL));
                }
            }
            p if p == self.flow.in_port => {
                self.note(|| " >> skipping output to input port".into());
            }
            p if self.of.ports().get(&p).is_some_and(|x| x.admin_down) => {
                self.note(|| format!(" >> skipping output to port {p}: administratively down"));
            }
            p => match self.tnl_push(p) {
                Some(t) => self.out.push(DpAction::TnlPush(Box::new(t))),
                None => self.out.push(DpAction::Output(p)),
            },
        }
    }

    /// `tnl_push`: the outer headers tunnel port `p` sends this packet with, if they are
    /// known now and the same for every packet of the megaflow (see [`crate::native`]).
    fn tnl_push(&mut self, p: u32) -> Option<crate::native::TnlPush> {
        let map = crate::native::map()?;
        let name = &self.of.ports().get(&p)?.name;
        let t = map.push(name, p, &self.flow, &mut self.wc)?;
        self.note(|| format!(" -> output to native tunnel: {t}"));
        Some(t)
    }

    /// `tnl_pop`: whether the packet, sent to `LOCAL` (by NORMAL if `normal`: then only an
    /// untagged packet to the port's own MAC), is a tunnel packet to one of the bridge's
    /// tunnel endpoints (see [`crate::native`]); the listening port if so.
    fn tnl_pop(&mut self, normal: bool) -> Option<u32> {
        let map = crate::native::map()?;
        if self.flow.in_port == OFPP_LOCAL {
            return None;
        }
        let name = &self.of.ports().get(&OFPP_LOCAL)?.name;
        let port = map.pop_port(name, &self.flow, normal, &mut self.wc)?;
        self.note(|| format!(" -> tunnel packet to this bridge: tnl_pop({port})"));
        Some(port)
    }

    /// A TTL ran out: the action list ends; with `OFPC_INVALID_TTL_TO_CONTROLLER`, an
    /// invalid-TTL packet-in goes to the connections of each controller id in `ids` (plain
    /// `dec_ttl` is id 0; `dec_ttl()` names none).
    pub(super) fn ttl_expired(&mut self, ids: &[u16]) {
        let v = if self.flow.dl_type == flow::ETH_TYPE_IPV6 {
            "IPv6"
        } else if self.is_mpls() {
            "MPLS"
        } else {
            "IPv4"
        };
        self.note(|| format!(" >> {v} decrement TTL exception"));
        self.ttl_stop = true;
        if self.of.invalid_ttl_to_controller {
            for &id in ids {
                let meta = self.pipeline_meta();
                let extra = (id != 0).then(|| {
                    Box::new(crate::odp::PinExtra {
                        reason: PacketInReason::InvalidTtl as u8,
                        controller_id: id,
                        ..Default::default()
                    })
                });
                let pin = DpAction::Controller {
                    max_len: OFPCML_NO_BUFFER,
                    reason: PacketInReason::InvalidTtl,
                    table_id: self.table_id,
                    cookie: self.cookie,
                    meta,
                    extra,
                };
                self.packet_in(pin, openflow::controller::NX_CTLR_NO_METER);
            }
        }
        self.stopped = true;
    }
}
