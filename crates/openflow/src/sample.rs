//! The Nicira `sample` action: send a copy of one packet in `65535 / probability` to the
//! IPFIX collector set `collector_set_id`, tagged with an observation domain and point.
//!
//! The switch decides per packet, at random, with the given probability (1 = one packet in
//! 65535, 65535 = every packet); the packet itself goes on unchanged. `sampling_port` names
//! the port whose traffic this samples (OVS uses it to tell ingress from egress sampling and
//! to find tunnel metadata); `direction` says so explicitly. The collector set is the
//! `id` of an OVSDB `Flow_Sample_Collector_Set` row on the same bridge; a sample for a set
//! that does not exist (or has no IPFIX targets) is not taken, as in OVS.

use crate::actions::{port_to_of10, OFPP_ANY};
use crate::messages::{err::bad_action, OfError};

/// Which way the sampled packet was going.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, Default)]
pub enum SampleDirection {
    /// Unspecified: ingress unless `sampling_port` is the output port.
    #[default]
    Default,
    /// Sampled as it entered the switch.
    Ingress,
    /// Sampled as it left the switch.
    Egress,
}

impl SampleDirection {
    /// The wire value (`NX_ACTION_SAMPLE_DEFAULT`, `_INGRESS`, `_EGRESS`).
    pub fn to_wire(self) -> u8 {
        match self {
            SampleDirection::Default => 0,
            SampleDirection::Ingress => 1,
            SampleDirection::Egress => 2,
        }
    }

    /// The direction a wire value stands for, if any.
    pub fn from_wire(v: u8) -> Option<SampleDirection> {
        match v {
            0 => Some(SampleDirection::Default),
            1 => Some(SampleDirection::Ingress),
            2 => Some(SampleDirection::Egress),
            _ => None,
        }
    }
}

/// The `sample` action.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Sample {
    /// Packets sampled per 65535 (1..=65535).
    pub probability: u16,
    /// The `Flow_Sample_Collector_Set` row's `id`.
    pub collector_set_id: u32,
    /// IPFIX observation domain of the records.
    pub obs_domain_id: u32,
    /// IPFIX observation point of the records.
    pub obs_point_id: u32,
    /// The port whose traffic is sampled, [`OFPP_ANY`] (OVS's `OFPP_NONE`) for none.
    pub sampling_port: u32,
    /// Ingress or egress sampling.
    pub direction: SampleDirection,
}

impl Sample {
    /// Static checks: a non-zero probability, a sampling port OpenFlow 1.0's 16 bits can
    /// carry (the action holds it in 16 bits in every version).
    pub fn validate(&self) -> Result<(), OfError> {
        if self.probability == 0 || port_to_of10(self.sampling_port).is_none() {
            return Err(OfError::bad_action(bad_action::BAD_ARGUMENT));
        }
        Ok(())
    }

    /// Whether the action names a sampling port.
    pub fn has_port(&self) -> bool {
        self.sampling_port != OFPP_ANY
    }
}
