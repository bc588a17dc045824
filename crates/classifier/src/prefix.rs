//! Prefix tracking: per-subtable ordered sets of the prefixes its rules have on an address
//! field, used to explain a miss with as few leading bits of that field as possible.
//!
//! All rules of a subtable share one mask, so if that mask is a CIDR prefix of length `p` on
//! a tracked field, every rule carries a `p`-bit prefix of that field. Given a packet whose
//! field value truncated to `p` bits is `v`:
//! * if `v` is one of the stored prefixes, the field cannot rule the subtable out;
//! * otherwise, let `l` be the longest common prefix of `v` with any stored prefix (found
//!   at one of `v`'s two neighbours in sorted order). Every packet that agrees with `v` on
//!   its first `l + 1` bits disagrees with every stored prefix somewhere in those bits, so
//!   none of the subtable's rules can match it: `l + 1 <= p` bits of the field are enough to
//!   justify the miss, whatever the packet's other fields are.
//!
//! That is the same fact OVS's prefix trie computes for a packet (how many leading bits make
//! its trie path unique), asked per subtable instead of for the whole table, so it never
//! needs more bits than the trie would and often needs fewer.

use std::collections::BTreeMap;

use crate::config::PrefixField;

/// Reads `n_bytes` at `off` of the native-endian byte image of `words` as a big-endian
/// number. Bytes past the end read as zero (the config guarantees there are none).
#[inline]
fn read_field<const W: usize>(words: &[u64; W], off: usize, n_bytes: usize) -> u128 {
    let mut v = 0u128;
    for b in off..off + n_bytes {
        let byte = words
            .get(b / 8)
            .map_or(0, |w| w.to_ne_bytes().get(b % 8).copied().unwrap_or(0));
        v = (v << 8) | u128::from(byte);
    }
    v
}

/// The value of `f` in `words`, right-aligned in a `u128`.
#[inline]
pub(crate) fn field_value<const W: usize>(f: &PrefixField, words: &[u64; W]) -> u128 {
    read_field(words, usize::from(f.byte_offset), usize::from(f.n_bytes))
}

