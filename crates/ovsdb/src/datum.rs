//! OVSDB values: atoms and data (RFC 7047 §5.1 `<atom>`, `<set>`, `<map>`, `<value>`).
//!
//! An [`Atom`] is one integer, real, boolean, string or UUID. A [`Datum`] is what a column
//! holds: a set of atoms or a map from atoms to atoms, kept sorted and duplicate-free in
//! `BTreeSet`/`BTreeMap`, so equality, hashing of rows and diffing are structural. A scalar
//! column is simply a set of exactly one atom. Atoms are totally ordered (reals by
//! `f64::total_cmp`, atoms of different types by type) so they can be set members.
//!
//! JSON notation: a single atom stands for a one-element set; `["set", [..]]`, `["map",
//! [[k, v], ..]]`, `["uuid", "…"]` and, inside a transaction, `["named-uuid", "name"]`, which
//! a caller-supplied resolver turns into a UUID. Parsing checks atomic types and cardinality
//! and reports duplicates; the schema's finer constraints (enum, ranges, lengths) are checked
//! separately by [`Datum::check_constraints`], because condition and mutation arguments must
//! not be held to them.

use crate::error::{Error, Result};
use crate::types::{AtomicType, BaseType, ColumnType};
use crate::uuid::Uuid;
use serde_json::{json, Value};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// Resolver for `["named-uuid", name]` inside a transaction (None: named UUIDs not allowed).
pub type Resolver<'a> = Option<&'a mut dyn FnMut(&str) -> Result<Uuid>>;

/// One value of an atomic type.
#[derive(Debug, Clone)]
pub enum Atom {
    /// integer
    Integer(i64),
    /// real
    Real(f64),
    /// boolean
    Boolean(bool),
    /// string
    String(String),
    /// uuid
    Uuid(Uuid),
}

impl Atom {
    fn rank(&self) -> u8 {
        match self {
            Atom::Integer(_) => 0,
            Atom::Real(_) => 1,
            Atom::Boolean(_) => 2,
            Atom::String(_) => 3,
            Atom::Uuid(_) => 4,
        }
    }

    /// The atomic type of this atom.
    pub fn atomic_type(&self) -> AtomicType {
        match self {
            Atom::Integer(_) => AtomicType::Integer,
            Atom::Real(_) => AtomicType::Real,
            Atom::Boolean(_) => AtomicType::Boolean,
            Atom::String(_) => AtomicType::String,
            Atom::Uuid(_) => AtomicType::Uuid,
        }
    }

    /// Parse an atom of type `ty`. `named` resolves `["named-uuid", name]` (None: not allowed).
    pub fn from_json(ty: AtomicType, v: &Value, named: &mut Resolver<'_>) -> Result<Atom> {
        let bad = || Error::syntax(format!("expected {ty}, got {v}"));
        Ok(match ty {
            AtomicType::Integer => Atom::Integer(v.as_i64().ok_or_else(bad)?),
            AtomicType::Real => {
                if !v.is_number() {
                    return Err(bad());
                }
                Atom::Real(v.as_f64().ok_or_else(bad)?)
            }
            AtomicType::Boolean => Atom::Boolean(v.as_bool().ok_or_else(bad)?),
            AtomicType::String => Atom::String(v.as_str().ok_or_else(bad)?.to_string()),
            AtomicType::Uuid => {
                let arr = v.as_array().filter(|a| a.len() == 2).ok_or_else(bad)?;
                let s = arr[1].as_str().ok_or_else(bad)?;
                match arr[0].as_str() {
                    Some("uuid") => Atom::Uuid(
                        Uuid::parse(s)
                            .ok_or_else(|| Error::syntax(format!("\"{s}\" is not a valid UUID")))?,
                    ),
                    Some("named-uuid") => match named {
                        Some(f) => Atom::Uuid(f(s)?),
                        None => {
                            return Err(Error::syntax(format!(
                                "named-uuid \"{s}\" is not allowed here"
                            )))
                        }
                    },
                    _ => return Err(bad()),
                }
            }
        })
    }

    /// The JSON form.
    pub fn to_json(&self) -> Value {
        match self {
            Atom::Integer(n) => json!(n),
            Atom::Real(x) => {
                if x.is_finite() {
                    json!(x)
                } else {
                    json!(0.0)
                }
            }
            Atom::Boolean(b) => json!(b),
            Atom::String(s) => json!(s),
            Atom::Uuid(u) => json!(["uuid", u.to_string()]),
        }
    }

