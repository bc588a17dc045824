//! Creating a bridge's switching-logic module, keeping a typed handle on the state the
//! control plane shares with it.
//!
//! The fabric holds every module as a `Box<dyn SwitchLogic>`; the control plane needs more
//! than the trait for the `openflow` module: its OpenFlow state (`Udpif`), which the
//! connections, the CLI verbs and the appctl commands drive from their own threads. That
//! handle is taken here, where the module is built with its concrete type, so nothing later
//! has to ask the poll thread for it or guess its type.

use datapath::ofmodule::OpenFlow;
use datapath::udpif::Udpif;
use datapath::{module, SwitchLogic};
use std::sync::Arc;

/// A new module and, for `openflow`, its shared OpenFlow state.
pub struct Created {
    pub logic: Box<dyn SwitchLogic>,
    pub openflow: Option<Arc<Udpif>>,
}

/// Creates module `name` (see `datapath::module::MODULES`).
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
        logic: module::create(name)?,
        openflow: None,
    })
}
