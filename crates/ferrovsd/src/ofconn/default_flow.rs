//! The flow table a bridge's controller settings imply, kept as ovs-vswitchd keeps it.
//!
//! What: a bridge in `fail_mode=standalone` with no controller configured switches like a
//! learning bridge through one flow, `priority=0,actions=NORMAL`; a bridge in `secure` mode, or
//! one with a controller, starts with an empty table and passes nothing until someone installs
//! flows. Measured against Debian's ovs-vswitchd 3.1, the table is reset ("flushed": every flow
//! of every table deleted, as `del-flows` would) only at these moments:
//! * when the bridge is created;
//! * when the bridge goes from no controller to some, or from some to none (whatever the mode);
//! * when the fail mode changes while no controller is configured.
//!
//! After a reset, the NORMAL flow is added if no controller is configured and the mode is
//! standalone. Nothing else touches the table: deleting the NORMAL flow by hand sticks across
//! unrelated reconfigurations, a changed controller target keeps the flows, and a fail-mode
//! change while controllers are configured keeps them too.
//!
//! Threads: called from the reconfiguration thread after the bridge's settings and
//! controllers are applied; the flush and the add go through a write session on the bridge's OpenFlow state like
//! any flow_mod, so controllers that asked for flow-removed messages get them (reason
//! `delete`), and the datapath's caches are revalidated.

use super::{lock, BridgeOf, FailMode};
use openflow::actions::OFPP_NORMAL;
use openflow::messages::OFPTT_ALL;
use openflow::{Action, FlowMod, FlowModCommand, Instruction};

/// What the table was last settled for: whether a controller was configured, and the mode.
pub type Settled = (bool, FailMode);

/// Whether going from `prev` (`None`: a new bridge) to `now` resets the table.
pub fn resets(prev: Option<Settled>, now: Settled) -> bool {
    match prev {
        None => true,
        Some((had, was)) => had != now.0 || (!now.0 && was != now.1),
    }
}

/// Brings the bridge's table in line with its current controllers and fail mode.
pub fn settle(b: &BridgeOf) {
    let now = (b.has_controllers(), lock(&b.cfg).fail_mode);
    let prev = lock(&b.settled).replace(now);
    if !resets(prev, now) {
        return;
    }
    let t = datapath::clock::now_ms();
    {
        let mut of = b.udpif.of();
        let mut flush = FlowMod::new(FlowModCommand::Delete);
        flush.table_id = OFPTT_ALL;
        // A delete of everything with no match is always valid.
        let _ = of.flow_mod(&flush, t);
        if now == (false, FailMode::Standalone) {
            let mut normal = FlowMod::new(FlowModCommand::Add);
            normal.priority = 0;
            normal.instructions =
                vec![Instruction::ApplyActions(vec![Action::output(OFPP_NORMAL)])];
            // A constant, valid flow_mod into an empty table 0: it cannot be refused.
            let _ = of.flow_mod(&normal, t);
        }
    }
    b.udpif.kick();
}

#[cfg(test)]
mod tests {
    use super::*;
    use FailMode::{Secure, Standalone};

    #[test]
    fn resets_as_ovs_vswitchd_does() {
        // A new bridge always starts from an empty table.
        assert!(resets(None, (false, Standalone)));
        assert!(resets(None, (true, Secure)));
        // Controllers appear or disappear: reset, in either mode.
        assert!(resets(Some((false, Secure)), (true, Secure)));
        assert!(resets(Some((true, Standalone)), (false, Standalone)));
        // The mode changes with no controller: reset; with controllers: kept.
        assert!(resets(Some((false, Standalone)), (false, Secure)));
        assert!(!resets(Some((true, Standalone)), (true, Secure)));
        // Nothing changed (another column of the bridge did): kept.
        assert!(!resets(Some((false, Standalone)), (false, Standalone)));
        assert!(!resets(Some((true, Secure)), (true, Secure)));
    }
}
