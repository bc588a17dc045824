//! Groups in ovs-ofctl text (`add-group`, `mod-group`, `del-groups`, `dump-groups`).
//!
//! `group_id=N,type=select,bucket=weight:10,actions=output:1,bucket=weight:20,actions=output:2`
//! — each `bucket=` starts a bucket that runs to the next one. Inside a bucket,
//! `weight`, `watch_port` and `watch_group` (written `key:value` or `key=value`) set its
//! parameters and everything else is an action; `actions=` before the actions is optional
//! (`bucket=output:1` is the short form). Select-group buckets default to weight 1, as in
//! OVS; other types to 0. Types: `all`, `select`, `indirect`, `ff` (or `fast_failover`).
//! `bucket_id` (OpenFlow 1.5) is accepted in a bucket and printed when some bucket of the
//! group has a non-zero id; `selection_method` (an OVS extension) is not supported.
//!
//! `insert-buckets` / `remove-buckets` ([`parse_group_buckets`]) take `group_id`, an optional
//! `type`, `command_bucket_id=first|last|all|ID` (default `last` for insert, `all` for
//! remove, as in ovs-ofctl) and, for insert, the buckets.
//!
//! Formatting prints what dump-groups prints and parses back to an equal `GroupMod`.

use super::actions::{format_actions, parse_actions};
use super::fields::{format_port, parse_port};
use super::{need_value, uint_for, TextError, Token, Tokens};
use crate::actions::{OFPG_ALL, OFPG_ANY, OFPP_ANY};
use crate::messages::{
    Bucket, BucketCommand, GroupBucketMod, GroupMod, GroupModCommand, GroupType, OFPG_BUCKET_ALL,
    OFPG_BUCKET_FIRST, OFPG_BUCKET_LAST, OFPG_BUCKET_MAX,
};

struct BucketBuilder {
    bucket: Bucket,
    weight_set: bool,
}

/// One item of a bucket; `src` is the text `tok` was lexed from (an action written as
/// `key(value)`, such as `resubmit(,1)`, is parsed as written).
fn bucket_item(b: &mut BucketBuilder, tok: &Token<'_>, src: &str) -> Result<(), TextError> {
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
        "bucket_id" => {
            let id = uint_for(tok, 32)? as u32;
            if id > OFPG_BUCKET_MAX {
                return Err(TextError::new(format!(
                    "{}: bucket ids go up to {OFPG_BUCKET_MAX:#x}",
                    tok.text()
                )));
            }
            b.bucket.bucket_id = id;
        }
        "selection_method" => {
            return Err(TextError::new(format!(
                "{}: '{}' is not supported",
                tok.text(),
                tok.key
            )))
        }
        _ => {
            let parens = tok
                .value_start
                .checked_sub(1)
                .and_then(|i| src.as_bytes().get(i))
                == Some(&b'(');
            let text = match tok.value {
                Some(v) if parens => format!("{}({})", tok.key, v),
                Some(v) => format!("{}:{}", tok.key, v),
                None => tok.key.to_string(),
            };
            b.bucket.actions.extend(parse_actions(&text, None)?);
        }
    }
    Ok(())
}

/// A group's text split into its parts.
struct Parts {
    group_id: Option<u32>,
    group_type: Option<GroupType>,
    command_bucket_id: Option<u32>,
    buckets: Vec<BucketBuilder>,
}

/// Parse a group in ovs-ofctl syntax for `command`. Adds and modifies need `group_id` and
/// `type`; deletes take only `group_id` (default: all groups).
pub fn parse_group(text: &str, command: GroupModCommand) -> Result<GroupMod, TextError> {
    let Parts {
        group_id,
        group_type,
        command_bucket_id,
        buckets,
    } = parse_parts(text)?;
    if command_bucket_id.is_some() {
        return Err(TextError::new(
            "command_bucket_id is only for insert-buckets and remove-buckets",
        ));
    }
    parse_group_from(group_id, group_type, buckets, command)
}

/// Parse an OpenFlow 1.5 insert-buckets / remove-buckets request in ovs-ofctl syntax.
pub fn parse_group_buckets(
    text: &str,
    command: BucketCommand,
) -> Result<GroupBucketMod, TextError> {
    let p = parse_parts(text)?;
    let group_id = p
        .group_id
        .ok_or_else(|| TextError::new("must specify a group_id"))?;
    let command_bucket_id = p.command_bucket_id.unwrap_or(match command {
        BucketCommand::Insert => OFPG_BUCKET_LAST,
        BucketCommand::Remove => OFPG_BUCKET_ALL,
    });
    match command {
        BucketCommand::Insert if p.buckets.is_empty() => {
            return Err(TextError::new("insert-buckets needs at least one bucket"))
        }
        BucketCommand::Insert if command_bucket_id == OFPG_BUCKET_ALL => {
            return Err(TextError::new(
                "command_bucket_id=all is only for remove-buckets",
            ))
        }
        BucketCommand::Remove if !p.buckets.is_empty() => {
            return Err(TextError::new("remove-buckets takes no buckets"))
        }
        _ => {}
    }
    let group_type = p.group_type.unwrap_or(GroupType::All);
    Ok(GroupBucketMod {
        command,
        group_type,
        group_id,
        command_bucket_id,
        buckets: p
            .buckets
            .into_iter()
            .map(|mut b| {
                if !b.weight_set && group_type == GroupType::Select {
                    b.bucket.weight = 1;
                }
                b.bucket
            })
            .collect(),
    })
}

fn parse_parts(text: &str) -> Result<Parts, TextError> {
    let mut group_id: Option<u32> = None;
    let mut group_type: Option<GroupType> = None;
    let mut command_bucket_id: Option<u32> = None;
    let mut buckets: Vec<BucketBuilder> = Vec::new();
    let text_src = text;
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
                    bucket_item(&mut b, &t?, v)?;
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
            ("command_bucket_id", None) => {
                let v = need_value(&tok)?;
                command_bucket_id = Some(match v {
                    "first" => OFPG_BUCKET_FIRST,
                    "last" => OFPG_BUCKET_LAST,
                    "all" => OFPG_BUCKET_ALL,
                    _ => {
                        let id = uint_for(&tok, 32)? as u32;
                        if id > OFPG_BUCKET_MAX {
                            return Err(TextError::new(format!(
                                "{text}: not first, last, all or a bucket id"
                            )));
                        }
                        id
                    }
                });
            }
            (_, Some(b)) => bucket_item(b, &tok, text_src)?,
            (key, None) => return Err(TextError::new(format!("unknown keyword '{key}'"))),
        }
    }
    Ok(Parts {
        group_id,
        group_type,
        command_bucket_id,
        buckets,
    })
}

fn parse_group_from(
    group_id: Option<u32>,
    group_type: Option<GroupType>,
    buckets: Vec<BucketBuilder>,
    command: GroupModCommand,
) -> Result<GroupMod, TextError> {
    let is_delete = command == GroupModCommand::Delete;
    if is_delete {
        if !buckets.is_empty() {
            return Err(TextError::new(
                "buckets are not allowed when deleting groups",
            ));
        }
        // A delete names groups only (OVS refuses a type too); keeping the type would print
        // `group_id=N`, which parses back without it.
        if group_type.is_some() {
            return Err(TextError::new("type is not allowed when deleting groups"));
        }
        return Ok(GroupMod {
            command,
            group_type: GroupType::All,
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
    let ids = g.buckets.iter().any(|b| b.bucket_id != 0);
    for b in &g.buckets {
        s.push_str(",bucket=");
        if ids {
            s.push_str(&format!("bucket_id:{},", b.bucket_id));
        }
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
