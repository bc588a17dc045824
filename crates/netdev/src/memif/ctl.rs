//! The memif control-channel state machines, one per connection and role.
//!
//! ## What
//! [`ServerSession`] plays the server's part of the handshake: it says `HELLO`, expects
//! `INIT` (protocol version, interface id, ethernet mode, secret), then any number of
//! `ADD_REGION` (each with its memfd) and `ADD_RING` (each with its eventfd), acknowledging
//! each, and finally `CONNECT`, at which point it hands everything collected to the caller
//! ([`Step::Connect`]) to map and check. [`ClientSession`] plays the other part: on `HELLO` it
//! settles the queue count and ring size within the server's limits, creates the shared
//! memory and announces it one message per `ACK`, and waits for `CONNECTED`.
//!
//! ## Invariants
//! * Every field is checked before it is used or stored: versions, mode, id, secret, region
//!   indices dense and bounded ([`MAX_REGIONS`]), region sizes bounded
//!   ([`ring::MAX_REGION_SIZE`]), ring sizes a bounded power of two, ring counts bounded
//!   ([`MAX_QUEUES`] each way), descriptors of the expected kind (a memfd rides with each
//!   region — checked when mapped — and an eventfd with each ring). The first violation ends
//!   the session with an error whose text goes back to the peer in `DISCONNECT`.
//! * No I/O happens here beyond creating the client's memory: the caller sends the messages
//!   returned and passes in what it received, so the logic is testable and fuzzable alone.
//!
//! ## Threading
//! A session is owned by the control thread of its socket.

use super::conn::{is_eventfd, ClientMem, RingAnn};
use super::msg::{Msg, MODE_ETHERNET, RING_FLAG_S2M, SECRET_SIZE, VERSION};
use super::ring::{self, MAX_LOG2_RING, MAX_REGIONS};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

/// Most queue pairs per interface.
pub const MAX_QUEUES: usize = 16;
/// The most shared memory one connection may map in total (4 GiB).
pub const MAX_TOTAL: u64 = 4 << 30;

/// What the server needs to know about an interface id.
#[derive(Clone, Debug)]
pub struct Iface {
    pub secret: [u8; SECRET_SIZE],
    /// Already connected or claimed by another session.
    pub busy: bool,
}

/// What happened, for the caller to act on.
pub enum Step {
    /// Send these (with an optional descriptor each); nothing else to do.
    Send(Vec<(Msg, Option<RawFd>)>),
    /// Server: the client asked to connect; map and check these, then send `CONNECTED`.
    Connect {
        id: u32,
        regions: Vec<(u64, OwnedFd)>,
        rings: Vec<RingAnn>,
        peer: String,
    },
    /// Client: the server said `CONNECTED`; the memory is ready to use.
    Connected { mem: Box<ClientMem>, peer: String },
    /// The peer said `DISCONNECT`.
    Closed(String),
}

enum SState {
    WaitInit,
    Setup {
        id: u32,
        peer: String,
        regions: Vec<(u64, OwnedFd)>,
        rings: Vec<RingAnn>,
        total: u64,
    },
    Done,
}

/// The server's side of one control connection. See the module documentation.
pub struct ServerSession {
    state: SState,
}

/// The `HELLO` a server sends first.
pub fn hello() -> Msg {
    Msg::Hello {
        name: "ferrovs".into(),
        min_version: VERSION,
        max_version: VERSION,
        max_region: (MAX_REGIONS - 1) as u16,
        max_m2s_ring: (MAX_QUEUES - 1) as u16,
        max_s2m_ring: (MAX_QUEUES - 1) as u16,
        max_log2_ring_size: MAX_LOG2_RING,
    }
}

impl Default for ServerSession {
    fn default() -> Self {
        ServerSession::new()
    }
}

impl ServerSession {
    pub fn new() -> ServerSession {
        ServerSession {
            state: SState::WaitInit,
        }
    }

    /// The interface id this session claimed with `INIT`, if any.
    pub fn id(&self) -> Option<u32> {
        match &self.state {
            SState::Setup { id, .. } => Some(*id),
            _ => None,
        }
    }

