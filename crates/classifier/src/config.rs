//! Classifier configuration: where the lookup stages end, which fields get prefix tracking,
//! which word partitions the rules, and how subtables are ranked.
//!
//! A [`Config`] is a small `Copy` value fixed when a classifier is created. It describes the
//! key only as `W` 64-bit words, so the classifier knows nothing about [`FlowKey`] beyond
//! what [`Config::flow_key`] tells it; a field added to the key later is matched, hashed and
//! unwildcarded without any change here.

use core::fmt;
use core::mem::offset_of;

use packet::flow::{FlowKey, FLOW_KEY_WORDS, STAGE_END_WORDS};

/// Most lookup stages a configuration may have.
pub const MAX_STAGES: usize = 8;
/// Most prefix-tracked fields a configuration may have.
pub const MAX_PREFIX_FIELDS: usize = 8;

/// A field of the key, given as bytes of its native-endian word image, whose value is read
/// as a big-endian bit string (wire order: an IPv4 or IPv6 address stored as bytes). Prefix
/// tracking treats the first bit of the first byte as the most significant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefixField {
    /// A name for diagnostics.
    pub name: &'static str,
    /// Offset of the field's first byte in the key's byte image (`word * 8 + byte`).
    pub byte_offset: u16,
    /// Length in bytes, 1..=16.
    pub n_bytes: u8,
}

impl PrefixField {
    /// Width in bits.
    #[inline]
    pub fn bits(&self) -> u32 {
        u32::from(self.n_bytes) * 8
    }
}

/// Ready-made prefix fields of [`FlowKey`].
pub mod fields {
    use super::*;

    // Offsets are checked against the key's size at compile time below.
    const fn at(name: &'static str, off: usize, n: u8) -> PrefixField {
        PrefixField {
            name,
            byte_offset: off as u16,
            n_bytes: n,
        }
    }
    /// IPv4 source (also ARP SPA).
    pub const NW_SRC: PrefixField = at("nw_src", offset_of!(FlowKey, nw_src), 4);
    /// IPv4 destination (also ARP TPA).
    pub const NW_DST: PrefixField = at("nw_dst", offset_of!(FlowKey, nw_dst), 4);
    /// IPv6 source.
    pub const IPV6_SRC: PrefixField = at("ipv6_src", offset_of!(FlowKey, ipv6_src), 16);
    /// IPv6 destination.
    pub const IPV6_DST: PrefixField = at("ipv6_dst", offset_of!(FlowKey, ipv6_dst), 16);
    /// Word index of the OpenFlow `metadata` register in the key's word image.
    pub const METADATA_WORD: usize = offset_of!(FlowKey, metadata) / 8;

    const _: () = assert!(offset_of!(FlowKey, metadata) % 8 == 0);
    const _: () = assert!(offset_of!(FlowKey, ipv6_dst) + 16 <= packet::flow::FLOW_KEY_SIZE);
}

/// How subtables are ordered for lookup. Either order gives the same (correct) answers;
/// the order decides how soon a lookup can stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ranking {
    /// By highest rule priority, descending (ties: more hits first). What OpenFlow tables
    /// want: a lookup stops as soon as no later subtable can beat the best match.
    Priority,
    /// By hit count, descending (needs [`Config::with_hit_counting`]); re-ranked when the
    /// owner asks. What a megaflow cache wants: its entries do not overlap, so the first
    /// match ends the lookup and the busiest subtables should come first.
    Hits,
}

/// Why a configuration was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// Stage ends must be strictly increasing, at most [`MAX_STAGES`], the last equal to `W`.
    BadStages,
    /// A prefix field must be 1..=16 bytes inside the key; at most [`MAX_PREFIX_FIELDS`].
    BadPrefixField,
    /// The partition word must be inside the key.
    BadPartitionWord,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConfigError::BadStages => "stage ends must increase strictly and end at the key size",
            ConfigError::BadPrefixField => "prefix field out of range or too many prefix fields",
            ConfigError::BadPartitionWord => "partition word outside the key",
        })
    }
}

impl std::error::Error for ConfigError {}

/// Classifier configuration for keys of `W` words. See the module documentation.
#[derive(Clone, Copy, Debug)]
pub struct Config<const W: usize> {
    pub(crate) stage_ends: [u8; MAX_STAGES],
    pub(crate) n_stages: u8,
    pub(crate) prefixes: [PrefixField; MAX_PREFIX_FIELDS],
    pub(crate) n_prefixes: u8,
    pub(crate) partition_word: Option<u8>,
    pub(crate) count_hits: bool,
    pub(crate) ranking: Ranking,
}

const NO_FIELD: PrefixField = PrefixField {
    name: "",
    byte_offset: 0,
    n_bytes: 0,
};

impl<const W: usize> Default for Config<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const W: usize> Config<W> {
    /// One stage covering the whole key, no prefix tracking, no partitioning, priority
    /// ranking, no hit counting.
    pub fn new() -> Self {
        const { assert!(W >= 1 && W <= 255, "keys must be 1..=255 words") };
        let mut stage_ends = [0u8; MAX_STAGES];
        stage_ends[0] = W as u8;
        Config {
            stage_ends,
            n_stages: 1,
            prefixes: [NO_FIELD; MAX_PREFIX_FIELDS],
            n_prefixes: 0,
            partition_word: None,
            count_hits: false,
            ranking: Ranking::Priority,
        }
    }

