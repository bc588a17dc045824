//! Flow monitors (OpenFlow 1.4 `OFPMP_FLOW_MONITOR` and Nicira `NXST_FLOW_MONITOR`, which
//! `ovs-ofctl monitor BR watch:` sends over OpenFlow 1.0, and its OpenFlow 1.3 twin
//! `ONFST_FLOW_MONITOR`): a connection registers monitors, gets the flows
//! they select at once (the initial updates, answering its request), and from then on an
//! update for every added, modified and removed flow they select.
//!
//! ## Where the changes come from
//! `Ofproto` logs every flow table change (flow_mods from any connection or the CLI,
//! bundles once committed, expiry, group and meter deletions) while monitoring is on;
//! the dispatcher turns it on while some connection has a monitor, and on every tick
//! takes the log and hands each connection the changes its monitors select, in one
//! multipart reply per tick (xid 0, as unsolicited replies), in the form (1.4 or
//! Nicira) the monitor was set up in. A change is reported once per connection however
//! many of its monitors select it, with instructions if any of those asked for them.
//!
//! A monitor selects a rule when the table matches (or the monitor says all tables), the
//! rule's match refines the monitor's, it outputs to the monitor's port and group (when
//! given), and the monitor's flags ask for that kind of event.
//!
//! ## Left out
//! An update the monitor's version cannot express is skipped. Abbreviated updates (a connection's own changes, summarised by xid) are not used: own
//! changes are reported in full like any other. Pausing when a connection falls behind is
//! not implemented; the log holds `ofproto::switch::LOG_CAPACITY` changes between ticks
//! and drops the oldest beyond that.

use super::conn::Conn;
use super::{lock, BridgeOf};
use ofproto::switch::{FlowEvent, FlowEventKind};
use ofproto::Rule;
use openflow::actions::{OFPG_ANY, OFPP_ANY};
use openflow::messages::err::{flow_monitor_failed as fmf, OFPET_FLOW_MONITOR_FAILED};
use openflow::messages::OFPTT_ALL;
use openflow::wire::monitor::{event, nx_event, FlowMonitorRequest, FlowUpdate};
use openflow::wire::{Message, MpReply, MultipartReply};
use openflow::OfError;
use std::sync::Arc;

/// `OFPFMF_INITIAL` / `NXFMF_INITIAL`.
const INITIAL: u16 = 1;
/// `OFPFMF_ADD` / `NXFMF_ADD`.
const ADD: u16 = 2;
/// `OFPFMF_REMOVED` / `NXFMF_DELETE`.
const REMOVED: u16 = 4;
/// `OFPFMF_MODIFY` / `NXFMF_MODIFY`.
const MODIFY: u16 = 8;
/// `OFPFMF_INSTRUCTIONS` / `NXFMF_ACTIONS`.
const INSTRUCTIONS: u16 = 16;
/// Updates per reply message.
const UPDATES_PER_REPLY: usize = 100;
/// Flow monitors one connection may hold (beyond: `OFPMOFC_OUT_OF_MONITORS`).
pub const MAX_MONITORS: usize = 1024;

/// The form a monitor was set up in, which its updates use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// OpenFlow 1.4+ `OFPMP_FLOW_MONITOR`.
    Std,
    /// Nicira `NXST_FLOW_MONITOR` (OpenFlow 1.0).
    Nx,
    /// ONF `ONFST_FLOW_MONITOR` (OpenFlow 1.3, Nicira bodies).
    Onf,
}

/// One registered monitor.
#[derive(Clone, Debug)]
pub struct Monitor {
    pub req: FlowMonitorRequest,
    pub form: Form,
}

impl Monitor {
    fn selects(&self, r: &Rule) -> bool {
        let q = &self.req;
        (q.table_id == OFPTT_ALL || q.table_id == r.table_id)
            && r.match_.refines(&q.match_)
            && (q.out_port == OFPP_ANY || r.outputs_to(q.out_port))
            && (q.out_group == OFPG_ANY || r.uses_group(q.out_group))
    }
}

fn fail(code: u16) -> OfError {
    OfError::new(OFPET_FLOW_MONITOR_FAILED, code)
}

fn update(r: &Rule, ev: u16, reason: u8, with_insts: bool) -> FlowUpdate {
    FlowUpdate::Full {
        event: ev,
        table_id: r.table_id,
        reason,
        idle_timeout: r.idle_timeout,
        hard_timeout: r.hard_timeout,
        priority: r.priority,
        cookie: r.cookie,
        match_: r.match_.clone(),
        instructions: if with_insts {
            r.instructions.clone()
        } else {
            Vec::new()
        },
    }
}

fn send(c: &Conn, xid: Option<u32>, form: Form, updates: Vec<FlowUpdate>) {
    let wrap = |flags: u16, u: Vec<FlowUpdate>| {
        Message::MultipartReply(MultipartReply {
            flags,
            body: match form {
                Form::Std => MpReply::FlowMonitor(u),
                Form::Nx => MpReply::NxFlowMonitor(u),
                Form::Onf => MpReply::OnfFlowMonitor(u),
            },
        })
    };
    // An update this version cannot say (a mid-list meter action to a 1.3 monitor) is
    // left out rather than costing the whole message.
    let v = c.version();
    let updates: Vec<FlowUpdate> = updates
        .into_iter()
        .filter(|u| openflow::wire::encode(&wrap(0, vec![u.clone()]), v, 0).is_ok())
        .collect();
    if updates.is_empty() && xid.is_none() {
        return;
    }
    let chunks: Vec<Vec<FlowUpdate>> = if updates.is_empty() {
        vec![Vec::new()]
    } else {
        updates
            .chunks(UPDATES_PER_REPLY)
            .map(|x| x.to_vec())
            .collect()
    };
    let n = chunks.len();
    for (i, ch) in chunks.into_iter().enumerate() {
        let m = wrap(u16::from(i + 1 < n), ch);
        match xid {
            Some(x) => c.send(&m, x),
            None => c.send_async(&m),
        }
    }
}

