//! The key's word image: the all-zero key, the byte and word forms, masking and hashing.

use super::*;

#[inline(always)]
pub(super) fn put<const N: usize>(b: &mut [u8; FLOW_KEY_SIZE], at: usize, v: [u8; N]) {
    if let Some(dst) = b.get_mut(at..at + N) {
        dst.copy_from_slice(&v);
    }
}

#[inline(always)]
pub(super) fn arr<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    match b.get(at..).and_then(|s| s.first_chunk::<N>()) {
        Some(c) => *c,
        None => [0; N],
    }
}

#[inline(always)]
pub(super) fn pair16(v: [u16; 2]) -> [u8; 4] {
    let (a, b) = (v[0].to_ne_bytes(), v[1].to_ne_bytes());
    [a[0], a[1], b[0], b[1]]
}

#[inline(always)]
pub(super) fn unpair16(b: [u8; 4]) -> [u16; 2] {
    [
        u16::from_ne_bytes([b[0], b[1]]),
        u16::from_ne_bytes([b[2], b[3]]),
    ]
}

impl FlowKey {
    /// The all-zero key.
    pub const ZERO: FlowKey = FlowKey {
        in_port: 0,
        recirc_id: 0,
        pkt_mark: 0,
        dp_hash: 0,
        metadata: 0,
        tunnel_id: 0,
        regs: [0; N_REGS],
        dl_dst: [0; 6],
        dl_src: [0; 6],
        vlan_tpid: [0; 2],
        vlan_tci: [0; 2],
        dl_type: 0,
        mpls_n: 0,
        pad_l2: 0,
        mpls_lse: [0; 4],
        pbb_isid: 0,
        tun_src: [0; 4],
        nw_src: [0; 4],
        nw_dst: [0; 4],
        ipv6_src: [0; 16],
        ipv6_dst: [0; 16],
        ipv6_label: 0,
        nw_proto: 0,
        nw_tos: 0,
        nw_ttl: 0,
        nw_frag: 0,
        ipv6_exthdr: 0,
        tun_flags: 0,
        tun_gbp_id: 0,
        tun_gbp_flags: 0,
        pad_l3: 0,
        tp_src: 0,
        tp_dst: 0,
        tcp_flags: 0,
        pad_l4: 0,
        nd_target: [0; 16],
        arp_sha: [0; 6],
        arp_tha: [0; 6],
        tun_dst: [0; 4],
        ct_state: 0,
        ct_nw_proto: 0,
        ct_zone: 0,
        ct_mark: 0,
        ct_tp_src: 0,
        ct_tp_dst: 0,
        pad_ct: 0,
        ct_label: [0; 16],
        ct_src: [0; 16],
        ct_dst: [0; 16],
        tun_opts_present: 0,
        tun_opts: [0; TUN_OPTS_LEN],
        tun_ipv6_src: [0; 16],
        tun_ipv6_dst: [0; 16],
    };

