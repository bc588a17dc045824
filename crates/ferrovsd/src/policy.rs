//! What a database row or a CLI verb may make the daemon do to the file system.
//!
//! ferrovsd runs as root, and anyone who can write its database (a local `db.sock` client, or
//! a remote one through `--remote ptcp:`) chooses names and options that end up as paths. So
//! every such value is checked here, before anything is opened, created or removed:
//! * **names** of bridges, ports and interfaces: what OVS and the kernel allow for a network
//!   device — 1 to 15 bytes, no `/`, whitespace, control characters, `:` or `=`, and not `.`
//!   or `..` — because a bridge's name becomes `RUNDIR/NAME.mgmt` and an interface's may become
//!   a socket path;
//! * **controller targets** of unix sockets, with OVS's rule: `unix:PATH` only inside the run
//!   directory (a bare name is taken relative to it), `punix:PATH` only as
//!   `RUNDIR/BRIDGE.SUFFIX` with no further `/`, so a database client can neither reach an
//!   arbitrary socket nor replace a file with one;
//! * **pcap ports** read and write files: they are refused unless the daemon was started with
//!   `--pcap-dir DIR`, and then `rx_pcap`/`tx_pcap` must lie inside DIR (symlinks resolved),
//!   and `rx_pcap` must be a regular file.
//!
//! A refusal is an error message naming the value and the rule; the caller puts it in the
//! Interface `error` column, the controller's status, or the CLI's error reply. Nothing is
//! created or removed for a refused value.

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

/// The directories the checks allow, set once at start-up.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    pub rundir: PathBuf,
    /// `--pcap-dir`: where pcap ports may read and write (none: pcap ports are refused).
    pub pcap_dir: Option<PathBuf>,
}

static POLICY: OnceLock<Policy> = OnceLock::new();

/// Sets the policy (first call wins).
pub fn init(p: Policy) {
    let _ = POLICY.set(p);
}

fn policy() -> Policy {
    POLICY.get().cloned().unwrap_or_default()
}

/// Checks a bridge, port or interface name.
pub fn check_name(n: &str) -> Result<(), String> {
    if n.is_empty() || n.len() > 15 {
        return Err(format!("'{n}' is not a valid name (1 to 15 characters)"));
    }
    if n == "." || n == ".." {
        return Err(format!("'{n}' is not a valid name"));
    }
    if n.chars()
        .any(|c| c.is_whitespace() || c == '/' || c == ':' || c == '=' || c.is_control())
    {
        return Err(format!(
            "'{n}' is not a valid name (no spaces, '/', ':' or '=')"
        ));
    }
    Ok(())
}

