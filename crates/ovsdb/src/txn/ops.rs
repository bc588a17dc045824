//! The operations of a `transact` request: insert, select, update, mutate, delete, wait.

use super::*;

impl Txn<'_> {
    pub(super) fn op_insert(&mut self, op: &Value) -> Result<Value> {
        let tname = str_member(op, "table")?;
        let ts = self.table_schema(tname)?;
        let mut uuid = match op.get("uuid") {
            None => None,
            Some(u) => Some(
                u.as_array()
                    .filter(|a| a.len() == 2 && a[0] == "uuid")
                    .and_then(|a| a[1].as_str())
                    .and_then(Uuid::parse)
                    .ok_or_else(|| Error::syntax(format!("bad \"uuid\" {u}")))?,
            ),
        };
        if let Some(n) = op.get("uuid-name") {
            let name = n
                .as_str()
                .ok_or_else(|| Error::syntax("uuid-name must be a string"))?;
            match self.symbols.get_mut(name) {
                Some(s) if s.created => {
                    return Err(Error::new(
                        "duplicate uuid-name",
                        format!("uuid-name \"{name}\" is already used"),
                    ))
                }
                Some(s) => {
                    if let Some(u) = uuid {
                        if u != s.uuid {
                            return Err(Error::syntax(format!(
                                "uuid-name \"{name}\" was referenced before an insert gave it an explicit uuid"
                            )));
                        }
                    }
                    s.created = true;
                    uuid = Some(s.uuid);
                }
                None => {
                    let u = uuid.unwrap_or_else(Uuid::random);
                    self.symbols.insert(
                        name.to_string(),
                        Symbol {
                            uuid: u,
                            created: true,
                        },
                    );
                    uuid = Some(u);
                }
            }
        }
        let uuid = uuid.unwrap_or_else(Uuid::random);
        let values = self.parse_row(&ts, op.get("row"), false)?;
        if self.db.tables.values().any(|t| t.rows.contains_key(&uuid))
            || self.work.values().any(|t| t.contains_key(&uuid))
        {
            return Err(Error::new(
                "duplicate uuid",
                format!("a row with uuid {uuid} already exists"),
            ));
        }
        let mut row = Row::new_default(&ts, uuid);
        for (i, d) in values {
            row.data[i] = d;
        }
        self.rows_mut(tname).insert(uuid, Arc::new(row));
        Ok(json!({"uuid": ["uuid", uuid.to_string()]}))
    }

    pub(super) fn op_select(&mut self, op: &Value) -> Result<Value> {
        let tname = str_member(op, "table")?;
        let ts = self.table_schema(tname)?;
        let conds = self.parse_where(&ts, op)?;
        let cols = parse_columns(&ts, op.get("columns"))?;
        let rows = self.rows(tname);
        let out: Vec<Value> = self
            .matching(tname, &conds)
            .into_iter()
            .filter_map(|u| rows.get(&u))
            .map(|r| r.to_json(cols.as_deref()))
            .collect();
        Ok(json!({"rows": out}))
    }

    pub(super) fn op_update(&mut self, op: &Value) -> Result<Value> {
        let tname = str_member(op, "table")?;
        let ts = self.table_schema(tname)?;
        let conds = self.parse_where(&ts, op)?;
        let values = self.parse_row(
            &ts,
            Some(
                op.get("row")
                    .ok_or_else(|| Error::syntax("update lacks \"row\""))?,
            ),
            true,
        )?;
        let hits = self.matching(tname, &conds);
        let rows = self.rows_mut(tname);
        for u in &hits {
            if let Some(r) = rows.get_mut(u) {
                let r = Arc::make_mut(r);
                for (i, d) in &values {
                    r.data[*i] = d.clone();
                }
            }
        }
        Ok(json!({"count": hits.len()}))
    }

    pub(super) fn op_mutate(&mut self, op: &Value) -> Result<Value> {
        let tname = str_member(op, "table")?;
        let ts = self.table_schema(tname)?;
        let conds = self.parse_where(&ts, op)?;
        let ms = op
            .get("mutations")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::syntax("mutate lacks a \"mutations\" array"))?;
        let mut muts = Vec::with_capacity(ms.len());
        for m in ms {
            let mut r = resolver(&mut self.symbols);
            muts.push(Mutation::from_json(&ts, m, Some(&mut r))?);
        }
        let hits = self.matching(tname, &conds);
        let rows = self.rows_mut(tname);
        for u in &hits {
            if let Some(r) = rows.get_mut(u) {
                let r = Arc::make_mut(r);
                for m in &muts {
                    let cs = &ts.columns[m.col];
                    let what = format!("table {} column {}", ts.name, cs.name);
                    let d = m.apply(&r.data[m.col], &what)?;
                    d.check_constraints(&cs.ty)
                        .map_err(|e| Error::constraint(format!("{what}: {e}")))?;
                    r.data[m.col] = d;
                }
            }
        }
        Ok(json!({"count": hits.len()}))
    }

    pub(super) fn op_delete(&mut self, op: &Value) -> Result<Value> {
        let tname = str_member(op, "table")?;
        let ts = self.table_schema(tname)?;
        let conds = self.parse_where(&ts, op)?;
        let hits = self.matching(tname, &conds);
        let rows = self.rows_mut(tname);
        for u in &hits {
            rows.remove(u);
        }
        Ok(json!({"count": hits.len()}))
    }

    pub(super) fn op_wait(
        &mut self,
        op: &Value,
        ctx: &TxnContext<'_>,
    ) -> std::result::Result<Value, StepErr> {
        let tname = str_member(op, "table")?;
        let ts = self.table_schema(tname)?;
        let conds = self.parse_where(&ts, op)?;
        let cols = parse_columns(&ts, op.get("columns"))?
            .unwrap_or_else(|| (0..ts.columns.len()).map(Col::User).collect());
        let until = str_member(op, "until")?;
        if until != "==" && until != "!=" {
            return Err(Error::syntax(format!(
                "wait \"until\" must be \"==\" or \"!=\", not \"{until}\""
            ))
            .into());
        }
        let timeout = match op.get("timeout") {
            None => None,
            Some(t) => Some(
                t.as_u64()
                    .ok_or_else(|| Error::syntax("wait timeout must be a non-negative integer"))?,
            ),
        };
        let given = op
            .get("rows")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::syntax("wait lacks a \"rows\" array"))?;
        let mut expected: Vec<Vec<Datum>> = Vec::with_capacity(given.len());
        for g in given {
            let o = g
                .as_object()
                .ok_or_else(|| Error::syntax(format!("wait row must be an object, got {g}")))?;
            let mut vals = Vec::with_capacity(cols.len());
            for &c in &cols {
                let cname = ts.col_name(c);
                let v = o
                    .get(cname)
                    .ok_or_else(|| Error::syntax(format!("wait row {g} lacks column {cname}")))?;
                let mut r = resolver(&mut self.symbols);
                vals.push(
                    Datum::from_json(ts.col_type(c), v, Some(&mut r))
                        .map_err(|e| e.context(format!("wait on table {tname}")))?,
                );
            }
            if o.len() != cols.len() {
                return Err(Error::syntax(format!(
                    "wait row {g} has columns not listed in \"columns\""
                ))
                .into());
            }
            expected.push(vals);
        }
        let rows = self.rows(tname);
        let mut actual: Vec<Vec<Datum>> = self
            .matching(tname, &conds)
            .into_iter()
            .filter_map(|u| rows.get(&u))
            .map(|r| cols.iter().map(|&c| r.value(c).into_owned()).collect())
            .collect();
        actual.sort();
        expected.sort();
        let equal = actual == expected;
        if equal == (until == "==") {
            return Ok(json!({}));
        }
        match timeout {
            Some(t) if t > 0 => {
                let deadline = ctx
                    .started
                    .checked_add(std::time::Duration::from_millis(t.min(1 << 40)))
                    .unwrap_or(ctx.now + std::time::Duration::from_secs(86_400));
                if ctx.now < deadline {
                    return Err(StepErr::Blocked(deadline));
                }
                Err(Error::new("timed out", format!("wait on table {tname} timed out")).into())
            }
            _ => Err(Error::new(
                "timed out",
                format!("wait on table {tname} was not satisfied"),
            )
            .into()),
        }
    }
}
