//! Meters in ovs-ofctl text (`add-meter`, `mod-meter`, `del-meter`, `dump-meters`).
//!
//! `meter=1,kbps,burst,stats,bands=type=drop,rate=1000,burst_size=100` — flags `kbps`,
//! `pktps`, `burst`, `stats`; after `bands=`, each `type=drop` or `type=dscp_remark`
//! starts a band and `rate=`, `burst_size=` and (dscp_remark only) `prec_level=` fill it
//! in. Items may be separated by commas, spaces or newlines, so dump-meters output
//! (`meter=1 kbps burst stats bands=` / `type=drop rate=1000 burst_size=100`) parses too.
//! No unit is implied when neither `kbps` nor `pktps` is given. `meter=all` names every
//! meter (for deletes); `meter=controller` and `meter=slowpath` name the two virtual meters
//! (`OFPM_CONTROLLER`, which meters packet-ins, and `OFPM_SLOWPATH`), printed by those names
//! as ovs-ofctl prints them. Deletes take only `meter=`.
//!
//! Formatting prints the dump-meters form, which parses back to an equal `MeterMod`.

use super::{need_value, uint_for, TextError, Token, Tokens};
use crate::messages::{
    MeterBand, MeterFlags, MeterMod, MeterModCommand, OFPM_ALL, OFPM_CONTROLLER, OFPM_MAX,
    OFPM_SLOWPATH,
};

#[derive(Default)]
struct BandBuilder {
    dscp: bool,
    rate: Option<u32>,
    burst_size: u32,
    prec_level: Option<u8>,
}

impl BandBuilder {
    fn build(self, n: usize) -> Result<MeterBand, TextError> {
        let rate = self
            .rate
            .ok_or_else(|| TextError::new(format!("band {n}: must specify rate=")))?;
        if self.dscp {
            Ok(MeterBand::DscpRemark {
                rate,
                burst_size: self.burst_size,
                prec_level: self.prec_level.unwrap_or(0),
            })
        } else if self.prec_level.is_some() {
            Err(TextError::new(format!(
                "band {n}: prec_level is only valid for type=dscp_remark"
            )))
        } else {
            Ok(MeterBand::Drop {
                rate,
                burst_size: self.burst_size,
            })
        }
    }
}

/// Parse a meter in ovs-ofctl syntax for `command`. Adds and modifies need `meter=` and at
/// least one band; deletes take only `meter=` (default: all meters).
pub fn parse_meter(text: &str, command: MeterModCommand) -> Result<MeterMod, TextError> {
    let mut meter_id: Option<u32> = None;
    let mut flags = MeterFlags::default();
    let mut in_bands = false;
    let mut bands: Vec<BandBuilder> = Vec::new();
    let mut toks = Tokens::new(text);
    while let Some(tok) = toks.next_token() {
        let tok = tok?;
        let text = tok.text();
        if in_bands {
            band_keyword(&tok, &mut bands)?;
            continue;
        }
        match tok.key {
            "meter" => {
                let v = need_value(&tok)?;
                meter_id = Some(match v {
                    "all" => OFPM_ALL,
                    "controller" => OFPM_CONTROLLER,
                    "slowpath" => OFPM_SLOWPATH,
                    _ => uint_for(&tok, 32)? as u32,
                });
            }
            "kbps" | "pktps" | "burst" | "stats" => {
                if tok.value.is_some() {
                    return Err(TextError::new(format!(
                        "{text}: '{}' takes no value",
                        tok.key
                    )));
                }
                flags.insert(match tok.key {
                    "kbps" => MeterFlags::KBPS,
                    "pktps" => MeterFlags::PKTPS,
                    "burst" => MeterFlags::BURST,
                    _ => MeterFlags::STATS,
                });
            }
            "bands" => {
                in_bands = true;
                if let Some(v) = tok.value.filter(|v| !v.is_empty()) {
                    first_band(&text, v, &mut bands)?;
                }
            }
            k => return Err(TextError::new(format!("unknown keyword '{k}'"))),
        }
    }
    if command == MeterModCommand::Delete {
        if !bands.is_empty() {
            return Err(TextError::new("bands are not allowed when deleting meters"));
        }
        // A delete carries no flags (OVS refuses them too); keeping them would print
        // `meter=N`, which parses back without them.
        if flags != MeterFlags::default() {
            return Err(TextError::new(
                "flags (kbps, pktps, burst, stats) are not allowed when deleting meters",
            ));
        }
        return Ok(MeterMod {
            command,
            flags,
            meter_id: meter_id.unwrap_or(OFPM_ALL),
            bands: Vec::new(),
        });
    }
    let meter_id = meter_id.ok_or_else(|| TextError::new("must specify meter=ID"))?;
    if bands.is_empty() {
        return Err(TextError::new("must specify bands=type=...,rate=..."));
    }
    let bands = bands
        .into_iter()
        .enumerate()
        .map(|(i, b)| b.build(i + 1))
        .collect::<Result<Vec<_>, _>>()?;
    let m = MeterMod {
        command,
        flags,
        meter_id,
        bands,
    };
    m.validate()
        .map_err(|e| TextError::new(format!("invalid meter: {e}")))?;
    Ok(m)
}

