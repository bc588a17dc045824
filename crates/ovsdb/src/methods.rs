//! The JSON-RPC methods of an OVSDB session (RFC 7047 §4.1 and OVS's extensions: `echo`,
//! `list_dbs`, `get_schema`, `transact`, `cancel`, `monitor`/`monitor_cond`/
//! `monitor_cond_since`, `monitor_cond_change`, `monitor_cancel`, `lock`/`steal`/`unlock`).
//!
//! Each handler runs with the server's state locked (see [`crate::server`]) and queues its
//! reply with [`send`]. Per-session resources a client can create are bounded by
//! [`crate::server::Config`]: monitors (`max_monitors`), lock names (`max_locks`) and
//! transactions blocked in `wait` (`max_pending`); beyond them the request gets a
//! `"resources exhausted"` error and the session stays up.

use crate::db::TxnOutcome;
use crate::jsonrpc::{error_reply, notification, reply};
use crate::monitor::{Monitor, Version};
use crate::server::{after_commit, send, Pending, SessionId, Shared, State};
use crate::txn::TxnContext;
use serde_json::{json, Value};
use std::time::Instant;

fn exhausted(what: &str, limit: usize) -> Value {
    json!({"error": "resources exhausted", "details": format!("at most {limit} {what} per session")})
}

pub(crate) fn run_transact(
    shared: &Shared,
    st: &mut State,
    sid: SessionId,
    id: Value,
    ops: Vec<Value>,
    started: Instant,
) {
    let owned: Vec<String> = st
        .locks
        .iter()
        .filter(|(_, q)| q.front() == Some(&sid))
        .map(|(n, _)| n.clone())
        .collect();
    let owns = |n: &str| owned.iter().any(|o| o == n);
    let ctx = TxnContext {
        owns_lock: &owns,
        started,
        now: Instant::now(),
    };
    match st.db.transact(&ops, &ctx) {
        TxnOutcome::Done { result, commit } => {
            if let Some(c) = commit {
                // The reply goes out first, then the monitor updates, as ovsdb-server does
                // (the session's own in the same write).
                after_commit(shared, st, c, Some((sid, reply(&id, result))));
            } else {
                send(st, sid, reply(&id, result));
            }
        }
        TxnOutcome::Blocked { until } => {
            let mine = st.pending.iter().filter(|p| p.session == sid).count();
            if mine >= shared.config.max_pending {
                let e = exhausted("blocked transactions", shared.config.max_pending);
                send(st, sid, error_reply(&id, e));
                return;
            }
            st.pending.push(Pending {
                session: sid,
                id,
                ops,
                started,
                until,
            });
            shared.changed.notify_all();
        }
    }
}

pub(crate) fn release_lock(st: &mut State, name: &str, id: SessionId) {
    let Some(q) = st.locks.get_mut(name) else {
        return;
    };
    let was_owner = q.front() == Some(&id);
    q.retain(|s| *s != id);
    let next = q.front().copied();
    if q.is_empty() {
        st.locks.remove(name);
    }
    if was_owner {
        if let Some(n) = next {
            send(st, n, notification("locked", json!([name])));
        }
    }
}

