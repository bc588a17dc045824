//! How many groups and meters a switch takes ([`ofproto::Limits`]): an add beyond a limit is
//! refused with the spec's error and changes nothing, alone or inside a transaction.

use ofproto::{Limits, Ofproto, DEFAULT_MAX_GROUPS, MAX_BANDS, MAX_BUCKETS, MAX_METERS};
use openflow::messages::err;
use openflow::text::{parse_group, parse_meter};
use openflow::{GroupModCommand, MeterModCommand, OfError};

const OUT_OF_GROUPS: OfError = OfError::group_mod_failed(err::group_mod_failed::OUT_OF_GROUPS);
const OUT_OF_METERS: OfError = OfError::meter_mod_failed(err::meter_mod_failed::OUT_OF_METERS);

fn group(of: &mut Ofproto, text: &str, cmd: GroupModCommand) -> Result<(), OfError> {
    of.group_mod(&parse_group(text, cmd).expect("parse"), 0)
}

fn meter(of: &mut Ofproto, text: &str, cmd: MeterModCommand) -> Result<(), OfError> {
    of.meter_mod(&parse_meter(text, cmd).expect("parse"), 0)
}

fn small() -> Ofproto {
    let mut of = Ofproto::new();
    of.set_limits(Limits {
        groups: 3,
        meters: 2,
    });
    of
}

#[test]
fn the_defaults() {
    let of = Ofproto::new();
    assert_eq!(
        of.limits(),
        Limits {
            groups: DEFAULT_MAX_GROUPS,
            meters: MAX_METERS
        }
    );
    assert_eq!(
        (MAX_METERS, MAX_BANDS),
        (262_144, 8),
        "OVS's userspace datapath's"
    );
}

#[test]
fn groups_beyond_the_limit_are_refused() {
    let mut of = small();
    for (id, kind) in [(1, "all"), (2, "select"), (3, "indirect")] {
        group(
            &mut of,
            &format!("group_id={id},type={kind},bucket=output:1"),
            GroupModCommand::Add,
        )
        .expect("under the limit");
    }
    // Every type counts against one limit.
    let fourth = "group_id=4,type=ff,bucket=watch_port:1,output:1";
    assert_eq!(
        group(&mut of, fourth, GroupModCommand::Add),
        Err(OUT_OF_GROUPS)
    );
    assert_eq!(of.groups().len(), 3);
    assert!(!of.groups().contains_key(&4));
    // An existing id is still GROUP_EXISTS, and a modify (even of the type) adds nothing.
    assert_eq!(
        group(
            &mut of,
            "group_id=1,type=all,bucket=output:2",
            GroupModCommand::Add
        ),
        Err(OfError::group_mod_failed(
            err::group_mod_failed::GROUP_EXISTS
        ))
    );
    group(
        &mut of,
        "group_id=1,type=select,bucket=output:2",
        GroupModCommand::Modify,
    )
    .expect("a modify at the limit");
    // A delete makes room again.
    group(&mut of, "group_id=2", GroupModCommand::Delete).expect("delete");
    group(&mut of, fourth, GroupModCommand::Add).expect("room again");
    assert_eq!(
        group(
            &mut of,
            "group_id=5,type=all,bucket=output:1",
            GroupModCommand::Add
        ),
        Err(OUT_OF_GROUPS)
    );
}

#[test]
fn a_transaction_that_would_pass_the_group_limit_fails_whole() {
    let mut of = small();
    group(
        &mut of,
        "group_id=1,type=all,bucket=output:1",
        GroupModCommand::Add,
    )
    .expect("add");
    let before = of.version();
    let r: Result<(), OfError> = of.atomically(|o| {
        group(
            o,
            "group_id=2,type=all,bucket=output:1",
            GroupModCommand::Add,
        )?;
        group(
            o,
            "group_id=3,type=all,bucket=output:1",
            GroupModCommand::Add,
        )?;
        group(
            o,
            "group_id=4,type=all,bucket=output:1",
            GroupModCommand::Add,
        )
    });
    assert_eq!(r, Err(OUT_OF_GROUPS));
    assert_eq!(of.groups().keys().copied().collect::<Vec<_>>(), vec![1]);
    assert!(of.version() > before, "caches revalidate after a rollback");
}

