//! The classifier (being written).
