//! Conditions and mutations (RFC 7047 §5.1 `<condition>`, `<mutation>`).
//!
//! A [`Condition`] is `[column, function, value]` with functions `== != < <= > >= includes
//! excludes`; a `where` clause is a conjunction of them (monitor_cond uses them as a
//! disjunction, see the server). The value is parsed with the column's element types but any
//! cardinality, because e.g. `includes` compares against a subset. The ordering functions
//! apply only to integer and real columns of at most one element; on an empty (optional)
//! column they are false.
//!
//! A [`Mutation`] is `[column, mutator, value]`: arithmetic `+= -= *= /= %=` on integer/real
//! sets (applied to every element; `%=` integers only), and `insert`/`delete` of set elements
//! or map pairs (map `delete` also accepts a set of keys). Integer overflow is a "range error",
//! division by zero a "domain error"; results are then checked against the column's full type
//! (cardinality, enum, ranges) by the caller. Both types are pure functions of their inputs.

use crate::datum::{Atom, Datum};
use crate::error::{Error, Result};
use crate::schema::{Col, TableSchema};
use crate::types::{AtomicType, ColumnType};
use serde_json::Value;
use std::collections::BTreeSet;

/// The comparison functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `includes`
    Includes,
    /// `excludes`
    Excludes,
}

/// One parsed condition, or a constant (monitor_cond allows `true`/`false`).
#[derive(Debug, Clone)]
pub enum Condition {
    /// `[column, function, value]`
    Compare {
        /// Column.
        col: Col,
        /// Function.
        func: Function,
        /// Argument.
        arg: Datum,
    },
    /// `true` or `false`.
    Const(bool),
}

pub use crate::datum::Resolver;

impl Condition {
    /// Parse one condition for `table`.
    pub fn from_json(table: &TableSchema, v: &Value, named: Resolver<'_>) -> Result<Condition> {
        if let Value::Bool(b) = v {
            return Ok(Condition::Const(*b));
        }
        let a = v.as_array().filter(|a| a.len() == 3).ok_or_else(|| {
            Error::syntax(format!(
                "condition must be [column, function, value], got {v}"
            ))
        })?;
        let cname = a[0]
            .as_str()
            .ok_or_else(|| Error::syntax(format!("bad column in condition {v}")))?;
        let col = table.lookup(cname).ok_or_else(|| {
            Error::new(
                "unknown column",
                format!("no column \"{cname}\" in table {}", table.name),
            )
        })?;
        let ty = table.col_type(col);
        let func = match a[1].as_str() {
            Some("==") => Function::Eq,
            Some("!=") => Function::Ne,
            Some("<") => Function::Lt,
            Some("<=") => Function::Le,
            Some(">") => Function::Gt,
            Some(">=") => Function::Ge,
            Some("includes") => Function::Includes,
            Some("excludes") => Function::Excludes,
            _ => {
                return Err(Error::syntax(format!(
                    "unknown function {} in condition {v}",
                    a[1]
                )))
            }
        };
        if matches!(
            func,
            Function::Lt | Function::Le | Function::Gt | Function::Ge
        ) && (ty.is_map()
            || ty.max != 1
            || !matches!(ty.key.atomic, AtomicType::Integer | AtomicType::Real))
        {
            return Err(Error::syntax(format!(
                "function {} cannot be applied to column {cname} of table {}",
                a[1], table.name
            )));
        }
        let arg_ty = ty.any_count();
        let arg = Datum::from_json(&arg_ty, &a[2], named)
            .map_err(|e| e.context(format!("condition on {}.{cname}", table.name)))?;
        if matches!(
            func,
            Function::Lt | Function::Le | Function::Gt | Function::Ge
        ) && arg.len() != 1
        {
            return Err(Error::syntax(format!(
                "{} needs a single value in condition {v}",
                a[1]
            )));
        }
        Ok(Condition::Compare { col, func, arg })
    }

