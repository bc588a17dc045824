//! Programs left attached by a process that is gone: who owns an attached program, and clearing the
//! stale ones.

use super::*;

/// Whose program is attached.
pub(super) enum Owner {
    /// A ferrovs program whose process is gone (or that no port of this process owns).
    Stale,
    /// A ferrovs program of a running process.
    Live(u32),
    /// Someone else's program, by name.
    Foreign(String),
}

/// Decides whose program `id` is. `Ok(None)` if it vanished meanwhile.
pub(super) fn owner_of(id: u32) -> io::Result<Option<(OwnedFd, Owner)>> {
    let fd = match bpf::prog_by_id(id) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => return Err(e),
    };
    let info = bpf::prog_info(&fd)?;
    if info.name != bpf::PROG_NAME {
        return Ok(Some((fd, Owner::Foreign(info.name))));
    }
    let pid = info
        .map_ids
        .iter()
        .filter_map(|m| bpf::map_name_by_id(*m).ok())
        .find_map(|n| n.strip_prefix(bpf::MAP_PREFIX)?.parse::<u32>().ok());
    let owner = match pid {
        None => Owner::Stale,
        Some(p) if p == std::process::id() => {
            if live_progs().contains(&id) {
                Owner::Live(p)
            } else {
                Owner::Stale
            }
        }
        Some(p) => {
            // SAFETY: kill with signal 0 only checks whether the process exists.
            let rc = unsafe { libc::kill(p as libc::pid_t, 0) };
            if rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) {
                Owner::Live(p)
            } else {
                Owner::Stale
            }
        }
    };
    Ok(Some((fd, owner)))
}

/// Goes through the programs attached to `ifindex` (native and generic): detaches stale
/// ferrovs ones; with `strict`, fails on a live or foreign one. Returns how many were removed.
pub(super) fn clear_stale(
    rtnl: &mut Rtnl,
    name: &str,
    ifindex: u32,
    strict: bool,
) -> Result<usize, NetdevError> {
    let st: XdpState = rtnl.xdp_state(ifindex).map_err(|e| {
        port_err(
            name,
            format!("RTM_GETLINK failed: {}", describe(&e.err, e.msg.as_deref())),
        )
    })?;
    let mut removed = 0;
    for (id, flags, mode) in [
        (st.drv, XDP_FLAGS_DRV_MODE, "native"),
        (st.skb, XDP_FLAGS_SKB_MODE, "generic"),
    ] {
        if id == 0 {
            continue;
        }
        let found = owner_of(id).map_err(|e| {
            port_err(
                name,
                format!(
                    "inspecting attached XDP program {id} failed: {}",
                    describe(&e, None)
                ),
            )
        })?;
        let Some((fd, owner)) = found else { continue };
        match owner {
            Owner::Stale => {
                rtnl.set_xdp(ifindex, -1, flags | XDP_FLAGS_REPLACE, Some(fd.as_raw_fd()))
                    .map_err(|e| {
                        port_err(
                            name,
                            format!(
                                "detaching stale XDP program {id} ({mode}) failed: {}",
                                describe(&e.err, e.msg.as_deref())
                            ),
                        )
                    })?;
                removed += 1;
            }
            Owner::Live(pid) if strict => {
                return Err(port_err(
                    name,
                    format!(
                        "interface is in use by ferrovs process {pid} \
                         (XDP program {} id {id}, {mode} mode)",
                        bpf::PROG_NAME
                    ),
                ))
            }
            Owner::Foreign(prog) if strict => {
                return Err(port_err(
                    name,
                    format!(
                        "another XDP program '{prog}' (id {id}) is attached in {mode} mode; \
                         remove it first (ip link set dev {name} xdp off)"
                    ),
                ))
            }
            Owner::Live(_) | Owner::Foreign(_) => {}
        }
    }
    Ok(removed)
}

/// Detaches ferrovs XDP programs left on interface `ifname` by processes that no longer run.
/// Programs of running ferrovs processes and foreign programs are left alone. Returns how many
/// programs were removed. For the daemon to call at start-up; opening a port does the same.
pub fn remove_stale(ifname: &str) -> Result<usize, NetdevError> {
    sys::check_ifname(KIND, ifname)?;
    let err = |call: &str, e: io::Error| sys::os_error(KIND, ifname, call, &e);
    let ctl = sys::ctl_socket().map_err(|e| err("socket", e))?;
    let ifindex = sys::if_index(ctl.as_raw_fd(), ifname).map_err(|e| err("SIOCGIFINDEX", e))?;
    let mut rtnl = Rtnl::open().map_err(|e| err("socket(NETLINK_ROUTE)", e))?;
    clear_stale(&mut rtnl, ifname, ifindex, false)
}
