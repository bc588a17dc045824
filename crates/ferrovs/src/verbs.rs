//! The verbs `ferrovs` knows how to explain: name, arguments, a one-line description and the
//! group it is listed under. The daemon decides what a verb does; this table only feeds
//! `ferrovs help [VERB]`, `--help`, shell completions and the man page. A verb the daemon has
//! and this table lacks still works (it is passed through) and is listed by `ferrovs help`
//! under "Other daemon commands", taken from the daemon's `list-commands`.

/// One verb.
pub struct Verb {
    pub name: &'static str,
    pub args: &'static str,
    pub about: &'static str,
    pub group: &'static str,
}

const fn v(
    group: &'static str,
    name: &'static str,
    args: &'static str,
    about: &'static str,
) -> Verb {
    Verb {
        name,
        args,
        about,
        group,
    }
}

const BR: &str = "Bridges and ports";
const OF: &str = "OpenFlow flows, groups and meters (module openflow; ovs-ofctl syntax)";
const CONN: &str = "OpenFlow connections (ovs-ofctl BR opens DIR/BR.mgmt)";
const MOD: &str = "Modules";
const PMD: &str = "Poll threads and the datapath";
const DAEMON: &str = "Daemon";
const LOCAL: &str = "Run by the CLI itself";

/// Every verb, in the order `ferrovs help` lists them.
pub const VERBS: &[Verb] = &[
    v(BR, "add-br", "BR [module=openflow|learning|patch|tuple3] [KEY=VALUE...]", "create a bridge with its internal port BR (table 0: priority=0,actions=NORMAL)"),
    v(BR, "del-br", "BR", "delete a bridge and all its ports"),
    v(BR, "list-br", "[--json]", "list the bridges"),
    v(BR, "br-exists", "BR", "exit 0 if bridge BR exists, 1 otherwise"),
    v(BR, "set-bridge", "BR KEY=VALUE...", "change module settings (mac-aging-time, mac-table-size, cache, flow-limit, max-idle, ...)"),
    v(BR, "add-port", "BR PORT [type=T] [ofport=N] [tag=VID|trunks=VID,...] [KEY=VALUE...]", "add a port; type system (default), afxdp, internal, pcap, null, ...; other keys are the type's options"),
    v(BR, "del-port", "[BR] PORT", "remove a port"),
    v(BR, "list-ports", "BR [--json]", "list a bridge's ports"),
    v(BR, "port-to-br", "PORT", "print the bridge a port belongs to"),
    v(BR, "show", "[--json]", "bridges, modules, ports, ofports and options"),
    v(BR, "dump-ports", "BR [--json | --rate [--interval SECS]]", "per-port packet, byte, drop and error counters, or their rates"),
    v(OF, "add-flow", "BR FLOW", "add a flow"),
    v(OF, "add-flows", "BR FILE|-", "add the flows of FILE (one per line; - for standard input), all or none"),
    v(OF, "mod-flows", "BR [--strict] FLOW", "change the actions of matching flows"),
    v(OF, "del-flows", "BR [--strict] [FLOW]", "delete matching flows (all without FLOW)"),
    v(OF, "dump-flows", "BR [FLOW] [--json]", "print flows with their counters"),
    v(OF, "dump-tables", "BR [--json]", "print table counters"),
    v(OF, "mod-table", "BR TABLE drop|controller|continue", "set a table's miss behaviour"),
    v(OF, "add-group", "BR GROUP", "add a group (all, select, indirect, fast-failover)"),
    v(OF, "mod-group", "BR GROUP", "change a group"),
    v(OF, "del-groups", "BR [group_id=N]", "delete one group or all"),
    v(OF, "insert-buckets", "BR group_id=N[,command_bucket_id=first|last|ID],bucket=...", "add buckets to a group"),
    v(OF, "remove-buckets", "BR group_id=N[,command_bucket_id=first|last|all|ID]", "remove buckets from a group"),
    v(OF, "dump-groups", "BR [--json]", "print groups with their counters"),
    v(OF, "add-meter", "BR METER", "add a meter (drop and dscp_remark bands, kbps or pktps, burst)"),
    v(OF, "mod-meter", "BR METER", "change a meter"),
    v(OF, "del-meters", "BR [meter=N]", "delete one meter or all"),
    v(OF, "dump-meters", "BR [--json]", "print meters with their counters"),
    v(OF, "trace", "BR FLOW [PACKET] [--json]", "tables visited, rules matched, actions, megaflow and datapath actions"),
    v(OF, "ofproto/trace", "BR FLOW", "the same as trace, under OVS's name"),
    v(OF, "dpctl/dump-flows", "[BR] [--json]", "the megaflow cache"),
    v(OF, "dpctl/del-flows", "[BR]", "empty the megaflow cache"),
    v(CONN, "set-controller", "BR TARGET...", "controllers: tcp:IP[:PORT] unix:PATH ptcp:[PORT][:IP] punix:PATH"),
    v(CONN, "del-controller", "BR", "remove a bridge's controllers"),
    v(CONN, "get-controller", "BR", "controllers and their connection state"),
    v(CONN, "set-fail-mode", "BR secure|standalone", "what the bridge does without its controllers"),
    v(CONN, "get-fail-mode", "BR", "print the fail mode"),
    v(CONN, "del-fail-mode", "BR", "back to the default fail mode (standalone)"),
    v(CONN, "set-openflow", "BR KEY=VALUE...", "protocols, inactivity_probe, max_backoff, controller_rate_limit, controller_burst_limit, datapath_id"),
    v(CONN, "get-openflow", "BR", "print the OpenFlow settings"),
    v(CONN, "snoop", "BR [--duration SECS]", "print the messages on BR's OpenFlow connections"),
    v(CONN, "monitor", "BR [--duration SECS]", "print BR's packet-ins, flow-removed and port-status messages"),
    v(MOD, "fdb-show", "BR [--json]", "the MAC table (learning, openflow NORMAL)"),
    v(MOD, "fdb-flush", "BR", "empty the MAC table"),
    v(MOD, "fdb-stats", "BR [--json]", "MAC table counters"),
    v(MOD, "patch-set", "BR FROM TO", "patch: forward port FROM to port TO"),
    v(MOD, "patch-del", "BR FROM", "patch: remove FROM's mapping"),
    v(MOD, "patch-show", "BR [--json]", "patch: the port map"),
    v(MOD, "tuple3-add", "BR PORT IP PROTO PORTNUM", "tuple3: deliver (dst IP, protocol, dst port) to PORT"),
    v(MOD, "tuple3-del", "BR PORT IP PROTO PORTNUM", "tuple3: remove a tuple"),
    v(MOD, "tuple3-uplink", "BR PORT|none", "tuple3: the port for everything else"),
    v(MOD, "tuple3-show", "BR [--json]", "tuple3: the registered tuples"),
    v(PMD, "top", "[BR...] [--interval SECS] [--once]", "live per-port and per-thread rates, refreshing in place (q quits)"),
    v(PMD, "pmd-stats-show", "[--json]", "per poll thread: packets, cache hits, upcalls, cycles per packet"),
    v(PMD, "pmd-stats-clear", "", "reset the poll threads' counters"),
    v(PMD, "pmd-trace", "BR N", "trace the next N packets BR receives through the fast path (0: stop, forget)"),
    v(PMD, "pmd-trace-show", "BR [--json]", "traced packets: in port, the module's decision (cache, actions), outputs"),
    v(PMD, "dpif-netdev/pmd-rxq-show", "[--json]", "which thread polls which receive queue"),
    v(PMD, "dpif-netdev/pmd-rxq-rebalance", "", "reassign receive queues to threads now"),
    v(PMD, "dpif/show", "", "bridges and ports as the datapath sees them"),
    v(DAEMON, "vlog/list", "", "logging levels"),
    v(DAEMON, "vlog/set", "[SPEC...]", "change logging levels"),
    v(DAEMON, "coverage/show", "", "event counters"),
    v(DAEMON, "memory/show", "", "memory use"),
    v(DAEMON, "list-commands", "", "every command the daemon accepts"),
    v(DAEMON, "version", "", "the daemon's version"),
    v(DAEMON, "vlog/reopen", "", "reopen the log file (after logrotate)"),
    v(DAEMON, "exit", "[--cleanup]", "stop the daemon, closing every port it opened"),
    v(LOCAL, "help", "[VERB]", "this list, or one verb's usage"),
    v(LOCAL, "completions", "bash|zsh|fish", "print a shell completion script"),
    v(LOCAL, "man", "", "print the man page (roff)"),
];

/// The verb named `name`, if the table has it.
pub fn find(name: &str) -> Option<&'static Verb> {
    VERBS.iter().find(|v| v.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_described() {
        let mut seen = std::collections::BTreeSet::new();
        for v in VERBS {
            assert!(seen.insert(v.name), "{} listed twice", v.name);
            assert!(!v.about.is_empty(), "{} has no description", v.name);
        }
        assert!(find("add-flow").is_some());
        assert!(find("no-such-verb").is_none());
    }
}
