//! OVSDB column types (RFC 7047 §3.2 `<type>`, `<base-type>`, `<atomic-type>`).
//!
//! A column's type is a *key* base type, an optional *value* base type (present for maps) and a
//! cardinality `min..=max` (min 0 or 1, max ≥ 1 or unlimited). A base type is an atomic type
//! (integer, real, boolean, string, uuid) with optional constraints: an enumeration, an integer
//! or real range, a string length range, and for uuids a `refTable` with a strong or weak
//! `refType`. Parsing validates every field and rejects unknown ones, so a [`ColumnType`] that
//! exists is always self-consistent (min ≤ max, ranges ordered, enum atoms of the right type);
//! whether a `refTable` names an existing table is checked by the schema parser. Types are
//! immutable values, freely shared between threads.

use crate::datum::{Atom, Datum};
use crate::error::{Error, Result};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::fmt;

/// The five atomic types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AtomicType {
    /// 64-bit signed integer.
    Integer,
    /// IEEE double.
    Real,
    /// true/false.
    Boolean,
    /// UTF-8 string.
    String,
    /// A UUID, possibly a reference to a row.
    Uuid,
}

impl AtomicType {
    /// Parse `"integer"`, `"real"`, ...
    pub fn from_name(s: &str) -> Option<Self> {
        Some(match s {
            "integer" => Self::Integer,
            "real" => Self::Real,
            "boolean" => Self::Boolean,
            "string" => Self::String,
            "uuid" => Self::Uuid,
            _ => return None,
        })
    }
    /// The name used in schemas.
    pub fn name(self) -> &'static str {
        match self {
            Self::Integer => "integer",
            Self::Real => "real",
            Self::Boolean => "boolean",
            Self::String => "string",
            Self::Uuid => "uuid",
        }
    }
    /// The default atom of this type (0, 0.0, false, "", all-zero uuid).
    pub fn default_atom(self) -> Atom {
        match self {
            Self::Integer => Atom::Integer(0),
            Self::Real => Atom::Real(0.0),
            Self::Boolean => Atom::Boolean(false),
            Self::String => Atom::String(String::new()),
            Self::Uuid => Atom::Uuid(crate::Uuid::ZERO),
        }
    }
}

impl fmt::Display for AtomicType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Strong references keep their target alive and must never dangle; weak ones are dropped
/// when the target row goes away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefType {
    /// A dangling reference aborts the transaction.
    Strong,
    /// A dangling reference is silently removed.
    Weak,
}

/// A `<base-type>`: an atomic type plus constraints.
#[derive(Debug, Clone, PartialEq)]
pub struct BaseType {
    /// The atomic type.
    pub atomic: AtomicType,
    /// Allowed values, if restricted.
    pub enumeration: Option<BTreeSet<Atom>>,
    /// Integer range (inclusive).
    pub min_integer: Option<i64>,
    /// Integer range (inclusive).
    pub max_integer: Option<i64>,
    /// Real range (inclusive).
    pub min_real: Option<f64>,
    /// Real range (inclusive).
    pub max_real: Option<f64>,
    /// String length range (inclusive), counted in Unicode scalar values.
    pub min_length: Option<u64>,
    /// See `min_length`.
    pub max_length: Option<u64>,
    /// For uuids: the table referred to.
    pub ref_table: Option<String>,
    /// For uuids with `ref_table`: strong or weak.
    pub ref_type: RefType,
}

impl BaseType {
    /// An unconstrained base type.
    pub fn new(atomic: AtomicType) -> Self {
        BaseType {
            atomic,
            enumeration: None,
            min_integer: None,
            max_integer: None,
            min_real: None,
            max_real: None,
            min_length: None,
            max_length: None,
            ref_table: None,
            ref_type: RefType::Strong,
        }
    }

    /// Parse a `<base-type>`.
    pub fn from_json(v: &Value) -> Result<Self> {
        match v {
            Value::String(s) => AtomicType::from_name(s)
                .map(BaseType::new)
                .ok_or_else(|| Error::syntax(format!("unknown atomic type \"{s}\""))),
            Value::Object(o) => {
                let ty = o
                    .get("type")
                    .and_then(Value::as_str)
                    .ok_or_else(|| Error::syntax("base type lacks a \"type\" string"))?;
                let atomic = AtomicType::from_name(ty)
                    .ok_or_else(|| Error::syntax(format!("unknown atomic type \"{ty}\"")))?;
                let mut b = BaseType::new(atomic);
                for (k, val) in o {
                    b.set_member(k, val)?;
                }
                b.check_bounds()?;
                if o.contains_key("refType") && b.ref_table.is_none() {
                    return Err(Error::syntax("refType without refTable"));
                }
                Ok(b)
            }
            _ => Err(Error::syntax(format!(
                "base type must be a string or object, not {v}"
            ))),
        }
    }

