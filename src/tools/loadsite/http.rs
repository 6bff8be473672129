//! The loader's HTTP client: ureq over rustls (ring) with the system roots plus `--cacert`,
//! Basic credentials from the cluster URL, and retries with exponential backoff and jitter
//! for the statuses spec 7 says to retry (429, 500, 502, 503, 504) and for dropped
//! connections, honouring `Retry-After`. Requests never carry the password in their URI, so
//! no transport error can print it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::outbound::{self, Trust};

use super::target::ClusterUrl;
use crate::calendar::parse_http_date;

/// Largest response body read (a bulk response for a large batch stays well below).
const MAX_RESPONSE: u64 = 256 * 1024 * 1024;
/// Bodies from this size on are sent with `Expect: 100-continue`, so that a server can refuse
/// them (413) before they are uploaded, even if it closes the connection afterwards.
const EXPECT_FROM: usize = 1024 * 1024;
/// Longest single wait, whatever `Retry-After` says.
const MAX_WAIT: Duration = Duration::from_secs(120);
/// Where distributions keep the system's CA bundle.
const SYSTEM_BUNDLES: [&str; 5] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
];

/// A failed exchange. Messages never contain credentials.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// TLS settings could not be built.
    #[error("{0}")]
    Tls(String),
    /// The request could not be completed (after retries when retryable).
    #[error("{method} {path}: {reason}")]
    Transport {
        method: &'static str,
        path: String,
        reason: String,
    },
}

/// How long to wait between attempts.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff; doubled per attempt.
    pub base: Duration,
    /// The longest backoff before jitter.
    pub cap: Duration,
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (0-based): a random point in the upper half of
    /// `min(cap, base * 2^attempt)`, but never less than the server's `Retry-After`.
    pub fn delay(
        &self,
        attempt: u32,
        retry_after: Option<Duration>,
        rng: &mut impl rand::Rng,
    ) -> Duration {
        let exp = self
            .base
            .saturating_mul(1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX));
        let ceiling = exp.min(self.cap);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        let jittered = Duration::from_nanos(rng.random_range(nanos / 2..=nanos));
        jittered.max(retry_after.unwrap_or_default()).min(MAX_WAIT)
    }
}

/// Whether spec 7 says to retry this status.
pub fn retryable_status(status: u16) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504)
}

/// Parses `Retry-After`: delta-seconds or an HTTP date (relative to `now`, Unix seconds).
pub fn parse_retry_after(value: &str, now: i64) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = parse_http_date(v)?;
    Some(Duration::from_secs(u64::try_from(at - now).unwrap_or(0)))
}

/// TLS options.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// Extra trusted CA certificates (PEM).
    pub cacert: Option<PathBuf>,
    /// Skip certificate verification.
    pub insecure: bool,
}

/// A response: status, `Retry-After`, body.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl Reply {
    /// Whether the status is 2xx.
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
    /// The body parsed as JSON (Null when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
    /// `type: reason` of an Elasticsearch error body, or the start of the body.
    pub fn error_summary(&self) -> String {
        let v = self.json();
        let e = &v["error"];
        match (e["type"].as_str(), e["reason"].as_str(), e.as_str()) {
            (Some(t), Some(r), _) => format!("{t}: {r}"),
            (_, _, Some(s)) => s.to_owned(),
            _ => {
                let text = String::from_utf8_lossy(&self.body);
                let short: String = text.chars().take(200).collect();
                if short.trim().is_empty() {
                    "(empty body)".into()
                } else {
                    short.trim().to_owned()
                }
            }
        }
    }
}

/// The client for one cluster.
#[derive(Debug)]
pub struct Client {
    agent: ureq::Agent,
    url: ClusterUrl,
    policy: RetryPolicy,
    retries: AtomicU64,
}

