//! The verbs that change the switch: flows, the table-miss mode, groups and meters. Each
//! parses everything it was given before it changes anything.

use super::{joined, of_error_text, split_strict};
use datapath::udpif::Udpif;
use ofproto::table::TableMiss;
use openflow::messages::OFPM_ALL;
use openflow::text;
use openflow::{
    BucketCommand, FlowMod, FlowModCommand, GroupMod, GroupModCommand, MeterMod, MeterModCommand,
    OfError,
};

/// `add-flow BR FLOW`.
pub(super) fn add_flow(m: &Udpif, args: &[String], now: u64) -> Result<String, String> {
    if args.is_empty() {
        return Err("usage: add-flow BR FLOW".into());
    }
    let fm = text::parse_flow(&joined(args), FlowModCommand::Add).map_err(|e| e.to_string())?;
    apply_flow_mods(m, &[fm], now, None)
}

/// `add-flows BR`: one flow per line; blank lines and `#` comments are skipped, and errors
/// name the line.
pub(super) fn add_flows(m: &Udpif, args: &[String], now: u64) -> Result<String, String> {
    let mut fms = Vec::new();
    let mut lines = Vec::new();
    for (i, line) in args.iter().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let fm =
            text::parse_flow(t, FlowModCommand::Add).map_err(|e| format!("line {}: {e}", i + 1))?;
        fms.push(fm);
        lines.push(i + 1);
    }
    apply_flow_mods(m, &fms, now, Some(&lines))
}

/// `mod-flows BR [--strict] FLOW`.
pub(super) fn mod_flows(m: &Udpif, args: &[String], now: u64) -> Result<String, String> {
    let (strict, rest) = split_strict(args);
    if rest.is_empty() {
        return Err("usage: mod-flows BR [--strict] FLOW".into());
    }
    let cmd = if strict {
        FlowModCommand::ModifyStrict
    } else {
        FlowModCommand::Modify
    };
    let fm = text::parse_flow(&joined(&rest), cmd).map_err(|e| e.to_string())?;
    apply_flow_mods(m, &[fm], now, None)
}

/// `del-flows BR [--strict] [FLOW]`: without a flow, every flow of every table.
pub(super) fn del_flows(m: &Udpif, args: &[String], now: u64) -> Result<String, String> {
    let (strict, rest) = split_strict(args);
    let cmd = if strict {
        FlowModCommand::DeleteStrict
    } else {
        FlowModCommand::Delete
    };
    let fm = if rest.is_empty() {
        FlowMod {
            table_id: openflow::messages::OFPTT_ALL,
            ..FlowMod::new(cmd)
        }
    } else {
        text::parse_flow(&joined(&rest), cmd).map_err(|e| e.to_string())?
    };
    apply_flow_mods(m, &[fm], now, None)
}

/// `mod-table BR TABLE drop|controller|continue`.
pub(super) fn mod_table(m: &Udpif, args: &[String]) -> Result<String, String> {
    let [t, mode] = args else {
        return Err("usage: mod-table BR TABLE drop|controller|continue".into());
    };
    let id: u8 = t
        .parse()
        .ok()
        .filter(|n| usize::from(*n) < ofproto::switch::N_TABLES)
        .ok_or_else(|| format!("'{t}' is not a table number (0-254)"))?;
    let miss = match mode.as_str() {
        "drop" => TableMiss::Drop,
        "controller" => TableMiss::Controller,
        "continue" => TableMiss::Continue,
        _ => return Err(format!("'{mode}' is not drop, controller or continue")),
    };
    if let Some(tb) = m.of().table_mut(id) {
        tb.miss = miss;
    }
    Ok(String::new())
}

/// `add-group` and `mod-group`.
pub(super) fn group_mod(
    m: &Udpif,
    args: &[String],
    now: u64,
    cmd: GroupModCommand,
) -> Result<String, String> {
    let gm = text::parse_group(&joined(args), cmd).map_err(|e| e.to_string())?;
    m.of()
        .group_mod(&gm, now)
        .map_err(|e| format!("{} ({})", group_error(&e), of_error_text(&e)))?;
    Ok(String::new())
}

/// `insert-buckets` and `remove-buckets`.
pub(super) fn bucket_mod(
    m: &Udpif,
    args: &[String],
    now: u64,
    cmd: BucketCommand,
) -> Result<String, String> {
    let gm = text::parse_group_buckets(&joined(args), cmd).map_err(|e| e.to_string())?;
    m.of()
        .group_bucket_mod(&gm, now)
        .map_err(|e| format!("{} ({})", group_error(&e), of_error_text(&e)))?;
    Ok(String::new())
}

