//! The eBPF side of the `afxdp` port, through the raw `bpf(2)` system call: no libbpf, no
//! compiler, no object files.
//!
//! ## What is here
//! * An `XSKMAP` ([`create_xskmap`]): an array from receive-queue index to AF_XDP socket. A
//!   socket is inserted with [`map_set_socket`]; the kernel removes it by itself when the
//!   socket is closed, so a map never points at a dead socket.
//! * The redirect program ([`load_redirect_prog`]): six instructions, assembled here, that read
//!   the frame's receive queue from the XDP context and hand the frame to that queue's socket
//!   with `bpf_redirect_map`. The helper's flags argument carries the fallback action, `XDP_PASS`:
//!   a frame on a queue that has no socket in the map goes to the kernel stack as if there were
//!   no program at all (kernel 5.3 and later understand this).
//! * Introspection of programs that someone else attached ([`prog_by_id`], [`prog_info`],
//!   [`map_name_by_id`]): enough to tell a ferrovs program from a foreign one and to find
//!   which process created it (its map is named `ferrovs_<pid>`).
//!
//! ## The program
//! ```text
//! r2 = *(u32 *)(r1 + 16)      ; xdp_md->rx_queue_index
//! r1 = map_fd ll              ; two-slot load, src_reg = BPF_PSEUDO_MAP_FD
//! r3 = XDP_PASS               ; fallback action when the slot is empty
//! call bpf_redirect_map       ; helper 51
//! exit                        ; r0 = XDP_REDIRECT or XDP_PASS
//! ```
//! The verifier sees a context load of a known field, a map pointer, two scalars and a helper
//! call, and accepts it on every kernel with AF_XDP. The program is named [`PROG_NAME`] so that
//! `bpftool prog` and [`prog_info`] show who loaded it.
//!
//! ## Invariants
//! Every call passes an attribute block that is zero except for the fields the command reads;
//! the kernel checks that whatever it does not know about is zero. Descriptors returned by the
//! kernel are wrapped in [`OwnedFd`] at once, so nothing leaks on an error path.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Name given to the redirect program (the kernel keeps 15 bytes).
pub(crate) const PROG_NAME: &str = "ferrovs_xsk";
/// Prefix of the XSKMAP's name; the creating process id follows.
pub(crate) const MAP_PREFIX: &str = "ferrovs_";

// bpf(2) commands.
const BPF_MAP_CREATE: i32 = 0;
const BPF_MAP_UPDATE_ELEM: i32 = 2;
const BPF_PROG_LOAD: i32 = 5;
const BPF_PROG_GET_FD_BY_ID: i32 = 13;
const BPF_MAP_GET_FD_BY_ID: i32 = 14;
const BPF_OBJ_GET_INFO_BY_FD: i32 = 15;

const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_PSEUDO_MAP_FD: u8 = 1;
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
const XDP_PASS: i32 = 2;
/// Offset of `rx_queue_index` in `struct xdp_md`.
const XDP_MD_RX_QUEUE_INDEX: i16 = 16;

/// An attribute block for one `bpf(2)` command: zeroed, then the command's fields poked in at
/// their UAPI offsets. 128 bytes covers every field used here.
#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 128])
    }
    fn u32(&mut self, off: usize, v: u32) -> &mut Self {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, off: usize, v: u64) -> &mut Self {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    /// A name field: at most 15 bytes, NUL-padded.
    fn name(&mut self, off: usize, s: &str) -> &mut Self {
        let b = s.as_bytes();
        let n = b.len().min(15);
        self.0[off..off + n].copy_from_slice(&b[..n]);
        self
    }
}

/// `bpf(cmd, attr, sizeof attr)`; the non-negative result or the errno.
fn bpf(cmd: i32, attr: &mut Attr) -> io::Result<i32> {
    // SAFETY: `attr` is a live, exclusively borrowed 128-byte block and we pass its exact size;
    // the kernel reads it and, for some commands, writes results back into it. Any pointers we
    // stored in it point at live buffers of the sizes also stored in it (see callers).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd as libc::c_long,
            attr.0.as_mut_ptr(),
            attr.0.len() as libc::c_long,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as i32)
    }
}

