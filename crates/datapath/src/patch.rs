//! The `patch` module: a fixed port-to-port map.
//!
//! `patch-set BR P1 P2` sends everything arriving on P1 out of P2 (one way; set the reverse
//! too for a two-way cable); `patch-del BR P1` removes the entry; packets from unmapped ports
//! are dropped. Lookup is one array index per packet: the module measures the raw cost of the
//! fabric itself.

use crate::module::{Ctx, Delivery, Dest, ModuleCommand, ModuleError, PortLookup, SwitchLogic};
use packet::{Batch, Pool};

/// This module in the registry ([`crate::registry`]).
pub const REGISTRATION: crate::registry::Registration = crate::registry::Registration {
    name: "patch",
    create: || Ok(Box::new(Patch::new())),
};

const NONE: u16 = u16::MAX;

/// See the module documentation.
pub struct Patch {
    map: Vec<u16>,
}

impl Default for Patch {
    fn default() -> Self {
        Self::new()
    }
}

impl Patch {
    /// An empty map.
    pub fn new() -> Patch {
        Patch { map: Vec::new() }
    }

    /// Sends `from`'s packets to `to`.
    pub fn set(&mut self, from: u16, to: u16) {
        let i = from as usize;
        if self.map.len() <= i {
            self.map.resize(i + 1, NONE);
        }
        self.map[i] = to;
    }

    fn get(&self, from: u16) -> Option<u16> {
        match self.map.get(from as usize) {
            Some(&t) if t != NONE => Some(t),
            _ => None,
        }
    }
}

const COMMANDS: &[ModuleCommand] = &[
    ModuleCommand {
        verb: "patch-set",
        usage: "BR FROM TO",
    },
    ModuleCommand {
        verb: "patch-del",
        usage: "BR FROM",
    },
    ModuleCommand {
        verb: "patch-show",
        usage: "BR",
    },
];

impl SwitchLogic for Patch {
    fn name(&self) -> &'static str {
        "patch"
    }

    fn fork(&mut self) -> Option<Box<dyn SwitchLogic>> {
        Some(Box::new(Patch {
            map: self.map.clone(),
        }))
    }

    #[inline]
    fn forward(&mut self, _ctx: &Ctx, batch: &mut Batch, pool: &mut Pool, out: &mut Delivery<'_>) {
        // Every packet of a batch comes from the same port.
        let d = match self.get(out.in_port()) {
            Some(t) => Dest::Port(t),
            None => Dest::Drop,
        };
        out.by_dest(batch, pool, |_, dests| dests.fill(d));
    }

    fn port_removed(&mut self, idx: u16) {
        if let Some(t) = self.map.get_mut(idx as usize) {
            *t = NONE;
        }
        for t in self.map.iter_mut() {
            if *t == idx {
                *t = NONE;
            }
        }
    }

    fn commands(&self) -> &'static [ModuleCommand] {
        COMMANDS
    }

    fn command(
        &mut self,
        verb: &str,
        args: &[String],
        json: bool,
        _ctx: &Ctx,
        ports: &dyn PortLookup,
    ) -> Result<String, ModuleError> {
        let port = |s: &String| {
            ports
                .resolve(s)
                .ok_or_else(|| ModuleError::NoSuchPort(s.clone()))
        };
        match (verb, args) {
            ("patch-set", [a, b]) => {
                let (a, b) = (port(a)?, port(b)?);
                if a.idx == b.idx {
                    return Err(ModuleError::PatchToItself(a.name));
                }
                self.set(a.idx, b.idx);
                Ok(String::new())
            }
            ("patch-del", [a]) => {
                let a = port(a)?;
                if self.get(a.idx).is_none() {
                    return Err(ModuleError::NotPatched(a.name));
                }
                self.port_removed_entry(a.idx);
                Ok(String::new())
            }
            ("patch-show", []) => {
                let mut rows = Vec::new();
                for (from, &to) in self.map.iter().enumerate() {
                    if to == NONE {
                        continue;
                    }
                    if let (Some(f), Some(t)) = (ports.info(from as u16), ports.info(to)) {
                        rows.push((f, t));
                    }
                }
                if json {
                    let v: Vec<_> = rows
                        .iter()
                        .map(|(f, t)| serde_json::json!({"from": f.name, "to": t.name}))
                        .collect();
                    Ok(serde_json::Value::Array(v).to_string())
                } else {
                    let mut s = String::new();
                    for (f, t) in rows {
                        s.push_str(&format!("{} -> {}\n", f.name, t.name));
                    }
                    Ok(s)
                }
            }
            ("patch-set", _) | ("patch-del", _) | ("patch-show", _) => {
                let u = COMMANDS
                    .iter()
                    .find(|c| c.verb == verb)
                    .map(|c| c.usage)
                    .unwrap_or("");
                Err(ModuleError::Usage {
                    verb: verb.to_string(),
                    usage: u,
                })
            }
            _ => Err(ModuleError::NoSuchVerb {
                module: "patch",
                verb: verb.to_string(),
            }),
        }
    }
}

impl Patch {
    fn port_removed_entry(&mut self, from: u16) {
        if let Some(t) = self.map.get_mut(from as usize) {
            *t = NONE;
        }
    }
}
