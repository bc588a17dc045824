//! Meters in text: round trips, the virtual meters by name, errors.

use super::*;
use crate::messages::MeterModCommand;

#[test]
fn meter_round_trips() {
    let cases = [
        (
            "meter=1,kbps,burst,stats,bands=type=drop,rate=1000,burst_size=100",
            "meter=1 kbps burst stats bands=\ntype=drop rate=1000 burst_size=100",
        ),
        (
            "meter=2 pktps bands=type=dscp_remark rate=10 prec_level=1 type=drop rate=100",
            "meter=2 pktps bands=\ntype=dscp_remark rate=10 prec_level=1\ntype=drop rate=100",
        ),
        (
            "meter=3,kbps,bands=type=drop,rate=5,burst_size=7",
            "meter=3 kbps bands=\ntype=drop rate=5 burst_size=7",
        ),
    ];
    for (input, want) in cases {
        let m = parse_meter(input, MeterModCommand::Add).unwrap_or_else(|e| panic!("{input}: {e}"));
        let got = format_meter(&m);
        assert_eq!(got, want);
        assert_eq!(parse_meter(&got, MeterModCommand::Add), Ok(m));
    }
    let m = parse_meter(
        "meter=1,kbps,bands=type=drop,rate=1000",
        MeterModCommand::Add,
    )
    .unwrap();
    assert_eq!(
        m.bands,
        vec![crate::messages::MeterBand::Drop {
            rate: 1000,
            burst_size: 0
        }]
    );
    // Deletes take no flags (found by fuzzing: `meter=0,burst` printed as `meter=0`, which
    // parsed back without the flag).
    let e = parse_meter("meter=0,burst", MeterModCommand::Delete).unwrap_err();
    assert!(e.0.contains("not allowed when deleting"), "{e}");
    let d = parse_meter("meter=all", MeterModCommand::Delete).unwrap();
    assert_eq!(d.meter_id, crate::messages::OFPM_ALL);
    assert_eq!(format_meter(&d), "meter=all");
}

#[test]
fn virtual_meters_go_by_their_names() {
    use crate::messages::{OFPM_CONTROLLER, OFPM_SLOWPATH};
    for (text, id) in [("controller", OFPM_CONTROLLER), ("slowpath", OFPM_SLOWPATH)] {
        let m = parse_meter(
            &format!("meter={text},pktps,bands=type=drop,rate=10"),
            MeterModCommand::Add,
        )
        .unwrap();
        assert_eq!(m.meter_id, id);
        let printed = format_meter(&m);
        assert_eq!(
            printed,
            format!("meter={text} pktps bands=\ntype=drop rate=10")
        );
        assert_eq!(parse_meter(&printed, MeterModCommand::Add).unwrap(), m);
        let d = parse_meter(&format!("meter={text}"), MeterModCommand::Delete).unwrap();
        assert_eq!(d.meter_id, id);
    }
    // As ovs-ofctl: the numbers above OFPM_MAX that have no name print as "unknown".
    assert_eq!(super::meter_id_text(0xffff_0001), "unknown");
    assert_eq!(super::meter_id_text(7), "7");
}

#[test]
fn meter_errors() {
    let cases = [
        ("meter=1,kbps,bands=type=drop", "must specify rate"),
        ("meter=1,kbps", "must specify bands"),
        ("kbps,bands=type=drop,rate=1", "must specify meter"),
        ("meter=1,kbps,bands=type=foo,rate=1", "not a band type"),
        (
            "meter=1,kbps,bands=type=drop,rate=1,prec_level=2",
            "prec_level is only valid",
        ),
        ("meter=1,kbps,pktps,bands=type=drop,rate=1", "invalid meter"),
        ("meter=1,kbps,bands=type=drop,rate=0", "invalid meter"),
        (
            "meter=1,kbps,bands=type=drop,rate=x",
            "rate=x: 'x' is not a 32-bit number",
        ),
        ("meter=0,kbps,bands=type=drop,rate=1", "invalid meter"),
        ("meter=1,frob", "unknown keyword 'frob'"),
    ];
    for (input, want) in cases {
        match parse_meter(input, MeterModCommand::Add) {
            Ok(m) => panic!("{input}: parsed as {m:?}"),
            Err(e) => assert!(e.0.contains(want), "{input}: got '{e}', want '{want}'"),
        }
    }
}
