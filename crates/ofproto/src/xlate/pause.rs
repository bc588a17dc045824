//! Translation of Nicira's `controller(...)` action, its `pause`, and the resumption of a
//! paused pipeline (`NXT_RESUME`).
//!
//! Without `pause` the action is a packet-in like `output:CONTROLLER`, carrying the action's
//! reason, controller id and user data ([`PinExtra`]); with a meter it is a datapath
//! `clone(meter, controller)`, so that the meter limits the packet-ins and nothing else.
//! Every packet-in but a paused one goes through the controller meter (`OFPM_CONTROLLER`)
//! when it has no meter of its own and that meter is configured, as in OVS.
//!
//! With `pause` the pipeline stops there and its rest travels to the controller as a
//! continuation ([`crate::continuation`]). Stopping sets `stopped` like any other end of
//! the actions; as the translation unwinds, each action list it leaves (the paused one,
//! then the one whose `resubmit` led there, and so on out to the first table) records what
//! it had left to do as a [`Frame`]: its table, cookie, depth, `in_port`, the actions after
//! the one that was running and the rule's instructions after its apply-actions. At the
//! end the frames, the register stack and the action set (which does not run) are encoded
//! and the packet-in is the translation's last datapath action, so it carries the packet as
//! the actions before it made it. Such a translation is uncacheable: its continuation is
//! per packet.
//!
//! [`resume`] runs a continuation: the stack and action set come back, then each frame runs
//! in its table (a TTL exception ends only the frame it happened in, as it ends only the
//! table a resubmit ran), and the action set runs at the end, as it would have. A pause
//! while resuming freezes the frames not yet run after the new ones. The queue (`set_queue`,
//! `enqueue`) is not part of a continuation, as it is not of OVS 3.1's: the resumed packet
//! starts on queue 0, like one received on a port, whatever queue was in force at the pause,
//! and a `pop_queue` after the resume point goes back to 0.
//!
//! A `pause` inside `clone` or a group bucket does not pause (the copy has no pipeline of
//! its own to freeze); it is a plain packet-in, and the trace says so.

use super::{run, Ctx, XlateOut};
use crate::continuation::{Continuation, Frame};
use crate::odp::{DpAction, PacketInReason, PinExtra};
use crate::switch::Ofproto;
use openflow::controller::{Controller, NX_CTLR_NO_METER};
use openflow::messages::OFPM_CONTROLLER;
use openflow::{Action, Instruction};
use packet::flow::FlowKey;

/// A pause being unwound (see the module documentation).
pub(super) struct Pausing {
    max_len: u16,
    extra: PinExtra,
    table_id: u8,
    cookie: u64,
    meta: Box<crate::odp::PipelineMeta>,
    /// Innermost first.
    frames: Vec<Frame>,
}

