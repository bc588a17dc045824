//! Meter table modifications: [`MeterMod`], its command, flags and bands, and the
//! reserved meter ids.
//!
//! [`MeterMod::validate`] checks what needs no switch state: the meter id (a usable id,
//! the slow-path or controller meter, or ALL for a delete), known flags with at most one
//! of KBPS and PKTPS, and non-zero band rates.

use super::{err, OfError};

/// `OFPMC_*` meter_mod commands.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum MeterModCommand {
    /// New meter.
    Add = 0,
    /// Modify a meter.
    Modify = 1,
    /// Delete a meter.
    Delete = 2,
}

/// `OFPMF_*` meter flags as a bit set.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct MeterFlags(pub u16);

impl MeterFlags {
    /// Rates are in kb/s.
    pub const KBPS: MeterFlags = MeterFlags(1 << 0);
    /// Rates are in packets/s.
    pub const PKTPS: MeterFlags = MeterFlags(1 << 1);
    /// Burst sizes are meaningful.
    pub const BURST: MeterFlags = MeterFlags(1 << 2);
    /// Collect statistics.
    pub const STATS: MeterFlags = MeterFlags(1 << 3);
    /// All flags.
    pub const ALL: MeterFlags = MeterFlags(0xf);

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: MeterFlags) -> bool {
        self.0 & other.0 == other.0
    }
    /// Set the bits of `other`.
    pub fn insert(&mut self, other: MeterFlags) {
        self.0 |= other.0;
    }
}

impl core::ops::BitOr for MeterFlags {
    type Output = MeterFlags;
    fn bitor(self, rhs: MeterFlags) -> MeterFlags {
        MeterFlags(self.0 | rhs.0)
    }
}

/// One meter band.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum MeterBand {
    /// Drop packets above `rate` (`OFPMBT_DROP` = 1).
    Drop {
        /// Rate in kb/s or packets/s.
        rate: u32,
        /// Burst in kb or packets.
        burst_size: u32,
    },
    /// Raise the drop precedence of packets above `rate` (`OFPMBT_DSCP_REMARK` = 2).
    DscpRemark {
        /// Rate in kb/s or packets/s.
        rate: u32,
        /// Burst in kb or packets.
        burst_size: u32,
        /// Number of precedence levels to add.
        prec_level: u8,
    },
}

impl MeterBand {
    /// `OFPMBT_*` number.
    pub fn band_type(&self) -> u16 {
        match self {
            MeterBand::Drop { .. } => 1,
            MeterBand::DscpRemark { .. } => 2,
        }
    }
    /// The band's rate.
    pub fn rate(&self) -> u32 {
        match *self {
            MeterBand::Drop { rate, .. } | MeterBand::DscpRemark { rate, .. } => rate,
        }
    }
    /// The band's burst size.
    pub fn burst_size(&self) -> u32 {
        match *self {
            MeterBand::Drop { burst_size, .. } | MeterBand::DscpRemark { burst_size, .. } => {
                burst_size
            }
        }
    }
}

/// Largest usable meter id.
pub const OFPM_MAX: u32 = 0xffff_0000;
/// Meter for slow-path datapath traffic.
pub const OFPM_SLOWPATH: u32 = 0xffff_fffd;
/// Meter for controller connection traffic.
pub const OFPM_CONTROLLER: u32 = 0xffff_fffe;
/// All meters (delete / stats).
pub const OFPM_ALL: u32 = 0xffff_ffff;

/// A meter table modification.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MeterMod {
    /// What to do.
    pub command: MeterModCommand,
    /// `OFPMF_*` flags.
    pub flags: MeterFlags,
    /// Meter id.
    pub meter_id: u32,
    /// Bands.
    pub bands: Vec<MeterBand>,
}

impl MeterMod {
    /// Checks that need no switch state: meter id range, flags (known bits, exactly one of
    /// KBPS/PKTPS), band rates non-zero, no burst size without BURST... (OVS accepts a
    /// burst size without the flag; so do we).
    pub fn validate(&self) -> Result<(), OfError> {
        use err::meter_mod_failed as m;
        let id_ok = (self.meter_id >= 1 && self.meter_id <= OFPM_MAX)
            || self.meter_id == OFPM_SLOWPATH
            || self.meter_id == OFPM_CONTROLLER
            || (self.command == MeterModCommand::Delete && self.meter_id == OFPM_ALL);
        if !id_ok {
            return Err(OfError::meter_mod_failed(m::INVALID_METER));
        }
        if self.command == MeterModCommand::Delete {
            return Ok(());
        }
        let f = self.flags;
        if f.0 & !MeterFlags::ALL.0 != 0
            || (f.contains(MeterFlags::KBPS) && f.contains(MeterFlags::PKTPS))
        {
            return Err(OfError::meter_mod_failed(m::BAD_FLAGS));
        }
        for b in &self.bands {
            if b.rate() == 0 {
                return Err(OfError::meter_mod_failed(m::BAD_RATE));
            }
        }
        Ok(())
    }
}
