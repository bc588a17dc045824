//! [`OfConfigSink`] for the OpenFlow connection layer ([`crate::ofconn::ConnMgr`]).
//!
//! What: the adapter that turns what the database says about a bridge's OpenFlow side into
//! calls on the connection manager: `bridge_added` when the reconfiguration creates an
//! `openflow` bridge (the manager opens `<rundir>/<bridge>.mgmt` and its threads),
//! `bridge_removed` when the bridge goes, and on every change of the bridge's Controller rows,
//! `fail_mode`, `protocols` or datapath ID: the controller targets (`set_controllers`) and the
//! per-bridge settings (`fail_mode`, the allowed OpenFlow versions, `datapath_id`, and the
//! first controller's `inactivity_probe`/`max_backoff`) in the manager's `OfSettings`; then
//! the flow table is reset where ovs-vswitchd resets it ([`crate::ofconn::default_flow`]).
//!
//! Threads: called from the reconfiguration thread; the manager takes its own locks.
//! Controller status for the `Controller` table comes from `get_controllers`: a target with an
//! established connection reports it after its state text.

use super::ofhooks::{BridgeOfConfig, ControllerStatus, OfConfigSink};
use crate::ofconn::{cli::parse_db_protocols, ConnMgr, FailMode};
use datapath::udpif::Udpif;
use std::sync::Arc;

/// See the module documentation.
pub struct ConnMgrSink(pub Arc<ConnMgr>);

impl OfConfigSink for ConnMgrSink {
    fn bridge_added(&self, bridge: &str, udpif: Arc<Udpif>) -> Result<(), String> {
        self.0.bridge_added(bridge, udpif)
    }

    fn apply(&self, bridge: &str, cfg: &BridgeOfConfig) -> Result<(), String> {
        let b = match self.0.bridge(bridge) {
            Ok(b) => b,
            // Bridges running another module have no OpenFlow side.
            Err(_) => return Ok(()),
        };
        {
            let mut c = b.cfg.lock().unwrap_or_else(|e| e.into_inner());
            c.fail_mode = match cfg.fail_mode.as_deref() {
                Some("secure") => FailMode::Secure,
                _ => FailMode::Standalone,
            };
            if cfg.protocols.is_empty() {
                c.versions = openflow::wire::VERSIONS.to_vec();
            } else {
                c.versions = parse_db_protocols(&cfg.protocols)?;
            }
            c.datapath_id = Some(cfg.datapath_id).filter(|d| *d != 0);
            if let Some(first) = cfg.controllers.first() {
                if let Some(p) = first.inactivity_probe.and_then(|p| u64::try_from(p).ok()) {
                    c.inactivity_probe_ms = p.max(100);
                }
                if let Some(m) = first.max_backoff.and_then(|m| u64::try_from(m).ok()) {
                    c.max_backoff_ms = m.max(1000);
                }
            }
        }
        let targets: Vec<String> = cfg.controllers.iter().map(|c| c.target.clone()).collect();
        let r = self.0.set_controllers(bridge, &targets);
        crate::ofconn::default_flow::settle(&b);
        r
    }

    fn set_ssl(&self, files: Option<tls::TlsFiles>) {
        self.0.set_ssl(files);
    }

    fn bridge_removed(&self, bridge: &str) {
        self.0.bridge_removed(bridge);
    }

    fn udpifs(&self) -> std::collections::BTreeMap<String, Arc<Udpif>> {
        self.0.udpifs()
    }

    fn ipfix_board(&self) -> Arc<crate::ipfix::board::Board> {
        Arc::clone(&self.0.ipfix)
    }

    fn controller_status(&self, bridge: &str) -> Vec<ControllerStatus> {
        self.0
            .get_controllers(bridge)
            .unwrap_or_default()
            .into_iter()
            .map(|(target, state)| ControllerStatus {
                target,
                is_connected: state.contains(';'),
                role: None,
            })
            .collect()
    }
}