impl Ctx<'_> {
    /// `controller(...)`.
    pub(super) fn controller(&mut self, c: &Controller) {
        // As OVS: `action` from a table-miss rule is an explicit miss.
        let reason = if c.reason == openflow::controller::OFPR_ACTION && self.miss_rule {
            PacketInReason::ExplicitMiss as u8
        } else {
            c.reason
        };
        let extra = PinExtra {
            reason,
            controller_id: c.controller_id,
            userdata: c.userdata.clone(),
            continuation: Vec::new(),
        };
        if c.pause && self.no_pause == 0 {
            self.note(|| " >> pausing the pipeline for the controller".into());
            self.pausing = Some(Box::new(Pausing {
                max_len: c.max_len,
                extra,
                table_id: self.table_id,
                cookie: self.cookie,
                meta: self.pipeline_meta(),
                frames: Vec::new(),
            }));
            self.uncacheable = true;
            self.stopped = true;
            return;
        }
        if c.pause {
            self.note(|| " >> no pause inside a clone or group bucket".into());
        }
        let pin = DpAction::Controller {
            max_len: c.max_len,
            reason: PacketInReason::Action,
            table_id: self.table_id,
            cookie: self.cookie,
            meta: self.pipeline_meta(),
            extra: Some(Box::new(extra)),
        };
        self.packet_in(pin, c.meter_id);
    }

    /// Sends a packet-in through `meter_id`, or when that is none through the controller
    /// meter (`OFPM_CONTROLLER`) if one is configured, as OVS meters its packet-ins: a
    /// datapath `clone(meter, controller)`, so that the meter drops packet-ins only.
    pub(super) fn packet_in(&mut self, pin: DpAction, meter_id: u32) {
        let meter = if meter_id != NX_CTLR_NO_METER {
            Some(meter_id)
        } else if self.of.has_meter(OFPM_CONTROLLER) {
            Some(OFPM_CONTROLLER)
        } else {
            None
        };
        match meter {
            Some(m) => self
                .out
                .push(DpAction::Clone(vec![DpAction::Meter(m), pin])),
            None => self.out.push(pin),
        }
    }

    /// Runs an action list whose rule has `rest` of its instructions still to run; when
    /// a pause stops it, records what it had left as a frame. True if a
    /// `check_pkt_larger` ran the rest of the list and `rest` (see `pktlen`).
    pub(super) fn apply(&mut self, acts: &[Action], rest: &[Instruction]) -> bool {
        for (k, a) in acts.iter().enumerate() {
            if self.stopped {
                break;
            }
            self.note(|| crate::text::action_text(a));
            if let Action::CheckPktLarger { pkt_len, ref dst } = *a {
                let after = acts.get(k + 1..).unwrap_or_default();
                self.check_pkt_larger(pkt_len, dst, after, rest);
                return true;
            }
            self.action(a);
            if let Some(p) = self.pausing.as_mut() {
                p.frames.push(Frame {
                    table_id: self.table_id,
                    cookie: self.cookie,
                    depth: self.depth,
                    in_port: self.flow.in_port,
                    actions: acts.get(k + 1..).unwrap_or_default().to_vec(),
                    rest: rest.to_vec(),
                });
                break;
            }
        }
        false
    }

    /// At the end of a paused translation: the packet-in with its continuation. One that
    /// cannot be encoded fails the translation.
    pub(super) fn finish_pause(&mut self) {
        let Some(p) = self.pausing.take() else {
            return;
        };
        let cont = Continuation {
            key: self.of.recirc.key(),
            stack: self.stack.clone(),
            frames: p.frames,
            action_set: self.action_set.clone(),
        };
        let n = cont.frames.len();
        match cont.encode() {
            Ok(bytes) => {
                self.note(|| format!(" >> continuation: {n} frames, {} bytes", bytes.len()));
                let mut extra = p.extra;
                extra.continuation = bytes;
                self.out.push(DpAction::Controller {
                    max_len: p.max_len,
                    reason: PacketInReason::Action,
                    table_id: p.table_id,
                    cookie: p.cookie,
                    meta: p.meta,
                    extra: Some(Box::new(extra)),
                });
            }
            Err(_) => self.fail(|| "pause: the continuation is too large to send".into()),
        }
    }

    /// The frames of a continuation, innermost first (see the module documentation).
    fn run_frames(&mut self, frames: &[Frame]) {
        for (i, f) in frames.iter().enumerate() {
            if let Some(p) = self.pausing.as_mut() {
                p.frames.extend_from_slice(&frames[i..]);
                return;
            }
            if self.stopped {
                // A TTL exception ended the table it happened in, not the ones around it.
                if !self.ttl_stop || self.failed {
                    return;
                }
                self.ttl_stop = false;
                self.stopped = false;
            }
            self.table_id = f.table_id;
            self.cookie = f.cookie;
            self.depth = f.depth;
            self.flow.in_port = f.in_port;
            self.note_table(|| format!("{:>2}. resuming", f.table_id));
            self.indent += 4;
            let ran_rest = self.apply(&f.actions, &f.rest);
            if !self.stopped && !ran_rest {
                if let Some(t) = self.instructions(&f.rest) {
                    if t > f.table_id {
                        self.indent -= 4;
                        self.run_tables(t);
                        self.indent += 4;
                    }
                }
            }
            self.indent -= 4;
        }
    }
}

/// Resumes a paused pipeline: `key` is the packet's flow with the pipeline fields the
/// controller sent back (`in_port`, `metadata`, registers), `pkt` its bytes.
pub fn resume(
    of: &Ofproto,
    key: &FlowKey,
    pkt: Option<&[u8]>,
    cont: &Continuation,
    trace: Option<&mut Vec<String>>,
) -> XlateOut {
    run(of, key, pkt, trace, |ctx| {
        ctx.uncacheable = true;
        ctx.stack = cont.stack.clone();
        ctx.action_set = cont.action_set.clone();
        ctx.run_frames(&cont.frames);
    })
}