    /// The native-endian byte image of the key, identical to its in-memory representation.
    #[inline]
    pub fn to_bytes(&self) -> [u8; FLOW_KEY_SIZE] {
        // No `..`: adding a field must break this until it is placed here.
        let FlowKey {
            in_port,
            recirc_id,
            pkt_mark,
            dp_hash,
            metadata,
            tunnel_id,
            regs,
            dl_dst,
            dl_src,
            vlan_tpid,
            vlan_tci,
            dl_type,
            mpls_n,
            pad_l2,
            mpls_lse,
            pbb_isid,
            tun_src,
            nw_src,
            nw_dst,
            ipv6_src,
            ipv6_dst,
            ipv6_label,
            nw_proto,
            nw_tos,
            nw_ttl,
            nw_frag,
            ipv6_exthdr,
            tun_flags,
            tun_gbp_id,
            tun_gbp_flags,
            pad_l3,
            tp_src,
            tp_dst,
            tcp_flags,
            pad_l4,
            nd_target,
            arp_sha,
            arp_tha,
            tun_dst,
            ct_state,
            ct_nw_proto,
            ct_zone,
            ct_mark,
            ct_tp_src,
            ct_tp_dst,
            pad_ct,
            ct_label,
            ct_src,
            ct_dst,
            tun_opts_present,
            tun_opts,
            tun_ipv6_src,
            tun_ipv6_dst,
        } = *self;
        let mut b = [0u8; FLOW_KEY_SIZE];
        macro_rules! o {
            ($f:ident) => {
                offset_of!(FlowKey, $f)
            };
        }
        put(&mut b, o!(in_port), in_port.to_ne_bytes());
        put(&mut b, o!(recirc_id), recirc_id.to_ne_bytes());
        put(&mut b, o!(pkt_mark), pkt_mark.to_ne_bytes());
        put(&mut b, o!(dp_hash), dp_hash.to_ne_bytes());
        put(&mut b, o!(metadata), metadata.to_ne_bytes());
        put(&mut b, o!(tunnel_id), tunnel_id.to_ne_bytes());
        for (i, r) in regs.iter().enumerate() {
            put(&mut b, o!(regs) + 4 * i, r.to_ne_bytes());
        }
        put(&mut b, o!(dl_dst), dl_dst);
        put(&mut b, o!(dl_src), dl_src);
        put(&mut b, o!(vlan_tpid), pair16(vlan_tpid));
        put(&mut b, o!(vlan_tci), pair16(vlan_tci));
        put(&mut b, o!(dl_type), dl_type.to_ne_bytes());
        put(&mut b, o!(mpls_n), [mpls_n]);
        put(&mut b, o!(pad_l2), [pad_l2]);
        for (i, lse) in mpls_lse.iter().enumerate() {
            put(&mut b, o!(mpls_lse) + 4 * i, lse.to_ne_bytes());
        }
        put(&mut b, o!(pbb_isid), pbb_isid.to_ne_bytes());
        put(&mut b, o!(tun_src), tun_src);
        put(&mut b, o!(nw_src), nw_src);
        put(&mut b, o!(nw_dst), nw_dst);
        put(&mut b, o!(ipv6_src), ipv6_src);
        put(&mut b, o!(ipv6_dst), ipv6_dst);
        put(&mut b, o!(ipv6_label), ipv6_label.to_ne_bytes());
        put(&mut b, o!(nw_proto), [nw_proto]);
        put(&mut b, o!(nw_tos), [nw_tos]);
        put(&mut b, o!(nw_ttl), [nw_ttl]);
        put(&mut b, o!(nw_frag), [nw_frag]);
        put(&mut b, o!(ipv6_exthdr), ipv6_exthdr.to_ne_bytes());
        put(&mut b, o!(tun_flags), tun_flags.to_ne_bytes());
        put(&mut b, o!(tun_gbp_id), tun_gbp_id.to_ne_bytes());
        put(&mut b, o!(tun_gbp_flags), [tun_gbp_flags]);
        put(&mut b, o!(pad_l3), [pad_l3]);
        put(&mut b, o!(tp_src), tp_src.to_ne_bytes());
        put(&mut b, o!(tp_dst), tp_dst.to_ne_bytes());
        put(&mut b, o!(tcp_flags), tcp_flags.to_ne_bytes());
        put(&mut b, o!(pad_l4), pad_l4.to_ne_bytes());
        put(&mut b, o!(nd_target), nd_target);
        put(&mut b, o!(arp_sha), arp_sha);
        put(&mut b, o!(arp_tha), arp_tha);
        put(&mut b, o!(tun_dst), tun_dst);
        put(&mut b, o!(ct_state), [ct_state]);
        put(&mut b, o!(ct_nw_proto), [ct_nw_proto]);
        put(&mut b, o!(ct_zone), ct_zone.to_ne_bytes());
        put(&mut b, o!(ct_mark), ct_mark.to_ne_bytes());
        put(&mut b, o!(ct_tp_src), ct_tp_src.to_ne_bytes());
        put(&mut b, o!(ct_tp_dst), ct_tp_dst.to_ne_bytes());
        put(&mut b, o!(pad_ct), pad_ct.to_ne_bytes());
        put(&mut b, o!(ct_label), ct_label);
        put(&mut b, o!(ct_src), ct_src);
        put(&mut b, o!(ct_dst), ct_dst);
        put(&mut b, o!(tun_opts_present), tun_opts_present.to_ne_bytes());
        put(&mut b, o!(tun_opts), tun_opts);
        put(&mut b, o!(tun_ipv6_src), tun_ipv6_src);
        put(&mut b, o!(tun_ipv6_dst), tun_ipv6_dst);
        b
    }