/// Wraps a descriptor the kernel just returned.
fn owned(fd: i32) -> OwnedFd {
    // SAFETY: `fd` was just returned by bpf(2) as a new descriptor that nothing else owns.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Creates an XSKMAP with `entries` slots (queue index -> socket), named `name`.
pub(crate) fn create_xskmap(entries: u32, name: &str) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32(0, BPF_MAP_TYPE_XSKMAP)
        .u32(4, 4) // key_size
        .u32(8, 4) // value_size: a socket descriptor
        .u32(12, entries)
        .name(28, name);
    bpf(BPF_MAP_CREATE, &mut a).map(owned)
}

/// Puts AF_XDP socket `sock` in slot `queue` of XSKMAP `map`.
pub(crate) fn map_set_socket(map: &OwnedFd, queue: u32, sock: RawFd) -> io::Result<()> {
    let key: u32 = queue;
    let val: u32 = sock as u32;
    let mut a = Attr::new();
    a.u32(0, map.as_raw_fd() as u32)
        .u64(8, &key as *const u32 as u64)
        .u64(16, &val as *const u32 as u64)
        .u64(24, 0); // BPF_ANY
    bpf(BPF_MAP_UPDATE_ELEM, &mut a).map(|_| ())
}

/// One instruction: opcode, destination and source registers, offset, immediate.
const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> [u8; 8] {
    let o = off.to_ne_bytes();
    let i = imm.to_ne_bytes();
    // The register byte is a pair of 4-bit bitfields, laid out in the host's bit order.
    let regs = if cfg!(target_endian = "little") {
        (dst & 0xf) | (src << 4)
    } else {
        (dst << 4) | (src & 0xf)
    };
    [code, regs, o[0], o[1], i[0], i[1], i[2], i[3]]
}

/// The redirect program for XSKMAP `map_fd` (see the module documentation).
fn redirect_prog(map_fd: RawFd) -> [[u8; 8]; 6] {
    const LDX_W: u8 = 0x61; // BPF_LDX | BPF_MEM | BPF_W
    const LD_DW_IMM: u8 = 0x18; // BPF_LD | BPF_IMM | BPF_DW
    const MOV64_K: u8 = 0xb7; // BPF_ALU64 | BPF_MOV | BPF_K
    const CALL: u8 = 0x85; // BPF_JMP | BPF_CALL
    const EXIT: u8 = 0x95; // BPF_JMP | BPF_EXIT
    [
        insn(LDX_W, 2, 1, XDP_MD_RX_QUEUE_INDEX, 0),
        insn(LD_DW_IMM, 1, BPF_PSEUDO_MAP_FD, 0, map_fd),
        insn(0, 0, 0, 0, 0),
        insn(MOV64_K, 3, 0, 0, XDP_PASS),
        insn(CALL, 0, 0, 0, BPF_FUNC_REDIRECT_MAP),
        insn(EXIT, 0, 0, 0, 0),
    ]
}

/// Why the program could not be loaded: the errno and, when the verifier said something, its
/// last line.
#[derive(Debug)]
pub(crate) struct LoadError {
    pub(crate) err: io::Error,
    pub(crate) verifier: Option<String>,
}

