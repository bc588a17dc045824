//! The poll-mode thread and the handle the control plane uses to talk to it.
//!
//! One thread owns the [`PollSet`] and loops: poll every receiving port, forward, account the
//! cycles. Between polls it runs the closures the control plane sent ([`PmdHandle::call`]), so
//! configuration changes and status reads see the switch between two batches, never in the
//! middle of one, and the fast path takes no lock.
//!
//! ## Idle back-off
//! The thread busy-polls while traffic is flowing. Only after [`IDLE_BEFORE_SLEEP`] without
//! a single packet does it start sleeping. When every queue it polls has a descriptor that
//! signals traffic ([`netdev::Port::rxq_fd`]: AF_PACKET, TAP, single-socket AF_XDP), it
//! sleeps in `poll(2)` on those descriptors and on an eventfd that every control call writes,
//! for up to [`DEEP_SLEEP_MS`] (housekeeping such as link checks runs in between): traffic
//! or a command wakes it at once, and idle ports cost nothing. Otherwise (pcap and null
//! ports, or upcalls in flight) it naps on its command channel for a time that doubles from
//! 1 µs up to [`MAX_SLEEP_US`]. Any received packet returns it to busy polling. While
//! asleep the modules are told they are parked (see `SwitchLogic::park`), so nothing waits
//! for a sleeping thread to finish a batch.

use crate::error::Error;
use crate::pollset::PollSet;
use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError, Sender};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long without any packet before the thread starts sleeping.
pub const IDLE_BEFORE_SLEEP: Duration = Duration::from_millis(20);
/// The longest idle sleep.
pub const MAX_SLEEP_US: u64 = 1_000;
/// The longest sleep in `poll(2)` on the queues' descriptors.
pub const DEEP_SLEEP_MS: i32 = 100;
/// How long a control call waits for the poll thread.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

type Command = Box<dyn FnOnce(&mut PollSet) + Send>;

enum Msg {
    Run(Command),
    Stop,
}

/// The control plane's handle on a running poll thread.
pub struct PmdHandle {
    tx: Sender<Msg>,
    thread: Option<JoinHandle<()>>,
    /// Written after every message so a thread asleep in `poll(2)` wakes.
    wake: Arc<OwnedFd>,
}

fn eventfd() -> std::io::Result<OwnedFd> {
    // SAFETY: plain eventfd(2) call; the result is checked before use.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn kick(fd: &OwnedFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64 to an eventfd; failure (counter full) means a
    // wake-up is already pending, which is all we want.
    unsafe {
        libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8);
    }
}

fn drain(fd: &OwnedFd) {
    let mut v: u64 = 0;
    // SAFETY: reads 8 bytes into a live u64 from a non-blocking eventfd.
    unsafe {
        libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8);
    }
}

impl PmdHandle {
    /// Starts a poll thread that owns `sw`.
    pub fn spawn(sw: PollSet) -> std::io::Result<PmdHandle> {
        Self::spawn_on(sw, "pmd0", None)
    }

    /// Starts a poll thread named `name` that owns `sw`, pinned to CPU `core` if given.
    pub fn spawn_on(
        mut sw: PollSet,
        name: &str,
        core: Option<usize>,
    ) -> std::io::Result<PmdHandle> {
        let (tx, rx) = unbounded();
        sw.core_id = core;
        let wake = Arc::new(eventfd()?);
        let w = Arc::clone(&wake);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                if let Some(c) = sw.core_id {
                    if let Err(e) = pin_to(c) {
                        log::warn!(target: "datapath", "cannot pin the poll thread to core {c}: {e}");
                    }
                }
                pmd_main(sw, rx, &w)
            })?;
        Ok(PmdHandle {
            tx,
            thread: Some(thread),
            wake,
        })
    }

    /// Runs `f` on the poll thread between two polls and returns its result.
    pub fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut PollSet) -> R + Send + 'static,
    ) -> Result<R, Error> {
        let (rtx, rrx) = bounded(1);
        let cmd: Command = Box::new(move |sw| {
            let _ = rtx.send(f(sw));
        });
        self.tx
            .send(Msg::Run(cmd))
            .map_err(|_| Error::ThreadStopped)?;
        kick(&self.wake);
        rrx.recv_timeout(CALL_TIMEOUT)
            .map_err(|_| Error::ThreadTimeout)
    }

    /// Stops the thread after it closes every port.
    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        kick(&self.wake);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for PmdHandle {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

/// Pins the calling thread to CPU `core`.
pub fn pin_to(core: usize) -> std::io::Result<()> {
    if core >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: `cpu_set_t` is plain data for which all-zero is the empty set; CPU_SET writes
    // within it because `core` is below CPU_SETSIZE; sched_setaffinity only reads the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Sleeps in `poll(2)` on `fds` and `wake` for up to [`DEEP_SLEEP_MS`].
fn deep_sleep(fds: &[std::os::fd::RawFd], wake: &OwnedFd) {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    p.push(libc::pollfd {
        fd: wake.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    });
    // SAFETY: `p` is a live array of `p.len()` pollfd structures; the descriptors belong to
    // ports this thread owns and stay open for the call.
    unsafe {
        libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, DEEP_SLEEP_MS);
    }
    drain(wake);
}

/// How many panics within [`PANIC_WINDOW`] a poll thread survives; one more aborts the process
/// (so that `--monitor` restarts the daemon) rather than keep a switch that cannot forward.
pub const MAX_PANICS: usize = 5;
/// See [`MAX_PANICS`].
pub const PANIC_WINDOW: Duration = Duration::from_secs(60);

/// The text of a panic payload.
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-text payload".into()
    }
}