    /// Sets the exclusive end word of each lookup stage.
    pub fn with_stages(mut self, ends: &[usize]) -> Result<Self, ConfigError> {
        if ends.is_empty() || ends.len() > MAX_STAGES || ends.last() != Some(&W) {
            return Err(ConfigError::BadStages);
        }
        let mut prev = 0usize;
        for (i, &e) in ends.iter().enumerate() {
            if e <= prev && !(i == 0 && e > 0) {
                return Err(ConfigError::BadStages);
            }
            if e == 0 {
                return Err(ConfigError::BadStages);
            }
            self.stage_ends[i] = e as u8;
            prev = e;
        }
        self.n_stages = ends.len() as u8;
        Ok(self)
    }

    /// Adds a prefix-tracked field.
    pub fn with_prefix_field(mut self, f: PrefixField) -> Result<Self, ConfigError> {
        let n = usize::from(self.n_prefixes);
        let end = usize::from(f.byte_offset) + usize::from(f.n_bytes);
        if n >= MAX_PREFIX_FIELDS || f.n_bytes == 0 || f.n_bytes > 16 || end > W * 8 {
            return Err(ConfigError::BadPrefixField);
        }
        self.prefixes[n] = f;
        self.n_prefixes += 1;
        Ok(self)
    }

    /// Removes every prefix-tracked field.
    pub fn without_prefix_fields(mut self) -> Self {
        self.n_prefixes = 0;
        self
    }

    /// Partitions rules by the exact value of key word `word` (OpenFlow `metadata`).
    pub fn with_partition_word(mut self, word: usize) -> Result<Self, ConfigError> {
        if word >= W {
            return Err(ConfigError::BadPartitionWord);
        }
        self.partition_word = Some(word as u8);
        Ok(self)
    }

    /// Turns partitioning off.
    pub fn without_partitioning(mut self) -> Self {
        self.partition_word = None;
        self
    }

    /// Counts hits per subtable (a relaxed, possibly lossy counter; see the crate docs).
    pub fn with_hit_counting(mut self, on: bool) -> Self {
        self.count_hits = on;
        self
    }

    /// Chooses the subtable ranking.
    pub fn with_ranking(mut self, ranking: Ranking) -> Self {
        self.ranking = ranking;
        self
    }

    /// The prefix-tracked fields.
    pub fn prefix_fields(&self) -> &[PrefixField] {
        self.prefixes
            .get(..usize::from(self.n_prefixes))
            .unwrap_or(&[])
    }

    /// The stage ends, in words.
    pub fn stage_ends(&self) -> impl Iterator<Item = usize> + '_ {
        self.stage_ends
            .iter()
            .take(usize::from(self.n_stages))
            .map(|&e| usize::from(e))
    }

    /// The partition word, if partitioning is on.
    pub fn partition_word(&self) -> Option<usize> {
        self.partition_word.map(usize::from)
    }

    /// The configured ranking.
    pub fn ranking(&self) -> Ranking {
        self.ranking
    }

    /// True if subtables built under `other` are laid out as under this configuration
    /// (stages, prefix fields, partition word; ranking and hit counting may differ).
    pub(crate) fn same_layout(&self, other: &Config<W>) -> bool {
        self.stage_ends().eq(other.stage_ends())
            && self.prefix_fields() == other.prefix_fields()
            && self.partition_word == other.partition_word
    }
}

impl Config<FLOW_KEY_WORDS> {
    /// The configuration for [`FlowKey`] words: the metadata/L2/L3/L4 stages, prefix
    /// tracking on `nw_src`, `nw_dst`, `ipv6_src` and `ipv6_dst`, partitioning by
    /// `metadata`, priority ranking, no hit counting.
    pub fn flow_key() -> Self {
        let base = Config::new();
        let built = base
            .with_stages(&STAGE_END_WORDS)
            .and_then(|c| c.with_prefix_field(fields::NW_SRC))
            .and_then(|c| c.with_prefix_field(fields::NW_DST))
            .and_then(|c| c.with_prefix_field(fields::IPV6_SRC))
            .and_then(|c| c.with_prefix_field(fields::IPV6_DST))
            .and_then(|c| c.with_partition_word(fields::METADATA_WORD));
        // Every step above is valid for FlowKey (pinned by a unit test).
        built.unwrap_or(base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_key_config_is_complete() {
        let c = Config::flow_key();
        assert_eq!(c.stage_ends().collect::<Vec<_>>(), STAGE_END_WORDS.to_vec());
        assert_eq!(c.prefix_fields().len(), 4);
        assert_eq!(c.partition_word(), Some(fields::METADATA_WORD));
    }

    #[test]
    fn bad_configs_are_refused() {
        let c = Config::<4>::new();
        assert_eq!(
            c.with_stages(&[2, 2, 4]).err(),
            Some(ConfigError::BadStages)
        );
        assert_eq!(c.with_stages(&[1, 3]).err(), Some(ConfigError::BadStages));
        assert_eq!(c.with_stages(&[0, 4]).err(), Some(ConfigError::BadStages));
        assert!(c.with_stages(&[1, 4]).is_ok());
        let f = PrefixField {
            name: "x",
            byte_offset: 30,
            n_bytes: 4,
        };
        assert_eq!(
            c.with_prefix_field(f).err(),
            Some(ConfigError::BadPrefixField)
        );
        assert_eq!(
            c.with_partition_word(4).err(),
            Some(ConfigError::BadPartitionWord)
        );
    }
}
