//! The module registry: switching-logic modules by name.
//!
//! A bridge names its module (`ferrovs add-br BR module=NAME`, OVSDB `other_config:module`);
//! [`create`] builds a fresh instance. Each module declares its own [`Registration`] (its
//! name and constructor) next to its code; the built-in ones are listed here, and a program
//! embedding the datapath adds its own with [`register`] before creating bridges. The trait
//! ([`crate::module`]) knows none of them.

use crate::error::ModuleError;
use crate::module::SwitchLogic;
use std::sync::{Mutex, MutexGuard};

/// A module's name and constructor.
#[derive(Clone, Copy)]
pub struct Registration {
    pub name: &'static str,
    pub create: fn() -> Result<Box<dyn SwitchLogic>, ModuleError>,
}

/// The modules every datapath has.
const BUILT_IN: &[Registration] = &[
    crate::ofmodule::REGISTRATION,
    crate::learning::REGISTRATION,
    crate::patch::REGISTRATION,
    crate::tuple3::REGISTRATION,
];

/// Modules registered at run time.
static EXTRA: Mutex<Vec<Registration>> = Mutex::new(Vec::new());

fn extra() -> MutexGuard<'static, Vec<Registration>> {
    EXTRA.lock().unwrap_or_else(|e| e.into_inner())
}

/// Adds a module; refused if its name is taken.
pub fn register(r: Registration) -> Result<(), ModuleError> {
    if find(r.name).is_some() {
        return Err(ModuleError::AlreadyRegistered(r.name));
    }
    extra().push(r);
    Ok(())
}

fn find(name: &str) -> Option<Registration> {
    BUILT_IN
        .iter()
        .copied()
        .find(|r| r.name == name)
        .or_else(|| extra().iter().copied().find(|r| r.name == name))
}

/// Every registered module's name, built-in ones first.
pub fn names() -> Vec<&'static str> {
    BUILT_IN
        .iter()
        .chain(extra().iter())
        .map(|r| r.name)
        .collect()
}

/// A new instance of module `name`.
pub fn create(name: &str) -> Result<Box<dyn SwitchLogic>, ModuleError> {
    match find(name) {
        Some(r) => (r.create)(),
        None => Err(ModuleError::UnknownModule {
            name: name.to_string(),
            known: names().join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_are_found_and_unknown_names_listed() {
        for n in ["openflow", "learning", "patch", "tuple3"] {
            assert_eq!(create(n).map(|m| m.name()), Ok(n));
        }
        let e = create("nope")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("known: openflow, learning, patch, tuple3"),
            "{e}"
        );
    }

    #[test]
    fn a_module_registered_at_run_time_is_created_by_name() {
        let r = Registration {
            name: "registry-test",
            create: || Ok(Box::new(crate::patch::Patch::new())),
        };
        assert_eq!(register(r), Ok(()));
        assert!(register(r).is_err(), "a name is registered once");
        assert!(names().contains(&"registry-test"));
        assert_eq!(create("registry-test").map(|m| m.name()), Ok("patch"));
    }
}
