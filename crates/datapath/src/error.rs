//! The datapath's error type.
//!
//! Every fallible control operation of this crate (bridges, ports, poll threads, receive
//! queue placement, module settings and verbs) returns [`Error`]. Its `Display` text is the
//! message users see: the daemon prefixes it with the verb (`add-port: no such bridge 'br9'`)
//! and the CLI prints it, so a variant's wording is part of the interface and tests match it.
//! Errors a switching-logic module raises about its own settings, verbs and packets are a
//! [`ModuleError`] (carried by [`Error::Module`]); the fabric does not interpret them.

use std::fmt;

/// See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// No bridge of that name.
    NoSuchBridge(String),
    /// A bridge of that name exists already.
    BridgeExists(String),
    /// A second replica of a bridge on one poll thread.
    ReplicaExists(String),
    /// A new bridge would take the name of a port.
    NameIsPort { name: String, bridge: String },
    /// A new port would take the name of a bridge.
    NameIsBridge(String),
    /// A port of that name exists already (names are unique across bridges).
    PortExists { port: String, bridge: String },
    /// No port of that name on any bridge.
    NoSuchPort(String),
    /// No port of that name on this bridge.
    NoPortOnBridge { bridge: String, port: String },
    /// The port was there and is not any more (removed meanwhile).
    PortVanished(String),
    /// The bridge's own internal port (`LOCAL`) goes only with its bridge.
    LocalPort(String),
    /// An ofport outside `1..=max`.
    OfportRange { ofport: u32, max: u32 },
    /// An ofport another port of the bridge has.
    OfportInUse { ofport: u32, port: String },
    /// A bridge's module has no such verb.
    NoSuchCommand {
        bridge: String,
        module: &'static str,
        verb: String,
    },
    /// More mirrors than a bridge can have.
    TooManyMirrors {
        bridge: String,
        n: usize,
        max: usize,
    },
    /// The buffer pool is empty.
    PoolExhausted,
    /// A poll-thread setting (`pmd-cpu-mask`, `pmd-rxq-affinity`, ...) that does not parse:
    /// the key and what is wrong with the value.
    Setting { key: &'static str, msg: String },
    /// No poll thread with that index.
    NoPollThread(usize),
    /// A poll thread could not be started.
    ThreadStart(String),
    /// The poll thread has stopped (it no longer takes calls).
    ThreadStopped,
    /// The poll thread did not answer a call in time (or the call panicked).
    ThreadTimeout,
    /// A switching-logic module refused a setting, verb or packet.
    Module(ModuleError),
}