#[test]
fn lowering_the_limit_keeps_what_is_installed() {
    let mut of = small();
    for id in 1..=3 {
        group(
            &mut of,
            &format!("group_id={id},type=all,bucket=output:1"),
            GroupModCommand::Add,
        )
        .expect("add");
    }
    of.set_limits(Limits {
        groups: 1,
        ..of.limits()
    });
    assert_eq!(of.groups().len(), 3);
    group(&mut of, "group_id=3", GroupModCommand::Delete).expect("delete");
    assert_eq!(
        group(
            &mut of,
            "group_id=9,type=all,bucket=output:1",
            GroupModCommand::Add
        ),
        Err(OUT_OF_GROUPS)
    );
}

#[test]
fn meters_beyond_the_limit_are_refused() {
    let mut of = small();
    let m = |id: u32| format!("meter={id},kbps,bands=type=drop,rate=100");
    meter(&mut of, &m(1), MeterModCommand::Add).expect("one");
    meter(&mut of, &m(70_000), MeterModCommand::Add).expect("any id under OFPM_MAX");
    assert_eq!(
        meter(&mut of, &m(3), MeterModCommand::Add),
        Err(OUT_OF_METERS)
    );
    assert_eq!(of.meter_specs().len(), 2);
    assert!(!of.has_meter(3));
    meter(&mut of, &m(1), MeterModCommand::Modify).expect("a modify at the limit");
    meter(&mut of, "meter=1", MeterModCommand::Delete).expect("delete");
    meter(&mut of, &m(3), MeterModCommand::Add).expect("room again");
}

#[test]
fn a_meter_has_at_most_eight_bands() {
    let mut of = Ofproto::new();
    let bands = |n: u32| {
        (1..=n)
            .map(|r| format!("type=drop,rate={r}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    meter(
        &mut of,
        &format!("meter=1,kbps,bands={}", bands(8)),
        MeterModCommand::Add,
    )
    .expect("eight bands");
    let nine = format!("meter=2,kbps,bands={}", bands(9));
    assert_eq!(
        meter(&mut of, &nine, MeterModCommand::Add),
        Err(OfError::meter_mod_failed(
            err::meter_mod_failed::OUT_OF_BANDS
        ))
    );
    let nine = format!("meter=1,kbps,bands={}", bands(9));
    assert_eq!(
        meter(&mut of, &nine, MeterModCommand::Modify),
        Err(OfError::meter_mod_failed(
            err::meter_mod_failed::OUT_OF_BANDS
        ))
    );
    assert!(!of.has_meter(2));
    assert_eq!(of.meter_specs()[&1].bands.len(), 8);
}

#[test]
fn inserted_buckets_stop_at_what_one_group_mod_could_carry() {
    use openflow::messages::OFPG_BUCKET_LAST;
    use openflow::{Action, Bucket, BucketCommand, GroupBucketMod, GroupMod, GroupType};
    let bucket = |id: u32, n_actions: usize| {
        let mut b = Bucket::new(vec![Action::output(1); n_actions]);
        b.bucket_id = id;
        b
    };
    let mut of = Ofproto::new();
    let add = GroupMod {
        command: GroupModCommand::Add,
        group_type: GroupType::All,
        group_id: 1,
        buckets: (0..MAX_BUCKETS as u32 - 1).map(|i| bucket(i, 1)).collect(),
    };
    of.group_mod(&add, 0)
        .expect("as many buckets as one message can carry");
    let insert = |ids: std::ops::Range<u32>, n_actions: usize| GroupBucketMod {
        command: BucketCommand::Insert,
        group_type: GroupType::All,
        group_id: 1,
        command_bucket_id: OFPG_BUCKET_LAST,
        buckets: ids.map(|i| bucket(i, n_actions)).collect(),
    };
    let out_of_buckets = OfError::group_mod_failed(err::group_mod_failed::OUT_OF_BUCKETS);
    let two = MAX_BUCKETS as u32 - 1..MAX_BUCKETS as u32 + 1;
    assert_eq!(of.group_bucket_mod(&insert(two, 1), 0), Err(out_of_buckets));
    assert_eq!(of.groups()[&1].buckets.len(), MAX_BUCKETS - 1);
    // The actions of all buckets together are bounded as well.
    let last = MAX_BUCKETS as u32 - 1;
    let many = ofproto::MAX_GROUP_ACTIONS - (MAX_BUCKETS - 1) + 1;
    assert_eq!(
        of.group_bucket_mod(&insert(last..last + 1, many), 0),
        Err(out_of_buckets)
    );
    of.group_bucket_mod(&insert(last..last + 1, many - 1), 0)
        .expect("up to the bound");
    assert_eq!(of.groups()[&1].buckets.len(), MAX_BUCKETS);
}
