//! Text forms of matches and actions for traces and dumps.

use openflow::{Action, Match};

/// A match as `name=value[/mask]` pairs.
pub fn match_text(m: &Match) -> String {
    let v: Vec<String> = m
        .iter()
        .map(|e| match e.mask {
            Some(mask) => format!("{}={:#x}/{:#x}", e.field.name(), e.value, mask),
            None => format!("{}={:#x}", e.field.name(), e.value),
        })
        .collect();
    v.join(",")
}

/// One action.
pub fn action_text(a: &Action) -> String {
    format!("{a:?}")
}