    /// Inverse of [`FlowKey::to_bytes`].
    #[inline]
    pub fn from_bytes(b: &[u8; FLOW_KEY_SIZE]) -> FlowKey {
        macro_rules! g {
            ($f:ident) => {
                arr(b, offset_of!(FlowKey, $f))
            };
        }
        let lse = |i: usize| u32::from_ne_bytes(arr(b, offset_of!(FlowKey, mpls_lse) + 4 * i));
        let reg = |i: usize| u32::from_ne_bytes(arr(b, offset_of!(FlowKey, regs) + 4 * i));
        let [mpls_n] = g!(mpls_n);
        let [pad_l2] = g!(pad_l2);
        let [nw_proto] = g!(nw_proto);
        let [nw_tos] = g!(nw_tos);
        let [nw_ttl] = g!(nw_ttl);
        let [nw_frag] = g!(nw_frag);
        let [ct_state] = g!(ct_state);
        let [ct_nw_proto] = g!(ct_nw_proto);
        FlowKey {
            in_port: u32::from_ne_bytes(g!(in_port)),
            recirc_id: u32::from_ne_bytes(g!(recirc_id)),
            pkt_mark: u32::from_ne_bytes(g!(pkt_mark)),
            dp_hash: u32::from_ne_bytes(g!(dp_hash)),
            metadata: u64::from_ne_bytes(g!(metadata)),
            tunnel_id: u64::from_ne_bytes(g!(tunnel_id)),
            regs: core::array::from_fn(reg),
            dl_dst: g!(dl_dst),
            dl_src: g!(dl_src),
            vlan_tpid: unpair16(g!(vlan_tpid)),
            vlan_tci: unpair16(g!(vlan_tci)),
            dl_type: u16::from_ne_bytes(g!(dl_type)),
            mpls_n,
            pad_l2,
            mpls_lse: [lse(0), lse(1), lse(2), lse(3)],
            pbb_isid: u32::from_ne_bytes(g!(pbb_isid)),
            tun_src: g!(tun_src),
            nw_src: g!(nw_src),
            nw_dst: g!(nw_dst),
            ipv6_src: g!(ipv6_src),
            ipv6_dst: g!(ipv6_dst),
            ipv6_label: u32::from_ne_bytes(g!(ipv6_label)),
            nw_proto,
            nw_tos,
            nw_ttl,
            nw_frag,
            ipv6_exthdr: u16::from_ne_bytes(g!(ipv6_exthdr)),
            tun_flags: u16::from_ne_bytes(g!(tun_flags)),
            tun_gbp_id: u16::from_ne_bytes(g!(tun_gbp_id)),
            tun_gbp_flags: u8::from_ne_bytes(g!(tun_gbp_flags)),
            pad_l3: u8::from_ne_bytes(g!(pad_l3)),
            tp_src: u16::from_ne_bytes(g!(tp_src)),
            tp_dst: u16::from_ne_bytes(g!(tp_dst)),
            tcp_flags: u16::from_ne_bytes(g!(tcp_flags)),
            pad_l4: u16::from_ne_bytes(g!(pad_l4)),
            nd_target: g!(nd_target),
            arp_sha: g!(arp_sha),
            arp_tha: g!(arp_tha),
            tun_dst: g!(tun_dst),
            ct_state,
            ct_nw_proto,
            ct_zone: u16::from_ne_bytes(g!(ct_zone)),
            ct_mark: u32::from_ne_bytes(g!(ct_mark)),
            ct_tp_src: u16::from_ne_bytes(g!(ct_tp_src)),
            ct_tp_dst: u16::from_ne_bytes(g!(ct_tp_dst)),
            pad_ct: u32::from_ne_bytes(g!(pad_ct)),
            ct_label: g!(ct_label),
            ct_src: g!(ct_src),
            ct_dst: g!(ct_dst),
            tun_opts_present: u64::from_ne_bytes(g!(tun_opts_present)),
            tun_opts: g!(tun_opts),
            tun_ipv6_src: g!(tun_ipv6_src),
            tun_ipv6_dst: g!(tun_ipv6_dst),
        }
    }