    /// The string inside, if a string atom.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Atom::String(s) => Some(s),
            _ => None,
        }
    }
    /// The integer inside, if an integer atom.
    pub fn as_integer(&self) -> Option<i64> {
        match self {
            Atom::Integer(n) => Some(*n),
            _ => None,
        }
    }
    /// The UUID inside, if a uuid atom.
    pub fn as_uuid(&self) -> Option<Uuid> {
        match self {
            Atom::Uuid(u) => Some(*u),
            _ => None,
        }
    }
    /// The boolean inside, if a boolean atom.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Atom::Boolean(b) => Some(*b),
            _ => None,
        }
    }
}

impl Ord for Atom {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Atom::Integer(a), Atom::Integer(b)) => a.cmp(b),
            (Atom::Real(a), Atom::Real(b)) => a.total_cmp(b),
            (Atom::Boolean(a), Atom::Boolean(b)) => a.cmp(b),
            (Atom::String(a), Atom::String(b)) => a.cmp(b),
            (Atom::Uuid(a), Atom::Uuid(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}
impl PartialOrd for Atom {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Atom {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Atom {}

/// The value of a column: a set or a map.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Datum {
    /// A set of atoms (a scalar is a one-element set).
    Set(BTreeSet<Atom>),
    /// A map.
    Map(BTreeMap<Atom, Atom>),
}

impl Datum {
    /// The empty datum of a type (an empty map for map types).
    pub fn empty(ty: &ColumnType) -> Datum {
        if ty.is_map() {
            Datum::Map(BTreeMap::new())
        } else {
            Datum::Set(BTreeSet::new())
        }
    }
    /// A set from atoms.
    pub fn set_of(atoms: impl IntoIterator<Item = Atom>) -> Datum {
        Datum::Set(atoms.into_iter().collect())
    }
    /// A map from pairs.
    pub fn map_of(pairs: impl IntoIterator<Item = (Atom, Atom)>) -> Datum {
        Datum::Map(pairs.into_iter().collect())
    }
    /// A one-element set.
    pub fn scalar(a: Atom) -> Datum {
        Datum::set_of([a])
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Datum::Set(s) => s.len(),
            Datum::Map(m) => m.len(),
        }
    }
    /// No elements?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The keys (set elements, or map keys).
    pub fn keys(&self) -> Box<dyn Iterator<Item = &Atom> + '_> {
        match self {
            Datum::Set(s) => Box::new(s.iter()),
            Datum::Map(m) => Box::new(m.keys()),
        }
    }
    /// Every atom (keys and values).
    pub fn atoms(&self) -> Box<dyn Iterator<Item = &Atom> + '_> {
        match self {
            Datum::Set(s) => Box::new(s.iter()),
            Datum::Map(m) => Box::new(m.iter().flat_map(|(k, v)| [k, v])),
        }
    }
    /// The first (or only) element of a set, e.g. a scalar's value.
    pub fn first(&self) -> Option<&Atom> {
        self.keys().next()
    }
    /// A scalar or optional string's value.
    pub fn as_str(&self) -> Option<&str> {
        self.first().and_then(Atom::as_str)
    }
    /// A scalar or optional integer's value.
    pub fn as_integer(&self) -> Option<i64> {
        self.first().and_then(Atom::as_integer)
    }
    /// The map, if a map.
    pub fn as_map(&self) -> Option<&BTreeMap<Atom, Atom>> {
        match self {
            Datum::Map(m) => Some(m),
            Datum::Set(_) => None,
        }
    }
    /// Look up a string key in a map datum (e.g. `other_config`).
    pub fn map_get(&self, key: &str) -> Option<&Atom> {
        self.as_map()
            .and_then(|m| m.get(&Atom::String(key.to_string())))
    }

    /// Parse a `<value>` of type `ty` (atomic types and cardinality checked).
    pub fn from_json(ty: &ColumnType, v: &Value, mut named: Resolver<'_>) -> Result<Datum> {
        let d = if let Some(vt) = &ty.value {
            let pairs = match v.as_array() {
                Some(a) if a.len() == 2 && a[0] == "map" => a[1]
                    .as_array()
                    .ok_or_else(|| Error::syntax(format!("malformed map {v}")))?,
                _ => return Err(Error::syntax(format!("expected [\"map\", [...]], got {v}"))),
            };
            let mut m = BTreeMap::new();
            for p in pairs {
                let kv = p.as_array().filter(|a| a.len() == 2).ok_or_else(|| {
                    Error::syntax(format!("map pair must be [key, value], got {p}"))
                })?;
                let k = Atom::from_json(ty.key.atomic, &kv[0], &mut named)?;
                let val = Atom::from_json(vt.atomic, &kv[1], &mut named)?;
                if m.insert(k, val).is_some() {
                    return Err(Error::syntax(format!(
                        "map {v} contains duplicate key {}",
                        kv[0]
                    )));
                }
            }
            Datum::Map(m)
        } else {
            let is_set = matches!(v.as_array(), Some(a) if a.len() == 2 && a[0] == "set");
            if is_set {
                let elems = v
                    .get(1)
                    .and_then(Value::as_array)
                    .ok_or_else(|| Error::syntax(format!("malformed set {v}")))?;
                let mut s = BTreeSet::new();
                for e in elems {
                    let a = Atom::from_json(ty.key.atomic, e, &mut named)?;
                    if !s.insert(a) {
                        return Err(Error::syntax(format!("set {v} contains duplicate {e}")));
                    }
                }
                Datum::Set(s)
            } else {
                Datum::scalar(Atom::from_json(ty.key.atomic, v, &mut named)?)
            }
        };
        let n = d.len() as u64;
        if n < ty.min || n > ty.max {
            let max = if ty.max == u64::MAX {
                "unlimited".to_string()
            } else {
                ty.max.to_string()
            };
            return Err(Error::syntax(format!(
                "{v} has {n} elements but the type allows {} to {max}",
                ty.min
            )));
        }
        Ok(d)
    }

    /// The JSON form (a bare atom for one-element sets).
    pub fn to_json(&self) -> Value {
        match self {
            Datum::Set(s) if s.len() == 1 => {
                s.iter().next().map(Atom::to_json).unwrap_or(Value::Null)
            }
            Datum::Set(s) => json!(["set", s.iter().map(Atom::to_json).collect::<Vec<_>>()]),
            Datum::Map(m) => json!([
                "map",
                m.iter()
                    .map(|(k, v)| json!([k.to_json(), v.to_json()]))
                    .collect::<Vec<_>>()
            ]),
        }
    }

    /// Check cardinality and the base types' constraints (enum, ranges, lengths).
    pub fn check_constraints(&self, ty: &ColumnType) -> std::result::Result<(), String> {
        let n = self.len() as u64;
        if n < ty.min || n > ty.max {
            let max = if ty.max == u64::MAX {
                "unlimited".to_string()
            } else {
                ty.max.to_string()
            };
            return Err(format!(
                "{} has {n} elements but the type allows {} to {max}",
                self.to_json(),
                ty.min
            ));
        }
        match self {
            Datum::Set(s) => {
                for a in s {
                    ty.key.check_atom(a)?;
                }
            }
            Datum::Map(m) => {
                let vt = ty.value.as_ref().unwrap_or(&ty.key);
                for (k, v) in m {
                    ty.key.check_atom(k)?;
                    vt.check_atom(v)?;
                }
            }
        }
        Ok(())
    }

    /// Whether every element of `other` is in `self` (maps: every pair).
    pub fn includes(&self, other: &Datum) -> bool {
        match (self, other) {
            (Datum::Set(a), Datum::Set(b)) => b.is_subset(a),
            (Datum::Map(a), Datum::Map(b)) => b.iter().all(|(k, v)| a.get(k) == Some(v)),
            _ => false,
        }
    }

    /// Whether no element of `other` is in `self` (maps: no pair).
    pub fn excludes(&self, other: &Datum) -> bool {
        match (self, other) {
            (Datum::Set(a), Datum::Set(b)) => a.is_disjoint(b),
            (Datum::Map(a), Datum::Map(b)) => b.iter().all(|(k, v)| a.get(k) != Some(v)),
            _ => true,
        }
    }

    /// The "update2" difference from `self` to `new` for a column of type `ty`: for columns of
    /// at most one element, the new value; for sets, the symmetric difference; for maps, removed
    /// keys with their old values plus added or changed keys with their new values.
    pub fn diff(&self, new: &Datum, ty: &ColumnType) -> Datum {
        if ty.max == 1 {
            return new.clone();
        }
        match (self, new) {
            (Datum::Set(a), Datum::Set(b)) => {
                Datum::Set(a.symmetric_difference(b).cloned().collect())
            }
            (Datum::Map(a), Datum::Map(b)) => {
                let mut m = BTreeMap::new();
                for (k, v) in a {
                    if !b.contains_key(k) {
                        m.insert(k.clone(), v.clone());
                    }
                }
                for (k, v) in b {
                    if a.get(k) != Some(v) {
                        m.insert(k.clone(), v.clone());
                    }
                }
                Datum::Map(m)
            }
            _ => new.clone(),
        }
    }

    /// UUIDs referenced through `base` (if it has a refTable).
    pub fn uuids_of<'a>(&'a self, key: bool) -> Box<dyn Iterator<Item = Uuid> + 'a> {
        match self {
            Datum::Set(s) if key => Box::new(s.iter().filter_map(Atom::as_uuid)),
            Datum::Set(_) => Box::new(std::iter::empty()),
            Datum::Map(m) if key => Box::new(m.keys().filter_map(Atom::as_uuid)),
            Datum::Map(m) => Box::new(m.values().filter_map(Atom::as_uuid)),
        }
    }
}

