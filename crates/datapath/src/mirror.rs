//! Port mirroring in the fabric: OVS's `Mirror` table, for every switching-logic module.
//!
//! What: a mirror selects packets by the port they arrive on (`select_src_port`), the port
//! they leave by (`select_dst_port`), or all of them (`select_all`), optionally only those on
//! some VLANs (`select_vlan`), and sends a copy of each to an output port (`output_port`).
//! As in OVS, the output port is reserved: nothing but mirrored copies is sent to it, and
//! whatever arrives on it is dropped.
//!
//! How: mirroring sits in the fabric ([`crate::bridge`]), not in a module, so it works the same
//! for `openflow`, `learning`, `patch` and `tuple3`. A received batch is copied before the
//! module sees it (the frame as it arrived); an output batch is copied just before it is handed
//! to its port (the frame as it leaves, after the module's rewrites). A packet selected by a
//! mirror on both sides is copied at ingress only, as OVS mirrors each packet once per mirror.
//! The copies go through the same per-destination output batches as everything else.
//!
//! Cost: a bridge without mirrors pays one `Option` test per received batch and per output
//! burst. With mirrors, the per-packet work is a bit test per mirror (ports are slot bitmaps)
//! and, for a VLAN-selecting mirror, reading the frame's tag.
//!
//! Not here: `output_vlan` (remote SPAN onto a VLAN) is refused when the mirror is set.

use crate::module::VlanMode;
use crate::{Datapath, Error, PollSet};
use packet::Packet;

/// A mirror as the configuration names it (OVSDB's `Mirror` row, ports by name).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MirrorConfig {
    pub name: String,
    pub select_all: bool,
    pub select_src_port: Vec<String>,
    pub select_dst_port: Vec<String>,
    pub select_vlan: Vec<u16>,
    pub output_port: Option<String>,
}

impl PollSet {
    /// Sets bridge `br`'s mirrors on this thread. Returns the port names not on the bridge
    /// (left out of the selection; a mirror whose output port is missing selects nothing).
    pub fn set_mirrors(&mut self, br: &str, cfg: &[MirrorConfig]) -> Result<Vec<String>, Error> {
        let b = self
            .bridge_mut(br)
            .ok_or_else(|| Error::NoSuchBridge(br.to_string()))?;
        let mut missing = Vec::new();
        let mut slots = |names: &[String]| -> Vec<u16> {
            names
                .iter()
                .filter_map(|n| {
                    let s = b.find_port(n);
                    if s.is_none() {
                        missing.push(n.clone());
                    }
                    s
                })
                .collect()
        };
        let specs: Vec<MirrorSpec> = cfg
            .iter()
            .map(|c| MirrorSpec {
                name: c.name.clone(),
                select_all: c.select_all,
                src: slots(&c.select_src_port),
                dst: slots(&c.select_dst_port),
                vlans: c.select_vlan.clone(),
                output: slots(c.output_port.as_slice()).first().copied(),
            })
            .collect();
        b.set_mirrors(&specs);
        missing.sort();
        missing.dedup();
        Ok(missing)
    }
}

impl Datapath {
    /// Sets bridge `br`'s mirrors on every poll thread that serves it (see
    /// [`PollSet::set_mirrors`]). At most [`MAX_MIRRORS`] per bridge.
    pub fn set_mirrors(&self, br: &str, cfg: &[MirrorConfig]) -> Result<Vec<String>, Error> {
        if cfg.len() > MAX_MIRRORS {
            return Err(Error::TooManyMirrors {
                bridge: br.to_string(),
                n: cfg.len(),
                max: MAX_MIRRORS,
            });
        }
        let c = cfg.to_vec();
        self.on_bridge_threads(br, move |sw, b| sw.set_mirrors(b, &c))
    }

    /// Bridge `br`'s mirror counters summed over its poll threads, and the packets dropped at
    /// mirror output ports.
    pub fn mirror_stats(&self, br: &str) -> Result<(Vec<(String, MirrorStats)>, u64), Error> {
        let b = br.to_string();
        let per = self.call_all(move |sw| sw.bridge(&b).map(|x| x.mirror_stats()))?;
        let mut sum: Vec<(String, MirrorStats)> = Vec::new();
        let mut drops = 0;
        for (list, d) in per.into_iter().flatten() {
            drops += d;
            for (name, st) in list {
                match sum.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, t)) => {
                        t.tx_packets += st.tx_packets;
                        t.tx_bytes += st.tx_bytes;
                    }
                    None => sum.push((name, st)),
                }
            }
        }
        Ok((sum, drops))
    }
}

