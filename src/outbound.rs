//! The one way the project builds a blocking HTTP client (a ureq agent) and reads PEM
//! certificates: the control thread's metering and purges, the webhook's deliveries, the
//! admin CLI, the site loader and the tests all call [`agent`], so every client answers a
//! status as data (never as an error), follows no redirect, has a deadline and names
//! itself the same way; and every PEM file (a server's chain, a client's CA) is read by
//! [`pem_certs`].
//!
//! Must not touch: what the callers send or how they retry.

use std::io;
use std::path::Path;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;
use ureq::tls::{Certificate, RootCerts, TlsConfig};

/// Whom a client trusts for TLS.
#[derive(Debug, Clone, Default)]
pub enum Trust {
    /// The roots built into the client (Mozilla's).
    #[default]
    BuiltIn,
    /// Exactly these certificates.
    Certs(Vec<CertificateDer<'static>>),
    /// Anyone (`--insecure`): no verification.
    Anyone,
}

/// A client with a whole-request `timeout`, trusting `trust`, naming itself
/// `searchgate/<version> (<purpose>)`.
pub fn agent(purpose: &str, timeout: Duration, trust: Trust) -> ureq::Agent {
    let tls = match trust {
        Trust::BuiltIn => TlsConfig::builder().build(),
        Trust::Anyone => TlsConfig::builder().disable_verification(true).build(),
        Trust::Certs(certs) => {
            let certs: Vec<Certificate<'static>> = certs
                .iter()
                .map(|c| Certificate::from_der(c.as_ref()).to_owned())
                .collect();
            TlsConfig::builder()
                .root_certs(RootCerts::new_with_certs(&certs))
                .build()
        }
    };
    let user_agent = format!("searchgate/{} ({purpose})", env!("CARGO_PKG_VERSION"));
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .max_redirects(0)
        .user_agent(user_agent)
        .tls_config(tls)
        .build()
        .new_agent()
}

/// The certificates of a PEM file, in order (other items, keys among them, are skipped).
/// Errors name the file.
pub fn pem_certs(path: &Path) -> io::Result<Vec<CertificateDer<'static>>> {
    let named = |e: &dyn std::fmt::Display| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    };
    let bytes = std::fs::read(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| named(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_certificates_of_a_pem_file_and_names_a_bad_one() {
        let dir = tempfile::tempdir().unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["a.test".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let path = dir.path().join("both.pem");
        std::fs::write(&path, format!("{}{}", cert.pem(), key.serialize_pem())).unwrap();
        let certs = pem_certs(&path).unwrap();
        assert_eq!(certs.len(), 1);
        assert_eq!(certs[0].as_ref(), cert.der().as_ref());

        let bad = dir.path().join("bad.pem");
        std::fs::write(
            &bad,
            "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let e = pem_certs(&bad).unwrap_err();
        assert!(e.to_string().contains("bad.pem"), "{e}");
        let e = pem_certs(&dir.path().join("missing.pem")).unwrap_err();
        assert!(e.to_string().contains("missing.pem"), "{e}");
    }
}
