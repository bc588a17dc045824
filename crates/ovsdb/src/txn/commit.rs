//! The end of a transaction: the database-wide rules (indexes, strong and weak references, garbage
//! collection) and the change set.

use super::*;

impl Txn<'_> {
    /// Enforce the database-wide rules and compute the change set.
    pub(crate) fn finalize(&mut self) -> Result<Vec<(String, Vec<RowChange>)>> {
        let mut unresolved: Vec<&String> = self
            .symbols
            .iter()
            .filter(|(_, s)| !s.created)
            .map(|(n, _)| n)
            .collect();
        if !unresolved.is_empty() {
            unresolved.sort();
            return Err(Error::integrity(format!(
                "named-uuid \"{}\" is referenced but no row was inserted with that uuid-name",
                unresolved[0]
            )));
        }
        if self.work.is_empty() {
            return Ok(Vec::new());
        }
        let schema = self.db.schema.clone();
        let deleted_in = self.tables_with_deletions();
        self.check_strong_refs(&deleted_in)?;
        self.collect_garbage();
        let deleted_in = self.tables_with_deletions();
        self.drop_weak_refs(&deleted_in)?;

        let mut changes = Vec::new();
        let tables: Vec<String> = self.work.keys().cloned().collect();
        for tname in tables {
            let Some(ts) = schema.table(&tname).cloned() else {
                continue;
            };
            let empty = BTreeMap::new();
            let old = self
                .db
                .tables
                .get(&tname)
                .map(|t| &t.rows)
                .unwrap_or(&empty);
            let Some(new) = self.work.get_mut(&tname) else {
                continue;
            };
            let mut list = Vec::new();
            for (u, o) in old {
                match new.get_mut(u) {
                    None => list.push(RowChange {
                        uuid: *u,
                        old: Some(o.clone()),
                        new: None,
                    }),
                    Some(n) if Arc::ptr_eq(n, o) => {}
                    Some(n) if n.same_data(o) => *n = o.clone(),
                    Some(n) => {
                        let mut r = (**n).clone();
                        r.version = Uuid::random();
                        *n = Arc::new(r);
                        list.push(RowChange {
                            uuid: *u,
                            old: Some(o.clone()),
                            new: Some(n.clone()),
                        });
                    }
                }
            }
            for (u, n) in new.iter() {
                if !old.contains_key(u) {
                    list.push(RowChange {
                        uuid: *u,
                        old: None,
                        new: Some(n.clone()),
                    });
                }
            }
            if list.is_empty() {
                continue;
            }
            if let Some(max) = ts.max_rows {
                if new.len() as u64 > max {
                    return Err(Error::constraint(format!(
                        "transaction causes table {tname} to have {} rows, more than its maxRows {max}",
                        new.len()
                    )));
                }
            }
            check_indexes(&ts, new)?;
            changes.push((tname, list));
        }
        Ok(changes)
    }

    pub(super) fn tables_with_deletions(&self) -> HashSet<String> {
        let mut out = HashSet::new();
        for (t, rows) in &self.work {
            if let Some(old) = self.db.tables.get(t) {
                if old.rows.keys().any(|u| !rows.contains_key(u)) {
                    out.insert(t.clone());
                }
            }
        }
        out
    }

    /// Every strong reference in a row that changed, or into a table that lost rows, must
    /// point at an existing row.
    pub(super) fn check_strong_refs(&self, deleted_in: &HashSet<String>) -> Result<()> {
        for (tname, ts) in &self.db.schema.tables {
            let ref_cols: Vec<(usize, bool, &str)> = ref_columns(ts, Some(RefType::Strong));
            if ref_cols.is_empty() {
                continue;
            }
            let touches_deleted = ref_cols.iter().any(|(_, _, t)| deleted_in.contains(*t));
            let in_work = self.work.contains_key(tname);
            if !touches_deleted && !in_work {
                continue;
            }
            let committed = self.db.tables.get(tname);
            for row in self.rows(tname).values() {
                let unchanged = committed
                    .and_then(|t| t.rows.get(&row.uuid))
                    .is_some_and(|o| Arc::ptr_eq(o, row));
                for &(i, key, target) in &ref_cols {
                    if unchanged && !deleted_in.contains(target) {
                        continue;
                    }
                    for u in row.data[i].uuids_of(key) {
                        if self.rows(target).contains_key(&u) {
                            continue;
                        }
                        let existed = self
                            .db
                            .tables
                            .get(target)
                            .is_some_and(|t| t.rows.contains_key(&u));
                        let cname = &ts.columns[i].name;
                        return Err(Error::integrity(if existed {
                            format!(
                                "cannot delete {target} row {u} because it is referenced by column {cname} of {tname} row {}",
                                row.uuid
                            )
                        } else {
                            format!(
                                "column {cname} of {tname} row {} refers to nonexistent {target} row {u}",
                                row.uuid
                            )
                        }));
                    }
                }
            }
        }
        Ok(())
    }

    /// Delete rows of non-root tables that no strong reference reaches, cascading.
    pub(super) fn collect_garbage(&mut self) {
        let schema = self.db.schema.clone();
        if schema.tables.values().all(|t| t.is_root) {
            return;
        }
        let non_root: HashSet<&str> = schema
            .tables
            .values()
            .filter(|t| !t.is_root)
            .map(|t| t.name.as_str())
            .collect();
        let mut count: HashMap<Uuid, usize> = HashMap::new();
        for (tname, ts) in &schema.tables {
            let cols: Vec<_> = ref_columns(ts, Some(RefType::Strong))
                .into_iter()
                .filter(|(_, _, t)| non_root.contains(t))
                .collect();
            if cols.is_empty() {
                continue;
            }
            for row in self.rows(tname).values() {
                for &(i, key, _) in &cols {
                    for u in row.data[i].uuids_of(key) {
                        *count.entry(u).or_default() += 1;
                    }
                }
            }
        }
        let mut doomed: Vec<(String, Uuid)> = Vec::new();
        for t in &non_root {
            for u in self.rows(t).keys() {
                if count.get(u).copied().unwrap_or(0) == 0 {
                    doomed.push((t.to_string(), *u));
                }
            }
        }
        while let Some((t, u)) = doomed.pop() {
            let Some(row) = self.rows_mut(&t).remove(&u) else {
                continue;
            };
            let Some(ts) = schema.table(&t) else { continue };
            for (i, key, target) in ref_columns(ts, Some(RefType::Strong)) {
                if !non_root.contains(target) {
                    continue;
                }
                for v in row.data[i].uuids_of(key) {
                    if let Some(c) = count.get_mut(&v) {
                        *c = c.saturating_sub(1);
                        if *c == 0 && self.rows(target).contains_key(&v) {
                            doomed.push((target.to_string(), v));
                        }
                    }
                }
            }
        }
    }

    /// Remove weak references to rows that do not exist.
    pub(super) fn drop_weak_refs(&mut self, deleted_in: &HashSet<String>) -> Result<()> {
        let schema = self.db.schema.clone();
        for (tname, ts) in &schema.tables {
            let cols = ref_columns(ts, Some(RefType::Weak));
            if cols.is_empty() {
                continue;
            }
            let touches_deleted = cols.iter().any(|(_, _, t)| deleted_in.contains(*t));
            if !touches_deleted && !self.work.contains_key(tname) {
                continue;
            }
            let mut fixes: Vec<(Uuid, usize, Datum)> = Vec::new();
            for row in self.rows(tname).values() {
                for &(i, key, target) in &cols {
                    let d = &row.data[i];
                    let dangling: Vec<Uuid> = d
                        .uuids_of(key)
                        .filter(|u| !self.rows(target).contains_key(u))
                        .collect();
                    if dangling.is_empty() {
                        continue;
                    }
                    let gone = |a: &Atom| a.as_uuid().is_some_and(|u| dangling.contains(&u));
                    let nd = match d {
                        Datum::Set(s) => {
                            Datum::Set(s.iter().filter(|a| !gone(a)).cloned().collect())
                        }
                        Datum::Map(m) => Datum::Map(
                            m.iter()
                                .filter(|(k, v)| !(if key { gone(k) } else { gone(v) }))
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect(),
                        ),
                    };
                    if (nd.len() as u64) < ts.columns[i].ty.min {
                        return Err(Error::constraint(format!(
                            "removing dangling weak references leaves column {} of {tname} row {} with too few elements",
                            ts.columns[i].name, row.uuid
                        )));
                    }
                    fixes.push((row.uuid, i, nd));
                }
            }
            if fixes.is_empty() {
                continue;
            }
            let rows = self.rows_mut(tname);
            for (u, i, d) in fixes {
                if let Some(r) = rows.get_mut(&u) {
                    Arc::make_mut(r).data[i] = d;
                }
            }
        }
        Ok(())
    }
}