/// `del-groups BR [GROUP]`: without a group, all of them.
pub(super) fn del_groups(m: &Udpif, args: &[String], now: u64) -> Result<String, String> {
    let gm = if args.is_empty() {
        GroupMod {
            command: GroupModCommand::Delete,
            group_type: openflow::GroupType::All,
            group_id: openflow::actions::OFPG_ALL,
            buckets: Vec::new(),
        }
    } else {
        text::parse_group(&joined(args), GroupModCommand::Delete).map_err(|e| e.to_string())?
    };
    m.of().group_mod(&gm, now).map_err(|e| of_error_text(&e))?;
    Ok(String::new())
}

/// `add-meter` and `mod-meter`.
pub(super) fn meter_mod(
    m: &Udpif,
    args: &[String],
    now: u64,
    cmd: MeterModCommand,
) -> Result<String, String> {
    let mm = text::parse_meter(&joined(args), cmd).map_err(|e| e.to_string())?;
    m.of().meter_mod(&mm, now).map_err(|e| of_error_text(&e))?;
    Ok(String::new())
}

/// `del-meters BR [METER]`: without a meter, all of them.
pub(super) fn del_meters(m: &Udpif, args: &[String], now: u64) -> Result<String, String> {
    let mm = if args.is_empty() {
        MeterMod {
            command: MeterModCommand::Delete,
            flags: openflow::MeterFlags(0),
            meter_id: OFPM_ALL,
            bands: Vec::new(),
        }
    } else {
        text::parse_meter(&joined(args), MeterModCommand::Delete).map_err(|e| e.to_string())?
    };
    m.of().meter_mod(&mm, now).map_err(|e| of_error_text(&e))?;
    Ok(String::new())
}

fn group_error(e: &OfError) -> &'static str {
    use openflow::messages::err::group_mod_failed as g;
    match e.code {
        g::GROUP_EXISTS => "group already exists",
        g::UNKNOWN_GROUP => "unknown group",
        g::LOOP => "group chain would loop",
        g::UNKNOWN_BUCKET => "unknown bucket",
        g::BUCKET_EXISTS => "bucket id already in the group",
        _ => "invalid group",
    }
}

fn flow_error(e: &OfError) -> String {
    use openflow::messages::err;
    let what = match (e.type_, e.code) {
        (err::OFPET_BAD_MATCH, err::bad_match::BAD_PREREQ) => "match field prerequisites not met",
        (err::OFPET_BAD_MATCH, err::bad_match::BAD_FIELD) => "match field not supported",
        (err::OFPET_BAD_ACTION, err::bad_action::BAD_OUT_GROUP) => "action names an unknown group",
        (err::OFPET_BAD_ACTION, err::bad_action::BAD_OUT_PORT) => {
            "action outputs to an invalid port"
        }
        (err::OFPET_BAD_ACTION, err::bad_action::MATCH_INCONSISTENT) => {
            "set_field on a field the match does not establish"
        }
        (err::OFPET_METER_MOD_FAILED, err::meter_mod_failed::UNKNOWN_METER) => "unknown meter",
        (err::OFPET_FLOW_MOD_FAILED, err::flow_mod_failed::OVERLAP) => {
            "overlaps an existing flow of the same priority (check_overlap)"
        }
        (err::OFPET_FLOW_MOD_FAILED, err::flow_mod_failed::TABLE_FULL) => "table full",
        (err::OFPET_BAD_INSTRUCTION, err::bad_instruction::BAD_TABLE_ID) => {
            "goto_table must name a later table"
        }
        _ => "flow_mod refused",
    };
    format!("{what} ({})", of_error_text(e))
}

/// Validates every flow_mod against the switch, then applies them all.
fn apply_flow_mods(
    m: &Udpif,
    fms: &[FlowMod],
    now: u64,
    lines: Option<&[usize]>,
) -> Result<String, String> {
    let mut of = m.of();
    for (i, fm) in fms.iter().enumerate() {
        if let Err(e) = of.check_flow_mod(fm) {
            let prefix = lines
                .and_then(|l| l.get(i))
                .map(|n| format!("line {n}: "))
                .unwrap_or_default();
            return Err(format!("{prefix}{}", flow_error(&e)));
        }
    }
    for (i, fm) in fms.iter().enumerate() {
        of.flow_mod(fm, now).map_err(|e| {
            let prefix = lines
                .and_then(|l| l.get(i))
                .map(|n| format!("line {n}: "))
                .unwrap_or_default();
            format!("{prefix}{}", flow_error(&e))
        })?;
    }
    Ok(String::new())
}
