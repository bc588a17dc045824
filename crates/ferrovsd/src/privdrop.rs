//! `--user USER[:GROUP]`: run as an unprivileged user, keeping only the capabilities a
//! switch needs, as ovs-vswitchd's `--user` does.
//!
//! [`become_user`] runs once, early in the daemon (before any thread but the logger's exists
//! and before the database, sockets and pidfile are created), so every file the daemon makes
//! afterwards belongs to the new user:
//!
//! 1. resolve USER (and GROUP, else USER's primary group) with `getpwnam_r`/`getgrnam_r`;
//! 2. hand the rundir and dbdir to that user (`chown`): the database, sockets and pidfile
//!    are created there afterwards;
//! 3. `PR_SET_KEEPCAPS`, then `setgroups([GID])`, `setresgid`, `setresuid` (real, effective
//!    and saved ids, so root cannot be regained);
//! 4. permitted and effective capabilities are set to [`KEPT`] and nothing else; the
//!    inheritable and ambient sets are cleared, so programs the daemon runs get none.
//!
//! [`KEPT`]: `CAP_NET_ADMIN` (TAP devices, link settings, XDP attach), `CAP_NET_RAW`
//! (AF_PACKET and AF_XDP sockets), `CAP_NET_BIND_SERVICE` (OpenFlow/OVSDB remotes on low
//! ports), `CAP_IPC_LOCK` (locked AF_XDP UMEM and packet pools) and `CAP_BPF` (loading the
//! AF_XDP redirect program). File-system privileges (`CAP_DAC_OVERRIDE`, `CAP_CHOWN`,
//! `CAP_SYS_ADMIN`, ...) are gone: a hostile database entry can no longer reach files the
//! user could not.
//!
//! Every failure is an error naming the step; the daemon then refuses to start rather than
//! run with more privilege than asked for.

use caps::{CapSet, Capability, CapsHashSet};
use std::ffi::{CStr, CString};
use std::path::Path;

/// The capabilities kept; see the module documentation.
pub const KEPT: [Capability; 5] = [
    Capability::CAP_NET_ADMIN,
    Capability::CAP_NET_RAW,
    Capability::CAP_NET_BIND_SERVICE,
    Capability::CAP_IPC_LOCK,
    Capability::CAP_BPF,
];

/// A resolved `USER[:GROUP]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user: String,
    pub uid: libc::uid_t,
    pub gid: libc::gid_t,
}

fn cstring(what: &str, s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("--user: {what} '{s}' contains a NUL byte"))
}

/// Resolves `USER[:GROUP]` (names or numeric ids).
pub fn resolve(spec: &str) -> Result<Identity, String> {
    let (user, group) = match spec.split_once(':') {
        Some((u, g)) => (u, Some(g)),
        None => (spec, None),
    };
    if user.is_empty() {
        return Err("--user: empty user name".into());
    }
    let (uid, primary) = lookup_user(user)?;
    let gid = match group {
        None | Some("") => primary,
        Some(g) => lookup_group(g)?,
    };
    Ok(Identity {
        user: user.to_string(),
        uid,
        gid,
    })
}

fn lookup_user(name: &str) -> Result<(libc::uid_t, libc::gid_t), String> {
    let c = cstring("user", name)?;
    let mut buf = vec![0 as libc::c_char; 16 << 10];
    // SAFETY: `passwd` is plain data for which all-zero is valid; getpwnam_r writes only into
    // `pw`, `buf` (of the length passed) and `out`, all live for the call.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    let rc =
        unsafe { libc::getpwnam_r(c.as_ptr(), &mut pw, buf.as_mut_ptr(), buf.len(), &mut out) };
    if rc == 0 && !out.is_null() {
        return Ok((pw.pw_uid, pw.pw_gid));
    }
    if let Ok(uid) = name.parse::<libc::uid_t>() {
        return Ok((uid, uid));
    }
    Err(format!("--user: no user named '{name}'"))
}

