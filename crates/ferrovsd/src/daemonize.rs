//! Running as a service, the way ovs-vswitchd does: `--detach`, `--monitor`, a locked pidfile,
//! a log file that `vlog/reopen` reopens, and the names `ovs-appctl` looks for.
//!
//! ## Order of events
//! `--monitor` and `--detach` fork, so they happen first, before the process has any thread
//! (fork keeps only the calling thread). With `--detach` the parent waits on a pipe and exits
//! only when the daemon says it is ready — after the database socket, every bridge's OpenFlow
//! socket and, last, the control socket listen — or exits non-zero when the daemon dies
//! first. With `--monitor` a monitor process stays behind and starts the daemon again when it
//! dies of a crash (a signal such as SIGSEGV or SIGABRT, or a Rust panic's exit status 101),
//! at most once every ten seconds; a normal exit or SIGTERM ends both.
//!
//! ## Pidfile
//! The daemon (not the monitor) creates the pidfile, takes a write lock on it with `fcntl`
//! (as OVS does, so `ovs-appctl` can tell a live pidfile from a stale one), writes its pid, and
//! keeps the descriptor open for its whole life; a second daemon on the same pidfile finds it
//! locked and refuses to start. The control socket also gets OVS's name
//! `RUNDIR/ferrovsd.PID.ctl` (a symlink), and with `--ovs-names` (on by default in OVS's run
//! directory) `ovs-vswitchd.pid` and `ovs-vswitchd.PID.ctl` too, so a bare `ovs-appctl` finds
//! ferrovs where it would find ovs-vswitchd.
//!
//! ## Safety
//! `fork`, `setsid`, `dup2`, `fcntl` and `waitpid` are called through `libc`; each call site
//! says why it is sound. No Rust object is shared across a fork.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn log(msg: &str) {
    crate::vswitch::vlog::info("vswitchd", msg);
}

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// The daemon's end of the readiness pipe (`--detach`).
pub struct Ready(Option<OwnedFd>);

impl Ready {
    /// No parent is waiting.
    pub fn none() -> Ready {
        Ready(None)
    }

    /// Tells the waiting parent that every socket listens (once).
    pub fn signal(&mut self) {
        if let Some(fd) = self.0.take() {
            let mut f = File::from(fd);
            let _ = f.write_all(b"R");
        }
    }
}

/// `--detach`: forks; the parent waits for [`Ready::signal`] and exits, the child returns.
pub fn detach() -> Result<Ready, String> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a valid array of two descriptors for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe: {}", errno()));
    }
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: called before the process starts any thread (main calls it first), so the child
    // is a complete copy of a single-threaded process.
    match unsafe { libc::fork() } {
        -1 => Err(format!("fork: {}", errno())),
        0 => {
            drop(rd);
            // SAFETY: setsid has no memory-safety preconditions; it detaches from the terminal.
            unsafe { libc::setsid() };
            let _ = std::env::set_current_dir("/");
            redirect_stdin_stdout();
            Ok(Ready(Some(wr)))
        }
        _child => {
            drop(wr);
            let mut b = [0u8; 1];
            let ok = matches!(File::from(rd).read(&mut b), Ok(1));
            if !ok {
                log("the daemon exited before it was ready (see its log)");
            }
            std::process::exit(if ok { 0 } else { 1 });
        }
    }
}

fn redirect_stdin_stdout() {
    if let Ok(null) = OpenOptions::new().read(true).write(true).open("/dev/null") {
        // SAFETY: both descriptors are open; dup2 replaces 0 and 1 atomically.
        unsafe {
            libc::dup2(null.as_raw_fd(), 0);
            libc::dup2(null.as_raw_fd(), 1);
        }
    }
}

/// After readiness, a detached daemon stops writing to the terminal it came from (its
/// console log destination goes nowhere; `--log-file` is the file destination).
pub fn quiet_stderr() {
    if let Ok(null) = OpenOptions::new().write(true).open("/dev/null") {
        // SAFETY: both descriptors are open.
        unsafe { libc::dup2(null.as_raw_fd(), 2) };
    }
}

/// True for a death that `--monitor` answers with a restart.
fn crashed(status: i32) -> bool {
    if libc::WIFSIGNALED(status) {
        let s = libc::WTERMSIG(status);
        return ![libc::SIGTERM, libc::SIGINT, libc::SIGKILL, libc::SIGHUP].contains(&s);
    }
    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 101
}