fn params_of(msg: &Value) -> &[Value] {
    msg.get("params")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The checks every request passes before its method runs, and the dispatch to the method.
pub(crate) fn handle_message(shared: &Shared, st: &mut State, sid: SessionId, msg: Value) {
    let Some(obj) = msg.as_object() else {
        send(
            st,
            sid,
            error_reply(&Value::Null, json!("JSON-RPC message must be an object")),
        );
        return;
    };
    let id = obj.get("id").cloned().unwrap_or(Value::Null);
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        // A reply (to our echo, say) or junk: nothing to answer.
        return;
    };
    let params = params_of(&msg);
    if !obj.get("params").is_some_and(Value::is_array) {
        send(
            st,
            sid,
            error_reply(
                &id,
                json!({"error": "syntax error", "details": "\"params\" must be an array"}),
            ),
        );
        return;
    }
    let req = Request {
        shared,
        sid,
        id: &id,
        params,
    };
    match method {
        "echo" => send(st, sid, reply(&id, Value::Array(params.to_vec()))),
        "list_dbs" => {
            let dbname = st.db.schema().name.clone();
            send(st, sid, reply(&id, json!([dbname])));
        }
        "get_schema" => get_schema(st, &req),
        "transact" => transact(st, &req),
        "cancel" => cancel(st, &req),
        "monitor" => monitor(st, &req, Version::V1),
        "monitor_cond" => monitor(st, &req, Version::V2),
        "monitor_cond_since" => monitor(st, &req, Version::V3),
        "monitor_cond_change" => monitor_cond_change(st, &req),
        "monitor_cancel" => monitor_cancel(st, &req),
        "lock" => lock(st, &req, LockVerb::Lock),
        "steal" => lock(st, &req, LockVerb::Steal),
        "unlock" => lock(st, &req, LockVerb::Unlock),
        _ => {
            if !id.is_null() {
                send(st, sid, error_reply(&id, json!("unknown method")));
            }
        }
    }
}

/// One request, as its method handler sees it.
struct Request<'a> {
    shared: &'a Shared,
    sid: SessionId,
    id: &'a Value,
    params: &'a [Value],
}

impl Request<'_> {
    fn reply(&self, st: &mut State, result: Value) {
        send(st, self.sid, reply(self.id, result));
    }

    fn error(&self, st: &mut State, e: Value) {
        send(st, self.sid, error_reply(self.id, e));
    }

    /// Checks that the first parameter names our database; answers with the error if not.
    fn check_db(&self, st: &mut State) -> bool {
        let e = match self.params.first().and_then(Value::as_str) {
            Some(n) if n == st.db.schema().name => return true,
            Some(n) => {
                json!({"error": "unknown database", "details": format!("no database named {n}")})
            }
            None => {
                json!({"error": "syntax error", "details": "first parameter must be a database name"})
            }
        };
        self.error(st, e);
        false
    }
}

fn get_schema(st: &mut State, req: &Request) {
    if req.check_db(st) {
        let s = st.db.schema().to_json().clone();
        req.reply(st, s);
    }
}

fn transact(st: &mut State, req: &Request) {
    if req.check_db(st) {
        let ops = req.params[1..].to_vec();
        run_transact(req.shared, st, req.sid, req.id.clone(), ops, Instant::now());
    }
}

/// `cancel`: fails the session's blocked transaction with that id; no reply of its own.
fn cancel(st: &mut State, req: &Request) {
    let target = req.params.first().cloned().unwrap_or(Value::Null);
    if let Some(pos) = st
        .pending
        .iter()
        .position(|p| p.session == req.sid && p.id == target)
    {
        let p = st.pending.remove(pos);
        send(st, req.sid, error_reply(&p.id, json!("canceled")));
    }
}

/// `monitor`, `monitor_cond` and `monitor_cond_since`: registers the monitor and answers
/// with its initial contents.
fn monitor(st: &mut State, req: &Request, version: Version) {
    if !req.check_db(st) {
        return;
    }
    let mid = req.params.get(1).cloned().unwrap_or(Value::Null);
    let key = mid.to_string();
    let reqs = req.params.get(2).cloned().unwrap_or(Value::Null);
    let max = req.shared.config.max_monitors;
    let session = st.sessions.get(&req.sid);
    if session.is_some_and(|s| s.monitors.len() >= max) {
        req.error(st, exhausted("monitors", max));
        return;
    }
    if session.is_some_and(|s| s.monitors.contains_key(&key)) {
        req.error(st, json!({"error": "duplicate monitor ID", "details": key}));
        return;
    }
    match Monitor::from_json(st.db.schema(), version, &reqs) {
        Ok(m) => {
            let initial = m.initial(&st.db);
            let result = match version {
                Version::V3 => json!([false, st.last_txn.to_string(), initial]),
                _ => initial,
            };
            if let Some(s) = st.sessions.get_mut(&req.sid) {
                s.monitors.insert(key, (mid, m));
            }
            req.reply(st, result);
        }
        Err(e) => req.error(st, e.to_json()),
    }
}

