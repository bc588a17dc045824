//! `ferrovs snoop BR` and `ferrovs monitor BR`: small OpenFlow clients of the daemon's
//! per-bridge sockets, like `ovs-ofctl snoop` / `monitor`.
//!
//! * `monitor` connects to `<rundir>/<BR>.mgmt`, negotiates (OpenFlow 1.0, 1.3-1.5, the
//!   highest both sides have), asks for asynchronous messages with a `set_config` whose
//!   `miss_send_len` is 65535 (the daemon, like OVS, sends none to management clients
//!   otherwise), answers echo requests, and prints every message it receives.
//! * `snoop` connects to `<rundir>/<BR>.snoop`, where the daemon copies every message sent
//!   or received on the bridge's connections, and prints them.
//!
//! Both run until the daemon closes the socket or the process is interrupted; with
//! `--duration SECS` they stop by themselves. Output is one line per message (two for
//! packet-ins), flushed as it is printed.

use openflow::wire::{self, Message};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn mac(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn frame_summary(d: &[u8]) -> String {
    if d.len() < 14 {
        return format!("{} bytes", d.len());
    }
    let k = packet::flow::extract(d, 0);
    let mut s = format!(
        "dl_src={} dl_dst={} dl_type=0x{:04x}",
        mac(d.get(6..12).unwrap_or_default()),
        mac(d.get(0..6).unwrap_or_default()),
        k.dl_type
    );
    if k.dl_type == 0x0800 {
        let ip = |w: [u8; 4]| std::net::Ipv4Addr::from(w).to_string();
        s.push_str(&format!(
            " nw_src={} nw_dst={} nw_proto={}",
            ip(k.nw_src),
            ip(k.nw_dst),
            k.nw_proto
        ));
    }
    s
}

/// One message as text.
pub fn describe(m: &Message, xid: u32) -> String {
    match m {
        Message::PacketIn(p) => {
            let reason = match p.reason {
                0 => "no_match".to_string(),
                1 => "action".to_string(),
                2 => "invalid_ttl".to_string(),
                r => r.to_string(),
            };
            let in_port = p
                .match_
                .exact(openflow::Field::InPort)
                .map(|x| x.to_string())
                .unwrap_or_else(|| "?".into());
            format!(
                "OFPT_PACKET_IN (xid=0x{xid:x}): total_len={} in_port={in_port} reason={reason} table_id={} cookie=0x{:x} data_len={}\n  {}",
                p.total_len,
                p.table_id,
                p.cookie,
                p.data.len(),
                frame_summary(&p.data)
            )
        }
        Message::FlowRemoved(f) => {
            let reason = match f.reason {
                0 => "idle",
                1 => "hard",
                2 => "delete",
                3 => "group_delete",
                4 => "meter_delete",
                _ => "?",
            };
            format!(
                "OFPT_FLOW_REMOVED (xid=0x{xid:x}): priority={} {} reason={reason} table_id={} cookie=0x{:x} duration={}.{:03}s idle_timeout={} hard_timeout={} pkts={} bytes={}",
                f.priority,
                openflow::text::format_match(&f.match_, None),
                f.table_id,
                f.cookie,
                f.duration_sec,
                f.duration_nsec / 1_000_000,
                f.idle_timeout,
                f.hard_timeout,
                f.packet_count,
                f.byte_count
            )
        }
        Message::PortStatus(p) => {
            let reason = match p.reason {
                0 => "ADD",
                1 => "DELETE",
                2 => "MODIFY",
                _ => "?",
            };
            format!(
                "OFPT_PORT_STATUS (xid=0x{xid:x}): {reason}: {}({}): addr:{} config:0x{:x} state:0x{:x}",
                p.port.port_no,
                p.port.name,
                mac(&p.port.hw_addr),
                p.port.config,
                p.port.state
            )
        }
        Message::Error(e) => format!(
            "OFPT_ERROR (xid=0x{xid:x}): type={} code={} ({} bytes of data)",
            e.type_,
            e.code,
            e.data.len()
        ),
        Message::FlowMod(f) => format!(
            "OFPT_FLOW_MOD (xid=0x{xid:x}): {:?} table={} priority={} {}",
            f.command,
            f.table_id,
            f.priority,
            openflow::text::format_match(&f.match_, None)
        ),
        Message::Hello(_) => format!("OFPT_HELLO (xid=0x{xid:x})"),
        Message::EchoRequest(_) => format!("OFPT_ECHO_REQUEST (xid=0x{xid:x})"),
        Message::EchoReply(_) => format!("OFPT_ECHO_REPLY (xid=0x{xid:x})"),
        Message::BarrierRequest => format!("OFPT_BARRIER_REQUEST (xid=0x{xid:x})"),
        Message::BarrierReply => format!("OFPT_BARRIER_REPLY (xid=0x{xid:x})"),
        other => {
            let mut s = format!("{other:?}");
            if s.len() > 300 {
                s.truncate(300);
                s.push_str("...");
            }
            format!("(xid=0x{xid:x}) {s}")
        }
    }
}

fn print_raw(bytes: &[u8]) {
    let line = match wire::decode_frame(bytes) {
        Ok((h, m, _)) => format!("[v0x{:02x}] {}", h.version, describe(&m, h.xid)),
        Err(e) => format!("undecodable message ({} bytes): {e}", bytes.len()),
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Runs `snoop` or `monitor` against the sockets in `rundir`.
pub fn run(rundir: &Path, verb: &str, args: &[String]) -> ExitCode {
    let (br, duration) = match parse_args(verb, args) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let suffix = if verb == "snoop" { "snoop" } else { "mgmt" };
    let path = rundir.join(format!("{br}.{suffix}"));
    let mut session = match Session::connect(&path, verb) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let t0 = Instant::now();
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 65536];
    loop {
        if duration.is_some_and(|d| t0.elapsed() >= d) {
            return ExitCode::SUCCESS;
        }
        match session.s.read(&mut chunk) {
            Ok(0) => return ExitCode::SUCCESS,
            Ok(n) => buf.extend_from_slice(chunk.get(..n).unwrap_or_default()),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(e) => {
                eprintln!("ferrovs: {}: {e}", path.display());
                return ExitCode::from(1);
            }
        }
        let (msgs, used) = match wire::split(&buf) {
            Ok(x) => (x.0.into_iter().map(|m| m.to_vec()).collect::<Vec<_>>(), x.1),
            Err(e) => {
                eprintln!("ferrovs: bad framing from the daemon: {e}");
                return ExitCode::from(1);
            }
        };
        buf.drain(..used);
        for m in msgs {
            session.handle(&m);
        }
    }
}

/// `BR [--duration SECS]`; on a usage error, the exit code (the message is printed).
fn parse_args(verb: &str, args: &[String]) -> Result<(String, Option<Duration>), ExitCode> {
    let mut br = None;
    let mut duration = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--duration" {
            match it.next().and_then(|v| v.parse::<u64>().ok()) {
                Some(s) => duration = Some(Duration::from_secs(s)),
                None => {
                    eprintln!("ferrovs: --duration needs a number of seconds");
                    return Err(ExitCode::from(2));
                }
            }
        } else if br.is_none() {
            br = Some(a.clone());
        } else {
            eprintln!("ferrovs: usage: {verb} BR [--duration SECS]");
            return Err(ExitCode::from(2));
        }
    }
    let Some(br) = br else {
        eprintln!("ferrovs: usage: {verb} BR [--duration SECS]");
        return Err(ExitCode::from(2));
    };
    Ok((br, duration))
}