/// Loads the redirect program for XSKMAP `map` as an XDP program named [`PROG_NAME`].
/// On failure the load is repeated once with the verifier log on, to say why.
pub(crate) fn load_redirect_prog(map: &OwnedFd) -> Result<OwnedFd, LoadError> {
    let prog = redirect_prog(map.as_raw_fd());
    let license = c"Apache-2.0";
    let load = |log: Option<&mut Vec<u8>>| {
        let mut a = Attr::new();
        a.u32(0, BPF_PROG_TYPE_XDP)
            .u32(4, prog.len() as u32)
            .u64(8, prog.as_ptr() as u64)
            .u64(16, license.as_ptr() as u64)
            .name(48, PROG_NAME);
        if let Some(buf) = log {
            a.u32(24, 1) // log_level
                .u32(28, buf.len() as u32)
                .u64(32, buf.as_mut_ptr() as u64);
            bpf(BPF_PROG_LOAD, &mut a)
        } else {
            bpf(BPF_PROG_LOAD, &mut a)
        }
    };
    match load(None) {
        Ok(fd) => Ok(owned(fd)),
        Err(err) => {
            let mut log = vec![0u8; 16 * 1024];
            let verifier = match load(Some(&mut log)) {
                Ok(fd) => {
                    // Loaded the second time (a transient failure): use it.
                    return Ok(owned(fd));
                }
                Err(_) => {
                    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                    String::from_utf8_lossy(&log[..end])
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .map(|l| l.trim().to_string())
                }
            };
            Err(LoadError { err, verifier })
        }
    }
}

/// A descriptor for the loaded program with id `id`.
pub(crate) fn prog_by_id(id: u32) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32(0, id);
    bpf(BPF_PROG_GET_FD_BY_ID, &mut a).map(owned)
}

/// What [`prog_info`] reports about a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProgInfo {
    pub(crate) id: u32,
    pub(crate) name: String,
    /// The ids of (up to 8 of) the maps it uses.
    pub(crate) map_ids: Vec<u32>,
}

/// Reads a NUL-padded name field.
fn name_at(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// Id, name and map ids of program `prog`.
pub(crate) fn prog_info(prog: &OwnedFd) -> io::Result<ProgInfo> {
    // struct bpf_prog_info: id at 4, nr_map_ids at 52, map_ids (pointer) at 56, name at 64.
    let mut info = [0u8; 128];
    let mut maps = [0u32; 8];
    info[52..56].copy_from_slice(&(maps.len() as u32).to_ne_bytes());
    info[56..64].copy_from_slice(&(maps.as_mut_ptr() as u64).to_ne_bytes());
    let mut a = Attr::new();
    a.u32(0, prog.as_raw_fd() as u32)
        .u32(4, info.len() as u32)
        .u64(8, info.as_mut_ptr() as u64);
    bpf(BPF_OBJ_GET_INFO_BY_FD, &mut a)?;
    let id = u32::from_ne_bytes([info[4], info[5], info[6], info[7]]);
    let nr = u32::from_ne_bytes([info[52], info[53], info[54], info[55]]) as usize;
    Ok(ProgInfo {
        id,
        name: name_at(&info[64..80]),
        map_ids: maps[..nr.min(maps.len())].to_vec(),
    })
}

/// The name of the map with id `id`.
pub(crate) fn map_name_by_id(id: u32) -> io::Result<String> {
    let mut a = Attr::new();
    a.u32(0, id);
    let map = owned(bpf(BPF_MAP_GET_FD_BY_ID, &mut a)?);
    // struct bpf_map_info: name at 24.
    let mut info = [0u8; 64];
    let mut a = Attr::new();
    a.u32(0, map.as_raw_fd() as u32)
        .u32(4, info.len() as u32)
        .u64(8, info.as_mut_ptr() as u64);
    bpf(BPF_OBJ_GET_INFO_BY_FD, &mut a)?;
    Ok(name_at(&info[24..40]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_endian = "little")]
    fn program_encoding() {
        let p = redirect_prog(7);
        assert_eq!(p[0], [0x61, 0x12, 16, 0, 0, 0, 0, 0]);
        assert_eq!(p[1], [0x18, 0x11, 0, 0, 7, 0, 0, 0]);
        assert_eq!(p[2], [0; 8]);
        assert_eq!(p[3], [0xb7, 0x03, 0, 0, 2, 0, 0, 0]);
        assert_eq!(p[4], [0x85, 0, 0, 0, 51, 0, 0, 0]);
        assert_eq!(p[5], [0x95, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(name_at(b"ferrovs_xsk\0\0\0\0\0"), "ferrovs_xsk");
    }
}
