//! The daemon's command table: every verb `ferrovs` and `ovs-appctl` can send.
//!
//! Each command is validated completely before anything changes: a failing command leaves the
//! switch as it was. Commands that open kernel resources (ports) open them on the control
//! thread — never on the poll thread — and hand them over only once open; a control mutex
//! serialises commands so the check-then-apply steps cannot interleave.
//!
//! Errors are prefixed with the verb (`add-port: no such bridge 'br9'`). `--json` anywhere in
//! the arguments of a status command selects JSON output.

use crate::ofconn::{self, ConnMgr};
use crate::vswitch::{appctl, cli, Vswitch};
use crossbeam_channel::Sender;
use datapath::udpif::Udpif;
use datapath::Datapath;
use std::sync::{Arc, Mutex};

// The `dpctl/*` conntrack commands live beside this file.
#[path = "dpctl_ct.rs"]
mod dpctl_ct;
#[path = "dpctl_ipf.rs"]
mod dpctl_ipf;
#[path = "tnlctl.rs"]
mod tnlctl;

/// Every command: (name, usage).
const COMMANDS: &[(&str, &str)] = &[
    (
        "add-br",
        "BR [module=openflow|learning|patch|tuple3] [KEY=VALUE...]",
    ),
    ("del-br", "BR"),
    ("list-br", "[--json]"),
    ("br-exists", "BR"),
    ("set-bridge", "BR KEY=VALUE..."),
    (
        "add-port",
        "BR PORT [type=T] [ofport=N] [tag=N|trunks=N,...] [KEY=VALUE...]",
    ),
    ("del-port", "[BR] PORT"),
    ("list-ports", "BR [--json]"),
    ("port-to-br", "PORT"),
    ("show", "[--json]"),
    ("dump-ports", "BR [--json]"),
    ("add-flow", "BR FLOW"),
    ("add-flows", "BR FILE"),
    ("mod-flows", "BR [--strict] FLOW"),
    ("del-flows", "BR [--strict] [FLOW]"),
    ("dump-flows", "BR [FLOW] [--json]"),
    ("dump-tables", "BR [--json]"),
    ("mod-table", "BR TABLE drop|controller|continue"),
    ("add-group", "BR GROUP"),
    ("mod-group", "BR GROUP"),
    ("del-groups", "BR [group_id=N]"),
    ("insert-buckets", "BR GROUP"),
    ("remove-buckets", "BR GROUP"),
    ("dump-groups", "BR [--json]"),
    ("add-meter", "BR METER"),
    ("mod-meter", "BR METER"),
    ("del-meters", "BR [meter=N]"),
    ("dump-meters", "BR [--json]"),
    ("trace", "BR FLOW [PACKET] [--json]"),
    ("dpctl/dump-flows", "[BR] [--json]"),
    ("dpctl/del-flows", "[BR]"),
    ("ofproto/trace", "BR FLOW"),
    ("fdb-show", "BR [--json]"),
    ("fdb-flush", "BR"),
    ("fdb-stats", "BR [--json]"),
    ("patch-set", "BR FROM TO"),
    ("patch-del", "BR FROM"),
    ("patch-show", "BR [--json]"),
    ("tuple3-add", "BR PORT IP PROTO PORTNUM"),
    ("tuple3-del", "BR PORT IP PROTO PORTNUM"),
    ("tuple3-uplink", "BR PORT|none"),
    ("tuple3-show", "BR [--json]"),
    ("pmd-trace", "BR N"),
    ("pmd-trace-show", "BR [--json]"),
    ("pmd-stats-show", "[--json]"),
    ("pmd-stats-clear", ""),
    ("dpif-netdev/pmd-stats-show", "[--json]"),
    ("dpif-netdev/pmd-stats-clear", ""),
    ("fdb/show", "BR"),
    ("fdb/flush", "[BR]"),
    ("fdb/stats-show", "BR"),
    ("list-commands", ""),
    ("version", ""),
    ("vlog/reopen", ""),
    ("exit", "[--cleanup]"),
];

