//! OpenFlow (being written).
