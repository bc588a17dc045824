//! OpenFlow switch semantics (being written).
pub mod fields;
pub mod meter;
pub mod odp;