/// `monitor_cond_change`: swaps a monitor's conditions (and maybe its id), sends the rows
/// that came into or went out of view, then the reply.
fn monitor_cond_change(st: &mut State, req: &Request) {
    let params = req.params;
    let old = params.first().map(Value::to_string).unwrap_or_default();
    let new_id = params.get(1).cloned().unwrap_or(Value::Null);
    let reqs = params.get(2).cloned().unwrap_or(Value::Null);
    let Some(s) = st.sessions.get_mut(&req.sid) else {
        return;
    };
    let Some((_, mut m)) = s.monitors.remove(&old) else {
        req.error(st, json!({"error": "unknown monitor", "details": old}));
        return;
    };
    match m.change_conditions(&st.db, &reqs) {
        Ok(u) => {
            let v = m.version;
            if let Some(s) = st.sessions.get_mut(&req.sid) {
                s.monitors.insert(new_id.to_string(), (new_id.clone(), m));
            }
            if u.as_object().is_some_and(|o| !o.is_empty()) {
                let n = match v {
                    Version::V3 => {
                        notification("update3", json!([new_id, st.last_txn.to_string(), u]))
                    }
                    _ => notification("update2", json!([new_id, u])),
                };
                send(st, req.sid, n);
            }
            req.reply(st, json!({}));
        }
        Err(e) => {
            if let Some(s) = st.sessions.get_mut(&req.sid) {
                s.monitors.insert(old.clone(), (params[0].clone(), m));
            }
            req.error(st, e.to_json());
        }
    }
}

fn monitor_cancel(st: &mut State, req: &Request) {
    let key = req.params.first().map(Value::to_string).unwrap_or_default();
    let removed = st
        .sessions
        .get_mut(&req.sid)
        .and_then(|s| s.monitors.remove(&key))
        .is_some();
    if removed {
        req.reply(st, json!({}));
    } else {
        req.error(st, json!({"error": "unknown monitor", "details": key}));
    }
}

#[derive(Clone, Copy, PartialEq)]
enum LockVerb {
    Lock,
    Steal,
    Unlock,
}

/// `lock`, `steal` and `unlock`: checks the name and the session's lock budget, then runs
/// the verb.
fn lock(st: &mut State, req: &Request, verb: LockVerb) {
    let Some(name) = req
        .params
        .first()
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        req.error(
            st,
            json!({"error": "syntax error", "details": "lock name must be a string"}),
        );
        return;
    };
    let max = req.shared.config.max_locks;
    let sid = req.sid;
    let new_lock = !st.locks.get(&name).is_some_and(|q| q.contains(&sid));
    if verb != LockVerb::Unlock
        && new_lock
        && st.locks.values().filter(|q| q.contains(&sid)).count() >= max
    {
        req.error(st, exhausted("locks", max));
        return;
    }
    match verb {
        LockVerb::Lock => take_lock(st, req, name),
        LockVerb::Steal => steal_lock(st, req, name),
        LockVerb::Unlock => {
            release_lock(st, &name, sid);
            req.reply(st, json!({}));
        }
    }
}

/// `lock`: queues the session for the lock; it holds it at once if the queue was empty.
fn take_lock(st: &mut State, req: &Request, name: String) {
    let q = st.locks.entry(name.clone()).or_default();
    if q.contains(&req.sid) {
        req.error(st, json!({"error": "duplicate lock", "details": name}));
        return;
    }
    q.push_back(req.sid);
    let locked = q.front() == Some(&req.sid);
    req.reply(st, json!({"locked": locked}));
}

/// `steal`: puts the session at the head of the queue and tells the former owner.
fn steal_lock(st: &mut State, req: &Request, name: String) {
    let q = st.locks.entry(name.clone()).or_default();
    let victim = q.front().copied().filter(|v| *v != req.sid);
    q.retain(|s| *s != req.sid);
    q.push_front(req.sid);
    req.reply(st, json!({"locked": true}));
    if let Some(v) = victim {
        send(st, v, notification("stolen", json!([name])));
    }
}