    /// Parse a `where` array.
    pub fn parse_where(
        table: &TableSchema,
        v: Option<&Value>,
        mut named: Resolver<'_>,
    ) -> Result<Vec<Condition>> {
        let Some(v) = v else { return Ok(Vec::new()) };
        let arr = v
            .as_array()
            .ok_or_else(|| Error::syntax(format!("\"where\" must be an array, got {v}")))?;
        let mut out = Vec::with_capacity(arr.len());
        for c in arr {
            let r: Resolver<'_> = match &mut named {
                Some(f) => Some(&mut **f),
                None => None,
            };
            out.push(Condition::from_json(table, c, r)?);
        }
        Ok(out)
    }

    /// Evaluate on a column value.
    pub fn eval(&self, value: &Datum) -> bool {
        let (func, arg) = match self {
            Condition::Const(b) => return *b,
            Condition::Compare { func, arg, .. } => (*func, arg),
        };
        match func {
            Function::Eq => value == arg,
            Function::Ne => value != arg,
            Function::Includes => value.includes(arg),
            Function::Excludes => value.excludes(arg),
            Function::Lt | Function::Le | Function::Gt | Function::Ge => {
                let (Some(x), Some(y)) = (value.first(), arg.first()) else {
                    return false;
                };
                let ord = x.cmp(y);
                match func {
                    Function::Lt => ord.is_lt(),
                    Function::Le => ord.is_le(),
                    Function::Gt => ord.is_gt(),
                    _ => ord.is_ge(),
                }
            }
        }
    }

    /// The column, unless constant.
    pub fn column(&self) -> Option<Col> {
        match self {
            Condition::Compare { col, .. } => Some(*col),
            Condition::Const(_) => None,
        }
    }
}

/// The mutators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutator {
    /// `+=`
    Add,
    /// `-=`
    Sub,
    /// `*=`
    Mul,
    /// `/=`
    Div,
    /// `%=`
    Mod,
    /// `insert`
    Insert,
    /// `delete`
    Delete,
}

/// One parsed mutation.
#[derive(Debug, Clone)]
pub struct Mutation {
    /// Column position.
    pub col: usize,
    /// Mutator.
    pub op: Mutator,
    /// Argument.
    pub arg: Datum,
}

impl Mutation {
    /// Parse `[column, mutator, value]` for `table`.
    pub fn from_json(table: &TableSchema, v: &Value, named: Resolver<'_>) -> Result<Mutation> {
        let a = v.as_array().filter(|a| a.len() == 3).ok_or_else(|| {
            Error::syntax(format!(
                "mutation must be [column, mutator, value], got {v}"
            ))
        })?;
        let cname = a[0]
            .as_str()
            .ok_or_else(|| Error::syntax(format!("bad column in mutation {v}")))?;
        let col = match table.lookup(cname) {
            Some(Col::User(i)) => i,
            Some(_) => {
                return Err(Error::constraint(format!(
                    "cannot mutate column {cname} of table {}",
                    table.name
                )))
            }
            None => {
                return Err(Error::new(
                    "unknown column",
                    format!("no column \"{cname}\" in table {}", table.name),
                ))
            }
        };
        let cs = &table.columns[col];
        if !cs.mutable {
            return Err(Error::constraint(format!(
                "cannot mutate immutable column {cname} of table {}",
                table.name
            )));
        }
        let ty = &cs.ty;
        let op = match a[1].as_str() {
            Some("+=") => Mutator::Add,
            Some("-=") => Mutator::Sub,
            Some("*=") => Mutator::Mul,
            Some("/=") => Mutator::Div,
            Some("%=") => Mutator::Mod,
            Some("insert") => Mutator::Insert,
            Some("delete") => Mutator::Delete,
            _ => {
                return Err(Error::syntax(format!(
                    "unknown mutator {} in mutation {v}",
                    a[1]
                )))
            }
        };
        let ctx = || format!("mutation of {}.{cname}", table.name);
        let arg = match op {
            Mutator::Add | Mutator::Sub | Mutator::Mul | Mutator::Div | Mutator::Mod => {
                let numeric = match ty.key.atomic {
                    AtomicType::Integer => true,
                    AtomicType::Real => op != Mutator::Mod,
                    _ => false,
                };
                if ty.is_map() || !numeric {
                    return Err(Error::constraint(format!(
                        "mutator {} cannot be applied to column {cname} of table {} (type {})",
                        a[1],
                        table.name,
                        ty.to_json()
                    )));
                }
                let scalar = ColumnType::scalar(ty.key.atomic);
                Datum::from_json(&scalar, &a[2], named).map_err(|e| e.context(ctx()))?
            }
            Mutator::Insert => {
                Datum::from_json(&ty.any_count(), &a[2], named).map_err(|e| e.context(ctx()))?
            }
            Mutator::Delete => {
                if let Some(vt) = &ty.value {
                    // A map of pairs to remove, or a set of keys.
                    let is_map = matches!(a[2].as_array(), Some(x) if x.first().and_then(Value::as_str) == Some("map"));
                    if is_map {
                        Datum::from_json(&ty.any_count(), &a[2], named)
                            .map_err(|e| e.context(ctx()))?
                    } else {
                        let keys = ColumnType {
                            key: ty.key.clone(),
                            value: None,
                            min: 0,
                            max: u64::MAX,
                        };
                        let _ = vt;
                        Datum::from_json(&keys, &a[2], named).map_err(|e| e.context(ctx()))?
                    }
                } else {
                    Datum::from_json(&ty.any_count(), &a[2], named).map_err(|e| e.context(ctx()))?
                }
            }
        };
        Ok(Mutation { col, op, arg })
    }