/// Module verbs and the OVS names that map onto them.
fn module_verb(m: &str) -> Option<&'static str> {
    Some(match m {
        "fdb-show" | "fdb/show" => "fdb-show",
        "add-flow" => "add-flow",
        "add-flows" => "add-flows",
        "mod-flows" => "mod-flows",
        "del-flows" => "del-flows",
        "dump-flows" => "dump-flows",
        "dump-tables" => "dump-tables",
        "mod-table" => "mod-table",
        "add-group" => "add-group",
        "mod-group" => "mod-group",
        "del-groups" => "del-groups",
        "insert-buckets" => "insert-buckets",
        "remove-buckets" => "remove-buckets",
        "dump-groups" => "dump-groups",
        "add-meter" => "add-meter",
        "mod-meter" => "mod-meter",
        "del-meters" => "del-meters",
        "dump-meters" => "dump-meters",
        "trace" | "ofproto/trace" => "trace",
        "dpctl/del-flows" => "dpctl/del-flows",
        "fdb-flush" => "fdb-flush",
        "fdb-stats" | "fdb/stats-show" => "fdb-stats",
        "patch-set" => "patch-set",
        "patch-del" => "patch-del",
        "patch-show" => "patch-show",
        "tuple3-add" => "tuple3-add",
        "tuple3-del" => "tuple3-del",
        "tuple3-uplink" => "tuple3-uplink",
        "tuple3-show" => "tuple3-show",
        "pmd-trace" => "pmd-trace",
        "pmd-trace-show" => "pmd-trace-show",
        _ => return None,
    })
}

/// The daemon state the command handlers share.
pub struct Daemon {
    pmd: Arc<Datapath>,
    stop: Sender<&'static str>,
    lock: Mutex<()>,
    ofconn: Arc<ConnMgr>,
    vs: Arc<Vswitch>,
}

impl Daemon {
    /// Wraps the poll thread's handle and the shutdown channel. The structural verbs
    /// (add-br, del-br, add-port, del-port, set-bridge) go through `vs`: they are database
    /// transactions.
    pub fn new(
        pmd: Arc<Datapath>,
        stop: Sender<&'static str>,
        ofconn: Arc<ConnMgr>,
        vs: Arc<Vswitch>,
    ) -> Daemon {
        Daemon {
            pmd,
            stop,
            lock: Mutex::new(()),
            ofconn,
            vs,
        }
    }

    /// Runs one command.
    pub fn dispatch(&self, method: &str, params: &[String]) -> Result<String, String> {
        let json = params.iter().any(|p| p == "--json");
        let args: Vec<String> = params.iter().filter(|p| *p != "--json").cloned().collect();
        if !COMMANDS.iter().any(|c| c.0 == method)
            && !ofconn::cli::is_verb(method)
            && !appctl::has(method)
            && !dpctl_ct::has(method)
            && !dpctl_ipf::has(method)
            && !tnlctl::has(method)
        {
            return Err(format!(
                "\"{method}\" is not a valid command (use list-commands to see them)\n"
            ));
        }
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        appctl::inc("unixctl_received");
        // The tunnel commands answer in OVS's words alone ("Not found", "Invalid
        // parameters"), as ovs-vswitchd's route and neighbour commands do.
        let bare = tnlctl::has(method);
        self.run(method, &args, json).map_err(|e| {
            if bare {
                format!("{e}\n")
            } else {
                format!("{method}: {e}\n")
            }
        })
    }