/// All-ones in the low `bits` bits.
#[inline]
fn full(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

/// The mask of the first `plen` bits of a `bits`-wide field, right-aligned.
#[inline]
pub(crate) fn prefix_mask(bits: u32, plen: u32) -> u128 {
    if plen == 0 {
        0
    } else {
        (u128::MAX << (bits - plen.min(bits))) & full(bits)
    }
}

/// If `mask` is a CIDR prefix on `f` (leading ones, then zeros), its length; `None` if it is
/// some other bit pattern. A zero mask is a prefix of length 0.
pub(crate) fn prefix_len<const W: usize>(f: &PrefixField, mask: &[u64; W]) -> Option<u32> {
    let bits = f.bits();
    let m = field_value(f, mask);
    let plen = (m << (128 - bits)).leading_ones().min(bits);
    (m == prefix_mask(bits, plen)).then_some(plen)
}

/// Sets the first `n` bits of field `f` in `wc`.
pub(crate) fn set_prefix_bits<const W: usize>(f: &PrefixField, wc: &mut [u64; W], n: u32) {
    let off = usize::from(f.byte_offset);
    for i in 0..usize::from(f.n_bytes) {
        let covered = n.saturating_sub(8 * i as u32).min(8);
        if covered == 0 {
            break;
        }
        let bits = (0xff00u16 >> covered) as u8;
        let b = off + i;
        if let Some(w) = wc.get_mut(b / 8) {
            let mut bytes = w.to_ne_bytes();
            if let Some(x) = bytes.get_mut(b % 8) {
                *x |= bits;
            }
            *w = u64::from_ne_bytes(bytes);
        }
    }
}

/// The prefixes one subtable's rules have on one tracked field: an ordered multiset (a
/// prefix shared by several rules is counted). Adding or removing a rule costs O(log n) and
/// a lookup finds a value's two neighbours in O(log n); nothing is ever rebuilt, so the cost
/// of a change does not grow with the table.
#[derive(Clone, Debug)]
pub(crate) struct PrefixIndex {
    /// Index of the field in the configuration's prefix fields.
    pub field: u8,
    /// The subtable's prefix length on the field (1..=bits).
    pub plen: u8,
    /// Which of the subtable's non-empty stages holds the field.
    pub stage: u8,
    /// Field width in bits.
    bits: u8,
    counts: BTreeMap<u128, u32>,
    /// Prefixes added with [`PrefixIndex::add_later`] and not yet in `counts`.
    pending: Vec<u128>,
}

impl PrefixIndex {
    pub(crate) fn new(field: u8, f: &PrefixField, plen: u32, stage: u8) -> Self {
        PrefixIndex {
            field,
            plen: plen as u8,
            stage,
            bits: f.bits() as u8,
            counts: BTreeMap::new(),
            pending: Vec::new(),
        }
    }

    fn truncate(&self, v: u128) -> u128 {
        v & prefix_mask(u32::from(self.bits), u32::from(self.plen))
    }

    pub(crate) fn add(&mut self, value: u128) {
        let v = self.truncate(value);
        *self.counts.entry(v).or_insert(0) += 1;
    }

    /// [`PrefixIndex::add`], deferred to the next [`PrefixIndex::settle`] (a writer adding
    /// many rules before anything looks them up): many prefixes merged at once cost a sort
    /// and one pass instead of a tree search each.
    pub(crate) fn add_later(&mut self, value: u128) {
        let v = self.truncate(value);
        self.pending.push(v);
    }

    /// True if prefixes wait for [`PrefixIndex::settle`].
    pub(crate) fn unsettled(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Merges the prefixes [`PrefixIndex::add_later`] deferred: sorted, then inserted one by
    /// one when they are few against the set, or merged with it into a set built in one
    /// pass (O(n + m)) when they are many.
    pub(crate) fn settle(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut p = std::mem::take(&mut self.pending);
        p.sort_unstable();
        if p.len().saturating_mul(4) < self.counts.len() {
            for v in p {
                *self.counts.entry(v).or_insert(0) += 1;
            }
            return;
        }
        let old = std::mem::take(&mut self.counts);
        let mut merged: Vec<(u128, u32)> = Vec::with_capacity(old.len() + p.len());
        let mut old = old.into_iter().peekable();
        let mut i = 0;
        while i < p.len() {
            let v = p[i];
            let n = p[i..].iter().take_while(|&&x| x == v).count();
            i += n;
            while let Some(e) = old.next_if(|e| e.0 < v) {
                merged.push(e);
            }
            let have = old.next_if(|e| e.0 == v).map_or(0, |e| e.1);
            merged.push((v, have + n as u32));
        }
        merged.extend(old);
        // Sorted and unique: the map is built bottom-up in one pass.
        self.counts = merged.into_iter().collect();
    }

    pub(crate) fn remove(&mut self, value: u128) {
        self.settle();
        let v = self.truncate(value);
        if let Some(n) = self.counts.get_mut(&v) {
            *n -= 1;
            if *n == 0 {
                self.counts.remove(&v);
            }
        }
    }

    /// `None` if some rule's prefix matches `value`; otherwise how many leading bits of the
    /// field prove that none does.
    #[inline]
    pub(crate) fn explain_miss(&self, value: u128) -> Option<u32> {
        debug_assert!(self.pending.is_empty(), "looked up before settling");
        let v = self.truncate(value);
        let pred = self.counts.range(..v).next_back().map(|(k, _)| *k);
        let succ = self.counts.range(v..).next().map(|(k, _)| *k);
        if succ == Some(v) {
            return None;
        }
        let shift = 128 - u32::from(self.bits);
        let lcp = |o: u128| ((v ^ o) << shift).leading_zeros();
        let longest = match (pred.map(lcp), succ.map(lcp)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        Some(longest.map_or(0, |l| (l + 1).min(u32::from(self.plen))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: PrefixField = PrefixField {
        name: "f",
        byte_offset: 4,
        n_bytes: 4,
    };

    fn with_field(v: [u8; 4]) -> [u64; 2] {
        let mut b = [0u8; 8];
        b[4..8].copy_from_slice(&v);
        [u64::from_ne_bytes(b), 0]
    }

    #[test]
    fn reads_and_writes_in_wire_order() {
        let w = with_field([10, 1, 2, 3]);
        assert_eq!(field_value(&F, &w), 0x0a01_0203);
        let mut wc = [0u64; 2];
        set_prefix_bits(&F, &mut wc, 12);
        assert_eq!(field_value(&F, &wc), 0xfff0_0000);
        set_prefix_bits(&F, &mut wc, 32);
        assert_eq!(field_value(&F, &wc), 0xffff_ffff);
        assert_eq!(wc[1], 0);
        assert_eq!(wc[0].to_ne_bytes()[..4], [0, 0, 0, 0]);
    }

    #[test]
    fn prefix_lengths() {
        assert_eq!(prefix_len(&F, &with_field([255, 0, 0, 0])), Some(8));
        assert_eq!(prefix_len(&F, &with_field([255, 255, 255, 255])), Some(32));
        assert_eq!(prefix_len(&F, &with_field([0, 0, 0, 0])), Some(0));
        assert_eq!(prefix_len(&F, &with_field([255, 0, 255, 0])), None);
        assert_eq!(prefix_len(&F, &with_field([0xfe, 0, 0, 0])), Some(7));
    }

    #[test]
    fn deferred_prefixes_count_as_added_ones_once_settled() {
        let vals = [
            0x0a01_0203u128,
            0x0a05_0000,
            0x0a01_0203,
            0xc800_0000,
            0x0a05_0000,
        ];
        let mut now = PrefixIndex::new(0, &F, 24, 0);
        let mut later = PrefixIndex::new(0, &F, 24, 0);
        for v in vals {
            now.add(v);
        }
        // Few against many: inserted one by one; many: merged.
        later.add(vals[0]);
        for v in vals.iter().skip(1) {
            later.add_later(*v);
        }
        assert!(later.unsettled());
        later.settle();
        // A removal settles what waits first.
        later.add_later(0x0a01_0203);
        later.remove(0x0a01_0203);
        later.settle();
        assert!(!later.unsettled());
        assert_eq!(now.counts, later.counts);
        let mut big = PrefixIndex::new(0, &F, 32, 0);
        for v in 0..100u128 {
            big.add(v * 3);
        }
        for v in 0..10u128 {
            big.add_later(v * 5);
        }
        big.settle();
        assert_eq!(big.counts.len(), 100 + 10 - 4);
        assert_eq!(big.counts.get(&15), Some(&2));
        assert_eq!(big.counts.values().sum::<u32>(), 110);
    }

    #[test]
    fn explains_misses_with_few_bits() {
        let mut ix = PrefixIndex::new(0, &F, 32, 0);
        ix.add(0x0a01_0203); // 10.1.2.3
        assert_eq!(ix.explain_miss(0x0a01_0203), None);
        // 10.5.6.7 shares 13 bits with 10.1.2.3: 14 bits prove the miss.
        assert_eq!(ix.explain_miss(0x0a05_0607), Some(14));
        // 200.0.0.0 differs in the first bit.
        assert_eq!(ix.explain_miss(0xc800_0000), Some(1));
        ix.add(0x0a05_0000);
        // 10.5.6.7 now shares 21 bits with 10.5.0.0.
        assert_eq!(ix.explain_miss(0x0a05_0607), Some(22));
        ix.remove(0x0a05_0000);
        assert_eq!(ix.explain_miss(0x0a05_0607), Some(14));
        let mut p8 = PrefixIndex::new(0, &F, 8, 0);
        p8.add(0x1400_0000); // 20/8
        assert_eq!(p8.explain_miss(0x0a05_0607), Some(4));
        assert_eq!(p8.explain_miss(0x14ff_ffff), None);
        let empty = PrefixIndex::new(0, &F, 8, 0);
        assert_eq!(empty.explain_miss(1), Some(0));
    }
}
