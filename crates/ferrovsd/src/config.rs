//! Parsing of the `KEY=VALUE` words that `add-br` and `add-port` take.
//!
//! `add-port` splits its words between the bridge (`type`, `ofport`, `tag`, `trunks`: what OVS
//! keeps in its Port and Interface columns) and the port provider (everything else, given to
//! `netdev::open` as options, which rejects keys it does not know).

use datapath::VlanMode;
use netdev::Options;

/// What `add-port BR PORT [KEY=VALUE...]` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortRequest {
    pub kind: String,
    pub ofport: Option<u32>,
    pub vlan: VlanMode,
    pub options: Options,
}

/// Splits `KEY=VALUE`; a word without `=` is an error naming it.
pub fn split_kv(word: &str) -> Result<(&str, &str), String> {
    match word.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k, v)),
        _ => Err(format!("'{word}' is not KEY=VALUE")),
    }
}

fn parse_vid(key: &str, v: &str) -> Result<u16, String> {
    v.parse::<u16>()
        .ok()
        .filter(|n| *n <= 4095)
        .ok_or_else(|| format!("{key}: '{v}' is not a VLAN ID (0-4095)"))
}

/// Parses the words after `add-port BR PORT`.
pub fn parse_port_request(words: &[String]) -> Result<PortRequest, String> {
    let mut req = PortRequest {
        kind: "system".into(),
        ofport: None,
        vlan: VlanMode::Trunk(None),
        options: Options::new(),
    };
    let mut tag = None;
    let mut trunks = None;
    for w in words {
        let (k, v) = split_kv(w)?;
        match k {
            "type" => {
                if v.is_empty() {
                    return Err("type: empty port type".into());
                }
                req.kind = v.to_string()
            }
            "ofport" | "ofport_request" => {
                let n: u32 = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=datapath::bridge::MAX_OFPORT).contains(n))
                    .ok_or_else(|| format!("{k}: '{v}' is not a port number (1-65280)"))?;
                req.ofport = Some(n);
            }
            "tag" => tag = Some(parse_vid("tag", v)?),
            "trunks" => {
                let mut list = Vec::new();
                for part in v.split(',').filter(|s| !s.is_empty()) {
                    list.push(parse_vid("trunks", part.trim())?);
                }
                if list.is_empty() {
                    return Err("trunks: empty VLAN list".into());
                }
                list.sort_unstable();
                list.dedup();
                trunks = Some(list);
            }
            _ => {
                if req.options.insert(k.to_string(), v.to_string()).is_some() {
                    return Err(format!("option '{k}' given twice"));
                }
            }
        }
    }
    req.vlan = match (tag, trunks) {
        (Some(_), Some(_)) => return Err("a port takes either tag= or trunks=, not both".into()),
        (Some(t), None) => VlanMode::Access(t),
        (None, Some(l)) => VlanMode::Trunk(Some(l)),
        (None, None) => VlanMode::Trunk(None),
    };
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn port_words() {
        let r =
            parse_port_request(&w(&["type=pcap", "ofport=7", "rx_pcap=/x", "tag=10"])).expect("ok");
        assert_eq!(r.kind, "pcap");
        assert_eq!(r.ofport, Some(7));
        assert_eq!(r.vlan, VlanMode::Access(10));
        assert_eq!(r.options.get("rx_pcap").map(String::as_str), Some("/x"));
        let r = parse_port_request(&w(&["trunks=20,10,20"])).expect("ok");
        assert_eq!(r.vlan, VlanMode::Trunk(Some(vec![10, 20])));
        assert_eq!(r.kind, "system");
    }

    #[test]
    fn bad_words_name_the_field() {
        for (words, needle) in [
            (vec!["ofport=0"], "ofport"),
            (vec!["ofport=x"], "ofport"),
            (vec!["tag=4096"], "tag"),
            (vec!["trunks=1,x"], "trunks"),
            (vec!["tag=1", "trunks=2"], "not both"),
            (vec!["novalue"], "KEY=VALUE"),
            (vec!["a=1", "a=2"], "twice"),
        ] {
            let e = parse_port_request(&w(&words)).expect_err("error");
            assert!(e.contains(needle), "{e}");
        }
    }
}
