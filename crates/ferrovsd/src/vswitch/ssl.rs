//! Where the TLS files come from, as ovs-vswitchd and ovsdb-server take them.
//!
//! * **OpenFlow** (`ssl:`/`pssl:` controllers): the `Open_vSwitch` row's `ssl` column names
//!   an `SSL` row whose `private_key`, `certificate` and `ca_cert` are file names
//!   (`ovs-vsctl set-ssl` writes them). [`from_tables`] reads them from each snapshot; the
//!   reconfiguration passes them to the connection layer on every pass. `bootstrap_ca_cert`
//!   is not supported (the CA certificate must exist).
//! * **OVSDB** (`--remote=pssl:`): `--private-key`, `--certificate` and `--ca-cert`, each a
//!   file name or, as ovsdb-server accepts, `db:[DB,]TABLE,COLUMN`: the first non-empty
//!   string in that column of the embedded database (e.g. `db:Open_vSwitch,SSL,private_key`),
//!   read again for every connection. [`SslOptions::source`] turns them into the per-connection
//!   configuration source the OVSDB server takes.
//!
//! Either way, files are loaded through a [`tls::ConfigCache`], so a changed file applies to
//! the next connection.

use super::model::Tables;
use ovsdb::{Server, TlsSource};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use tls::{ConfigCache, TlsFiles};

/// The files of the `SSL` row referenced by the `Open_vSwitch` row, if all three are set.
pub fn from_tables(t: &Tables) -> Option<TlsFiles> {
    let root = t.get("Open_vSwitch")?.values().next()?;
    let uuid = match root.get("ssl")? {
        Value::Array(a) if a.len() == 2 && a[0] == "uuid" => a[1].as_str()?,
        _ => return None,
    };
    let row = t.get("SSL")?.get(uuid)?;
    let col = |c: &str| {
        row.get(c)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    };
    Some(TlsFiles {
        private_key: col("private_key")?,
        certificate: col("certificate")?,
        ca_cert: col("ca_cert")?,
    })
}

/// The OVSDB server's TLS options, as given on the command line.
#[derive(Clone, Debug, Default)]
pub struct SslOptions {
    pub private_key: Option<String>,
    pub certificate: Option<String>,
    pub ca_cert: Option<String>,
}

/// `db:[DB,]TABLE,COLUMN`, resolved in `server`'s database.
fn from_db(server: &Server, spec: &str, what: &str) -> Result<String, String> {
    let parts: Vec<&str> = spec.split(',').collect();
    let (db, table, column) = match parts[..] {
        [t, c] => (None, t, c),
        [d, t, c] => (Some(d), t, c),
        _ => return Err(format!("{what} 'db:{spec}' is not db:[DB,]TABLE,COLUMN")),
    };
    server.read(|d| {
        if db.is_some_and(|n| n != d.schema().name) {
            return Err(format!("{what} 'db:{spec}': no such database"));
        }
        let t = d
            .table(table)
            .ok_or_else(|| format!("{what} 'db:{spec}': no table {table}"))?;
        t.rows()
            .find_map(|r| match r.to_json(None).get(column) {
                Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
                _ => None,
            })
            .ok_or_else(|| format!("{what} 'db:{spec}': no row of {table} sets {column}"))
    })
}

impl SslOptions {
    /// Whether all three options were given.
    pub fn complete(&self) -> bool {
        self.private_key.is_some() && self.certificate.is_some() && self.ca_cert.is_some()
    }

    /// Checks the `db:` forms' syntax up front (the values themselves are read per connection).
    pub fn check(&self) -> Result<(), String> {
        for (what, v) in self.named() {
            if let Some(spec) = v.and_then(|v| v.strip_prefix("db:")) {
                let n = spec.split(',').count();
                if !(2..=3).contains(&n) || spec.split(',').any(str::is_empty) {
                    return Err(format!("--{what}: 'db:{spec}' is not db:[DB,]TABLE,COLUMN"));
                }
            }
        }
        Ok(())
    }

    fn named(&self) -> [(&'static str, Option<&str>); 3] {
        [
            ("private-key", self.private_key.as_deref()),
            ("certificate", self.certificate.as_deref()),
            ("ca-cert", self.ca_cert.as_deref()),
        ]
    }

    /// The files as they stand now.
    pub fn resolve(&self, server: &Server) -> Result<TlsFiles, String> {
        let get = |what: &str, v: Option<&str>| -> Result<PathBuf, String> {
            let v = v.ok_or_else(|| {
                format!("pssl: remotes need --private-key, --certificate and --ca-cert (--{what} is missing)")
            })?;
            Ok(PathBuf::from(match v.strip_prefix("db:") {
                Some(spec) => from_db(server, spec, &format!("--{what}"))?,
                None => v.to_string(),
            }))
        };
        let [k, c, a] = self.named();
        Ok(TlsFiles {
            private_key: get(k.0, k.1)?,
            certificate: get(c.0, c.1)?,
            ca_cert: get(a.0, a.1)?,
        })
    }

    /// The per-connection configuration source for `server`'s `pssl:` remotes.
    pub fn source(&self, server: &Server) -> TlsSource {
        let (opts, server, cache) = (self.clone(), server.clone(), ConfigCache::default());
        Arc::new(move || cache.get(&opts.resolve(&server)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_ssl_row_is_found_through_the_root() {
        let mut t = Tables::new();
        let root = json!({"ssl": ["uuid", "u1"]});
        let ssl = json!({"private_key": "/k", "certificate": "/c", "ca_cert": "/a"});
        t.entry("Open_vSwitch".into())
            .or_default()
            .insert("r".into(), root.as_object().cloned().unwrap_or_default());
        assert_eq!(from_tables(&t), None);
        t.entry("SSL".into())
            .or_default()
            .insert("u1".into(), ssl.as_object().cloned().unwrap_or_default());
        let f = from_tables(&t).expect("found");
        assert_eq!(f.private_key, PathBuf::from("/k"));
        assert_eq!(f.ca_cert, PathBuf::from("/a"));
    }

    #[test]
    fn db_forms_are_checked() {
        let o = SslOptions {
            private_key: Some("db:Open_vSwitch,SSL,private_key".into()),
            certificate: Some("db:SSL,certificate".into()),
            ca_cert: Some("/etc/ca.pem".into()),
        };
        assert!(o.check().is_ok());
        let bad = SslOptions {
            private_key: Some("db:SSL".into()),
            ..o
        };
        assert!(bad.check().expect_err("bad").contains("--private-key"));
    }
}
