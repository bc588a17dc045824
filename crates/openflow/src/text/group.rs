//! Groups in ovs-ofctl text (`add-group`, `mod-group`, `del-groups`, `dump-groups`).
//!
//! `group_id=N,type=select,bucket=weight:10,actions=output:1,bucket=weight:20,actions=output:2`
//! — each `bucket=` starts a bucket that runs to the next one. Inside a bucket,
//! `weight`, `watch_port` and `watch_group` (written `key:value` or `key=value`) set its
//! parameters and everything else is an action; `actions=` before the actions is optional
//! (`bucket=output:1` is the short form). Select-group buckets default to weight 1, as in
//! OVS; other types to 0. Types: `all`, `select`, `indirect`, `ff` (or `fast_failover`).
//! `bucket_id` and `selection_method` (OpenFlow 1.5 / OVS extensions) are not supported.
//!
//! Formatting prints what dump-groups prints and parses back to an equal `GroupMod`.

use super::actions::{format_actions, parse_actions};
use super::fields::{format_port, parse_port};
use super::{need_value, uint_for, TextError, Token, Tokens};
use crate::actions::{OFPG_ALL, OFPG_ANY, OFPP_ANY};
use crate::messages::{Bucket, GroupMod, GroupModCommand, GroupType};

struct BucketBuilder {
    bucket: Bucket,
    weight_set: bool,
}

fn bucket_item(b: &mut BucketBuilder, tok: &Token<'_>) -> Result<(), TextError> {
    match tok.key {
        "weight" => {
            b.bucket.weight = uint_for(tok, 16)? as u16;
            b.weight_set = true;
        }
        "watch_port" => {
            let v = need_value(tok)?;
            b.bucket.watch_port = parse_port(v).ok_or_else(|| {
                TextError::new(format!(
                    "{}: '{v}' is not a port number or name",
                    tok.text()
                ))
            })?;
        }
        "watch_group" => b.bucket.watch_group = uint_for(tok, 32)? as u32,
        "actions" => {
            let v = tok.value.unwrap_or("");
            b.bucket.actions.extend(parse_actions(v, None)?);
        }
        "bucket_id" | "selection_method" => {
            return Err(TextError::new(format!(
                "{}: '{}' is not supported",
                tok.text(),
                tok.key
            )))
        }
        _ => {
            let text = match tok.value {
                Some(v) => format!("{}:{}", tok.key, v),
                None => tok.key.to_string(),
            };
            b.bucket.actions.extend(parse_actions(&text, None)?);
        }
    }
    Ok(())
}

/// Parse a group in ovs-ofctl syntax for `command`. Adds and modifies need `group_id` and
/// `type`; deletes take only `group_id` (default: all groups).
pub fn parse_group(text: &str, command: GroupModCommand) -> Result<GroupMod, TextError> {
    let mut group_id: Option<u32> = None;
    let mut group_type: Option<GroupType> = None;
    let mut buckets: Vec<BucketBuilder> = Vec::new();
    let mut toks = Tokens::new(text);
    while let Some(tok) = toks.next_token() {
        let tok = tok?;
        let text = tok.text();
        match (tok.key, buckets.last_mut()) {
            ("bucket", _) => {
                let mut b = BucketBuilder {
                    bucket: Bucket::new(Vec::new()),
                    weight_set: false,
                };
                let v = tok.value.unwrap_or("");
                let mut inner = Tokens::new(v);
                while let Some(t) = inner.next_token() {
                    bucket_item(&mut b, &t?)?;
                }
                buckets.push(b);
            }
            ("group_id", None) => {
                let v = need_value(&tok)?;
                group_id = Some(match v {
                    "all" | "ALL" => OFPG_ALL,
                    _ => uint_for(&tok, 32)? as u32,
                });
            }
            ("type", None) => {
                let v = need_value(&tok)?;
                group_type = Some(match v {
                    "all" => GroupType::All,
                    "select" => GroupType::Select,
                    "indirect" => GroupType::Indirect,
                    "ff" | "fast_failover" => GroupType::FastFailover,
                    _ => {
                        return Err(TextError::new(format!(
                            "{text}: '{v}' is not a group type (all, select, indirect, ff)"
                        )))
                    }
                });
            }
            (_, Some(b)) => bucket_item(b, &tok)?,
            (key, None) => return Err(TextError::new(format!("unknown keyword '{key}'"))),
        }
    }
    let is_delete = command == GroupModCommand::Delete;
    if is_delete {
        if !buckets.is_empty() {
            return Err(TextError::new(
                "buckets are not allowed when deleting groups",
            ));
        }
        return Ok(GroupMod {
            command,
            group_type: group_type.unwrap_or(GroupType::All),
            group_id: group_id.unwrap_or(OFPG_ALL),
            buckets: Vec::new(),
        });
    }
    let group_id = group_id.ok_or_else(|| TextError::new("must specify a group_id"))?;
    let group_type = group_type.ok_or_else(|| {
        TextError::new("must specify a group type (type=all, select, indirect or ff)")
    })?;
    let buckets = buckets
        .into_iter()
        .map(|mut b| {
            if !b.weight_set && group_type == GroupType::Select {
                b.bucket.weight = 1;
            }
            b.bucket
        })
        .collect();
    let g = GroupMod {
        command,
        group_type,
        group_id,
        buckets,
    };
    g.validate()
        .map_err(|e| TextError::new(format!("invalid group: {e}")))?;
    Ok(g)
}

/// Format a group as dump-groups does (`group_id=1,type=select,bucket=weight:10,...`).
pub fn format_group(g: &GroupMod) -> String {
    let id = if g.group_id == OFPG_ALL {
        "all".to_string()
    } else {
        g.group_id.to_string()
    };
    if g.command == GroupModCommand::Delete {
        return format!("group_id={id}");
    }
    let mut s = format!("group_id={id},type={}", g.group_type.name());
    for b in &g.buckets {
        s.push_str(",bucket=");
        if g.group_type == GroupType::Select {
            s.push_str(&format!("weight:{},", b.weight));
        }
        if b.watch_port != OFPP_ANY {
            s.push_str(&format!("watch_port:{},", format_port(b.watch_port)));
        }
        if b.watch_group != OFPG_ANY {
            s.push_str(&format!("watch_group:{},", b.watch_group));
        }
        s.push_str("actions=");
        s.push_str(&format_actions(&b.actions));
    }
    s
}