    /// Applies one member of a `<base-type>` object (`type` itself is already read).
    fn set_member(&mut self, k: &str, val: &Value) -> Result<()> {
        let atomic = self.atomic;
        let only_on = |want: AtomicType| {
            if atomic == want {
                Ok(())
            } else {
                Err(Error::syntax(format!("{k} on a {atomic} base type")))
            }
        };
        match k {
            "type" => {}
            "enum" => {
                let unconstrained = ColumnType {
                    key: BaseType::new(atomic),
                    value: None,
                    min: 0,
                    max: u64::MAX,
                };
                let d = Datum::from_json(&unconstrained, val, None)?;
                self.enumeration = Some(d.keys().cloned().collect());
            }
            "minInteger" | "maxInteger" => {
                only_on(AtomicType::Integer)?;
                let n = val
                    .as_i64()
                    .ok_or_else(|| Error::syntax(format!("{k} must be an integer")))?;
                *if k == "minInteger" {
                    &mut self.min_integer
                } else {
                    &mut self.max_integer
                } = Some(n);
            }
            "minReal" | "maxReal" => {
                only_on(AtomicType::Real)?;
                let n = val
                    .as_f64()
                    .ok_or_else(|| Error::syntax(format!("{k} must be a number")))?;
                *if k == "minReal" {
                    &mut self.min_real
                } else {
                    &mut self.max_real
                } = Some(n);
            }
            "minLength" | "maxLength" => {
                only_on(AtomicType::String)?;
                let n = val
                    .as_u64()
                    .ok_or_else(|| Error::syntax(format!("{k} must be a non-negative integer")))?;
                *if k == "minLength" {
                    &mut self.min_length
                } else {
                    &mut self.max_length
                } = Some(n);
            }
            "refTable" => {
                only_on(AtomicType::Uuid)?;
                let t = val
                    .as_str()
                    .ok_or_else(|| Error::syntax("refTable must be a string"))?;
                self.ref_table = Some(t.to_string());
            }
            "refType" => {
                self.ref_type = match val.as_str() {
                    Some("strong") => RefType::Strong,
                    Some("weak") => RefType::Weak,
                    _ => return Err(Error::syntax("refType must be \"strong\" or \"weak\"")),
                };
            }
            other => {
                return Err(Error::syntax(format!(
                    "unknown base type member \"{other}\""
                )))
            }
        }
        Ok(())
    }

    /// Rejects a minimum above its maximum.
    fn check_bounds(&self) -> Result<()> {
        if let (Some(a), Some(z)) = (self.min_integer, self.max_integer) {
            if a > z {
                return Err(Error::syntax(format!("minInteger {a} > maxInteger {z}")));
            }
        }
        if let (Some(a), Some(z)) = (self.min_real, self.max_real) {
            if a > z {
                return Err(Error::syntax(format!("minReal {a} > maxReal {z}")));
            }
        }
        if let (Some(a), Some(z)) = (self.min_length, self.max_length) {
            if a > z {
                return Err(Error::syntax(format!("minLength {a} > maxLength {z}")));
            }
        }
        Ok(())
    }

    /// Back to schema JSON (short form when unconstrained).
    pub fn to_json(&self) -> Value {
        let mut o = Map::new();
        o.insert("type".into(), json!(self.atomic.name()));
        if let Some(e) = &self.enumeration {
            let set: Vec<Value> = e.iter().map(Atom::to_json).collect();
            o.insert("enum".into(), json!(["set", set]));
        }
        if let Some(n) = self.min_integer {
            o.insert("minInteger".into(), json!(n));
        }
        if let Some(n) = self.max_integer {
            o.insert("maxInteger".into(), json!(n));
        }
        if let Some(n) = self.min_real {
            o.insert("minReal".into(), json!(n));
        }
        if let Some(n) = self.max_real {
            o.insert("maxReal".into(), json!(n));
        }
        if let Some(n) = self.min_length {
            o.insert("minLength".into(), json!(n));
        }
        if let Some(n) = self.max_length {
            o.insert("maxLength".into(), json!(n));
        }
        if let Some(t) = &self.ref_table {
            o.insert("refTable".into(), json!(t));
            if self.ref_type == RefType::Weak {
                o.insert("refType".into(), json!("weak"));
            }
        }
        if o.len() == 1 {
            json!(self.atomic.name())
        } else {
            Value::Object(o)
        }
    }

