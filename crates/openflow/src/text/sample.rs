//! `sample(...)` in ovs-ofctl text, both directions.
//!
//! Parsing takes `probability=N` (1..65535, required), `collector_set_id=N`,
//! `obs_domain_id=N`, `obs_point_id=N` (32 bits each, 0 by default; a value that does not fit
//! is an error, where ovs-ofctl silently keeps its low bits), `sampling_port=PORT` and the
//! flags `ingress` / `egress` (the last one written counts), in any order.
//!
//! Formatting is ovs-ofctl's: the four numbers always, in that order, then the sampling
//! port if there is one, then the direction if it is not the default.

use super::fields::{format_port, parse_port};
use super::{uint_for, TextError, Token, Tokens};
use crate::actions::{Action, OFPP_ANY};
use crate::sample::{Sample, SampleDirection};

pub(crate) fn parse_sample(tok: &Token<'_>) -> Result<Action, TextError> {
    let text = tok.text();
    let err = |m: String| TextError::new(format!("{text}: {m}"));
    let mut s = Sample {
        probability: 0,
        collector_set_id: 0,
        obs_domain_id: 0,
        obs_point_id: 0,
        sampling_port: OFPP_ANY,
        direction: SampleDirection::Default,
    };
    let mut toks = Tokens::new(tok.value.unwrap_or(""));
    while let Some(t) = toks.next_token() {
        let t = t?;
        let u32_of = |t: &Token<'_>| uint_for(t, 32).map(|v| v as u32);
        match t.key {
            "probability" => {
                let p = uint_for(&t, 16)? as u16;
                if p == 0 {
                    return Err(err("invalid probability value \"0\"".into()));
                }
                s.probability = p;
            }
            "collector_set_id" => s.collector_set_id = u32_of(&t)?,
            "obs_domain_id" => s.obs_domain_id = u32_of(&t)?,
            "obs_point_id" => s.obs_point_id = u32_of(&t)?,
            "sampling_port" => {
                let v = t.value.unwrap_or("");
                s.sampling_port = parse_port(v).ok_or_else(|| err(format!("{v}: unknown port")))?;
            }
            "ingress" if t.value.is_none() => s.direction = SampleDirection::Ingress,
            "egress" if t.value.is_none() => s.direction = SampleDirection::Egress,
            other => {
                return Err(err(format!(
                    "invalid key \"{other}\" in \"sample\" argument"
                )))
            }
        }
    }
    if s.probability == 0 {
        return Err(err(
            "non-zero \"probability\" must be specified on sample".into()
        ));
    }
    let a = Action::Sample(s);
    a.validate()
        .map_err(|e| err(format!("invalid action ({e})")))?;
    Ok(a)
}

/// `sample(...)` as ovs-ofctl prints it.
pub(crate) fn format_sample(s: &Sample) -> String {
    let mut out = format!(
        "sample(probability={},collector_set_id={},obs_domain_id={},obs_point_id={}",
        s.probability, s.collector_set_id, s.obs_domain_id, s.obs_point_id
    );
    if s.has_port() {
        out.push_str(&format!(",sampling_port={}", format_port(s.sampling_port)));
    }
    match s.direction {
        SampleDirection::Default => {}
        SampleDirection::Ingress => out.push_str(",ingress"),
        SampleDirection::Egress => out.push_str(",egress"),
    }
    out.push(')');
    out
}