impl Client {
    /// Builds the client; reads the CA bundles now so that a bad `--cacert` fails early.
    pub fn new(
        url: ClusterUrl,
        tls: &TlsOptions,
        policy: RetryPolicy,
        timeout: Duration,
    ) -> Result<Self, HttpError> {
        let trust = match tls.insecure {
            true => Trust::Anyone,
            false => root_certs(tls.cacert.as_deref())?,
        };
        Ok(Self {
            agent: outbound::agent("load-site", timeout, trust),
            url,
            policy,
            retries: AtomicU64::new(0),
        })
    }

    /// The cluster URL with the password masked.
    pub fn masked_url(&self) -> String {
        self.url.to_string()
    }

    /// Retries made so far (all requests).
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Sends a request, retrying retryable statuses and dropped connections. Returns the last
    /// reply when retries run out on a retryable status.
    pub fn send(
        &self,
        method: &'static str,
        path: &str,
        body: Option<(&str, &[u8])>,
    ) -> Result<Reply, HttpError> {
        let mut rng = rand::rng();
        let mut attempt = 0;
        loop {
            let result = self.send_once(method, path, body);
            let retry = match &result {
                Ok((reply, ra)) if retryable_status(reply.status) => Some(*ra),
                Err(e) if retryable_transport(e) => Some(None),
                _ => None,
            };
            let Some(retry_after) = retry.filter(|_| attempt < self.policy.max_retries) else {
                return result
                    .map(|(r, _)| r)
                    .map_err(|e| self.transport(method, path, &e));
            };
            std::thread::sleep(self.policy.delay(attempt, retry_after, &mut rng));
            self.retries.fetch_add(1, Ordering::Relaxed);
            attempt += 1;
        }
    }

    fn transport(&self, method: &'static str, path: &str, e: &ureq::Error) -> HttpError {
        let tls = match e {
            ureq::Error::Tls(_) | ureq::Error::Rustls(_) => Some(e.to_string()),
            ureq::Error::Io(io) => io
                .get_ref()
                .and_then(|i| i.downcast_ref::<rustls::Error>())
                .map(ToString::to_string),
            _ => None,
        };
        let reason = match tls {
            Some(t) => format!("TLS: {t} (for a private CA pass --cacert FILE)"),
            None => e.to_string(),
        };
        HttpError::Transport {
            method,
            path: format!("{}{path}", self.url),
            reason,
        }
    }

    fn send_once(
        &self,
        method: &'static str,
        path: &str,
        body: Option<(&str, &[u8])>,
    ) -> Result<(Reply, Option<Duration>), ureq::Error> {
        let uri = self.url.endpoint(path);
        let mut builder = ureq::http::Request::builder().method(method).uri(&uri);
        if let Some(auth) = self.url.authorization() {
            builder = builder.header("Authorization", auth.expose());
        }
        let mut response = match body {
            Some((ctype, bytes)) => {
                builder = builder.header("Content-Type", ctype);
                if bytes.len() >= EXPECT_FROM {
                    builder = builder.header("Expect", "100-continue");
                }
                let req = builder.body(bytes)?;
                self.agent.run(req)?
            }
            None if matches!(method, "GET" | "HEAD" | "DELETE") => {
                self.agent.run(builder.body(())?)?
            }
            // An empty slice gives `Content-Length: 0`; `()` would be sent chunked.
            None => self.agent.run(builder.body(&[][..])?)?,
        };
        let status = response.status().as_u16();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, now));
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE)
            .read_to_vec()?;
        Ok((Reply { status, body }, retry_after))
    }
}

/// A dropped or timed-out connection is worth retrying (bulk requests are idempotent: every
/// action carries its `_id`); TLS, DNS and URL errors are not.
fn pem_certs(path: &Path) -> Result<Vec<rustls_pki_types::CertificateDer<'static>>, HttpError> {
    outbound::pem_certs(path).map_err(|e| HttpError::Tls(e.to_string()))
}

fn retryable_transport(e: &ureq::Error) -> bool {
    use std::io::ErrorKind as K;
    match e {
        ureq::Error::Io(io) => matches!(
            io.kind(),
            K::ConnectionReset
                | K::ConnectionAborted
                | K::ConnectionRefused
                | K::BrokenPipe
                | K::UnexpectedEof
                | K::TimedOut
        ),
        ureq::Error::Timeout(_) | ureq::Error::ConnectionFailed => true,
        _ => false,
    }
}

