//! The flow key and its one-pass extractor. (Being written; see the foundation issue.)
