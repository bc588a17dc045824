//! The poll-mode thread and the handle the control plane uses to talk to it.
//!
//! One thread owns the [`Switch`] and loops: poll every receiving port, forward, account the
//! cycles. Between polls it runs the closures the control plane sent ([`PmdHandle::call`]), so
//! configuration changes and status reads see the switch between two batches, never in the
//! middle of one, and the fast path takes no lock.
//!
//! ## Idle back-off
//! The thread busy-polls while traffic is flowing. Only after [`IDLE_BEFORE_SLEEP`] without
//! a single packet does it start sleeping on its command channel, for a time that doubles
//! from 1 µs up to [`MAX_SLEEP_US`]; a command wakes it at once and any received packet
//! returns it to busy polling. Idle ports therefore cost almost no CPU, while a port that
//! receives bursts with short gaps (as veths fed by a generator do) is never left waiting,
//! at the price of up to `MAX_SLEEP_US` of extra latency for the first packet after a quiet
//! spell.

use crate::switch::Switch;
use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long without any packet before the thread starts sleeping.
pub const IDLE_BEFORE_SLEEP: Duration = Duration::from_millis(20);
/// The longest idle sleep.
pub const MAX_SLEEP_US: u64 = 1_000;
/// How long a control call waits for the poll thread.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

type Command = Box<dyn FnOnce(&mut Switch) + Send>;

enum Msg {
    Run(Command),
    Stop,
}

/// The control plane's handle on a running poll thread.
pub struct PmdHandle {
    tx: Sender<Msg>,
    thread: Option<JoinHandle<()>>,
}

impl PmdHandle {
    /// Starts a poll thread that owns `sw`.
    pub fn spawn(sw: Switch) -> std::io::Result<PmdHandle> {
        Self::spawn_on(sw, "pmd0", None)
    }

    /// Starts a poll thread named `name` that owns `sw`, pinned to CPU `core` if given.
    pub fn spawn_on(mut sw: Switch, name: &str, core: Option<usize>) -> std::io::Result<PmdHandle> {
        let (tx, rx) = unbounded();
        sw.core_id = core;
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                if let Some(c) = sw.core_id {
                    if let Err(e) = pin_to(c) {
                        eprintln!("ferrovs: cannot pin the poll thread to core {c}: {e}");
                    }
                }
                pmd_main(sw, rx)
            })?;
        Ok(PmdHandle {
            tx,
            thread: Some(thread),
        })
    }

    /// Runs `f` on the poll thread between two polls and returns its result.
    pub fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Switch) -> R + Send + 'static,
    ) -> Result<R, String> {
        let (rtx, rrx) = bounded(1);
        let cmd: Command = Box::new(move |sw| {
            let _ = rtx.send(f(sw));
        });
        self.tx
            .send(Msg::Run(cmd))
            .map_err(|_| "the poll thread has stopped".to_string())?;
        rrx.recv_timeout(CALL_TIMEOUT)
            .map_err(|_| "the poll thread did not answer".to_string())
    }

    /// Stops the thread after it closes every port.
    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        let _ = self.tx.send(Msg::Stop);
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

fn pmd_main(mut sw: Switch, rx: Receiver<Msg>) {
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
                        f(&mut sw);
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
            match rx.recv_timeout(Duration::from_micros(sleep_us)) {
                Ok(Msg::Run(f)) => f(&mut sw),
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