    /// Handles one message (with the descriptor that came with it). `lookup` resolves an
    /// interface id. An error ends the session; its text is the `DISCONNECT` reason.
    pub fn on_msg(
        &mut self,
        m: Msg,
        fd: Option<OwnedFd>,
        lookup: &dyn Fn(u32) -> Option<Iface>,
    ) -> Result<Step, String> {
        if let Msg::Disconnect { code, reason } = &m {
            self.state = SState::Done;
            return Ok(Step::Closed(format!(
                "peer disconnected ({code}): {reason}"
            )));
        }
        match (&mut self.state, m) {
            (
                SState::WaitInit,
                Msg::Init {
                    version,
                    id,
                    mode,
                    secret,
                    name,
                },
            ) => {
                check_init(version, mode, id, &secret, lookup)?;
                self.state = SState::Setup {
                    id,
                    peer: name,
                    regions: Vec::new(),
                    rings: Vec::new(),
                    total: 0,
                };
            }
            (SState::Setup { regions, total, .. }, Msg::AddRegion { index, size }) => {
                add_region(regions, total, index, size, fd)?;
            }
            (
                SState::Setup { regions, rings, .. },
                Msg::AddRing {
                    flags,
                    index,
                    region,
                    offset,
                    log2_ring_size,
                    private_hdr_size,
                },
            ) => {
                let efd = announced_eventfd(fd)?;
                check_ring(
                    flags,
                    index,
                    region,
                    log2_ring_size,
                    private_hdr_size,
                    regions.len(),
                )?;
                if rings.len() >= 2 * MAX_QUEUES {
                    return Err("too many rings".into());
                }
                rings.push(RingAnn {
                    s2m: flags & RING_FLAG_S2M != 0,
                    index,
                    region,
                    offset,
                    log2: log2_ring_size,
                    efd,
                });
            }
            (SState::Setup { .. }, Msg::Connect { .. }) => return self.connect(),
            (_, m) => return Err(format!("unexpected message {}", name_of(&m))),
        }
        Ok(Step::Send(vec![(Msg::Ack, None)]))
    }

    /// `CONNECT`: hands what the client announced to the caller; the session is done.
    fn connect(&mut self) -> Result<Step, String> {
        match std::mem::replace(&mut self.state, SState::Done) {
            SState::Setup {
                id,
                peer,
                regions,
                rings,
                ..
            } => Ok(Step::Connect {
                id,
                regions,
                rings,
                peer,
            }),
            _ => Err("internal state".into()),
        }
    }
}

/// `INIT`'s checks: our version, ethernet mode, a known interface not yet connected, its
/// secret.
fn check_init(
    version: u16,
    mode: u8,
    id: u32,
    secret: &[u8; SECRET_SIZE],
    lookup: &dyn Fn(u32) -> Option<Iface>,
) -> Result<(), String> {
    if version != VERSION {
        return Err(format!("incompatible memif version {version:#06x}"));
    }
    if mode != MODE_ETHERNET {
        return Err(format!(
            "interface mode {mode} not supported (ethernet only)"
        ));
    }
    let i = lookup(id).ok_or_else(|| format!("no interface with id {id}"))?;
    if i.busy {
        return Err(format!("interface {id} is already connected"));
    }
    if i.secret != *secret {
        return Err("incorrect secret".into());
    }
    Ok(())
}

/// `ADD_REGION`: the next index, a bounded size (also in total), a memfd that holds it.
fn add_region(
    regions: &mut Vec<(u64, OwnedFd)>,
    total: &mut u64,
    index: u16,
    size: u64,
    fd: Option<OwnedFd>,
) -> Result<(), String> {
    let fd = fd.ok_or("ADD_REGION without a memfd")?;
    if usize::from(index) != regions.len() {
        return Err(format!(
            "region {index} out of order (expected {})",
            regions.len()
        ));
    }
    if regions.len() >= MAX_REGIONS {
        return Err(format!("more than {MAX_REGIONS} regions"));
    }
    if size == 0 || size > ring::MAX_REGION_SIZE {
        return Err(format!(
            "region size {size} not in 1..={}",
            ring::MAX_REGION_SIZE
        ));
    }
    *total += size;
    if *total > MAX_TOTAL {
        return Err(format!("more than {MAX_TOTAL} bytes of regions"));
    }
    ring::check_memfd(fd.as_fd(), size)?;
    regions.push((size, fd));
    Ok(())
}

/// The eventfd an `ADD_RING` must carry.
fn announced_eventfd(fd: Option<OwnedFd>) -> Result<OwnedFd, String> {
    let fd = fd.ok_or("ADD_RING without an eventfd")?;
    if !is_eventfd(fd.as_raw_fd()) {
        return Err("ADD_RING descriptor is not an eventfd".into());
    }
    Ok(fd)
}

