//! What a [`Field`] is: its facts, OXM numbers, names, registers and text form.

use super::*;

impl Field {
    /// Every field, in canonical order.
    pub const ALL: [Field; N_FIELDS] = [
        Field::DpHash,
        Field::RecircId,
        Field::InPort,
        Field::InPhyPort,
        Field::Metadata,
        Field::EthDst,
        Field::EthSrc,
        Field::EthType,
        Field::VlanVid,
        Field::VlanPcp,
        Field::IpDscp,
        Field::IpEcn,
        Field::IpProto,
        Field::Ipv4Src,
        Field::Ipv4Dst,
        Field::TcpSrc,
        Field::TcpDst,
        Field::UdpSrc,
        Field::UdpDst,
        Field::SctpSrc,
        Field::SctpDst,
        Field::Icmpv4Type,
        Field::Icmpv4Code,
        Field::ArpOp,
        Field::ArpSpa,
        Field::ArpTpa,
        Field::ArpSha,
        Field::ArpTha,
        Field::Ipv6Src,
        Field::Ipv6Dst,
        Field::Ipv6Flabel,
        Field::Icmpv6Type,
        Field::Icmpv6Code,
        Field::Ipv6NdTarget,
        Field::Ipv6NdSll,
        Field::Ipv6NdTll,
        Field::MplsLabel,
        Field::MplsTc,
        Field::MplsBos,
        Field::PbbIsid,
        Field::TunnelId,
        Field::Ipv6Exthdr,
        Field::TcpFlags,
        Field::Reg0,
        Field::Reg1,
        Field::Reg2,
        Field::Reg3,
        Field::Reg4,
        Field::Reg5,
        Field::Reg6,
        Field::Reg7,
        Field::Reg8,
        Field::Reg9,
        Field::Reg10,
        Field::Reg11,
        Field::Reg12,
        Field::Reg13,
        Field::Reg14,
        Field::Reg15,
        Field::NwTtl,
        Field::IpFrag,
        Field::PktMark,
        Field::Xreg0,
        Field::Xreg1,
        Field::Xreg2,
        Field::Xreg3,
        Field::Xreg4,
        Field::Xreg5,
        Field::Xreg6,
        Field::Xreg7,
        Field::Xxreg0,
        Field::Xxreg1,
        Field::Xxreg2,
        Field::Xxreg3,
        Field::CtState,
        Field::CtZone,
        Field::CtMark,
        Field::CtLabel,
        Field::CtNwSrc,
        Field::CtNwDst,
        Field::CtIpv6Src,
        Field::CtIpv6Dst,
        Field::CtNwProto,
        Field::CtTpSrc,
        Field::CtTpDst,
        Field::TunSrc,
        Field::TunDst,
        Field::TunIpv6Src,
        Field::TunIpv6Dst,
        Field::TunMetadata0,
        Field::TunMetadata1,
        Field::TunMetadata2,
        Field::TunMetadata3,
        Field::TunMetadata4,
        Field::TunMetadata5,
        Field::TunMetadata6,
        Field::TunMetadata7,
        Field::TunMetadata8,
        Field::TunMetadata9,
        Field::TunMetadata10,
        Field::TunMetadata11,
        Field::TunMetadata12,
        Field::TunMetadata13,
        Field::TunMetadata14,
        Field::TunMetadata15,
        Field::TunMetadata16,
        Field::TunMetadata17,
        Field::TunMetadata18,
        Field::TunMetadata19,
        Field::TunMetadata20,
        Field::TunMetadata21,
        Field::TunMetadata22,
        Field::TunMetadata23,
        Field::TunMetadata24,
        Field::TunMetadata25,
        Field::TunMetadata26,
        Field::TunMetadata27,
        Field::TunMetadata28,
        Field::TunMetadata29,
        Field::TunMetadata30,
        Field::TunMetadata31,
        Field::TunMetadata32,
        Field::TunMetadata33,
        Field::TunMetadata34,
        Field::TunMetadata35,
        Field::TunMetadata36,
        Field::TunMetadata37,
        Field::TunMetadata38,
        Field::TunMetadata39,
        Field::TunMetadata40,
        Field::TunMetadata41,
        Field::TunMetadata42,
        Field::TunMetadata43,
        Field::TunMetadata44,
        Field::TunMetadata45,
        Field::TunMetadata46,
        Field::TunMetadata47,
        Field::TunMetadata48,
        Field::TunMetadata49,
        Field::TunMetadata50,
        Field::TunMetadata51,
        Field::TunMetadata52,
        Field::TunMetadata53,
        Field::TunMetadata54,
        Field::TunMetadata55,
        Field::TunMetadata56,
        Field::TunMetadata57,
        Field::TunMetadata58,
        Field::TunMetadata59,
        Field::TunMetadata60,
        Field::TunMetadata61,
        Field::TunMetadata62,
        Field::TunMetadata63,
        Field::TunFlags,
        Field::TunGbpId,
        Field::TunGbpFlags,
    ];