/// `--monitor`: forks the daemon and waits; restarts it after a crash. Returns in each
/// daemon child; the monitor itself never returns. `detached`: the monitor also stops
/// writing to the terminal once its first child runs.
pub fn monitor(detached: bool) -> Result<(), String> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, std::sync::Arc::clone(&stop))
            .map_err(|e| format!("monitor: signal handler: {e}"))?;
    }
    let mut last_start: Option<Instant> = None;
    loop {
        if let Some(t) = last_start {
            let since = t.elapsed();
            if since < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_secs(10) - since);
            }
        }
        last_start = Some(Instant::now());
        // SAFETY: the monitor never starts a thread (signal_hook::flag uses none), so the
        // child is a complete copy of a single-threaded process.
        let child = match unsafe { libc::fork() } {
            -1 => return Err(format!("monitor: fork: {}", errno())),
            0 => return Ok(()),
            pid => pid,
        };
        if detached {
            // The first daemon keeps the terminal until it is ready; the monitor lets go of
            // it now (a `--detach` caller waits for every holder of its pipes).
            quiet_stderr();
        }
        let mut status = 0;
        loop {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                // SAFETY: `child` is our own child process.
                unsafe { libc::kill(child, libc::SIGTERM) };
                // SAFETY: waits for our own child; `status` is a valid out-pointer.
                unsafe { libc::waitpid(child, &mut status, 0) };
                std::process::exit(0);
            }
            // SAFETY: as above, without blocking.
            let r = unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
            if r == child {
                break;
            }
            if r < 0 && errno().kind() != std::io::ErrorKind::Interrupted {
                std::process::exit(1);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        if !crashed(status) {
            let code = if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                0
            };
            std::process::exit(code);
        }
        log(&format!(
            "monitor: the daemon (pid {child}) crashed (status {status:#x}); restarting"
        ));
    }
}

/// The locked pidfile; removed when dropped.
pub struct Pidfile {
    path: PathBuf,
    _file: File,
}

impl Pidfile {
    /// Creates, locks and fills `path`. Fails if another process holds the lock.
    pub fn create(path: &Path) -> Result<Pidfile, String> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .open(path)
            .map_err(|e| format!("pidfile {}: {e}", path.display()))?;
        // SAFETY: an all-zero flock is a valid value to fill in.
        let mut lk: libc::flock = unsafe { std::mem::zeroed() };
        lk.l_type = libc::F_WRLCK as libc::c_short;
        lk.l_whence = libc::SEEK_SET as libc::c_short;
        // SAFETY: the descriptor is open and `lk` is a valid flock for F_SETLK to read.
        if unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETLK, &lk) } != 0 {
            let mut other = String::new();
            let _ = (&f).read_to_string(&mut other);
            return Err(format!(
                "pidfile {} is locked by a running ferrovsd (pid {})",
                path.display(),
                other.trim()
            ));
        }
        f.set_len(0)
            .and_then(|_| (&f).write_all(format!("{}\n", std::process::id()).as_bytes()))
            .map_err(|e| format!("pidfile {}: {e}", path.display()))?;
        Ok(Pidfile {
            path: path.to_path_buf(),
            _file: f,
        })
    }
}

impl Drop for Pidfile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Symlinks with OVS's names for the pidfile and control socket; removed when dropped.
pub struct OvsNames(Vec<PathBuf>);

impl OvsNames {
    /// `RUNDIR/ferrovsd.PID.ctl`, and with `ovs` also `ovs-vswitchd.pid` and
    /// `ovs-vswitchd.PID.ctl`, pointing at the real pidfile and control socket.
    pub fn create(rundir: &Path, pidfile: Option<&Path>, ctl: &Path, ovs: bool) -> OvsNames {
        let pid = std::process::id();
        let mut links = vec![(
            rundir.join(format!("ferrovsd.{pid}.ctl")),
            ctl.to_path_buf(),
        )];
        if ovs {
            links.push((
                rundir.join(format!("ovs-vswitchd.{pid}.ctl")),
                ctl.to_path_buf(),
            ));
            if let Some(p) = pidfile {
                links.push((rundir.join("ovs-vswitchd.pid"), p.to_path_buf()));
            }
        }
        let mut made = Vec::new();
        for (link, target) in links {
            if link == target {
                continue;
            }
            // Only a stale symlink of ours is replaced, never a file someone else made.
            if std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()) {
                let _ = std::fs::remove_file(&link);
            }
            match std::os::unix::fs::symlink(&target, &link) {
                Ok(()) => made.push(link),
                Err(e) => log(&format!("cannot create {}: {e}", link.display())),
            }
        }
        OvsNames(made)
    }
}

impl Drop for OvsNames {
    fn drop(&mut self) {
        for l in &self.0 {
            let _ = std::fs::remove_file(l);
        }
    }
}

/// `--log-file`: the file destination writes to `path` from now on (see
/// [`crate::vswitch::vlog`]).
pub fn log_to(path: &Path) -> Result<(), String> {
    crate::vswitch::vlog::set_file(path)
}

/// `vlog/reopen`.
pub fn reopen_log() -> Result<String, String> {
    crate::vswitch::vlog::reopen()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_pidfile_lock_is_refused_and_the_file_goes_away() {
        let dir = std::env::temp_dir().join(format!("fvpid-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let p = dir.join("d.pid");
        let held = Pidfile::create(&p).expect("first");
        let text = std::fs::read_to_string(&p).expect("read");
        assert_eq!(text.trim(), std::process::id().to_string());
        // fcntl locks are per process, so a second daemon's refusal is checked across
        // processes by the integration tests.
        drop(held);
        assert!(!p.exists(), "pidfile removed on drop");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn crash_statuses() {
        // Exit 0 and 1: normal; 101: a Rust panic; SIGSEGV: crash; SIGTERM: asked to stop.
        assert!(!crashed(0));
        assert!(!crashed(1 << 8));
        assert!(crashed(101 << 8));
        assert!(crashed(libc::SIGSEGV));
        assert!(crashed(libc::SIGABRT));
        assert!(!crashed(libc::SIGTERM));
    }
}
