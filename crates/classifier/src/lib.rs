//! The classifier (essay to come).

mod classifier;
mod config;
mod hash;
mod prefix;
mod rule;
mod shared;
mod subtable;
mod view;

pub use classifier::{Batch, Classifier};
pub use config::{
    fields, Config, ConfigError, PrefixField, Ranking, MAX_PREFIX_FIELDS, MAX_STAGES,
};
pub use rule::{Match, Rule, RuleId};
pub use shared::{Reader, Snapshot, Writer};
pub use view::{LookupStats, SubtableInfo, View};