/// Registers, changes or removes monitors and answers with the initial updates.
pub fn request(
    b: &BridgeOf,
    c: &Conn,
    xid: u32,
    reqs: Vec<FlowMonitorRequest>,
    form: Form,
) -> Result<(), OfError> {
    let nx = form != Form::Std;
    let valid = if nx { 0x3f } else { 0x7f };
    {
        let st = lock(&c.st);
        let mut ids: Vec<u32> = st.monitors.iter().map(|m| m.req.monitor_id).collect();
        for r in &reqs {
            if r.flags & !valid != 0 {
                return Err(fail(fmf::BAD_FLAGS));
            }
            if r.table_id != OFPTT_ALL && r.table_id > 253 {
                return Err(fail(fmf::BAD_TABLE_ID));
            }
            let exists = ids.contains(&r.monitor_id);
            match r.command {
                0 if exists => return Err(fail(fmf::MONITOR_EXISTS)),
                0 => ids.push(r.monitor_id),
                1 | 2 if !exists => return Err(fail(fmf::UNKNOWN_MONITOR)),
                1 | 2 => {}
                _ => return Err(fail(fmf::BAD_COMMAND)),
            }
        }
        if ids.len() > MAX_MONITORS {
            return Err(fail(fmf::OUT_OF_MONITORS));
        }
    }
    let mut initial = Vec::new();
    {
        // Monitoring starts under the same lock as the initial dump, so no change falls
        // between the two.
        let mut of = b.udpif.of();
        of.set_monitoring(true);
        let mut st = lock(&c.st);
        for r in reqs {
            let id = r.monitor_id;
            st.monitors.retain(|m| m.req.monitor_id != id);
            if r.command == 2 {
                continue;
            }
            let m = Monitor { req: r, form };
            if m.req.flags & INITIAL != 0 {
                let ev = if nx { nx_event::ADDED } else { event::INITIAL };
                let insts = m.req.flags & INSTRUCTIONS != 0;
                let g = m.req.out_group;
                for t in of.tables() {
                    // With out_group, only the rules naming the group (the group index).
                    let rules: Box<dyn Iterator<Item = &Arc<Rule>>> = if g != OFPG_ANY {
                        Box::new(t.rules_of_group(g))
                    } else {
                        Box::new(t.rules())
                    };
                    for rule in rules.filter(|rule| m.selects(rule)) {
                        initial.push(update(rule, ev, 0, insts));
                    }
                }
            }
            st.monitors.push(m);
        }
    }
    send(c, Some(xid), form, initial);
    Ok(())
}

/// Hands the logged flow changes to the connections whose monitors select them
/// (dispatcher, every tick). `on` is whether monitoring was on after the last call.
pub fn dispatch(b: &BridgeOf, on: &mut bool) {
    let conns: Vec<Arc<Conn>> = lock(&b.conns)
        .iter()
        .filter(|c| !lock(&c.st).monitors.is_empty())
        .cloned()
        .collect();
    let want = !conns.is_empty();
    if !want && !*on {
        return;
    }
    let events: Vec<FlowEvent> = {
        let mut of = b.udpif.of();
        let ev = of.take_flow_events();
        if want != *on {
            of.set_monitoring(want);
        }
        ev
    };
    *on = want;
    if events.is_empty() {
        return;
    }
    for c in conns {
        let monitors = lock(&c.st).monitors.clone();
        for form in [Form::Std, Form::Nx, Form::Onf] {
            let nx = form != Form::Std;
            let mine: Vec<&Monitor> = monitors.iter().filter(|m| m.form == form).collect();
            if mine.is_empty() {
                continue;
            }
            let mut updates = Vec::new();
            for e in &events {
                let (flag, ev, reason) = match e.kind {
                    FlowEventKind::Added if nx => (ADD, nx_event::ADDED, 0),
                    FlowEventKind::Added => (ADD, event::ADDED, 0),
                    FlowEventKind::Modified if nx => (MODIFY, nx_event::MODIFIED, 0),
                    FlowEventKind::Modified => (MODIFY, event::MODIFIED, 0),
                    FlowEventKind::Removed(r) if nx => (REMOVED, nx_event::DELETED, r as u8),
                    FlowEventKind::Removed(r) => (REMOVED, event::REMOVED, r as u8),
                };
                let sel: Vec<&&Monitor> = mine
                    .iter()
                    .filter(|m| m.req.flags & flag != 0 && m.selects(&e.rule))
                    .collect();
                if sel.is_empty() {
                    continue;
                }
                let insts = sel.iter().any(|m| m.req.flags & INSTRUCTIONS != 0);
                updates.push(update(&e.rule, ev, reason, insts));
            }
            if !updates.is_empty() {
                send(&c, None, form, updates);
            }
        }
    }
}