    /// Runs one command for the control socket: as [`Daemon::dispatch`], except that a text
    /// `dump-flows` of an OpenFlow bridge is made a line at a time while it is sent, so its
    /// size is not bounded by memory (the rules are picked under the lock, the text written
    /// after it is released).
    pub fn dispatch_reply(
        &self,
        method: &str,
        params: &[String],
    ) -> Result<unixctl::Reply, String> {
        if method == "dump-flows" && !params.iter().any(|p| p == "--json") {
            if let Some((br, rest)) = params.split_first() {
                let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(u) = self
                    .openflow_handle(br)
                    .map_err(|e| format!("{method}: {e}\n"))?
                {
                    appctl::inc("unixctl_received");
                    let lines = ofctl::dump_flows_lines(&u, rest, datapath::clock::now_ms())
                        .map_err(|e| format!("{method}: {e}\n"))?;
                    return Ok(unixctl::Reply::Stream(Box::new(lines)));
                }
            }
        }
        self.dispatch(method, params).map(unixctl::Reply::Text)
    }

    fn run(&self, method: &str, args: &[String], json: bool) -> Result<String, String> {
        if appctl::has(method) {
            return appctl::run(&self.pmd, &self.ofconn.udpifs(), method, args, json);
        }
        if dpctl_ct::has(method) {
            return dpctl_ct::run(method, args, datapath::clock::now_ms());
        }
        if dpctl_ipf::has(method) {
            return dpctl_ipf::run(method, args);
        }
        if tnlctl::has(method) {
            return tnlctl::run(method, args);
        }
        // Without a bridge, as OVS's datapath-wide command: every OpenFlow bridge's cache.
        if method == "dpctl/del-flows" && args.is_empty() {
            for n in self.openflow_bridges()? {
                self.module_cmd(method, "dpctl/del-flows", &[n], json)?;
            }
            return Ok(String::new());
        }
        if let Some(verb) = module_verb(method) {
            return self.module_cmd(method, verb, args, json);
        }
        if ofconn::cli::is_verb(method) {
            return ofconn::cli::run(&self.ofconn, &*self.vs, method, args);
        }
        self.run_own(method, args, json)
    }

    /// The daemon's own verbs (bridges, ports, reports).
    fn run_own(&self, method: &str, args: &[String], json: bool) -> Result<String, String> {
        match method {
            "list-commands" => Ok(list_commands()),
            "version" => Ok(format!(
                "ferrovsd (ferrovs) {}\n",
                env!("CARGO_PKG_VERSION")
            )),
            "exit" => self.exit(args),
            "vlog/reopen" => crate::daemonize::reopen_log(),
            "add-br" => cli::add_br(&self.vs, args, &usage("add-br")),
            "del-br" => cli::del_br(&self.vs, args, &usage("del-br")),
            "list-br" => self.list_br(method, args, json),
            "br-exists" => self.br_exists(args),
            "set-bridge" => cli::set_bridge(&self.vs, args, &usage("set-bridge")),
            "add-port" => cli::add_port(&self.vs, args, &usage("add-port")),
            "del-port" => cli::del_port(&self.vs, args, &usage("del-port")),
            "list-ports" => self.list_ports(args, json),
            "port-to-br" => self.port_to_br(args),
            "show" => {
                no_args(method, args)?;
                Ok(crate::render::show(&self.pmd.call(|sw| sw.report())?, json))
            }
            "dump-ports" => {
                let [br] = args else {
                    return Err(usage("dump-ports"));
                };
                let report = self.pmd.port_counters_report(br)?;
                Ok(crate::render::dump_ports(&report, json))
            }
            "pmd-stats-show" | "dpif-netdev/pmd-stats-show" => {
                no_args(method, args)?;
                Ok(crate::render::pmd_stats(&self.pmd.pmd_reports()?, json))
            }
            "pmd-stats-clear" | "dpif-netdev/pmd-stats-clear" => {
                no_args(method, args)?;
                self.pmd.pmd_stats_clear()?;
                Ok(String::new())
            }
            "dpctl/dump-flows" => self.dpctl_dump_flows(args, json),
            "fdb/flush" => self.fdb_flush(args),
            _ => Err("not implemented by this daemon".to_string()),
        }
    }

