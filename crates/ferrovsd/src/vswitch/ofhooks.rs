//! The seam between the database-driven reconfiguration and the OpenFlow connection layer.
//!
//! What: the reconfiguration reads each bridge's `controller`, `fail_mode`, `protocols` and
//! datapath ID from the database and hands them to an [`OfConfigSink`]; the connection layer
//! (`crate::ofconn`, written separately) owns the sockets and applies them. Keeping the seam a
//! trait lets each side be built and tested alone; [`super::ofbridge`] implements it for the
//! connection manager.
//!
//! Calls happen on the reconfiguration thread only, and only when a bridge's OpenFlow
//! settings differ from what was last applied (so the settings the database has no column for,
//! set by the connection layer's `set-openflow`, are not reset by unrelated database changes;
//! the CLI's controller, fail-mode, protocols and datapath-ID verbs write the database).
//! `bridge_removed` is called when a bridge disappears. Implementations must not block for
//! long: they may start connections in the background.

use datapath::udpif::Udpif;
use std::sync::Arc;

/// One controller connection as configured in the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Controller {
    /// `tcp:IP[:PORT]`, `ssl:...`, `unix:PATH`, `ptcp:[PORT][:IP]`, `punix:PATH`.
    pub target: String,
    /// `in-band` or `out-of-band` (ferrovs is always out of band).
    pub connection_mode: Option<String>,
    /// Milliseconds.
    pub max_backoff: Option<i64>,
    /// Milliseconds.
    pub inactivity_probe: Option<i64>,
}

/// A bridge's OpenFlow settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BridgeOfConfig {
    pub controllers: Vec<Controller>,
    /// `standalone` or `secure`; `None` means the default (standalone).
    pub fail_mode: Option<String>,
    /// `OpenFlow10`, `OpenFlow13`, ...; empty means the default set.
    pub protocols: Vec<String>,
    /// The datapath ID reported to controllers.
    pub datapath_id: u64,
}

/// Live state of one controller connection, for the Controller table's status columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerStatus {
    pub target: String,
    pub is_connected: bool,
    /// `master`, `slave`, `other` (as OVS names them), if known.
    pub role: Option<String>,
}

/// Where bridges' OpenFlow settings go. See the module documentation.
pub trait OfConfigSink: Send + Sync {
    /// A bridge running the `openflow` module was created in the datapath (before the first
    /// `apply` for it): open its management socket and threads.
    fn bridge_added(&self, _bridge: &str, _udpif: Arc<Udpif>) -> Result<(), String> {
        Ok(())
    }
    /// Applies `cfg` to bridge `bridge` (which exists in the datapath).
    fn apply(&self, bridge: &str, cfg: &BridgeOfConfig) -> Result<(), String>;
    /// The bridge is gone.
    fn bridge_removed(&self, bridge: &str);
    /// The key, certificate and CA certificate files of the `SSL` row (`None` without one),
    /// for `ssl:` and `pssl:` targets. Called on every pass, before `apply`.
    fn set_ssl(&self, _files: Option<tls::TlsFiles>) {}
    /// The OpenFlow state of every bridge running the `openflow` module, by name.
    fn udpifs(&self) -> std::collections::BTreeMap<String, Arc<Udpif>> {
        Default::default()
    }
    /// Where the IPFIX exporters count for OpenFlow's IPFIX statistics (a board nobody
    /// reads by default).
    fn ipfix_board(&self) -> Arc<crate::ipfix::board::Board> {
        Arc::default()
    }
    /// Connection states, for the `Controller` rows of `bridge` (empty if unknown).
    fn controller_status(&self, _bridge: &str) -> Vec<ControllerStatus> {
        Vec::new()
    }
}
