//! OpenFlow switch semantics (being written).
pub mod meter;
pub mod odp;