    /// Whether any word from [`CT_WORDS_START`] on may be non-zero: the key was
    /// recirculated, has tunnel options or an IPv6 tunnel address. When false the
    /// exact-match cache hashes and compares only the words before the ct block.
    #[inline(always)]
    pub fn has_tail(&self) -> bool {
        let w = self.as_words();
        self.recirc_id != 0
            || self.tun_opts_present != 0
            || (w[TUN_IPV6_WORDS_START]
                | w[TUN_IPV6_WORDS_START + 1]
                | w[TUN_IPV6_WORDS_START + 2]
                | w[TUN_IPV6_WORDS_START + 3])
                != 0
    }

    /// The key as native-endian 64-bit words (its in-memory image).
    #[inline(always)]
    pub fn to_words(&self) -> [u64; FLOW_KEY_WORDS] {
        *self.as_words()
    }

    /// The key's in-memory image viewed as words, without copying. The struct is
    /// `#[repr(C)]`, 8-byte aligned and has no implicit padding (which `bytemuck`'s derive
    /// checks at compile time), so the view is exact.
    #[inline(always)]
    pub fn as_words(&self) -> &[u64; FLOW_KEY_WORDS] {
        bytemuck::cast_ref(self)
    }

    /// A word image viewed as a key, without copying (inverse of [`FlowKey::as_words`]).
    #[inline(always)]
    pub fn from_words_ref(w: &[u64; FLOW_KEY_WORDS]) -> &FlowKey {
        bytemuck::cast_ref(w)
    }

    /// Inverse of [`FlowKey::to_words`].
    #[inline(always)]
    pub fn from_words(w: &[u64; FLOW_KEY_WORDS]) -> FlowKey {
        *bytemuck::cast_ref(w)
    }

    /// This key with every bit that is zero in `mask` cleared.
    #[inline]
    pub fn masked(&self, mask: &FlowKey) -> FlowKey {
        let mut w = self.to_words();
        for (a, m) in w.iter_mut().zip(mask.to_words()) {
            *a &= m;
        }
        FlowKey::from_words(&w)
    }

    /// A fast 32-bit hash of the whole key; equal keys hash equally for the same `basis`.
    #[inline]
    pub fn hash(&self, basis: u32) -> u32 {
        hash_words(&self.to_words(), basis)
    }
}

/// Hashes a run of key words (a whole key, a masked key, or one stage of it).
///
/// Four independent lanes each absorb every fourth word: xor the word in, then a "folded"
/// multiply by an odd constant (the high and low halves of the 128-bit product xored
/// together), so the four multiplies overlap in the pipeline and every input bit, the top
/// ones included, reaches every output bit non-linearly. (A plain wrapping multiply would
/// let a flip of bit 63 pass through linearly and be cancelled by a flip in the next word.)
/// The lanes are then combined and pass a 64-bit avalanche finaliser. Not keyed against
/// adversaries beyond `basis`.
#[inline]
pub fn hash_words(words: &[u64], basis: u32) -> u32 {
    const M: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut lanes: [u64; 4] = [
        u64::from(basis) ^ 0x243f_6a88_85a3_08d3,
        0x1319_8a2e_0370_7344,
        0xa409_3822_299f_31d0,
        0x082e_fa98_ec4e_6c89,
    ];
    let mut chunks = words.chunks_exact(4);
    #[inline(always)]
    fn absorb(lane: &mut u64, w: u64) {
        let p = u128::from(*lane ^ w) * u128::from(M);
        *lane = (p as u64) ^ ((p >> 64) as u64);
    }
    for c in &mut chunks {
        for (lane, &w) in lanes.iter_mut().zip(c) {
            absorb(lane, w);
        }
    }
    for (lane, &w) in lanes.iter_mut().zip(chunks.remainder()) {
        absorb(lane, w);
    }
    let mut h = lanes[0]
        ^ lanes[1].rotate_left(16)
        ^ lanes[2].rotate_left(32)
        ^ lanes[3].rotate_left(48)
        ^ (words.len() as u64);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    (h ^ (h >> 32)) as u32
}