/// The trust roots: the system bundle (first found, or `SSL_CERT_FILE`) plus `cacert`;
/// the client's built-in Mozilla roots when there is no system bundle and no `--cacert`.
fn root_certs(cacert: Option<&Path>) -> Result<Trust, HttpError> {
    let mut certs = Vec::new();
    let env_bundle = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from);
    let system = env_bundle
        .into_iter()
        .chain(SYSTEM_BUNDLES.iter().map(PathBuf::from))
        .find(|p| p.is_file());
    if let Some(bundle) = &system {
        certs.extend(pem_certs(bundle)?);
    }
    if let Some(path) = cacert {
        let extra = pem_certs(path)?;
        if extra.is_empty() {
            return Err(HttpError::Tls(format!(
                "{}: no PEM certificate found",
                path.display()
            )));
        }
        certs.extend(extra);
    }
    Ok(match certs.is_empty() {
        true => Trust::BuiltIn,
        false => Trust::Certs(certs),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng as _;

    #[test]
    fn backoff_doubles_with_jitter_and_respects_the_cap() {
        let p = RetryPolicy {
            max_retries: 5,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(1),
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for attempt in 0..8 {
            let ceiling = Duration::from_millis(100 * (1 << attempt)).min(Duration::from_secs(1));
            let d = p.delay(attempt, None, &mut rng);
            assert!(d >= ceiling / 2 && d <= ceiling, "attempt {attempt}: {d:?}");
        }
        // Different draws differ (jitter), same seed repeats.
        let mut a = rand::rngs::StdRng::seed_from_u64(1);
        let mut b = rand::rngs::StdRng::seed_from_u64(1);
        let xs: Vec<_> = (0..4).map(|_| p.delay(3, None, &mut a)).collect();
        let ys: Vec<_> = (0..4).map(|_| p.delay(3, None, &mut b)).collect();
        assert_eq!(xs, ys);
        assert!(xs.windows(2).any(|w| w[0] != w[1]));
    }

    #[test]
    fn retry_after_is_a_floor_and_is_bounded() {
        let p = RetryPolicy {
            max_retries: 5,
            base: Duration::from_millis(1),
            cap: Duration::from_millis(2),
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(3)), &mut rng),
            Duration::from_secs(3)
        );
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(3600)), &mut rng),
            MAX_WAIT
        );
        let huge = RetryPolicy {
            max_retries: 99,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(1000),
        };
        assert!(huge.delay(64, None, &mut rng) <= MAX_WAIT);
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(parse_retry_after("7", 0), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after(" 0 ", 0), Some(Duration::ZERO));
        let now = 784_111_777 - 5;
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now + 60),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("-3", 0), None);
        assert_eq!(parse_retry_after("soon", 0), None);
    }

    #[test]
    fn statuses_retried_are_those_of_spec_7() {
        let retried: Vec<u16> = (100..600).filter(|&s| retryable_status(s)).collect();
        assert_eq!(retried, [429, 500, 502, 503, 504]);
    }

    #[test]
    fn error_summaries() {
        let r = Reply {
            status: 400,
            body: br#"{"error":{"type":"mapper_parsing_exception","reason":"bad"},"status":400}"#
                .to_vec(),
        };
        assert_eq!(r.error_summary(), "mapper_parsing_exception: bad");
        let r = Reply {
            status: 413,
            body: b"".to_vec(),
        };
        assert_eq!(r.error_summary(), "(empty body)");
        let r = Reply {
            status: 401,
            body: br#"{"error":"Authorization Required"}"#.to_vec(),
        };
        assert_eq!(r.error_summary(), "Authorization Required");
    }

    #[test]
    fn a_bad_cacert_is_reported_with_its_path() {
        let err = root_certs(Some(Path::new("/nonexistent/ca.pem")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/ca.pem"), "{err}");
    }
}