/// One keyword after `bands=`: `type=` starts a band, `rate=`, `burst_size=` and
/// `prec_level=` fill in the current one.
fn band_keyword(tok: &Token<'_>, bands: &mut Vec<BandBuilder>) -> Result<(), TextError> {
    let text = tok.text();
    match tok.key {
        "type" => {
            let v = need_value(tok)?;
            let dscp = match v {
                "drop" => false,
                "dscp_remark" => true,
                _ => {
                    return Err(TextError::new(format!(
                        "{text}: '{v}' is not a band type (drop, dscp_remark)"
                    )))
                }
            };
            bands.push(BandBuilder {
                dscp,
                ..BandBuilder::default()
            });
        }
        "rate" | "burst_size" | "prec_level" => {
            let b = bands
                .last_mut()
                .ok_or_else(|| TextError::new(format!("{text}: a band must start with type=")))?;
            match tok.key {
                "rate" => b.rate = Some(uint_for(tok, 32)? as u32),
                "burst_size" => b.burst_size = uint_for(tok, 32)? as u32,
                _ => b.prec_level = Some(uint_for(tok, 8)? as u8),
            }
        }
        k => return Err(TextError::new(format!("unknown band keyword '{k}'"))),
    }
    Ok(())
}

/// `bands=type=drop`: the first band's type rides on `bands=` (`text` is the whole token).
fn first_band(text: &str, v: &str, bands: &mut Vec<BandBuilder>) -> Result<(), TextError> {
    let mut inner = Tokens::new(v);
    if let Some(t) = inner.next_token() {
        let t = t?;
        if t.key != "type" {
            return Err(TextError::new(format!(
                "{text}: a band must start with type="
            )));
        }
        let dscp = match t.value {
            Some("drop") => false,
            Some("dscp_remark") => true,
            _ => {
                return Err(TextError::new(format!(
                    "{text}: not a band type (drop, dscp_remark)"
                )))
            }
        };
        bands.push(BandBuilder {
            dscp,
            ..BandBuilder::default()
        });
    }
    Ok(())
}

/// Format a meter as dump-meters does: `meter=1 kbps burst stats bands=` then one
/// `type=drop rate=1000 burst_size=100` line per band.
pub fn format_meter(m: &MeterMod) -> String {
    let mut s = format!("meter={}", meter_id_text(m.meter_id));
    if m.command == MeterModCommand::Delete {
        return s;
    }
    for (f, n) in [
        (MeterFlags::KBPS, "kbps"),
        (MeterFlags::PKTPS, "pktps"),
        (MeterFlags::BURST, "burst"),
        (MeterFlags::STATS, "stats"),
    ] {
        if m.flags.contains(f) {
            s.push(' ');
            s.push_str(n);
        }
    }
    s.push_str(" bands=");
    for b in &m.bands {
        match *b {
            MeterBand::Drop { rate, .. } => s.push_str(&format!("\ntype=drop rate={rate}")),
            MeterBand::DscpRemark { rate, .. } => {
                s.push_str(&format!("\ntype=dscp_remark rate={rate}"))
            }
        }
        if b.burst_size() != 0 || m.flags.contains(MeterFlags::BURST) {
            s.push_str(&format!(" burst_size={}", b.burst_size()));
        }
        if let MeterBand::DscpRemark { prec_level, .. } = *b {
            s.push_str(&format!(" prec_level={prec_level}"));
        }
    }
    s
}

/// A meter id as ovs-ofctl prints it: the number up to `OFPM_MAX`, then `slowpath`,
/// `controller`, `all`, and `unknown` for the ids between that have no name.
pub fn meter_id_text(id: u32) -> String {
    match id {
        0..=OFPM_MAX => id.to_string(),
        OFPM_SLOWPATH => "slowpath".to_string(),
        OFPM_CONTROLLER => "controller".to_string(),
        OFPM_ALL => "all".to_string(),
        _ => "unknown".to_string(),
    }
}
