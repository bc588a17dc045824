//! Internet checksums (RFC 1071) and incremental updates (RFC 1624).
//! (Placeholder: the flow-key work fills this in.)

/// Folds a 32-bit one's-complement sum to 16 bits.
#[inline]
pub fn fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Adds `data` (as big-endian 16-bit words, odd byte padded with zero) to a running sum.
#[inline]
pub fn add(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum = sum.wrapping_add(u32::from(u16::from_be_bytes([c[0], c[1]])));
        // Keep the sum from overflowing on long inputs.
        if sum & 0x8000_0000 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
    }
    if let [b] = chunks.remainder() {
        sum = sum.wrapping_add(u32::from(*b) << 8);
    }
    sum
}

/// The Internet checksum of `data`.
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !fold(add(0, data))
}

/// True if an IPv4 header (with its checksum field in place) sums to all ones.
#[inline]
pub fn ipv4_header_ok(hdr: &[u8]) -> bool {
    fold(add(0, hdr)) == 0xffff
}