    /// `exit [--cleanup]`. Every exit removes what the daemon made (ports, internal
    /// devices, sockets): `--cleanup`, which OVS needs for that, is accepted and changes
    /// nothing.
    fn exit(&self, args: &[String]) -> Result<String, String> {
        match args.iter().map(String::as_str).find(|p| *p != "--cleanup") {
            Some(bad) => Err(format!("exit: unknown argument '{bad}' (only --cleanup)")),
            None => {
                let _ = self.stop.try_send("exit command");
                Ok(String::new())
            }
        }
    }

    /// `list-br`: the bridges' names, sorted.
    fn list_br(&self, method: &str, args: &[String], json: bool) -> Result<String, String> {
        no_args(method, args)?;
        let mut names = self.pmd.call(|sw| {
            sw.bridges()
                .iter()
                .map(|b| b.name.clone())
                .collect::<Vec<_>>()
        })?;
        names.sort();
        Ok(lines_or_json(&names, json))
    }

    /// `br-exists BR`: success or an error.
    fn br_exists(&self, args: &[String]) -> Result<String, String> {
        let [br] = args else {
            return Err(usage("br-exists"));
        };
        let br = br.clone();
        let b2 = br.clone();
        if self.pmd.call(move |sw| sw.bridge(&br).is_some())? {
            Ok(String::new())
        } else {
            Err(format!("no such bridge '{b2}'"))
        }
    }

    /// `list-ports BR`: the bridge's ports but its own internal one, sorted.
    fn list_ports(&self, args: &[String], json: bool) -> Result<String, String> {
        let [br] = args else {
            return Err(usage("list-ports"));
        };
        let br = br.clone();
        let mut names = self.pmd.call(move |sw| {
            let b = sw
                .bridge(&br)
                .ok_or_else(|| format!("no such bridge '{br}'"))?;
            Ok::<_, String>(
                b.ports()
                    .filter(|(_, s)| s.ofport != datapath::LOCAL_OFPORT)
                    .map(|(_, s)| s.port.name().to_string())
                    .collect::<Vec<_>>(),
            )
        })??;
        names.sort();
        Ok(lines_or_json(&names, json))
    }

    /// `port-to-br PORT`: the bridge that has the port.
    fn port_to_br(&self, args: &[String]) -> Result<String, String> {
        let [p] = args else {
            return Err(usage("port-to-br"));
        };
        let p = p.clone();
        let p2 = p.clone();
        match self
            .pmd
            .call(move |sw| sw.port_owner(&p).map(str::to_string))?
        {
            Some(b) => Ok(format!("{b}\n")),
            None => Err(format!("no port named '{p2}'")),
        }
    }

    /// `fdb/flush [BR]`: empties the MAC table of the bridge, or (as OVS does when none is
    /// named) of every `learning` bridge.
    fn fdb_flush(&self, args: &[String]) -> Result<String, String> {
        let br = args.first().cloned();
        if args.len() > 1 {
            return Err(usage("fdb/flush"));
        }
        self.pmd.call(move |sw| {
            let names: Vec<String> = match br {
                Some(b) => {
                    sw.bridge(&b)
                        .ok_or_else(|| format!("no such bridge '{b}'"))?;
                    vec![b]
                }
                None => sw
                    .bridges()
                    .iter()
                    .filter(|b| b.module.name() == "learning")
                    .map(|b| b.name.clone())
                    .collect(),
            };
            for n in names {
                sw.module_command(&n, "fdb-flush", &[], false)?;
            }
            Ok::<_, String>("table successfully flushed\n".to_string())
        })?
    }

