//! OpenFlow switch semantics (being written).
