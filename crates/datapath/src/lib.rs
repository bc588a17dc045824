//! The fabric (being written).
