//! OpenFlow 1.5's insert-bucket and remove-bucket group_mods.
//!
//! Both compute the group's new bucket list and then apply it exactly as a group_mod
//! MODIFY with that list would be (same validation: bucket actions, chaining loops,
//! indirect groups keep one bucket...), so a change is all or nothing and bumps the
//! version the revalidator watches; cached datapath flows through the group are then
//! revalidated with the new buckets. The group keeps its type and its counters' start
//! time.
//!
//! Placement follows OVS's documentation of `command_bucket_id`: insert goes before the
//! bucket with that id, before the first bucket for `FIRST`, after the last for `LAST`;
//! remove takes the bucket with that id, the first, the last, or all of them. Inserting
//! into an empty group just sets its buckets. An unknown id is `OFPGMFC_UNKNOWN_BUCKET`;
//! an inserted bucket whose id is already in the group (or above `OFPG_BUCKET_MAX`, or
//! repeated in the message) is `OFPGMFC_BUCKET_EXISTS`; `ALL` is valid for remove only.

use super::Ofproto;
use openflow::messages::err::group_mod_failed as g;
use openflow::messages::{OFPG_BUCKET_ALL, OFPG_BUCKET_FIRST, OFPG_BUCKET_LAST, OFPG_BUCKET_MAX};
use openflow::{BucketCommand, GroupBucketMod, GroupMod, GroupModCommand, OfError};

impl Ofproto {
    /// Applies an insert-bucket or remove-bucket group_mod.
    pub fn group_bucket_mod(&mut self, m: &GroupBucketMod, now_ms: u64) -> Result<(), OfError> {
        let Some(grp) = self.groups.get(&m.group_id) else {
            return Err(OfError::group_mod_failed(g::UNKNOWN_GROUP));
        };
        let mut buckets = grp.buckets.clone();
        let at = |id: u32| buckets.iter().position(|b| b.bucket_id == id);
        let unknown = OfError::group_mod_failed(g::UNKNOWN_BUCKET);
        match m.command {
            BucketCommand::Insert => {
                let pos = match m.command_bucket_id {
                    OFPG_BUCKET_FIRST => 0,
                    OFPG_BUCKET_LAST => buckets.len(),
                    OFPG_BUCKET_ALL => return Err(OfError::group_mod_failed(g::BAD_COMMAND)),
                    id => at(id).ok_or(unknown)?,
                };
                let mut ids: std::collections::HashSet<u32> =
                    buckets.iter().map(|b| b.bucket_id).collect();
                for b in &m.buckets {
                    if b.bucket_id > OFPG_BUCKET_MAX || !ids.insert(b.bucket_id) {
                        return Err(OfError::group_mod_failed(g::BUCKET_EXISTS));
                    }
                }
                buckets.splice(pos..pos, m.buckets.iter().cloned());
            }
            BucketCommand::Remove => {
                if !m.buckets.is_empty() {
                    return Err(OfError::group_mod_failed(g::BAD_BUCKET));
                }
                match m.command_bucket_id {
                    OFPG_BUCKET_ALL => buckets.clear(),
                    OFPG_BUCKET_FIRST => {
                        if !buckets.is_empty() {
                            buckets.remove(0);
                        }
                    }
                    OFPG_BUCKET_LAST => {
                        buckets.pop();
                    }
                    id => {
                        let i = at(id).ok_or(unknown)?;
                        buckets.remove(i);
                    }
                }
            }
        }
        let gm = GroupMod {
            command: GroupModCommand::Modify,
            group_type: grp.kind,
            group_id: m.group_id,
            buckets,
        };
        self.group_mod(&gm, now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::{Action, Bucket, GroupType};

    fn bucket(id: u32, port: u32) -> Bucket {
        let mut b = Bucket::new(vec![Action::output(port)]);
        b.bucket_id = id;
        b
    }

    fn ids(o: &Ofproto) -> Vec<u32> {
        o.groups()[&1].buckets.iter().map(|b| b.bucket_id).collect()
    }

    fn bm(command: BucketCommand, at: u32, buckets: Vec<Bucket>) -> GroupBucketMod {
        GroupBucketMod {
            command,
            group_type: GroupType::All,
            group_id: 1,
            command_bucket_id: at,
            buckets,
        }
    }

    #[test]
    fn insert_and_remove_follow_command_bucket_id() {
        let mut o = Ofproto::new();
        let add = GroupMod {
            command: GroupModCommand::Add,
            group_type: GroupType::All,
            group_id: 1,
            // An OpenFlow 1.3 group: ids 0 for all, numbered by position.
            buckets: vec![
                Bucket::new(vec![Action::output(1)]),
                Bucket::new(vec![Action::output(2)]),
            ],
        };
        o.group_mod(&add, 0).expect("add");
        assert_eq!(ids(&o), [0, 1]);
        let v = o.version();
        o.group_bucket_mod(
            &bm(BucketCommand::Insert, OFPG_BUCKET_FIRST, vec![bucket(7, 3)]),
            1,
        )
        .expect("first");
        assert!(o.version() > v, "a bucket change is a change");
        o.group_bucket_mod(
            &bm(BucketCommand::Insert, OFPG_BUCKET_LAST, vec![bucket(8, 4)]),
            1,
        )
        .expect("last");
        o.group_bucket_mod(&bm(BucketCommand::Insert, 1, vec![bucket(9, 5)]), 1)
            .expect("before 1");
        assert_eq!(ids(&o), [7, 0, 9, 1, 8]);
        let e = o.group_bucket_mod(&bm(BucketCommand::Insert, 1, vec![bucket(9, 5)]), 1);
        assert_eq!(e, Err(OfError::group_mod_failed(g::BUCKET_EXISTS)));
        let e = o.group_bucket_mod(&bm(BucketCommand::Insert, 42, vec![bucket(10, 5)]), 1);
        assert_eq!(e, Err(OfError::group_mod_failed(g::UNKNOWN_BUCKET)));
        o.group_bucket_mod(&bm(BucketCommand::Remove, 9, vec![]), 1)
            .expect("9");
        o.group_bucket_mod(&bm(BucketCommand::Remove, OFPG_BUCKET_FIRST, vec![]), 1)
            .expect("f");
        o.group_bucket_mod(&bm(BucketCommand::Remove, OFPG_BUCKET_LAST, vec![]), 1)
            .expect("l");
        assert_eq!(ids(&o), [0, 1]);
        assert_eq!(o.groups()[&1].kind, GroupType::All);
        o.group_bucket_mod(&bm(BucketCommand::Remove, OFPG_BUCKET_ALL, vec![]), 1)
            .expect("all");
        assert!(ids(&o).is_empty());
        let mut missing = bm(BucketCommand::Remove, OFPG_BUCKET_ALL, vec![]);
        missing.group_id = 2;
        assert_eq!(
            o.group_bucket_mod(&missing, 1),
            Err(OfError::group_mod_failed(g::UNKNOWN_GROUP))
        );
    }

    #[test]
    fn an_indirect_group_keeps_one_bucket() {
        let mut o = Ofproto::new();
        let add = GroupMod {
            command: GroupModCommand::Add,
            group_type: GroupType::Indirect,
            group_id: 1,
            buckets: vec![bucket(0, 1)],
        };
        o.group_mod(&add, 0).expect("add");
        let e = o.group_bucket_mod(
            &bm(BucketCommand::Insert, OFPG_BUCKET_LAST, vec![bucket(1, 2)]),
            1,
        );
        assert!(e.is_err());
        assert_eq!(ids(&o), [0]);
    }
}