    /// Static facts about this field.
    pub fn info(self) -> &'static FieldInfo {
        &FIELDS[self as usize]
    }

    /// Primary ovs-ofctl name.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Width in bits.
    pub fn bits(self) -> u32 {
        u32::from(self.info().bits)
    }

    /// Length of the value on the wire, in bytes.
    pub fn wire_len(self) -> usize {
        match self {
            // 20-bit fields travel in 32 bits.
            Field::Ipv6Flabel | Field::MplsLabel | Field::CtState => 4,
            // One bit that OpenFlow may see, in a 16-bit word.
            Field::TunFlags => 2,
            _ => (self.bits() as usize).div_ceil(8),
        }
    }

    /// Whether the OpenFlow 1.3 table allows a mask on this field.
    pub fn maskable(self) -> bool {
        self.info().maskable
    }

    /// Whether Open vSwitch accepts a mask on this field: the OpenFlow set plus bitwise
    /// masks on L4 ports and the ND fields (OVS tools rely on port-range masks). This is
    /// what [`crate::Match::validate`] enforces; `Match::validate_strict` uses
    /// [`Field::maskable`].
    pub fn ovs_maskable(self) -> bool {
        self.maskable()
            || matches!(
                self,
                Field::TcpSrc
                    | Field::TcpDst
                    | Field::UdpSrc
                    | Field::UdpDst
                    | Field::SctpSrc
                    | Field::SctpDst
                    | Field::Ipv6NdTarget
                    | Field::Ipv6NdSll
                    | Field::Ipv6NdTll
            )
    }

    /// Whether this is one of the connection-tracking fields (`ct_state`..`ct_tp_dst`).
    pub fn is_ct(self) -> bool {
        (Field::CtState..=Field::CtTpDst).contains(&self)
    }

    /// The field's prerequisite.
    pub fn prereq(self) -> Prereq {
        self.info().prereq
    }

    /// OXM class and field number.
    pub fn oxm(self) -> (u16, u8) {
        let i = self.info();
        (i.oxm_class, i.oxm_field)
    }

    /// The all-ones value of this field's width.
    pub fn max(self) -> u128 {
        ones(self.bits())
    }

    /// The field with this OXM class and field number.
    pub fn from_oxm(class: u16, field: u8) -> Option<Field> {
        FIELDS
            .iter()
            .find(|i| i.oxm_class == class && i.oxm_field == field)
            .map(|i| i.field)
    }

    /// The field with exactly this name (primary name or alias). Names that OVS resolves
    /// from context (`tp_src`, `nw_src`, `icmp_type`, `dl_vlan`, `nw_tos`...) are the text
    /// parser's business; see [`crate::text`].
    pub fn from_name(name: &str) -> Option<Field> {
        FIELDS
            .iter()
            .find(|i| i.name == name || i.aliases.contains(&name))
            .map(|i| i.field)
    }

    /// Whether this is a 32-bit Nicira register.
    pub fn is_reg(self) -> bool {
        (Field::Reg0..=Field::Reg15).contains(&self)
    }

    /// Register `i` (`reg0`..`reg15`).
    pub fn reg(i: usize) -> Option<Field> {
        Field::ALL
            .get(Field::Reg0 as usize + i)
            .copied()
            .filter(|f| f.is_reg())
    }

    /// The index of a 32-bit register (`reg3` -> 3).
    pub fn reg_index(self) -> Option<usize> {
        self.is_reg().then(|| self as usize - Field::Reg0 as usize)
    }

    /// For a register view (`xreg`, `xxreg`), the first 32-bit register it covers (the most
    /// significant one) and how many it covers; `None` for every other field.
    pub fn reg_view(self) -> Option<(usize, usize)> {
        let i = self as usize;
        if (Field::Xreg0..=Field::Xreg7).contains(&self) {
            Some((2 * (i - Field::Xreg0 as usize), 2))
        } else if (Field::Xxreg0..=Field::Xxreg3).contains(&self) {
            Some((4 * (i - Field::Xxreg0 as usize), 4))
        } else {
            None
        }
    }

    /// Splits a value/mask of a register view into the 32-bit registers it covers: one
    /// `(reg, value, mask)` per register whose part of `mask` is not zero, most significant
    /// first. A plain register gives itself; any other field gives nothing.
    pub fn split_reg_view(self, value: u128, mask: u128) -> Vec<(Field, u128, u128)> {
        let (first, n) = match (self.reg_view(), self.reg_index()) {
            (Some(v), _) => v,
            (None, Some(i)) => (i, 1),
            (None, None) => return Vec::new(),
        };
        (0..n)
            .filter_map(|k| {
                let shift = 32 * (n - 1 - k);
                let m = (mask >> shift) & 0xffff_ffff;
                let f = Field::reg(first + k)?;
                (m != 0).then_some((f, (value >> shift) & m, m))
            })
            .collect()
    }
}

impl core::fmt::Display for Field {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}