/// A mirror as configured, with ports named by slot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MirrorSpec {
    pub name: String,
    pub select_all: bool,
    pub src: Vec<u16>,
    pub dst: Vec<u16>,
    /// Empty: every VLAN.
    pub vlans: Vec<u16>,
    /// The output slot; a mirror without one selects nothing.
    pub output: Option<u16>,
}

/// Packets and bytes a mirror has sent, summed over threads by the caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MirrorStats {
    pub tx_packets: u64,
    pub tx_bytes: u64,
}

/// One mirror, compiled for the fast path.
#[derive(Debug)]
struct Compiled {
    spec: MirrorSpec,
    src: Bits,
    dst: Bits,
    output: u16,
    stats: MirrorStats,
}

/// A set of slots.
#[derive(Debug, Default)]
struct Bits(Vec<u64>);

impl Bits {
    fn of(slots: &[u16]) -> Bits {
        let mut b = Bits::default();
        for &s in slots {
            let w = usize::from(s / 64);
            if b.0.len() <= w {
                b.0.resize(w + 1, 0);
            }
            b.0[w] |= 1 << (s % 64);
        }
        b
    }

    #[inline]
    fn has(&self, s: u16) -> bool {
        self.0
            .get(usize::from(s / 64))
            .is_some_and(|w| w & (1 << (s % 64)) != 0)
    }
}

/// A bridge's mirrors. See the module documentation.
#[derive(Debug, Default)]
pub struct Mirrors {
    list: Vec<Compiled>,
    outputs: Bits,
    /// Packets the module sent to a reserved output port, and packets received on one.
    pub reserved_drops: u64,
}

/// Mirrors per bridge, as in OVS (selections are bitmaps of this width).
pub const MAX_MIRRORS: usize = 32;

impl Mirrors {
    /// Compiles the first [`MAX_MIRRORS`] of `specs`; counters of mirrors that keep their
    /// name carry over from `prev`.
    pub fn new(specs: &[MirrorSpec], prev: Option<&Mirrors>) -> Mirrors {
        let list: Vec<Compiled> = specs
            .iter()
            .take(MAX_MIRRORS)
            .filter_map(|s| {
                let output = s.output?;
                let stats = prev
                    .and_then(|p| p.list.iter().find(|c| c.spec.name == s.name))
                    .map(|c| c.stats)
                    .unwrap_or_default();
                Some(Compiled {
                    spec: s.clone(),
                    src: Bits::of(&s.src),
                    dst: Bits::of(&s.dst),
                    output,
                    stats,
                })
            })
            .collect();
        let outs: Vec<u16> = list.iter().map(|c| c.output).collect();
        Mirrors {
            outputs: Bits::of(&outs),
            list,
            reserved_drops: prev.map_or(0, |p| p.reserved_drops),
        }
    }

    /// True if no mirror has an output (nothing to do on the fast path).
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// True if `slot` is a mirror's output port (reserved for mirrored copies).
    #[inline]
    pub fn is_output(&self, slot: u16) -> bool {
        self.outputs.has(slot)
    }

    /// The mirrors (a bit per index) that select `pkt` received on `in_slot` (a port with
    /// VLAN mode `vlan`); their counters count the copies.
    #[inline]
    pub fn ingress(&mut self, in_slot: u16, vlan: &VlanMode, pkt: &Packet) -> u32 {
        let mut sel = 0;
        for (i, c) in self.list.iter_mut().enumerate() {
            if (c.spec.select_all || c.src.has(in_slot))
                && c.output != in_slot
                && vlan_ok(&c.spec.vlans, vlan, pkt)
            {
                c.stats.tx_packets += 1;
                c.stats.tx_bytes += pkt.len() as u64;
                sel |= 1 << i;
            }
        }
        sel
    }

    /// The mirrors that select `pkt` leaving by `out_slot` and did not already copy it at
    /// ingress (from `pkt.in_port`); their counters count the copies.
    #[inline]
    pub fn egress(&mut self, out_slot: u16, vlan: &VlanMode, pkt: &Packet) -> u32 {
        let in_slot = pkt.in_port;
        let mut sel = 0;
        for (i, c) in self.list.iter_mut().enumerate() {
            let at_ingress = c.spec.select_all || c.src.has(in_slot);
            if !at_ingress
                && c.dst.has(out_slot)
                && c.output != out_slot
                && vlan_ok(&c.spec.vlans, vlan, pkt)
            {
                c.stats.tx_packets += 1;
                c.stats.tx_bytes += pkt.len() as u64;
                sel |= 1 << i;
            }
        }
        sel
    }

