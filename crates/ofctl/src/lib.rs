//! # ofctl — the OpenFlow verbs of ferrovs's control plane
//!
//! What `ferrovs add-flows/dump-flows/add-group/add-meter/mod-table/trace ...` (and the
//! matching `ovs-appctl`/unixctl methods) do to one bridge's OpenFlow state, in ovs-ofctl's
//! text syntax, plus creating a bridge's module together with the typed handle on that state.
//!
//! Layering: this crate sits above the datapath (`datapath` knows neither the OpenFlow text
//! syntax nor the wire codec) and below the daemon and the benchmarks, which both use it. It
//! does no I/O besides what [`datapath::udpif::Udpif::sync`] waits for.

pub mod verbs;

pub use verbs::{dump_flows_lines, run, run_as, trace_bridge, Caller};

use datapath::ofmodule::OpenFlow;
use datapath::udpif::Udpif;
use datapath::{registry, SwitchLogic};
use std::sync::Arc;

/// A new module and, for `openflow`, its shared OpenFlow state.
pub struct Created {
    pub logic: Box<dyn SwitchLogic>,
    pub openflow: Option<Arc<Udpif>>,
}

/// Creates module `name` (see [`datapath::registry`]), keeping the typed handle on the
/// OpenFlow state of an `openflow` module: the control plane drives that state from its own
/// threads, never by asking the poll thread or guessing types.
pub fn create(name: &str) -> Result<Created, String> {
    if name == "openflow" {
        let m = OpenFlow::new(true)?;
        let u = Arc::clone(m.udpif());
        return Ok(Created {
            logic: Box::new(m),
            openflow: Some(u),
        });
    }
    Ok(Created {
        logic: registry::create(name)?,
        openflow: None,
    })
}