/// `ADD_RING`'s fields: known flags, a queue index and a region in range, a bounded power
/// of two of slots, no private header (`nregions` regions announced so far).
fn check_ring(
    flags: u16,
    index: u16,
    region: u16,
    log2_ring_size: u8,
    private_hdr_size: u16,
    nregions: usize,
) -> Result<(), String> {
    if flags & !RING_FLAG_S2M != 0 {
        return Err(format!("unknown ring flags {flags:#x}"));
    }
    if usize::from(index) >= MAX_QUEUES {
        return Err(format!("ring index {index} >= {MAX_QUEUES}"));
    }
    if usize::from(region) >= nregions {
        return Err(format!("ring {index} in unknown region {region}"));
    }
    if log2_ring_size == 0 || log2_ring_size > MAX_LOG2_RING {
        return Err(format!(
            "ring size 2^{log2_ring_size} not in 2^1..=2^{MAX_LOG2_RING}"
        ));
    }
    if private_hdr_size != 0 {
        return Err("private ring headers are not supported".into());
    }
    Ok(())
}

fn name_of(m: &Msg) -> &'static str {
    match m {
        Msg::Ack => "ACK",
        Msg::Hello { .. } => "HELLO",
        Msg::Init { .. } => "INIT",
        Msg::AddRegion { .. } => "ADD_REGION",
        Msg::AddRing { .. } => "ADD_RING",
        Msg::Connect { .. } => "CONNECT",
        Msg::Connected { .. } => "CONNECTED",
        Msg::Disconnect { .. } => "DISCONNECT",
    }
}

/// What a client interface asks for.
#[derive(Clone, Debug)]
pub struct ClientCfg {
    pub id: u32,
    pub secret: [u8; SECRET_SIZE],
    pub name: String,
    pub n_queues: usize,
    pub log2: u8,
    pub bsize: u32,
}

enum CState {
    WaitHello,
    /// Announcing: messages still to send (one per ACK), then wait for CONNECTED.
    Announce {
        mem: Box<ClientMem>,
        next: usize,
        peer: String,
    },
    Done,
}

/// The client's side of one control connection. See the module documentation.
pub struct ClientSession {
    cfg: ClientCfg,
    state: CState,
}

impl ClientSession {
    pub fn new(cfg: ClientCfg) -> ClientSession {
        ClientSession {
            cfg,
            state: CState::WaitHello,
        }
    }

    /// The `n`-th message of the announcement (INIT, ADD_REGION, ADD_RING..., CONNECT).
    fn announcement(cfg: &ClientCfg, mem: &ClientMem, n: usize) -> Option<(Msg, Option<RawFd>)> {
        let rings = mem.layout.len();
        Some(match n {
            0 => (
                Msg::Init {
                    version: VERSION,
                    id: cfg.id,
                    mode: MODE_ETHERNET,
                    secret: cfg.secret,
                    name: "ferrovs".into(),
                },
                None,
            ),
            1 => (
                Msg::AddRegion {
                    index: 0,
                    size: mem.size,
                },
                Some(mem.fd.as_raw_fd()),
            ),
            n if n < 2 + rings => {
                let (s2m, index, offset) = mem.layout[n - 2];
                (
                    Msg::AddRing {
                        flags: if s2m { RING_FLAG_S2M } else { 0 },
                        index,
                        region: 0,
                        offset,
                        log2_ring_size: mem.log2,
                        private_hdr_size: 0,
                    },
                    mem.efd(n - 2),
                )
            }
            n if n == 2 + rings => (
                Msg::Connect {
                    if_name: cfg.name.clone(),
                },
                None,
            ),
            _ => return None,
        })
    }