/// Whether a base type refers to rows.
pub(crate) fn is_ref(b: &BaseType) -> bool {
    b.atomic == AtomicType::Uuid && b.ref_table.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(v: Value) -> ColumnType {
        ColumnType::from_json(&v).unwrap()
    }

    #[test]
    fn parse_and_emit() {
        let t = ty(json!({"key": "string", "min": 0, "max": "unlimited"}));
        let d = Datum::from_json(&t, &json!(["set", ["b", "a"]]), None).unwrap();
        assert_eq!(d.to_json(), json!(["set", ["a", "b"]]));
        let d = Datum::from_json(&t, &json!("x"), None).unwrap();
        assert_eq!(d.to_json(), json!("x"));
        assert!(Datum::from_json(&t, &json!(["set", ["a", "a"]]), None).is_err());
        assert!(Datum::from_json(&t, &json!(["set", [1]]), None).is_err());

        let m = ty(json!({"key": "string", "value": "integer", "min": 0, "max": "unlimited"}));
        let d = Datum::from_json(&m, &json!(["map", [["k", 1], ["a", 2]]]), None).unwrap();
        assert_eq!(d.to_json(), json!(["map", [["a", 2], ["k", 1]]]));
        assert!(Datum::from_json(&m, &json!(["map", [["k", 1], ["k", 2]]]), None).is_err());
        assert!(Datum::from_json(&m, &json!(["set", []]), None).is_err());

        let u = ty(json!("uuid"));
        let d = Datum::from_json(
            &u,
            &json!(["uuid", "01234567-89ab-cdef-0123-456789abcdef"]),
            None,
        )
        .unwrap();
        assert_eq!(
            d.to_json(),
            json!(["uuid", "01234567-89ab-cdef-0123-456789abcdef"])
        );
        assert!(Datum::from_json(&u, &json!(["named-uuid", "x"]), None).is_err());
        let mut r = |_: &str| Ok(Uuid(7));
        let d = Datum::from_json(&u, &json!(["named-uuid", "x"]), Some(&mut r)).unwrap();
        assert_eq!(d.first().and_then(Atom::as_uuid), Some(Uuid(7)));

        let i = ty(json!("integer"));
        assert!(Datum::from_json(&i, &json!(1.5), None).is_err());
        assert!(Datum::from_json(&i, &json!(["set", []]), None).is_err());
        let r = ty(json!("real"));
        assert_eq!(
            Datum::from_json(&r, &json!(3), None).unwrap().to_json(),
            json!(3.0)
        );
    }

    #[test]
    fn constraints() {
        let t = ty(json!({"key": {"type": "string", "enum": ["set", ["a", "b"]]}, "min": 0}));
        assert!(Datum::scalar(Atom::String("a".into()))
            .check_constraints(&t)
            .is_ok());
        let e = Datum::scalar(Atom::String("c".into()))
            .check_constraints(&t)
            .unwrap_err();
        assert!(e.contains("\"c\""), "{e}");
        let t = ty(json!({"key": {"type": "integer", "minInteger": 1, "maxInteger": 10}}));
        assert!(Datum::scalar(Atom::Integer(0))
            .check_constraints(&t)
            .is_err());
        assert!(Datum::scalar(Atom::Integer(10))
            .check_constraints(&t)
            .is_ok());
        let t = ty(json!({"key": {"type": "string", "maxLength": 2}}));
        assert!(Datum::scalar(Atom::String("abc".into()))
            .check_constraints(&t)
            .is_err());
    }

    #[test]
    fn diffs() {
        let m = ty(json!({"key": "string", "value": "string", "min": 0, "max": "unlimited"}));
        let s = |p: &[(&str, &str)]| {
            Datum::map_of(
                p.iter()
                    .map(|(k, v)| (Atom::String(k.to_string()), Atom::String(v.to_string()))),
            )
        };
        let old = s(&[("a", "1"), ("b", "2"), ("c", "3")]);
        let new = s(&[("a", "1"), ("b", "9"), ("d", "4")]);
        assert_eq!(old.diff(&new, &m), s(&[("b", "9"), ("c", "3"), ("d", "4")]));
    }
}
