//! OVS's three TLS files turned into rustls configurations.
//!
//! What: [`TlsConfig::load`] reads a PEM private key, a PEM certificate (chain) and a PEM CA
//! certificate file, as `ovs-vsctl set-ssl` or `--private-key`/`--certificate`/`--ca-cert`
//! name them, and builds one rustls server and one client configuration from them, both
//! with the `ring` provider, TLS 1.2 and 1.3.
//!
//! Authentication is mutual and by CA only, as Open vSwitch does it: a server asks every
//! client for a certificate and refuses one that does not chain to the CA certificate; a
//! client refuses a server whose certificate does not chain to it. Host names are not
//! checked: OVS certificates name a switch or controller ID (the subject alternative name
//! `ovs-pki` writes is not even a valid DNS name), so the client verifier ([`ChainOnly`])
//! checks the chain, validity dates and handshake signatures with webpki and skips the name.
//!
//! [`ConfigCache`] keeps the last configuration per set of files and reloads it when a file's
//! size or modification time changes, so replaced certificates apply to the next connection
//! without a restart (existing connections keep the keys they negotiated).
//!
//! Thread safety: a [`TlsConfig`] is immutable and shared behind an `Arc`; [`ConfigCache`]
//! takes its own mutex for the time of a lookup (and a load, when a file changed).

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::server::{ParsedCertificate, WebPkiClientVerifier};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};
use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The three files of a TLS configuration, as OVS names them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TlsFiles {
    pub private_key: PathBuf,
    pub certificate: PathBuf,
    pub ca_cert: PathBuf,
}

/// A loaded configuration: what [`crate::accept`] and [`crate::connect`] need.
pub struct TlsConfig {
    pub(crate) server: Arc<ServerConfig>,
    pub(crate) client: Arc<ClientConfig>,
    files: TlsFiles,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("files", &self.files)
            .finish()
    }
}

fn pem_error(what: &str, file: &Path, e: pem::Error) -> String {
    match e {
        pem::Error::Io(e) => format!("{what} {}: {e}", file.display()),
        pem::Error::NoItemsFound => format!("{what} {}: no PEM {what} in the file", file.display()),
        e => format!("{what} {}: not valid PEM: {e}", file.display()),
    }
}

fn read_certs(what: &str, file: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(file)
        .map_err(|e| pem_error(what, file, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(what, file, e))?;
    if certs.is_empty() {
        return Err(pem_error(what, file, pem::Error::NoItemsFound));
    }
    Ok(certs)
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

const VERSIONS: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS13, &rustls::version::TLS12];

impl TlsConfig {
    /// Loads the three files; an error names the file at fault and why.
    pub fn load(
        private_key: &Path,
        certificate: &Path,
        ca_cert: &Path,
    ) -> Result<TlsConfig, String> {
        let key = PrivateKeyDer::from_pem_file(private_key)
            .map_err(|e| pem_error("private key", private_key, e))?;
        let certs = read_certs("certificate", certificate)?;
        let mut roots = RootCertStore::empty();
        for c in read_certs("CA certificate", ca_cert)? {
            roots
                .add(c)
                .map_err(|e| format!("CA certificate {}: {e}", ca_cert.display()))?;
        }
        let roots = Arc::new(roots);
        let p = provider();
        let mismatch = |e: rustls::Error| match e {
            rustls::Error::InconsistentKeys(_) => format!(
                "private key {} does not belong to certificate {}",
                private_key.display(),
                certificate.display()
            ),
            e => format!(
                "private key {} / certificate {}: {e}",
                private_key.display(),
                certificate.display()
            ),
        };
        let client_verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::clone(&roots), Arc::clone(&p))
                .build()
                .map_err(|e| format!("CA certificate {}: {e}", ca_cert.display()))?;
        let server = ServerConfig::builder_with_provider(Arc::clone(&p))
            .with_protocol_versions(VERSIONS)
            .map_err(|e| format!("TLS setup: {e}"))?
            .with_client_cert_verifier(client_verifier)
            .with_single_cert(certs.clone(), key.clone_key())
            .map_err(mismatch)?;
        let verifier = ChainOnly {
            roots,
            algs: p.signature_verification_algorithms,
        };
        let client = ClientConfig::builder_with_provider(p)
            .with_protocol_versions(VERSIONS)
            .map_err(|e| format!("TLS setup: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_client_auth_cert(certs, key)
            .map_err(mismatch)?;
        Ok(TlsConfig {
            server: Arc::new(server),
            client: Arc::new(client),
            files: TlsFiles {
                private_key: private_key.to_path_buf(),
                certificate: certificate.to_path_buf(),
                ca_cert: ca_cert.to_path_buf(),
            },
        })
    }

    /// Loads `files`.
    pub fn load_files(files: &TlsFiles) -> Result<TlsConfig, String> {
        TlsConfig::load(&files.private_key, &files.certificate, &files.ca_cert)
    }

    /// The files this configuration was loaded from.
    pub fn files(&self) -> &TlsFiles {
        &self.files
    }
}

/// Verifies a server's certificate chain against the CA, not its name. See the module
/// documentation.
#[derive(Debug)]
struct ChainOnly {
    roots: Arc<RootCertStore>,
    algs: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let cert = ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_cert_signed_by_trust_anchor(
            &cert,
            &self.roots,
            intermediates,
            now,
            self.algs.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

/// What identifies one version of a file: its size and modification time (`None`: missing).
type Stamp = Option<(u64, SystemTime)>;

fn stamp(p: &Path) -> Stamp {
    let m = std::fs::metadata(p).ok()?;
    Some((m.len(), m.modified().ok()?))
}

struct Cached {
    files: TlsFiles,
    stamps: [Stamp; 3],
    result: Result<Arc<TlsConfig>, String>,
}

/// The last configuration loaded, reloaded when the files change. See the module
/// documentation.
#[derive(Default)]
pub struct ConfigCache {
    last: Mutex<Option<Cached>>,
}

impl ConfigCache {
    /// The configuration for `files`, loading it if the files (or their contents) changed
    /// since the last call. A failed load is remembered too, until a file changes.
    pub fn get(&self, files: &TlsFiles) -> Result<Arc<TlsConfig>, String> {
        let stamps = [
            stamp(&files.private_key),
            stamp(&files.certificate),
            stamp(&files.ca_cert),
        ];
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = last.as_ref() {
            if &c.files == files && c.stamps == stamps {
                return c.result.clone();
            }
        }
        let result = TlsConfig::load_files(files).map(Arc::new);
        *last = Some(Cached {
            files: files.clone(),
            stamps,
            result: result.clone(),
        });
        result
    }
}