    /// Handles one message from the server. An error ends the session.
    pub fn on_msg(&mut self, m: Msg) -> Result<Step, String> {
        if let Msg::Disconnect { code, reason } = &m {
            self.state = CState::Done;
            return Ok(Step::Closed(format!(
                "peer disconnected ({code}): {reason}"
            )));
        }
        match (&mut self.state, m) {
            (
                CState::WaitHello,
                Msg::Hello {
                    name,
                    min_version,
                    max_version,
                    max_m2s_ring,
                    max_s2m_ring,
                    max_log2_ring_size,
                    ..
                },
            ) => {
                if !(min_version..=max_version).contains(&VERSION) {
                    return Err(format!(
                        "server speaks memif {min_version:#06x}..{max_version:#06x}, we speak {VERSION:#06x}"
                    ));
                }
                if max_log2_ring_size == 0 {
                    return Err("server allows no ring size".into());
                }
                let nq = self
                    .cfg
                    .n_queues
                    .min(usize::from(max_m2s_ring) + 1)
                    .min(usize::from(max_s2m_ring) + 1)
                    .clamp(1, MAX_QUEUES);
                let log2 = self.cfg.log2.min(max_log2_ring_size).min(MAX_LOG2_RING);
                let mem = ClientMem::create(nq, log2, self.cfg.bsize)?;
                let first = Self::announcement(&self.cfg, &mem, 0);
                self.state = CState::Announce {
                    mem: Box::new(mem),
                    next: 1,
                    peer: name,
                };
                Ok(Step::Send(first.into_iter().collect()))
            }
            (CState::Announce { mem, next, .. }, Msg::Ack) => {
                match Self::announcement(&self.cfg, mem, *next) {
                    Some(m) => {
                        *next += 1;
                        Ok(Step::Send(vec![m]))
                    }
                    None => Err("unexpected ACK".into()),
                }
            }
            (CState::Announce { .. }, Msg::Connected { if_name }) => {
                match std::mem::replace(&mut self.state, CState::Done) {
                    CState::Announce { mem, peer, .. } => Ok(Step::Connected {
                        mem,
                        peer: if if_name.is_empty() { peer } else { if_name },
                    }),
                    _ => Err("internal state".into()),
                }
            }
            (_, m) => Err(format!("unexpected message {}", name_of(&m))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(id: u32) -> Option<Iface> {
        (id == 7).then_some(Iface {
            secret: crate::memif::msg::secret_field("pw").unwrap_or_default(),
            busy: false,
        })
    }

    fn init(id: u32, secret: &str) -> Msg {
        Msg::Init {
            version: VERSION,
            id,
            mode: MODE_ETHERNET,
            secret: crate::memif::msg::secret_field(secret).unwrap_or_default(),
            name: "c".into(),
        }
    }

    #[test]
    fn server_checks_init_and_announcements() {
        let mut s = ServerSession::new();
        assert!(s.on_msg(init(8, "pw"), None, &dir).is_err());
        let mut s = ServerSession::new();
        assert_eq!(
            s.on_msg(init(7, "nope"), None, &dir).err().as_deref(),
            Some("incorrect secret")
        );
        let mut s = ServerSession::new();
        assert!(matches!(
            s.on_msg(init(7, "pw"), None, &dir),
            Ok(Step::Send(_))
        ));
        assert_eq!(s.id(), Some(7));
        // A region without its memfd, and messages out of place, end the session.
        assert!(s
            .on_msg(
                Msg::AddRegion {
                    index: 0,
                    size: 4096
                },
                None,
                &dir
            )
            .is_err());
        let mut s = ServerSession::new();
        assert!(s
            .on_msg(
                Msg::Connect {
                    if_name: "x".into()
                },
                None,
                &dir
            )
            .is_err());
        let mut s = ServerSession::new();
        assert!(matches!(
            s.on_msg(
                Msg::Disconnect {
                    code: 1,
                    reason: "bye".into()
                },
                None,
                &dir
            ),
            Ok(Step::Closed(_))
        ));
    }

    #[test]
    fn client_announces_within_server_limits() {
        let mut c = ClientSession::new(ClientCfg {
            id: 3,
            secret: [0; SECRET_SIZE],
            name: "m0".into(),
            n_queues: 4,
            log2: 12,
            bsize: 2048,
        });
        let Ok(Step::Send(v)) = c.on_msg(Msg::Hello {
            name: "srv".into(),
            min_version: VERSION,
            max_version: VERSION,
            max_region: 0,
            max_m2s_ring: 1,
            max_s2m_ring: 1,
            max_log2_ring_size: 8,
        }) else {
            panic!("no INIT");
        };
        assert!(matches!(v[0].0, Msg::Init { id: 3, .. }));
        let mut rings = 0;
        let mut sizes = Vec::new();
        loop {
            match c.on_msg(Msg::Ack) {
                Ok(Step::Send(v)) => match &v[0].0 {
                    Msg::AddRing { log2_ring_size, .. } => {
                        rings += 1;
                        sizes.push(*log2_ring_size);
                        assert!(v[0].1.is_some());
                    }
                    Msg::AddRegion { .. } => assert!(v[0].1.is_some()),
                    Msg::Connect { .. } => break,
                    m => panic!("unexpected {m:?}"),
                },
                _ => panic!("announcement stopped"),
            }
        }
        assert_eq!(rings, 4, "two queue pairs (the server allows two)");
        assert!(sizes.iter().all(|&s| s == 8));
        assert!(matches!(
            c.on_msg(Msg::Connected {
                if_name: "s".into()
            }),
            Ok(Step::Connected { .. })
        ));
    }
}