/// What a switching-logic module (or the module registry) refuses: a setting, a verb's
/// arguments, a packet-out, an instance. Its `Display` text is the message users see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModuleError {
    /// A setting the module does not have (modules without settings).
    NoSuchSetting {
        module: &'static str,
        key: String,
        value: String,
    },
    /// A setting the module does not have; `settings` lists the ones it has.
    UnknownSetting {
        module: &'static str,
        key: String,
        settings: &'static str,
    },
    /// A setting's (or a verb argument's) value is out of range: `expected` says what fits.
    BadValue {
        key: String,
        value: String,
        expected: String,
    },
    /// A boolean setting's value is not a boolean.
    NotBool { key: String, value: String },
    /// A verb the module does not have.
    NoSuchVerb { module: &'static str, verb: String },
    /// A verb's arguments do not fit its usage (`usage`: the words after the verb).
    Usage { verb: String, usage: &'static str },
    /// A verb that takes no arguments was given one.
    UnexpectedArgument { verb: String, arg: String },
    /// A verb named a port the bridge does not have.
    NoSuchPort(String),
    /// A packet-out to a module that does not run OpenFlow.
    NotOpenFlow(&'static str),
    /// The buffer pool is empty (packet-out).
    PoolExhausted,
    /// A packet-out frame larger than a packet buffer.
    FrameTooLong,
    /// The `openflow` module's upcall threads could not be started.
    UpcallThreads(String),
    /// `patch-set` of a port onto itself.
    PatchToItself(String),
    /// `patch-del` of a port that has no patch.
    NotPatched(String),
    /// A `tuple3-add`/`tuple3-del` tuple that does not parse.
    BadTuple {
        verb: String,
        why: crate::tuple3::BadTuple,
    },
    /// A `tuple3-add` of a tuple (`IP/PROTO/PORT`) another port has registered.
    TupleTaken { tuple: String, owner: String },
    /// A `tuple3-del` of a tuple (`IP/PROTO/PORT`) the port does not have.
    NoTuple { port: String, tuple: String },
    /// No module of that name is registered; `known` lists the registered ones.
    UnknownModule { name: String, known: String },
    /// A second module registered under a taken name.
    AlreadyRegistered(&'static str),
}

impl fmt::Display for ModuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ModuleError as M;
        match self {
            M::NoSuchSetting { module, key, value } => {
                write!(
                    f,
                    "module '{module}' has no setting '{key}' (value '{value}')"
                )
            }
            M::UnknownSetting {
                module,
                key,
                settings,
            } => write!(
                f,
                "module '{module}' has no setting '{key}' (settings: {settings})"
            ),
            M::BadValue {
                key,
                value,
                expected,
            } => write!(f, "{key}: '{value}' is not {expected}"),
            M::NotBool { key, value } => write!(
                f,
                "bad value for '{key}': '{value}' is not a boolean (true/false)"
            ),
            M::NoSuchVerb { module, verb } => {
                write!(f, "module '{module}' has no command '{verb}'")
            }
            M::Usage { verb, usage } => write!(f, "usage: {verb} {usage}"),
            M::UnexpectedArgument { verb, arg } => {
                write!(f, "{verb}: unexpected argument '{arg}'")
            }
            M::NoSuchPort(p) => write!(f, "no such port '{p}'"),
            M::NotOpenFlow(m) => write!(f, "module '{m}' does not run OpenFlow"),
            M::PoolExhausted => f.write_str("packet pool exhausted"),
            M::FrameTooLong => f.write_str("frame too long for a packet buffer"),
            M::UpcallThreads(e) => write!(f, "cannot start the upcall threads: {e}"),
            M::PatchToItself(p) => write!(f, "cannot patch port '{p}' to itself"),
            M::NotPatched(p) => write!(f, "port '{p}' is not patched"),
            M::BadTuple { verb, why } => {
                write!(f, "{why} (usage: {verb} BR PORT IP PROTO PORTNUM)")
            }
            M::TupleTaken { tuple, owner } => {
                write!(f, "tuple {tuple} is already registered by port '{owner}'")
            }
            M::NoTuple { port, tuple } => write!(f, "port '{port}' has no tuple {tuple}"),
            M::UnknownModule { name, known } => {
                write!(f, "unknown module '{name}' (known: {known})")
            }
            M::AlreadyRegistered(n) => {
                write!(f, "a module named '{n}' is already registered")
            }
        }
    }
}

impl std::error::Error for ModuleError {}

/// The daemon's command layer speaks in messages: an error becomes its text.
impl From<ModuleError> for String {
    fn from(e: ModuleError) -> String {
        e.to_string()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoSuchBridge(b) => write!(f, "no such bridge '{b}'"),
            Error::BridgeExists(b) => write!(f, "bridge '{b}' already exists"),
            Error::ReplicaExists(b) => {
                write!(f, "bridge '{b}' already exists on this poll thread")
            }
            Error::NameIsPort { name, bridge } => {
                write!(f, "'{name}' is already a port of bridge '{bridge}'")
            }
            Error::NameIsBridge(n) => write!(f, "'{n}' is the name of a bridge"),
            Error::PortExists { port, bridge } => {
                write!(f, "port '{port}' already exists on bridge '{bridge}'")
            }
            Error::NoSuchPort(p) => write!(f, "no port named '{p}'"),
            Error::NoPortOnBridge { bridge, port } => {
                write!(f, "bridge '{bridge}' has no port '{port}'")
            }
            Error::PortVanished(p) => write!(f, "port '{p}' vanished"),
            Error::LocalPort(p) => write!(
                f,
                "port '{p}' is the bridge's own internal port; delete the bridge instead"
            ),
            Error::OfportRange { ofport, max } => {
                write!(f, "ofport {ofport} is outside 1..={max}")
            }
            Error::OfportInUse { ofport, port } => {
                write!(f, "ofport {ofport} is already used by port '{port}'")
            }
            Error::NoSuchCommand {
                bridge,
                module,
                verb,
            } => write!(
                f,
                "bridge '{bridge}' runs module '{module}', which has no command '{verb}'"
            ),
            Error::TooManyMirrors { bridge, n, max } => {
                write!(f, "{n} mirrors on bridge '{bridge}': at most {max}")
            }
            Error::PoolExhausted => f.write_str("packet pool exhausted"),
            Error::Setting { key, msg } => write!(f, "{key}: {msg}"),
            Error::NoPollThread(i) => write!(f, "no poll thread {i}"),
            Error::ThreadStart(e) => write!(f, "cannot start a poll thread: {e}"),
            Error::ThreadStopped => f.write_str("the poll thread has stopped"),
            Error::ThreadTimeout => f.write_str("the poll thread did not answer"),
            Error::Module(m) => m.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

/// The daemon's command layer speaks in messages: an error becomes its text.
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.to_string()
    }
}

impl From<ModuleError> for Error {
    fn from(m: ModuleError) -> Error {
        Error::Module(m)
    }
}

/// The result of a datapath operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_the_ones_users_see() {
        assert_eq!(
            Error::NoSuchBridge("br9".into()).to_string(),
            "no such bridge 'br9'"
        );
        assert_eq!(
            Error::NoSuchCommand {
                bridge: "br0".into(),
                module: "learning",
                verb: "x".into()
            }
            .to_string(),
            "bridge 'br0' runs module 'learning', which has no command 'x'"
        );
        assert_eq!(
            String::from(Error::Setting {
                key: "pmd-cpu-mask",
                msg: "'0' selects no core".into()
            }),
            "pmd-cpu-mask: '0' selects no core"
        );
        assert_eq!(
            Error::from(ModuleError::NoSuchVerb {
                module: "patch",
                verb: "x".into()
            })
            .to_string(),
            "module 'patch' has no command 'x'"
        );
        assert_eq!(
            ModuleError::BadValue {
                key: "pmd-trace".into(),
                value: "x".into(),
                expected: "a packet count".into()
            }
            .to_string(),
            "pmd-trace: 'x' is not a packet count"
        );
    }
}
