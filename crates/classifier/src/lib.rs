//! # The classifier
//!
//! ## What
//! A classifier holds rules — a masked key, a priority and a payload — and answers, for a
//! packet's key, "which rule of highest priority matches?". The OpenFlow tables use it with
//! flow-mod payloads and priority ranking; the megaflow cache uses it with datapath actions
//! and hit ranking. Keys are plain `[u64; W]` word arrays (for the switch, the native-endian
//! image of [`packet::FlowKey`], see [`Config::flow_key`]), so fields added to the key are
//! handled without changes here.
//!
//! ## Un-wildcarding
//! Every lookup also ORs into a caller-provided mask the bits of the key that its answer
//! depended on. The contract: *any key that agrees with the looked-up key on every bit set
//! in the mask gets the same answer from the same classifier state* — the same rule, or the
//! same miss. That mask is what the slow path turns into a megaflow, so it should be as small
//! as the answer allows: a bit that was never needed to reach the answer should stay clear.
//! The mechanisms below exist as much to keep that mask small as to make lookups fast.
//!
//! ## Tuple space search with priority sorting
//! Rules are grouped into *subtables*, one per distinct mask; a subtable is a hash table
//! keyed by the masked key. The subtables are scanned in *ranking* order, a compact array of
//! 24-byte headers holding each subtable's highest rule priority and the highest priority of
//! it and all later ones. A lookup skips a subtable whose best rule cannot beat the match in
//! hand, and stops outright when no later subtable can: so under [`Ranking::Priority`] a
//! high-priority match ends the search at once, and the subtables never visited add nothing
//! to the mask. Under [`Ranking::Hits`] the busiest subtables come first (for a megaflow
//! cache, whose entries do not overlap); the same two tests keep the answer correct.
//!
//! Equal priorities (OpenFlow leaves overlapping equal-priority rules undefined): the first
//! match in ranking order wins, and within one masked value the earliest-inserted rule. This
//! is deterministic for a given classifier state, which is what the un-wildcarding contract
//! needs, but it may change when the ranking does.
//!
//! ## Staged lookup
//! The key is cut into stages at word boundaries (for flow keys: metadata, L2, L3, L4). A
//! subtable hashes the packet's masked words one stage at a time, continuing one hash state,
//! and after each stage but the last checks an index of the stage hashes of its rules. The
//! first absent hash proves the miss using only the stages hashed so far, so only those
//! stages' mask bits are un-wildcarded: a subtable matching `tcp,tp_dst=80` that sees a UDP
//! packet leaves `tp_dst` wildcarded. Stages where a subtable's mask is zero are skipped
//! entirely, and each word is hashed once however many stages there are.
//!
//! ## Prefix tracking
//! For each configured address field (IPv4 and IPv6 source and destination by default), a
//! subtable whose mask is a CIDR prefix of length `p` on that field keeps the sorted set of
//! its rules' `p`-bit prefixes. When the subtable misses, it asks that set how many leading
//! bits of the packet's address prove that no stored prefix matches: one more than the
//! longest common prefix with the address's sorted neighbours. If the answer is found, only
//! those bits of that field are un-wildcarded instead of the stages' masks. A table with
//! `10.1.2.3/32` and `10/8` looked up with `10.5.6.7` thus yields a megaflow on the first 14
//! bits of the address, not all 32. This asks, per subtable, the question OVS's prefix trie
//! answers per table, and never needs more bits than the trie. The sets are ordered maps
//! updated in O(log n) with each change; nothing is rebuilt, so a change costs the same in a
//! table of ten rules or a million. A writer adding many rules before the next re-ranking
//! ([`Classifier::insert_shared_unranked`], a bundle commit) has their prefixes sorted and
//! merged into the sets once, at the re-ranking, in O(n + m) when they are many.
//!
//! ## Partitioning
//! With a partition word configured (OpenFlow `metadata` for flow keys), each subtable whose
//! mask matches that word exactly gets a one-bit tag, and a map from each metadata value to
//! the union of the tags of the subtables holding rules for it is kept. A lookup reads the
//! packet's entry once, lazily, and skips every tagged subtable whose tag is not in it
//! without hashing anything; a skip un-wildcards the metadata word (the skip depends on all
//! of it) and nothing else. Pipelines that keep one logical datapath per metadata value thus
//! only search the subtables of their own datapath.
//!
//! ## Changing rules, versioning and thread-safety
//! There are three handles, with the contract in their types:
//! * [`Classifier`] — owned by one thread: `&mut self` to insert, remove or replace rules,
//!   `&self` (it derefs to [`View`]) for lookups, iteration and `find_*`. Changes are made in
//!   place. A [`Classifier::batch`] defers re-ranking to the end, so N changes cost O(N)
//!   (plus logarithmic factors for the priority and prefix bookkeeping).
//! * [`Writer`] — the single writer of a shared classifier (not `Clone`). It owns a
//!   `Classifier` and, after each change or once per [`Writer::batch`], *publishes* a new
//!   immutable snapshot: a shallow copy of the [`View`] (one `Arc` per subtable) swapped into
//!   an `ArcSwap`. Subtables are copy-on-write: the first change to a subtable after a
//!   publication copies that subtable once, later changes in the same batch reuse the copy,
//!   and untouched subtables are shared by every snapshot. A batch therefore costs O(N) plus
//!   one copy of each subtable it touches, and is atomic for readers: they see all of it or
//!   none of it. This is the classifier's versioning: each publication is a version, and a
//!   reader's snapshot is a consistent version for as long as it holds it.
//! * [`Reader`] — cheap to clone, `Send + Sync`: [`Reader::load`] pins the current snapshot
//!   without locking (a few ns; load once per batch of packets), and lookups in it take
//!   `&self`. Readers never block the writer and never see a half-applied change; memory of
//!   old versions is freed when the last reader lets go.
//!
//! A writer that receives many rules before it may apply them (a bundle's adds) can file
//! them per mask into a [`Prebuilt`] subtable as they come, and [`Classifier::adopt`] it
//! whole later when the classifier has no subtable with that mask: each rule is then only
//! given its id and filed in the id index.
//!
//! Lookups never allocate and never panic on any key. Hit counts, when enabled, are relaxed
//! per-subtable counters updated with a plain load and store: cheap, and possibly lossy when
//! several threads hit the same subtable at once, which a ranking heuristic tolerates.
//!
//! ## Example
//! ```
//! use classifier::{Config, Match, Writer};
//! use packet::flow::{FlowKey, FLOW_KEY_WORDS};
//!
//! let mut w: Writer<&str, FLOW_KEY_WORDS> = Writer::new(Config::flow_key());
//! let reader = w.reader(); // clone and send to other threads
//! let mask = FlowKey { dl_type: u16::MAX, nw_dst: [255, 0, 0, 0], ..FlowKey::default() };
//! let net = FlowKey { dl_type: 0x0800, nw_dst: [10, 0, 0, 0], ..FlowKey::default() };
//! w.batch(|b| {
//!     b.insert(Match::from_flow(&net, &mask), 10, "to-net-10");
//!     b.insert(Match::catch_all(), 0, "default");
//! });
//!
//! let pkt = FlowKey { dl_type: 0x0800, nw_dst: [10, 1, 2, 3], ..FlowKey::default() };
//! let mut wc = [0u64; FLOW_KEY_WORDS];
//! let snap = reader.load();
//! let rule = snap.lookup(&pkt.to_words(), &mut wc).map(|r| *r.payload());
//! assert_eq!(rule, Some("to-net-10"));
//! assert_eq!(FlowKey::from_words(&wc).nw_dst, [255, 0, 0, 0]); // a /8 megaflow
//! ```

mod classifier;
mod config;
mod hash;
mod prebuilt;
mod prefix;
mod rule;
mod shared;
mod subtable;
mod view;

pub use classifier::{Batch, Classifier};
pub use config::{
    fields, Config, ConfigError, PrefixField, Ranking, MAX_PREFIX_FIELDS, MAX_STAGES,
};
pub use hash::{id_hash, IdBuild, IdHasher};
pub use prebuilt::Prebuilt;
pub use rule::{Match, Rule, RuleId};
pub use shared::{Reader, Snapshot, Writer};
pub use view::{LookupStats, SubtableInfo, View};
