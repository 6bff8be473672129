//! TLS material: the operator's certificate and key, or (when none is configured) a local
//! CA kept in the data directory and a leaf certificate for every region's wildcard,
//! `localhost` and the loopback addresses, re-issued at each start. Builds the rustls
//! server configuration (ring provider, TLS 1.2 and 1.3, session tickets).
//!
//! Must not touch: sockets or request handling.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::PrivateKeyDer;
use rustls::ServerConfig;

/// Files of the generated CA, relative to the data directory.
pub const CA_CERT: &str = "ca.pem";
const CA_KEY: &str = "ca-key.pem";
const LEAF_CERT: &str = "edge-cert.pem";
const LEAF_KEY: &str = "edge-key.pem";
const CA_NAME: &str = "searchgate local CA";

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// The names a generated leaf certificate covers: `*.<region>.<domain>` for each region,
/// `*.<domain>`, `<domain>`, `localhost`.
pub fn leaf_names(domain: &str, regions: &[String]) -> Vec<String> {
    let mut names: Vec<String> = regions.iter().map(|r| format!("*.{r}.{domain}")).collect();
    names.push(format!("*.{domain}"));
    names.push(domain.to_string());
    names.push("localhost".to_string());
    names.push("127.0.0.1".to_string());
    names.push("::1".to_string());
    names.sort();
    names.dedup();
    names
}

fn ca_params() -> CertificateParams {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, CA_NAME);
    dn.push(DnType::OrganizationName, "searchgate");
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p
}

fn write_file(path: &Path, text: &str, private: bool) -> io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let _ = private;
    io::Write::write_all(&mut opts.open(path)?, text.as_bytes())
}

/// Loads the CA in `data_dir`, creating it on first start. Returns its key.
fn load_or_create_ca(data_dir: &Path) -> io::Result<KeyPair> {
    let key_path = data_dir.join(CA_KEY);
    if key_path.exists() && data_dir.join(CA_CERT).exists() {
        let pem = std::fs::read_to_string(&key_path)?;
        return KeyPair::from_pem(&pem)
            .map_err(|e| invalid(format!("{}: {e}", key_path.display())));
    }
    let key = KeyPair::generate().map_err(|e| invalid(e.to_string()))?;
    let cert = ca_params()
        .self_signed(&key)
        .map_err(|e| invalid(e.to_string()))?;
    write_file(&key_path, &key.serialize_pem(), true)?;
    write_file(&data_dir.join(CA_CERT), &cert.pem(), false)?;
    Ok(key)
}

/// Issues a leaf certificate for `names` signed by the data directory's CA and writes it
/// there. Returns the paths of the chain and the key.
pub fn issue_leaf(data_dir: &Path, names: &[String]) -> io::Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(data_dir)?;
    let ca_key = load_or_create_ca(data_dir)?;
    let issuer = Issuer::new(ca_params(), ca_key);
    let mut params = CertificateParams::new(names.to_vec()).map_err(|e| invalid(e.to_string()))?;
    params.distinguished_name.push(
        DnType::CommonName,
        names.first().cloned().unwrap_or_default(),
    );
    params.use_authority_key_identifier_extension = true;
    let key = KeyPair::generate().map_err(|e| invalid(e.to_string()))?;
    let cert = params
        .signed_by(&key, &issuer)
        .map_err(|e| invalid(e.to_string()))?;
    let (cert_path, key_path) = (data_dir.join(LEAF_CERT), data_dir.join(LEAF_KEY));
    write_file(&cert_path, &cert.pem(), false)?;
    write_file(&key_path, &key.serialize_pem(), true)?;
    Ok((cert_path, key_path))
}

/// A rustls server configuration from PEM files (chain first, then key).
pub fn server_config(cert: &Path, key: &Path) -> io::Result<Arc<ServerConfig>> {
    let chain = crate::outbound::pem_certs(cert)?;
    if chain.is_empty() {
        return Err(invalid(format!("{}: no certificate", cert.display())));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| invalid(format!("{}: {e}", key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| invalid(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| invalid(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config.ticketer = rustls::crypto::ring::Ticketer::new().map_err(|e| invalid(e.to_string()))?;
    config.session_storage = rustls::server::ServerSessionMemoryCache::new(4096);
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_survives_restarts_and_leaf_covers_regions() {
        let dir = tempfile::tempdir().unwrap();
        let names = leaf_names("localhost", &["local".into(), "us-east-1".into()]);
        assert!(names.contains(&"*.local.localhost".to_string()));
        assert!(names.contains(&"*.us-east-1.localhost".to_string()));
        let (c, k) = issue_leaf(dir.path(), &names).unwrap();
        let ca_first = std::fs::read(dir.path().join(CA_CERT)).unwrap();
        issue_leaf(dir.path(), &names).unwrap();
        assert_eq!(
            ca_first,
            std::fs::read(dir.path().join(CA_CERT)).unwrap(),
            "CA kept"
        );
        server_config(&c, &k).unwrap();
    }

    #[test]
    fn missing_files_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let e = server_config(&dir.path().join("nope.pem"), &dir.path().join("k.pem")).unwrap_err();
        assert!(e.to_string().contains("nope.pem"), "{e}");
    }
}