/// The connection to the daemon's snoop or management socket.
struct Session<'a> {
    s: UnixStream,
    verb: &'a str,
    /// The negotiated version, 0 until the daemon's hello arrived.
    version: u8,
}

impl<'a> Session<'a> {
    /// Connects and sends our hello; on failure, the exit code (the message is printed).
    fn connect(path: &Path, verb: &'a str) -> Result<Session<'a>, ExitCode> {
        let mut s = match UnixStream::connect(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("ferrovs: {}: {e}", path.display());
                return Err(ExitCode::from(2));
            }
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
        let hello = Message::Hello(wire::Hello::for_versions(&wire::VERSIONS));
        let Ok(h) = wire::encode(&hello, wire::OFP15, 1) else {
            return Err(ExitCode::from(2));
        };
        if s.write_all(&h).is_err() {
            eprintln!("ferrovs: {}: connection closed", path.display());
            return Err(ExitCode::from(2));
        }
        Ok(Session {
            s,
            verb,
            version: 0,
        })
    }

    /// One message from the daemon: the first hello is negotiated, `monitor` answers echo
    /// requests, everything else is printed.
    fn handle(&mut self, m: &[u8]) {
        let Ok(h) = wire::Header::parse(m) else {
            return;
        };
        if self.version == 0 && h.type_ == 0 {
            self.negotiate(&h, m);
            if self.verb == "snoop" {
                return;
            }
        }
        if self.verb == "monitor" && h.type_ == 2 && h.version == self.version {
            // Echo request: answer so the daemon keeps us.
            if let Ok((Message::EchoRequest(d), _)) = wire::decode(m) {
                if let Ok(b) = wire::encode(&Message::EchoReply(d), self.version, h.xid) {
                    let _ = self.s.write_all(&b);
                }
            }
            return;
        }
        print_raw(m);
    }

    /// Picks the highest version both sides support, as the daemon does; `monitor` then
    /// asks for whole packets in packet-ins.
    fn negotiate(&mut self, h: &wire::Header, hello: &[u8]) {
        let peer = match wire::decode(hello) {
            Ok((Message::Hello(x), _)) => x,
            _ => wire::Hello::default(),
        };
        self.version = wire::VERSIONS
            .iter()
            .copied()
            .filter(|v| peer.supports(h.version, *v))
            .max()
            .unwrap_or(wire::OFP10);
        if self.verb == "monitor" {
            let cfg = Message::SetConfig(wire::SwitchConfig {
                flags: 0,
                miss_send_len: u16::MAX,
            });
            if let Ok(b) = wire::encode(&cfg, self.version, 2) {
                let _ = self.s.write_all(&b);
            }
        }
    }
}