fn lookup_group(name: &str) -> Result<libc::gid_t, String> {
    let c = cstring("group", name)?;
    let mut buf = vec![0 as libc::c_char; 16 << 10];
    // SAFETY: as in `lookup_user`, for `group` and getgrnam_r.
    let mut gr: libc::group = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::group = std::ptr::null_mut();
    let rc =
        unsafe { libc::getgrnam_r(c.as_ptr(), &mut gr, buf.as_mut_ptr(), buf.len(), &mut out) };
    if rc == 0 && !out.is_null() {
        return Ok(gr.gr_gid);
    }
    name.parse::<libc::gid_t>()
        .map_err(|_| format!("--user: no group named '{name}'"))
}

fn os_err(step: &str) -> String {
    format!("--user: {step} failed: {}", std::io::Error::last_os_error())
}

fn chown(dir: &Path, id: &Identity) -> Result<(), String> {
    std::os::unix::fs::chown(dir, Some(id.uid), Some(id.gid))
        .map_err(|e| format!("--user: cannot give {} to {}: {e}", dir.display(), id.user))
}

/// Becomes `id`, handing `dirs` over first. See the module documentation.
pub fn become_user(id: &Identity, dirs: &[&Path]) -> Result<(), String> {
    for d in dirs {
        chown(d, id)?;
    }
    // SAFETY: plain prctl/setgroups/setresgid/setresuid calls with valid arguments; the
    // group list is a live one-element array.
    unsafe {
        if libc::prctl(libc::PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0 {
            return Err(os_err("prctl(PR_SET_KEEPCAPS)"));
        }
        let groups = [id.gid];
        if libc::setgroups(1, groups.as_ptr()) != 0 {
            return Err(os_err("setgroups"));
        }
        if libc::setresgid(id.gid, id.gid, id.gid) != 0 {
            return Err(os_err("setresgid"));
        }
        if libc::setresuid(id.uid, id.uid, id.uid) != 0 {
            return Err(os_err("setresuid"));
        }
    }
    let keep: CapsHashSet = KEPT.iter().copied().collect();
    caps::set(None, CapSet::Effective, &CapsHashSet::new())
        .and_then(|_| caps::set(None, CapSet::Permitted, &keep))
        .and_then(|_| caps::set(None, CapSet::Effective, &keep))
        .and_then(|_| caps::set(None, CapSet::Inheritable, &CapsHashSet::new()))
        .and_then(|_| caps::clear(None, CapSet::Ambient))
        .map_err(|e| format!("--user: setting capabilities failed: {e}"))?;
    // SAFETY: plain prctl call.
    unsafe {
        libc::prctl(libc::PR_SET_KEEPCAPS, 0, 0, 0, 0);
    }
    Ok(())
}

/// Makes every file and socket the daemon creates from now on at most `rwxrwx---` (sockets
/// `0770`, as ovs-vswitchd's): the group may connect, others may not.
pub fn restrict_umask() {
    // SAFETY: umask(2) cannot fail.
    unsafe {
        libc::umask(0o007);
    }
}

/// The user name of a uid, for log lines.
pub fn user_name(uid: libc::uid_t) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 16 << 10];
    // SAFETY: as in `lookup_user`, for getpwuid_r; `pw_name` points into `buf`, read before
    // `buf` goes.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    let rc = unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut out) };
    if rc != 0 || out.is_null() || pw.pw_name.is_null() {
        return None;
    }
    // SAFETY: a non-null pw_name is a NUL-terminated string inside `buf`.
    Some(
        unsafe { CStr::from_ptr(pw.pw_name) }
            .to_string_lossy()
            .into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_names_and_ids_and_refuses_unknown_ones() {
        let root = resolve("root").expect("root exists");
        assert_eq!((root.uid, root.gid), (0, 0));
        let n = resolve("nobody:nogroup").expect("Debian has nobody:nogroup");
        assert_eq!(n.uid, 65534);
        assert_eq!(user_name(0).as_deref(), Some("root"));
        assert!(resolve("no-such-user-ferrovs")
            .unwrap_err()
            .contains("no user named"));
        assert!(resolve("root:no-such-group-ferrovs")
            .unwrap_err()
            .contains("no group"));
        assert!(resolve(":x").is_err());
        assert!(resolve("a\0b").unwrap_err().contains("NUL"));
    }
}
