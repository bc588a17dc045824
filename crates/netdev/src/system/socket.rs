//! Opening the `AF_PACKET` socket and mapping its TPACKET_V3 rings (see the parent module).

use super::*;

/// True if `name` is a TUN/TAP device. What is sent to one is for whoever reads its file
/// descriptor or captures on it (`ovs-tcpdump` mirrors onto a TAP device and runs tcpdump
/// there): it is sent through the kernel's transmit path, which packet capture sees, instead
/// of bypassing the queueing layer (which capture does not see).
pub(super) fn is_tap(name: &str) -> bool {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return false;
    }
    std::path::Path::new("/sys/class/net")
        .join(name)
        .join("tun_flags")
        .exists()
}

/// A failed call of the set-up: its name (for the error) and the errno.
type Step<T> = Result<T, (&'static str, std::io::Error)>;

/// One AF_PACKET socket on `name` with its mapped rings: a receive ring of `rx_blocks`
/// blocks (0: a transmit-only socket that receives nothing) and the transmit ring.
pub(super) fn open_socket(
    name: &str,
    rx_blocks: usize,
) -> Result<(OwnedFd, Rings, u32, u32), NetdevError> {
    let steps = || -> Step<(OwnedFd, Rings, u32, u32)> {
        let fd = packet_socket()?;
        let s = fd.as_raw_fd();
        let ifindex = sys::if_index(s, name).map_err(|e| ("SIOCGIFINDEX", e))?;
        let mtu = sys::if_mtu(s, name).map_err(|e| ("SIOCGIFMTU", e))?;
        set_socket_options(s, name)?;
        let tx_frame = tx_frame_size(mtu);
        size_rings(s, rx_blocks, tx_frame)?;
        let rings = map_rings(s, rx_blocks, tx_frame)?;
        if rx_blocks > 0 {
            sys::if_up(s, name).map_err(|e| ("SIOCSIFFLAGS(IFF_UP)", e))?;
            join_promiscuous(s, ifindex)?;
        }
        bind_to(s, ifindex, rx_blocks > 0)?;
        Ok((fd, rings, ifindex, mtu))
    };
    steps().map_err(|(call, e)| sys::os_error(KIND, name, call, &e))
}

/// Sets the `SOL_PACKET` option `opt` of socket `s`; `call` names it in the error.
fn packet_opt<T>(s: RawFd, opt: libc::c_int, v: &T, call: &'static str) -> Step<()> {
    sys::setsockopt(s, libc::SOL_PACKET, opt, v).map_err(|e| (call, e))
}

/// A new AF_PACKET socket. Protocol 0: it receives nothing until [`bind_to`], after the
/// rings exist.
fn packet_socket() -> Step<OwnedFd> {
    // SAFETY: plain socket(2) call.
    let raw = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    };
    if raw < 0 {
        return Err(("socket(AF_PACKET)", sys::last_err()));
    }
    // SAFETY: `raw` is a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// TPACKET_V3 with vnet headers, outgoing frames ignored, loss tolerated on transmit, and
/// the queueing layer bypassed except on a TAP device (see [`is_tap`]).
fn set_socket_options(s: RawFd, name: &str) -> Step<()> {
    let v3 = libc::tpacket_versions::TPACKET_V3 as libc::c_int;
    packet_opt(
        s,
        libc::PACKET_VERSION,
        &v3,
        "setsockopt(PACKET_VERSION=TPACKET_V3)",
    )?;
    let one: libc::c_int = 1;
    packet_opt(
        s,
        libc::PACKET_VNET_HDR,
        &one,
        "setsockopt(PACKET_VNET_HDR)",
    )?;
    // Best effort: older kernels lack it, and rx also filters PACKET_OUTGOING frames.
    let _ = packet_opt(s, libc::PACKET_IGNORE_OUTGOING, &one, "");
    if !is_tap(name) {
        packet_opt(
            s,
            libc::PACKET_QDISC_BYPASS,
            &one,
            "setsockopt(PACKET_QDISC_BYPASS)",
        )?;
    }
    packet_opt(s, PACKET_LOSS, &one, "setsockopt(PACKET_LOSS)")
}

/// Frames in the transmit ring of slots of `tx_frame` bytes.
fn tx_nframes(tx_frame: usize) -> usize {
    (TX_RING_BYTES / TX_BLOCK_SIZE) * (TX_BLOCK_SIZE / tx_frame)
}

/// Sets up the receive ring (`rx_blocks` blocks, if any) and the transmit ring (slots of
/// `tx_frame` bytes).
fn size_rings(s: RawFd, rx_blocks: usize, tx_frame: usize) -> Step<()> {
    if rx_blocks > 0 {
        let rx_req = libc::tpacket_req3 {
            tp_block_size: RX_BLOCK_SIZE as u32,
            tp_block_nr: rx_blocks as u32,
            tp_frame_size: RX_FRAME_SIZE as u32,
            tp_frame_nr: (rx_blocks * (RX_BLOCK_SIZE / RX_FRAME_SIZE)) as u32,
            tp_retire_blk_tov: RX_RETIRE_MS,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        packet_opt(
            s,
            libc::PACKET_RX_RING,
            &rx_req,
            "setsockopt(PACKET_RX_RING)",
        )?;
    }
    let tx_req = libc::tpacket_req3 {
        tp_block_size: TX_BLOCK_SIZE as u32,
        tp_block_nr: (TX_RING_BYTES / TX_BLOCK_SIZE) as u32,
        tp_frame_size: tx_frame as u32,
        tp_frame_nr: tx_nframes(tx_frame) as u32,
        tp_retire_blk_tov: 0,
        tp_sizeof_priv: 0,
        tp_feature_req_word: 0,
    };
    packet_opt(
        s,
        libc::PACKET_TX_RING,
        &tx_req,
        "setsockopt(PACKET_TX_RING)",
    )
}

/// Maps the rings [`size_rings`] set up: receive first, then transmit, as the kernel lays
/// them out.
fn map_rings(s: RawFd, rx_blocks: usize, tx_frame: usize) -> Step<Rings> {
    let rx_bytes = rx_blocks * RX_BLOCK_SIZE;
    let map_len = rx_bytes + TX_RING_BYTES;
    // SAFETY: maps the socket's rings; the kernel checks the length against the ring sizes.
    let base = unsafe {
        libc::mmap(
            ptr::null_mut(),
            map_len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            s,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(("mmap(packet rings)", sys::last_err()));
    }
    let base = base.cast::<u8>();
    Ok(Rings {
        rx: RxRing {
            base,
            nblocks: rx_blocks,
            cur: 0,
            left: 0,
            off: 0,
            seg: 0,
        },
        tx: TxRing {
            base: base.wrapping_add(rx_bytes),
            frame_size: tx_frame,
            nframes: tx_nframes(tx_frame),
            head: 0,
        },
        _map: Mapping { base, len: map_len },
    })
}

/// Puts interface `ifindex` into promiscuous mode for as long as socket `s` lives.
fn join_promiscuous(s: RawFd, ifindex: u32) -> Step<()> {
    let mreq = libc::packet_mreq {
        mr_ifindex: ifindex as libc::c_int,
        mr_type: libc::PACKET_MR_PROMISC as libc::c_ushort,
        mr_alen: 0,
        mr_address: [0; 8],
    };
    packet_opt(
        s,
        libc::PACKET_ADD_MEMBERSHIP,
        &mreq,
        "setsockopt(PACKET_ADD_MEMBERSHIP, promisc)",
    )
}

/// Binds socket `s` to interface `ifindex`: for every protocol if it `receives`, else for
/// none (a transmit-only socket).
fn bind_to(s: RawFd, ifindex: u32, receives: bool) -> Step<()> {
    // SAFETY: sockaddr_ll is plain integers; zero is valid for every field.
    let mut sll: libc::sockaddr_ll = unsafe { mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = if receives {
        (libc::ETH_P_ALL as u16).to_be()
    } else {
        0
    };
    sll.sll_ifindex = ifindex as i32;
    // SAFETY: `sll` is a live sockaddr_ll and the length passed is its size.
    let rc = unsafe {
        libc::bind(
            s,
            (&sll as *const libc::sockaddr_ll).cast(),
            mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(("bind", sys::last_err()));
    }
    Ok(())
}

/// Slot size for the transmit ring: room for the slot header, the vnet header and a frame of
/// MTU + 18 bytes.
pub(super) fn tx_frame_size(mtu: u32) -> usize {
    let need = TX_DATA_OFF + VNET_HDR_LEN + mtu as usize + 18;
    if need <= TX_FRAME_SIZE {
        TX_FRAME_SIZE
    } else {
        2 * TX_FRAME_SIZE
    }
}
