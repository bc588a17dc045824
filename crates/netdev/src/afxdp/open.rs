//! Opening a port: the XDP program, its map and one socket per queue, in the first mode that works.

use super::*;

impl AfxdpPort {
    /// Opens interface `name` (options in the module documentation).
    pub fn open(name: &str, opts: &Options) -> Result<AfxdpPort, NetdevError> {
        let cfg = parse_options(opts)?;
        sys::check_ifname(KIND, name)?;
        let err = |call: &str, e: io::Error| sys::os_error(KIND, name, call, &e);
        let ctl = sys::ctl_socket().map_err(|e| err("socket", e))?;
        let s = ctl.as_raw_fd();
        let ifindex = sys::if_index(s, name).map_err(|e| err("SIOCGIFINDEX", e))?;
        let mtu = sys::if_mtu(s, name).map_err(|e| err("SIOCGIFMTU", e))?;
        let mac = sys::if_hwaddr(s, name).map_err(|e| err("SIOCGIFHWADDR", e))?;
        // Room for the frame (MTU + Ethernet header + two VLAN tags) after the kernel's headroom.
        let need = mtu + 22;
        let frame_size = if need <= 2048 - XDP_PACKET_HEADROOM {
            2048
        } else if need <= 4096 - XDP_PACKET_HEADROOM {
            4096
        } else {
            return Err(port_err(
                name,
                format!("MTU {mtu} is too large for AF_XDP frames of 4 KiB"),
            ));
        };
        sys::if_up(s, name).map_err(|e| err("SIOCSIFFLAGS(IFF_UP)", e))?;

        let mut rtnl = Rtnl::open().map_err(|e| err("socket(NETLINK_ROUTE)", e))?;
        clear_stale(&mut rtnl, name, ifindex, true)?;
        drop(rtnl);

        let modes: &[XdpMode] = match cfg.mode {
            XdpMode::BestEffort => &[
                XdpMode::NativeWithZerocopy,
                XdpMode::Native,
                XdpMode::Generic,
            ],
            XdpMode::NativeWithZerocopy => &[XdpMode::NativeWithZerocopy],
            XdpMode::Native => &[XdpMode::Native],
            XdpMode::Generic => &[XdpMode::Generic],
        };
        let mut failures = Vec::new();
        for &mode in modes {
            match try_mode(ifindex, mode, &cfg, frame_size) {
                Ok(setup) => {
                    let link = LinkCache::new(s, name, mtu);
                    let Setup { attach, queues } = setup;
                    let fds: Vec<RawFd> = queues.iter().map(|q| q.fd()).collect();
                    let n = queues.len();
                    return Ok(AfxdpPort {
                        name: name.to_string(),
                        ifindex,
                        mac,
                        mode,
                        cfg,
                        attach: Some(attach),
                        queues: queues
                            .into_iter()
                            .map(|q| Arc::new(Mutex::new(q)))
                            .collect(),
                        fds,
                        held: vec![true; n],
                        tx_q: 0,
                        ctl,
                        link,
                        stats: PortStats::default(),
                        next_rxq: 0,
                    });
                }
                Err(why) => failures.push(format!("{mode}: {why}")),
            }
        }
        let what = if failures.len() == 1 {
            failures.remove(0)
        } else {
            format!("no XDP mode worked ({})", failures.join("; "))
        };
        Err(port_err(name, what))
    }

    /// The mode in use (never [`XdpMode::BestEffort`]).
    pub fn xdp_mode(&self) -> XdpMode {
        self.mode
    }

    /// Frames received so far on each queue.
    pub fn rxq_packets(&self) -> Vec<u64> {
        self.queues.iter().map(|q| lock_q(q).rx_packets).collect()
    }

    /// Test hook: forgets the port without detaching its program, as a crash would.
    #[doc(hidden)]
    pub fn leak_for_tests(mut self) {
        if let Some(a) = self.attach.take() {
            live_progs().retain(|p| *p != a.prog_id);
            std::mem::forget(a);
            self.queues.clear();
        }
    }
}

/// Builds everything for one mode; on error, whatever was built is dropped (undone).
pub(super) fn try_mode(
    ifindex: u32,
    mode: XdpMode,
    cfg: &Config,
    frame_size: u32,
) -> Result<Setup, String> {
    let map_name = format!("{}{}", bpf::MAP_PREFIX, std::process::id());
    let map = bpf::create_xskmap(cfg.n_rxq, &map_name)
        .map_err(|e| format!("BPF_MAP_CREATE(XSKMAP) failed: {}", describe(&e, None)))?;
    let prog = bpf::load_redirect_prog(&map).map_err(|e| {
        format!(
            "BPF_PROG_LOAD(XDP) failed: {}",
            describe(&e.err, e.verifier.as_deref())
        )
    })?;
    let prog_id = bpf::prog_info(&prog)
        .map(|i| i.id)
        .map_err(|e| format!("BPF_OBJ_GET_INFO_BY_FD failed: {}", describe(&e, None)))?;
    let mut queues = Vec::with_capacity(cfg.n_rxq as usize);
    for q in 0..cfg.n_rxq {
        let xc = XskConfig {
            ifindex,
            queue: q,
            zerocopy: mode == XdpMode::NativeWithZerocopy,
            need_wakeup: cfg.need_wakeup,
            frame_size,
            ring: cfg.ring,
        };
        let x = Xsk::open(&xc).map_err(|XskError { call, err }| {
            let hint = match (err.raw_os_error(), call) {
                (Some(libc::EOPNOTSUPP), "bind(XDP_ZEROCOPY)") => {
                    Some("zero-copy not supported by driver")
                }
                (Some(libc::EINVAL), _) if call.starts_with("bind") && q > 0 => {
                    Some("no such queue")
                }
                (Some(libc::EBUSY), _) if call.starts_with("bind") => {
                    Some("queue in use by another AF_XDP socket")
                }
                _ => None,
            };
            format!("queue {q}: {call} failed: {}", describe(&err, hint))
        })?;
        bpf::map_set_socket(&map, q, x.fd()).map_err(|e| {
            format!(
                "queue {q}: BPF_MAP_UPDATE_ELEM(XSKMAP) failed: {}",
                describe(&e, None)
            )
        })?;
        queues.push(x);
    }
    let mut rtnl = Rtnl::open()
        .map_err(|e| format!("socket(NETLINK_ROUTE) failed: {}", describe(&e, None)))?;
    let flags = mode.attach_flags();
    rtnl.set_xdp(
        ifindex,
        prog.as_raw_fd(),
        flags | XDP_FLAGS_UPDATE_IF_NOEXIST,
        None,
    )
    .map_err(|NlError { err, msg }| {
        let hint = match (err.raw_os_error(), msg.as_deref()) {
            (_, Some(m)) => Some(m.to_string()),
            (Some(libc::EOPNOTSUPP), None) if flags == XDP_FLAGS_DRV_MODE => {
                Some("native XDP not supported by driver".to_string())
            }
            (Some(libc::EBUSY), None) => Some("another XDP program is attached".to_string()),
            _ => None,
        };
        format!(
            "RTM_SETLINK(IFLA_XDP) failed: {}",
            describe(&err, hint.as_deref())
        )
    })?;
    live_progs().push(prog_id);
    Ok(Setup {
        attach: Attachment {
            rtnl,
            ifindex,
            flags,
            prog_id,
            prog,
            _map: map,
        },
        queues,
    })
}