/// Runs the poll loop; a panic in it (a bug, never expected) is logged and the loop starts
/// again with the same switch, ports and flow tables, so one bad packet or command costs the
/// batch it was in, not all forwarding. The control call that panicked gets "did not answer".
/// A thread that keeps panicking aborts the process (see [`MAX_PANICS`]).
fn pmd_main(mut sw: PollSet, rx: Receiver<Msg>, wake: &OwnedFd) {
    let name = std::thread::current().name().unwrap_or("pmd").to_string();
    let mut panics: std::collections::VecDeque<Instant> = std::collections::VecDeque::new();
    loop {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pmd_loop(&mut sw, &rx, wake)
        }));
        let Err(p) = r else { return };
        let now = Instant::now();
        panics.retain(|t| now.duration_since(*t) < PANIC_WINDOW);
        panics.push_back(now);
        sw.pmd.restarts += 1;
        if panics.len() > MAX_PANICS {
            log::error!(
                target: "datapath",
                "poll thread {name} panicked {} times within {} s (last: {}); aborting",
                panics.len(),
                PANIC_WINDOW.as_secs(),
                panic_text(p.as_ref())
            );
            std::process::abort();
        }
        log::error!(
            target: "datapath",
            "poll thread {name} panicked ({}); restarting its loop (restart {} in the last {} s)",
            panic_text(p.as_ref()),
            panics.len(),
            PANIC_WINDOW.as_secs()
        );
        sw.park(false);
        sw.resync_cycles();
    }
}

fn pmd_loop(sw: &mut PollSet, rx: &Receiver<Msg>, wake: &OwnedFd) {
    let mut idle: u32 = 0;
    let mut sleep_us: u64 = 1;
    let mut iter: u64 = 0;
    let mut idle_since = Instant::now();
    let mut sleeping = false;
    loop {
        let n = sw.poll_accounted();
        iter = iter.wrapping_add(1);
        if n > 0 {
            idle = 0;
            sleep_us = 1;
            sleeping = false;
        } else {
            idle = idle.saturating_add(1);
            // The clock costs ~20 ns: read it once when polls start coming back empty, and
            // then every 64 empty polls.
            if idle == 1 {
                idle_since = Instant::now();
            } else if !sleeping
                && idle.is_multiple_of(64)
                && idle_since.elapsed() >= IDLE_BEFORE_SLEEP
            {
                sleeping = true;
            }
        }
        if idle > 0 || iter & 63 == 0 {
            let mut ran = false;
            while let Ok(m) = rx.try_recv() {
                match m {
                    Msg::Run(f) => {
                        f(sw);
                        ran = true;
                    }
                    Msg::Stop => {
                        sw.shutdown();
                        return;
                    }
                }
            }
            if ran {
                // Control work is not any queue's load.
                sw.resync_cycles();
            }
        }
        if sleeping {
            let t0 = Instant::now();
            if let Some(fds) = sw.wake_fds() {
                sw.park(true);
                deep_sleep(&fds, wake);
                sw.park(false);
                sw.pmd.sleep_us += t0.elapsed().as_micros() as u64;
                sw.resync_cycles();
                continue;
            }
            match rx.recv_timeout(Duration::from_micros(sleep_us)) {
                Ok(Msg::Run(f)) => f(sw),
                Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => {
                    sw.shutdown();
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
            sw.pmd.sleep_us += t0.elapsed().as_micros() as u64;
            sw.resync_cycles();
            sleep_us = (sleep_us * 2).min(MAX_SLEEP_US);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_restarts_the_loop_with_the_same_switch() {
        let mut sw = PollSet::new(64);
        sw.pmd.packets = 7;
        let h = PmdHandle::spawn(sw).expect("poll thread");
        let r: Result<(), Error> = h.call(|_| panic!("injected"));
        assert!(r.is_err(), "the panicking call gets an error");
        // The same switch (its counters kept) answers the next call.
        let (packets, restarts) = h
            .call(|sw| (sw.pmd.packets, sw.pmd.restarts))
            .expect("alive");
        assert_eq!((packets, restarts), (7, 1));
        h.stop();
    }
}
