//! A generic, embeddable OVSDB server (RFC 7047).
//!
//! This crate knows databases, not switches: it parses any OVSDB schema, stores rows, runs
//! transactions with all of RFC 7047's operations and rules, keeps a durable log, and serves
//! the JSON-RPC protocol over unix and TCP sockets (and TLS, with the `tls` crate) to tools such as `ovs-vsctl`,
//! `ovsdb-client` and the OVS IDLs. The daemon embeds it and reacts to committed changes.
//!
//! Layers, bottom up:
//! - [`types`], [`datum`], [`schema`]: the data model (column types, atoms/sets/maps, schemas).
//! - [`condition`]: `where` conditions and mutations.
//! - [`txn`] and [`db`]: transactions on a working copy, referential integrity, garbage
//!   collection, indexes; [`Database`] owns the committed tables and the log (`storage`: a
//!   database file in OVSDB's standard format, framed by [`record`], so OVS's `ovsdb-tool`
//!   reads it and we read its files).
//! - [`jsonrpc`]: a bounded streaming JSON reader and JSON-RPC message helpers.
//! - [`server`] with [`monitor`]: sessions, monitors, locks, and [`Server`], the thread-safe
//!   handle an embedder holds (`transact`, `subscribe`, `read`, `listen`).
//! - [`client`]: a blocking client for another server (requests, monitors, locks, echo).
//!
//! Thread-safety in one sentence: a [`Database`] is a plain single-owner value; a [`Server`]
//! wraps it in one mutex and is `Clone + Send + Sync`, so every transaction, monitor update
//! and lock change is serialised in commit order.

pub mod client;
pub mod condition;
pub mod datum;
pub mod db;
pub mod error;
mod filetxn;
pub mod jsonrpc;
mod legacy;
mod methods;
pub mod monitor;
pub mod record;
pub mod row;
pub mod schema;
pub mod server;
mod storage;
pub mod txn;
pub mod types;
pub mod uuid;

pub use datum::{Atom, Datum};
pub use db::{Commit, Database, TxnOutcome};
pub use error::Error;
pub use row::{Row, Table};
pub use schema::{Col, ColumnSchema, DatabaseSchema, TableSchema};
pub use server::{Listener, Server, TlsSource};
pub use txn::{RowChange, TxnContext};
pub use types::{AtomicType, BaseType, ColumnType, RefType};
pub use uuid::Uuid;