    /// Check one atom (already of the right atomic type) against the constraints.
    pub fn check_atom(&self, a: &Atom) -> std::result::Result<(), String> {
        if let Some(e) = &self.enumeration {
            if !e.contains(a) {
                let allowed: Vec<String> = e.iter().map(|x| x.to_json().to_string()).collect();
                return Err(format!(
                    "{} is not one of the allowed values [{}]",
                    a.to_json(),
                    allowed.join(", ")
                ));
            }
        }
        let show = |v: Option<String>| v.unwrap_or_default();
        match a {
            Atom::Integer(n)
                if self.min_integer.is_some_and(|m| *n < m)
                    || self.max_integer.is_some_and(|m| *n > m) =>
            {
                Err(format!(
                    "{n} is not in the valid range {}..{}",
                    show(self.min_integer.map(|v| v.to_string())),
                    show(self.max_integer.map(|v| v.to_string()))
                ))
            }
            Atom::Real(n)
                if self.min_real.is_some_and(|m| *n < m)
                    || self.max_real.is_some_and(|m| *n > m) =>
            {
                Err(format!(
                    "{n} is not in the valid range {}..{}",
                    show(self.min_real.map(|v| v.to_string())),
                    show(self.max_real.map(|v| v.to_string()))
                ))
            }
            Atom::String(s) => {
                let len = s.chars().count() as u64;
                if self.min_length.is_some_and(|m| len < m)
                    || self.max_length.is_some_and(|m| len > m)
                {
                    return Err(format!(
                        "\"{s}\" has length {len}, outside the valid range {}..{}",
                        show(self.min_length.map(|v| v.to_string())),
                        show(self.max_length.map(|v| v.to_string()))
                    ));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// A column's `<type>`: key, optional value (maps), cardinality.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnType {
    /// The key (or element) type.
    pub key: BaseType,
    /// The value type for maps.
    pub value: Option<BaseType>,
    /// Minimum number of elements (0 or 1).
    pub min: u64,
    /// Maximum number of elements (`u64::MAX` = unlimited).
    pub max: u64,
}

impl ColumnType {
    /// A scalar column of this atomic type.
    pub fn scalar(atomic: AtomicType) -> Self {
        ColumnType {
            key: BaseType::new(atomic),
            value: None,
            min: 1,
            max: 1,
        }
    }

    /// Parse a `<type>`.
    pub fn from_json(v: &Value) -> Result<Self> {
        match v {
            Value::String(_) => Ok(ColumnType {
                key: BaseType::from_json(v)?,
                value: None,
                min: 1,
                max: 1,
            }),
            Value::Object(o) => {
                let mut key = None;
                let mut value = None;
                let mut min = 1u64;
                let mut max = 1u64;
                for (k, val) in o {
                    match k.as_str() {
                        "key" => key = Some(BaseType::from_json(val)?),
                        "value" => value = Some(BaseType::from_json(val)?),
                        "min" => {
                            min = val
                                .as_u64()
                                .filter(|n| *n <= 1)
                                .ok_or_else(|| Error::syntax("type min must be 0 or 1"))?
                        }
                        "max" => {
                            max = match val {
                                Value::String(s) if s == "unlimited" => u64::MAX,
                                _ => val.as_u64().filter(|n| *n >= 1).ok_or_else(|| {
                                    Error::syntax(
                                        "type max must be a positive integer or \"unlimited\"",
                                    )
                                })?,
                            }
                        }
                        other => {
                            return Err(Error::syntax(format!("unknown type member \"{other}\"")))
                        }
                    }
                }
                let key = key.ok_or_else(|| Error::syntax("type object lacks \"key\""))?;
                if min > max {
                    return Err(Error::syntax(format!("type min {min} > max {max}")));
                }
                Ok(ColumnType {
                    key,
                    value,
                    min,
                    max,
                })
            }
            _ => Err(Error::syntax(format!(
                "type must be a string or object, not {v}"
            ))),
        }
    }

    /// Back to schema JSON.
    pub fn to_json(&self) -> Value {
        if self.value.is_none() && self.min == 1 && self.max == 1 {
            if let Value::String(s) = self.key.to_json() {
                return Value::String(s);
            }
        }
        let mut o = Map::new();
        o.insert("key".into(), self.key.to_json());
        if let Some(v) = &self.value {
            o.insert("value".into(), v.to_json());
        }
        if self.min != 1 {
            o.insert("min".into(), json!(self.min));
        }
        if self.max != 1 {
            o.insert(
                "max".into(),
                if self.max == u64::MAX {
                    json!("unlimited")
                } else {
                    json!(self.max)
                },
            );
        }
        Value::Object(o)
    }

    /// A map type?
    pub fn is_map(&self) -> bool {
        self.value.is_some()
    }

    /// Exactly one element, not a map.
    pub fn is_scalar(&self) -> bool {
        self.value.is_none() && self.min == 1 && self.max == 1
    }

    /// The same element types with any cardinality (for mutation and condition arguments).
    pub fn any_count(&self) -> Self {
        ColumnType {
            min: 0,
            max: u64::MAX,
            ..self.clone()
        }
    }

    /// The default datum: empty when `min` is 0, else the key (and value) type's default atom.
    pub fn default_datum(&self) -> Datum {
        if self.min == 0 {
            Datum::empty(self)
        } else if let Some(v) = &self.value {
            Datum::map_of([(self.key.atomic.default_atom(), v.atomic.default_atom())])
        } else {
            Datum::set_of([self.key.atomic.default_atom()])
        }
    }
}