    /// Apply to a column value. `what` names the table and column for error messages.
    pub fn apply(&self, value: &Datum, what: &str) -> Result<Datum> {
        match self.op {
            Mutator::Insert => Ok(match (value, &self.arg) {
                (Datum::Set(s), Datum::Set(a)) => Datum::Set(s.union(a).cloned().collect()),
                (Datum::Map(m), Datum::Map(a)) => {
                    let mut m = m.clone();
                    for (k, v) in a {
                        m.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                    Datum::Map(m)
                }
                _ => {
                    return Err(Error::syntax(format!(
                        "{what}: insert argument has the wrong shape"
                    )))
                }
            }),
            Mutator::Delete => Ok(match (value, &self.arg) {
                (Datum::Set(s), Datum::Set(a)) => Datum::Set(s.difference(a).cloned().collect()),
                (Datum::Map(m), Datum::Map(a)) => {
                    let mut m = m.clone();
                    for (k, v) in a {
                        if m.get(k) == Some(v) {
                            m.remove(k);
                        }
                    }
                    Datum::Map(m)
                }
                (Datum::Map(m), Datum::Set(keys)) => {
                    let mut m = m.clone();
                    for k in keys {
                        m.remove(k);
                    }
                    Datum::Map(m)
                }
                _ => {
                    return Err(Error::syntax(format!(
                        "{what}: delete argument has the wrong shape"
                    )))
                }
            }),
            _ => {
                let (Datum::Set(s), Some(arg)) = (value, self.arg.first()) else {
                    return Err(Error::syntax(format!("{what}: arithmetic on a map")));
                };
                let mut out = BTreeSet::new();
                for x in s {
                    let y = arith(self.op, x, arg, what)?;
                    if !out.insert(y) {
                        return Err(Error::constraint(format!(
                            "{what}: the mutation's result contains duplicate values"
                        )));
                    }
                }
                Ok(Datum::Set(out))
            }
        }
    }
}

fn arith(op: Mutator, x: &Atom, y: &Atom, what: &str) -> Result<Atom> {
    let range = || Error::new("range error", format!("{what}: result out of range"));
    match (x, y) {
        (Atom::Integer(a), Atom::Integer(b)) => {
            if matches!(op, Mutator::Div | Mutator::Mod) && *b == 0 {
                return Err(Error::new(
                    "domain error",
                    format!("{what}: division by zero"),
                ));
            }
            let r = match op {
                Mutator::Add => a.checked_add(*b),
                Mutator::Sub => a.checked_sub(*b),
                Mutator::Mul => a.checked_mul(*b),
                Mutator::Div => a.checked_div(*b),
                _ => a.checked_rem(*b),
            };
            r.map(Atom::Integer).ok_or_else(range)
        }
        (Atom::Real(a), Atom::Real(b)) => {
            if op == Mutator::Div && *b == 0.0 {
                return Err(Error::new(
                    "domain error",
                    format!("{what}: division by zero"),
                ));
            }
            let r = match op {
                Mutator::Add => a + b,
                Mutator::Sub => a - b,
                Mutator::Mul => a * b,
                Mutator::Div => a / b,
                _ => return Err(Error::syntax(format!("{what}: %= on reals"))),
            };
            if r.is_finite() {
                Ok(Atom::Real(r))
            } else {
                Err(range())
            }
        }
        _ => Err(Error::syntax(format!("{what}: arithmetic type mismatch"))),
    }
}