/// A path with no `..` and no `.` components (the checks compare paths textually after this).
fn plain(p: &Path) -> bool {
    p.is_absolute()
        && p.components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

/// Checks a controller target of bridge `bridge` (only `unix:` and `punix:` have rules).
pub fn check_controller(bridge: &str, target: &str) -> Result<(), String> {
    let rundir = policy().rundir;
    if let Some(rest) = target.strip_prefix("unix:") {
        let p = if rest.contains('/') {
            PathBuf::from(rest)
        } else {
            rundir.join(rest)
        };
        if !plain(&p) || !p.starts_with(&rundir) || p == rundir {
            return Err(format!(
                "controller '{target}' refused: a unix socket controller must be in {} \
                 (or connect to unix:{}/{bridge}.mgmt, always available)",
                rundir.display(),
                rundir.display()
            ));
        }
    } else if let Some(rest) = target.strip_prefix("punix:") {
        let p = PathBuf::from(rest);
        let ok = plain(&p)
            && p.parent() == Some(rundir.as_path())
            && p.file_name()
                .and_then(|f| f.to_str())
                .and_then(|f| f.strip_prefix(&format!("{bridge}.")))
                .is_some_and(|suffix| !suffix.is_empty());
        if !ok {
            return Err(format!(
                "controller '{target}' refused: a passive unix socket must be named {}/{bridge}.* \
                 (so no other file can be replaced by a socket)",
                rundir.display()
            ));
        }
    }
    Ok(())
}

/// The most bytes an `rx_pcap` file may hold (it is read into memory).
pub const MAX_RX_PCAP: u64 = 1 << 30;

/// Checks a port's options for its type.
pub fn check_port(
    kind: &str,
    options: &std::collections::BTreeMap<String, String>,
) -> Result<(), String> {
    if kind != "pcap" {
        return Ok(());
    }
    let Some(dir) = policy().pcap_dir else {
        return Err(
            "pcap ports are off: start ferrovsd with --pcap-dir DIR to allow pcap files in DIR"
                .into(),
        );
    };
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("--pcap-dir {}: {e}", dir.display()))?;
    for key in ["rx_pcap", "tx_pcap"] {
        let Some(v) = options.get(key) else { continue };
        let p = Path::new(v);
        // The file itself for reading, its directory for writing (it may not exist yet).
        let resolved = if key == "rx_pcap" {
            p.canonicalize()
        } else {
            match (p.parent(), p.file_name()) {
                (Some(d), Some(f)) if !d.as_os_str().is_empty() => {
                    d.canonicalize().map(|d| d.join(f))
                }
                _ => Err(std::io::Error::other("not a file path")),
            }
        }
        .map_err(|e| format!("{key}={v}: {e}"))?;
        if !resolved.starts_with(&dir) {
            return Err(format!(
                "{key}={v} refused: pcap files must be in {} (--pcap-dir)",
                dir.display()
            ));
        }
        if key == "tx_pcap" && resolved.is_symlink() {
            return Err(format!("{key}={v} refused: a symlink"));
        }
        if key == "rx_pcap" {
            let md = std::fs::metadata(&resolved).map_err(|e| format!("{key}={v}: {e}"))?;
            if !md.is_file() {
                return Err(format!("{key}={v} refused: not a regular file"));
            }
            if md.len() > MAX_RX_PCAP {
                return Err(format!(
                    "{key}={v} refused: {} bytes, more than the {MAX_RX_PCAP}-byte limit",
                    md.len()
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn with(rundir: &str, pcap: Option<&Path>) {
        init(Policy {
            rundir: PathBuf::from(rundir),
            pcap_dir: pcap.map(Path::to_path_buf),
        });
    }

    #[test]
    fn names() {
        for bad in [
            "",
            "/tmp/x/evil",
            "a b",
            "..",
            ".",
            "a:b",
            "x=y",
            "0123456789abcdef",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        for good in ["br0", "br-int", "veth1.100", "a"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn controllers_and_pcap_files() {
        let dir = std::env::temp_dir().join(format!("fvpolicy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("in.pcap"), b"x").expect("file");
        with("/run/fv", Some(&dir));
        for ok in [
            "tcp:127.0.0.1:6653",
            "unix:/run/fv/ctl.sock",
            "unix:ctl.sock",
            "punix:/run/fv/br0.ctl",
            "ptcp:6653",
        ] {
            assert!(check_controller("br0", ok).is_ok(), "{ok}");
        }
        for bad in [
            "unix:/etc/ssh/x",
            "unix:/run/fv/../../etc/x",
            "punix:/some/file",
            "punix:/run/fv/br1.ctl",
            "punix:/run/fv/br0.",
            "punix:/run/fv/sub/br0.x",
            "punix:/run/fv/br0.x/../../../tmp/y",
        ] {
            assert!(check_controller("br0", bad).is_err(), "{bad}");
        }
        let o = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
        let inside = dir.join("in.pcap").display().to_string();
        assert!(check_port("pcap", &o("rx_pcap", &inside)).is_ok());
        assert!(check_port(
            "pcap",
            &o("tx_pcap", &dir.join("new.pcap").display().to_string())
        )
        .is_ok());
        assert!(check_port("pcap", &o("tx_pcap", "/etc/passwd")).is_err());
        assert!(check_port("pcap", &o("rx_pcap", "/dev/zero")).is_err());
        assert!(check_port(
            "pcap",
            &o("tx_pcap", &format!("{}/../x.pcap", dir.display()))
        )
        .is_err());
        assert!(
            check_port("system", &o("rx_pcap", "/dev/zero")).is_ok(),
            "only pcap ports"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