    /// The output slot of mirror `i` (an index [`Mirrors::ingress`] or [`Mirrors::egress`]
    /// returned a bit for).
    #[inline]
    pub fn output(&self, i: u32) -> u16 {
        self.list.get(i as usize).map_or(u16::MAX, |c| c.output)
    }

    /// True if some mirror selects by VLAN (so the port's VLAN mode matters).
    pub fn selects_vlans(&self) -> bool {
        self.list.iter().any(|c| !c.spec.vlans.is_empty())
    }

    /// True if some mirror selects packets leaving by `slot`.
    #[inline]
    pub fn watches_egress(&self, slot: u16) -> bool {
        self.list.iter().any(|c| c.dst.has(slot))
    }

    /// Each mirror's name and counters.
    pub fn stats(&self) -> Vec<(String, MirrorStats)> {
        self.list
            .iter()
            .map(|c| (c.spec.name.clone(), c.stats))
            .collect()
    }
}

/// Whether a packet on a port with `mode` is on one of `vlans` (empty: any). A tagged frame's
/// VLAN is its outer tag's VID; an untagged one is on the access port's VLAN, else VLAN 0.
#[inline]
fn vlan_ok(vlans: &[u16], mode: &VlanMode, pkt: &Packet) -> bool {
    if vlans.is_empty() {
        return true;
    }
    let d = pkt.data();
    let tpid = d.get(12..14).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let vid = match (tpid, d.get(14..16)) {
        (Some(0x8100 | 0x88a8), Some(t)) => u16::from_be_bytes([t[0], t[1]]) & 0x0fff,
        _ => match mode {
            VlanMode::Access(v) => *v,
            VlanMode::Trunk(_) => 0,
        },
    };
    vlans.contains(&vid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use packet::Pool;

    fn frame(pool: &mut Pool, tag: Option<u16>, in_port: u16) -> Packet {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        if let Some(v) = tag {
            f.splice(12..12, [0x81, 0x00, (v >> 8) as u8, v as u8]);
        }
        let mut p = pool.alloc().expect("buffer");
        assert!(p.set_frame(&f));
        p.in_port = in_port;
        p
    }

    fn spec(name: &str) -> MirrorSpec {
        MirrorSpec {
            name: name.into(),
            output: Some(9),
            ..MirrorSpec::default()
        }
    }

    #[test]
    fn selects_by_port_side_and_vlan_once_per_mirror() {
        let mut pool = Pool::new(8);
        let specs = [
            MirrorSpec {
                src: vec![1],
                dst: vec![1, 2],
                ..spec("m1")
            },
            MirrorSpec {
                select_all: true,
                vlans: vec![10],
                output: Some(8),
                ..spec("m2")
            },
        ];
        let mut m = Mirrors::new(&specs, None);
        assert!(m.is_output(9) && m.is_output(8) && !m.is_output(1));
        let trunk = VlanMode::Trunk(None);
        assert_eq!((m.output(0), m.output(1)), (9, 8));
        // From port 1, untagged: m1 (source); m2 wants VLAN 10 only.
        let p = frame(&mut pool, None, 1);
        assert_eq!(m.ingress(1, &trunk, &p), 0b01);
        // The same packet leaving by port 2: m1 copied it at ingress already.
        assert_eq!(m.egress(2, &trunk, &p), 0);
        // From port 3 to port 2, tagged 10: m2 at ingress, m1 at egress.
        let q = frame(&mut pool, Some(10), 3);
        assert_eq!(m.ingress(3, &trunk, &q), 0b10);
        assert_eq!(m.egress(2, &trunk, &q), 0b01);
        // An untagged packet on an access port of VLAN 10 is on VLAN 10.
        let r = frame(&mut pool, None, 4);
        assert_eq!(m.ingress(4, &VlanMode::Access(10), &r), 0b10);
        let s = m.stats();
        assert_eq!(s[0].1.tx_packets, 2);
        assert_eq!(s[1].1.tx_packets, 2);
        // Recompiling keeps the counters of mirrors that stay.
        let again = Mirrors::new(&specs[..1], Some(&m));
        assert_eq!(again.stats()[0].1.tx_packets, 2);
        for p in [p, q, r] {
            pool.free(p);
        }
    }

    #[test]
    fn a_mirror_without_output_or_onto_its_own_port_copies_nothing() {
        let mut pool = Pool::new(2);
        let specs = [
            MirrorSpec {
                select_all: true,
                output: None,
                ..spec("none")
            },
            MirrorSpec {
                src: vec![9],
                ..spec("self")
            },
        ];
        let mut m = Mirrors::new(&specs, None);
        let p = frame(&mut pool, None, 9);
        assert_eq!(m.ingress(9, &VlanMode::Trunk(None), &p), 0);
        pool.free(p);
    }
}