    fn module_cmd(
        &self,
        method: &str,
        verb: &'static str,
        args: &[String],
        json: bool,
    ) -> Result<String, String> {
        let Some((br, rest)) = args.split_first() else {
            return Err(usage(method));
        };
        if verb == "pmd-trace-show" {
            return Ok(crate::render::pmd_trace(&self.pmd.trace_report(br)?, json));
        }
        // The MAC table's verbs and the bridge's own (the fast-path trace) go to the poll
        // threads whatever the module; the other verbs of an OpenFlow bridge to its state.
        if !matches!(verb, "fdb-show" | "fdb-flush" | "fdb-stats" | "pmd-trace") {
            if let Some(u) = self.openflow_handle(br)? {
                if verb == "trace" {
                    return ofctl::trace_bridge(&u, br, rest, json);
                }
                return ofctl::run(&u, verb, rest, json, datapath::clock::now_ms());
            }
        }
        Ok(self.pmd.module_command(br, verb, rest, json)?)
    }

    /// The shared OpenFlow state of bridge `br`, if it runs the openflow module.
    fn openflow_handle(&self, br: &str) -> Result<Option<Arc<Udpif>>, String> {
        if let Ok(b) = self.ofconn.bridge(br) {
            return Ok(Some(Arc::clone(&b.udpif)));
        }
        let b = br.to_string();
        match self.pmd.call(move |sw| sw.bridge(&b).is_some())? {
            true => Ok(None),
            false => Err(format!("no such bridge '{br}'")),
        }
    }

    /// The bridges that run the openflow module (the datapath commands' "every bridge").
    fn openflow_bridges(&self) -> Result<Vec<String>, String> {
        Ok(self.pmd.call(|sw| {
            sw.bridges()
                .iter()
                .filter(|b| b.module.name() == "openflow")
                .map(|b| b.name.clone())
                .collect::<Vec<_>>()
        })?)
    }

    fn dpctl_dump_flows(&self, args: &[String], json: bool) -> Result<String, String> {
        let names: Vec<String> = match args {
            [b] => vec![b.clone()],
            [] => self.openflow_bridges()?,
            _ => return Err(usage("dpctl/dump-flows")),
        };
        let mut text = String::new();
        let mut all = Vec::new();
        for n in names {
            let Some(u) = self.openflow_handle(&n)? else {
                return Err(format!("bridge '{n}' does not run the openflow module"));
            };
            let out = ofctl::run(&u, "dpctl/dump-flows", &[], json, datapath::clock::now_ms())?;
            if json {
                let v: serde_json::Value = serde_json::from_str(&out).map_err(|e| e.to_string())?;
                all.push(serde_json::json!({"bridge": n, "flows": v}));
            } else {
                text.push_str(&out);
            }
        }
        if json {
            return Ok(serde_json::Value::Array(all).to_string());
        }
        Ok(text)
    }
}

fn no_args(method: &str, args: &[String]) -> Result<(), String> {
    match args.first() {
        Some(a) => Err(format!(
            "unexpected argument '{a}' (usage: {method} {})",
            usage_of(method)
        )),
        None => Ok(()),
    }
}

fn usage_of(name: &str) -> &'static str {
    COMMANDS
        .iter()
        .find(|c| c.0 == name)
        .map(|c| c.1)
        .unwrap_or("")
}

fn usage(name: &str) -> String {
    format!("usage: {name} {}", usage_of(name))
        .trim_end()
        .to_string()
}

fn lines_or_json(v: &[String], json: bool) -> String {
    if json {
        return serde_json::Value::from(v.to_vec()).to_string();
    }
    lines(v)
}

fn lines(v: &[String]) -> String {
    let mut s = String::new();
    for x in v {
        s.push_str(x);
        s.push('\n');
    }
    s
}

fn list_commands() -> String {
    let mut s = String::from("The available commands are:\n");
    let mut cmds: Vec<&(&str, &str)> = COMMANDS
        .iter()
        .chain(ofconn::cli::VERBS)
        .chain(appctl::COMMANDS)
        .chain(dpctl_ct::COMMANDS)
        .chain(dpctl_ipf::COMMANDS)
        .chain(tnlctl::COMMANDS)
        .collect();
    cmds.sort_by_key(|c| c.0);
    for (name, usage) in cmds {
        s.push_str(&format!("  {name:<28} {usage}\n"));
    }
    s
}
