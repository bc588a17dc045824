//! # datapath — the switching fabric and its switching logic
//!
//! This crate moves packets. It knows ports only through `netdev`'s [`netdev::Port`] trait and
//! knows nothing of sockets, OVSDB or the CLI.
//!
//! * [`module`]: the switching-logic trait ([`module::SwitchLogic`]) every bridge module
//!   implements, with its one forwarding contract: `forward` hands every packet of a batch
//!   to the fabric's delivery sink ([`bridge::Delivery`]), which groups packets per
//!   destination port and sends each port's run as one burst; modules that pick one
//!   destination per packet use its two-pass helper. [`registry`]: modules by name (each
//!   module registers itself; the trait knows none of them).
//! * [`learning`], [`patch`], [`tuple3`]: simple built-in modules; [`flowtable`] and
//!   [`fasthash`] serve them.
//! * [`ofmodule`]: the `openflow` module, OVS's caching datapath: [`emc`] (exact-match cache)
//!   and [`dpcls`] (megaflow classifier) on the poll thread, [`udpif`] (upcall handler and
//!   revalidator threads, and the state they share with the control plane) behind them.
//!   The OpenFlow verbs on that state (flows, groups, meters, trace) live above, in `ofctl`:
//!   this crate knows neither the OpenFlow text syntax nor the wire codec.
//! * [`bridge`]: a bridge's ports and the fabric's per-batch forwarding pass, in two
//!   instantiations: the normal one and the traced one (`pmd-trace`, [`bridge::trace`]),
//!   which also serves packet samples.
//! * [`pollset`]: what one poll thread owns ([`PollSet`]): its bridges, its buffer pool,
//!   its counters, and the control operations on them.
//! * [`pmd`]: the poll-mode thread and the control plane's handle on it; [`threads`]: several
//!   poll threads serving the bridges ([`Datapath`]: replicas, receive-queue placement,
//!   affinity, rebalancing); [`cycles`] and [`clock`]: their time keeping.
//! * [`report`]: status as plain structs (`show`, `dump-ports`, `pmd-stats-show`,
//!   `pmd-rxq-show`); the daemon lays them out as text or JSON. [`error`]: the typed
//!   [`Error`] every control operation returns (its text is the message users see).
//! * [`mirror`], [`sample`]: port mirroring and packet sampling in the fabric; [`ct`]: the
//!   connection-tracking stage; [`capabilities`]: what the datapath reports to OVSDB.
//!
//! ## Threads
//! Poll threads (one per core in the pmd mask) run the fabric; each `openflow` bridge adds
//! one upcall handler and one revalidator thread shared by the bridge's poll threads.
//!
//! ## Thread-safety contract
//! A [`PollSet`] and everything in it belongs to one poll thread. The control plane
//! talks to it only through [`pmd::PmdHandle::call`], whose closures run between two polls.
//! No datapath thread (poll thread, upcall handler, revalidator) waits for a lock the control
//! plane can hold: the `openflow` module's shared state is built for that. The OpenFlow
//! state is versioned (`ofproto::Versions`): the control plane writes one copy and
//! publishes it, the datapath reads the published one (see [`udpif`] for each path, and
//! `tests/writer_held.rs`, which holds the writer and runs a long bundle during traffic).

pub mod bridge;
pub mod capabilities;
pub mod clock;
pub mod ct;
pub mod cycles;
pub mod dpcls;
pub mod emc;
pub mod error;
pub mod fasthash;
pub mod flowtable;
pub mod ipf;
pub mod learning;
pub mod mirror;
pub mod module;
pub mod ofmodule;
pub mod patch;
pub mod pmd;
pub mod pollset;
pub mod registry;
pub mod report;
pub mod sample;
pub mod threads;
pub mod tuple3;
pub mod udpif;

pub use bridge::{Bridge, LOCAL_OFPORT};
pub use error::{Error, ModuleError};
pub use module::{Ctx, Dest, SwitchLogic, VlanMode};
pub use pmd::PmdHandle;
pub use pollset::PollSet;
pub use threads::Datapath;
