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
    let dbname = st.db.schema().name.clone();
    let check_db = |p: Option<&Value>| -> Result<(), Value> {
        match p.and_then(Value::as_str) {
            Some(n) if n == dbname => Ok(()),
            Some(n) => Err(
                json!({"error": "unknown database", "details": format!("no database named {n}")}),
            ),
            None => Err(
                json!({"error": "syntax error", "details": "first parameter must be a database name"}),
            ),
        }
    };
    match method {
        "echo" => send(st, sid, reply(&id, Value::Array(params.to_vec()))),
        "list_dbs" => send(st, sid, reply(&id, json!([dbname]))),
        "get_schema" => match check_db(params.first()) {
            Ok(()) => {
                let s = st.db.schema().to_json().clone();
                send(st, sid, reply(&id, s));
            }
            Err(e) => send(st, sid, error_reply(&id, e)),
        },
        "transact" => match check_db(params.first()) {
            Ok(()) => {
                let ops = params[1..].to_vec();
                run_transact(shared, st, sid, id, ops, Instant::now());
            }
            Err(e) => send(st, sid, error_reply(&id, e)),
        },
        "cancel" => {
            let target = params.first().cloned().unwrap_or(Value::Null);
            if let Some(pos) = st
                .pending
                .iter()
                .position(|p| p.session == sid && p.id == target)
            {
                let p = st.pending.remove(pos);
                send(st, sid, error_reply(&p.id, json!("canceled")));
            }
        }
        "monitor" | "monitor_cond" | "monitor_cond_since" => {
            if let Err(e) = check_db(params.first()) {
                send(st, sid, error_reply(&id, e));
                return;
            }
            let version = match method {
                "monitor" => Version::V1,
                "monitor_cond" => Version::V2,
                _ => Version::V3,
            };
            let mid = params.get(1).cloned().unwrap_or(Value::Null);
            let key = mid.to_string();
            let reqs = params.get(2).cloned().unwrap_or(Value::Null);
            let max = shared.config.max_monitors;
            if st
                .sessions
                .get(&sid)
                .is_some_and(|s| s.monitors.len() >= max)
            {
                send(st, sid, error_reply(&id, exhausted("monitors", max)));
                return;
            }
            if st
                .sessions
                .get(&sid)
                .is_some_and(|s| s.monitors.contains_key(&key))
            {
                send(
                    st,
                    sid,
                    error_reply(
                        &id,
                        json!({"error": "duplicate monitor ID", "details": key}),
                    ),
                );
                return;
            }
            match Monitor::from_json(st.db.schema(), version, &reqs) {
                Ok(m) => {
                    let initial = m.initial(&st.db);
                    let result = match version {
                        Version::V3 => json!([false, st.last_txn.to_string(), initial]),
                        _ => initial,
                    };
                    if let Some(s) = st.sessions.get_mut(&sid) {
                        s.monitors.insert(key, (mid, m));
                    }
                    send(st, sid, reply(&id, result));
                }
                Err(e) => send(st, sid, error_reply(&id, e.to_json())),
            }
        }
        "monitor_cond_change" => {
            let old = params.first().map(Value::to_string).unwrap_or_default();
            let new_id = params.get(1).cloned().unwrap_or(Value::Null);
            let reqs = params.get(2).cloned().unwrap_or(Value::Null);
            let Some(s) = st.sessions.get_mut(&sid) else {
                return;
            };
            let Some((_, mut m)) = s.monitors.remove(&old) else {
                send(
                    st,
                    sid,
                    error_reply(&id, json!({"error": "unknown monitor", "details": old})),
                );
                return;
            };
            match m.change_conditions(&st.db, &reqs) {
                Ok(u) => {
                    let v = m.version;
                    if let Some(s) = st.sessions.get_mut(&sid) {
                        s.monitors.insert(new_id.to_string(), (new_id.clone(), m));
                    }
                    if u.as_object().is_some_and(|o| !o.is_empty()) {
                        let n = match v {
                            Version::V3 => {
                                notification("update3", json!([new_id, st.last_txn.to_string(), u]))
                            }
                            _ => notification("update2", json!([new_id, u])),
                        };
                        send(st, sid, n);
                    }
                    send(st, sid, reply(&id, json!({})));
                }
                Err(e) => {
                    if let Some(s) = st.sessions.get_mut(&sid) {
                        s.monitors.insert(old.clone(), (params[0].clone(), m));
                    }
                    send(st, sid, error_reply(&id, e.to_json()));
                }
            }
        }
        "monitor_cancel" => {
            let key = params.first().map(Value::to_string).unwrap_or_default();
            let removed = st
                .sessions
                .get_mut(&sid)
                .and_then(|s| s.monitors.remove(&key))
                .is_some();
            if removed {
                send(st, sid, reply(&id, json!({})));
            } else {
                send(
                    st,
                    sid,
                    error_reply(&id, json!({"error": "unknown monitor", "details": key})),
                );
            }
        }
        "lock" | "steal" | "unlock" => {
            let Some(name) = params.first().and_then(Value::as_str).map(str::to_string) else {
                send(
                    st,
                    sid,
                    error_reply(
                        &id,
                        json!({"error": "syntax error", "details": "lock name must be a string"}),
                    ),
                );
                return;
            };
            match method {
                "lock" | "steal"
                    if !st.locks.get(&name).is_some_and(|q| q.contains(&sid))
                        && st.locks.values().filter(|q| q.contains(&sid)).count()
                            >= shared.config.max_locks =>
                {
                    let e = exhausted("locks", shared.config.max_locks);
                    send(st, sid, error_reply(&id, e));
                }
                "lock" => {
                    let q = st.locks.entry(name.clone()).or_default();
                    if q.contains(&sid) {
                        send(
                            st,
                            sid,
                            error_reply(&id, json!({"error": "duplicate lock", "details": name})),
                        );
                        return;
                    }
                    q.push_back(sid);
                    let locked = q.front() == Some(&sid);
                    send(st, sid, reply(&id, json!({"locked": locked})));
                }
                "steal" => {
                    let q = st.locks.entry(name.clone()).or_default();
                    let victim = q.front().copied().filter(|v| *v != sid);
                    q.retain(|s| *s != sid);
                    q.push_front(sid);
                    send(st, sid, reply(&id, json!({"locked": true})));
                    if let Some(v) = victim {
                        send(st, v, notification("stolen", json!([name])));
                    }
                }
                _ => {
                    release_lock(st, &name, sid);
                    send(st, sid, reply(&id, json!({})));
                }
            }
        }
        _ => {
            if !id.is_null() {
                send(st, sid, error_reply(&id, json!("unknown method")));
            }
        }
    }
}
