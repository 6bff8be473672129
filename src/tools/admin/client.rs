//! Finding and calling the admin API, for every tool that reads it (`searchgate admin`,
//! `searchgate latency CLUSTER_ID`, `searchgate plan --from-cluster` and its catalog):
//! the URL from `--url`, else `./data/admin.url` (the edge writes it at start), else
//! `http://127.0.0.1:9900`; the bearer token from `--token-file`, else `./data/admin.token`;
//! an `https` admin URL verified against `./data/ca.pem` (the edge's own CA) when that file
//! exists. JSON in and out; a failure keeps the API's own message.
//!
//! Must not touch: `edge`, `engine`, `control` (HTTP only).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::outbound::{self, Trust};

/// Where the embedded default keeps its files.
pub const DATA: &str = "./data";
/// The admin listener's default address.
pub const DEFAULT_URL: &str = "http://127.0.0.1:9900";
/// Longest a call may take (connect, request, answer).
const TIMEOUT: Duration = Duration::from_secs(30);

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No token to send, or nothing answered at the URL.
    Unreachable(String),
    /// The API answered with an error (its status and reason), or not with JSON.
    Failed(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Unreachable(m) | CallError::Failed(m) => f.write_str(m),
        }
    }
}

impl From<CallError> for String {
    fn from(e: CallError) -> String {
        e.to_string()
    }
}

/// The admin API of an edge.
#[derive(Debug, Clone)]
pub struct AdminClient {
    /// Without a trailing `/`.
    pub url: String,
    token: String,
}

impl AdminClient {
    /// The API at `url` (default: `./data/admin.url`, else [`DEFAULT_URL`]) with the token
    /// in `token_file` (default: `./data/admin.token`).
    pub fn find(url: Option<&str>, token_file: Option<&Path>) -> Result<AdminClient, CallError> {
        let url = match url {
            Some(u) => u.trim_end_matches('/').to_string(),
            None => std::fs::read_to_string(Path::new(DATA).join("admin.url"))
                .map(|s| s.trim().trim_end_matches('/').to_string())
                .unwrap_or_else(|_| DEFAULT_URL.into()),
        };
        let path = token_file.map_or_else(|| Path::new(DATA).join("admin.token"), PathBuf::from);
        let token = std::fs::read_to_string(&path).map_err(|e| {
            CallError::Unreachable(format!(
                "cannot read the admin token from {} ({e}); pass --token-file FILE",
                path.display()
            ))
        })?;
        Ok(AdminClient {
            url,
            token: token.trim().to_string(),
        })
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> Result<Value, CallError> {
        self.call("GET", path, None)
    }

    /// Calls the API; the JSON answer of a 2xx, or the API's message.
    pub fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, CallError> {
        let (status, url, text) = self.send(method, path, body)?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|_| CallError::Failed(format!("{status} from {url}: {}", text.trim())))?;
        if status >= 400 {
            let reason = v["error"]["reason"].as_str().unwrap_or("no reason given");
            return Err(CallError::Failed(format!("{status}: {reason}")));
        }
        Ok(v)
    }

    /// Calls the API; the text of a 2xx as it came (CSV), or the API's message.
    pub fn call_text(&self, method: &str, path: &str) -> Result<String, CallError> {
        let (status, url, text) = self.send(method, path, None)?;
        if status >= 400 {
            return Err(CallError::Failed(
                match serde_json::from_str::<Value>(&text) {
                    Ok(v) => {
                        let reason = v["error"]["reason"].as_str().unwrap_or("no reason given");
                        format!("{status}: {reason}")
                    }
                    Err(_) => format!("{status} from {url}: {}", text.trim()),
                },
            ));
        }
        Ok(text)
    }

    /// Sends one request: the status, the URL and the answer's text.
    fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, String, String), CallError> {
        let url = format!("{}{path}", self.url);
        let req = ureq::http::Request::builder()
            .method(method)
            .uri(&url)
            .header("Authorization", format!("Bearer {}", self.token))
            .header("Content-Type", "application/json");
        let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let req = req
            .body(bytes)
            .map_err(|e| CallError::Failed(e.to_string()))?;
        let mut resp = agent().run(req).map_err(|e| {
            CallError::Unreachable(format!("cannot reach the admin API at {url}: {e}"))
        })?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .read_to_string()
            .map_err(|e| CallError::Failed(format!("{url}: {e}")))?;
        Ok((status, url, text))
    }
}

fn agent() -> ureq::Agent {
    // The admin API's certificate is signed by the CA the service wrote in its data dir.
    let trust = match outbound::pem_certs(&Path::new(DATA).join("ca.pem")) {
        Ok(certs) => Trust::Certs(certs),
        Err(_) => Trust::BuiltIn,
    };
    outbound::agent("admin", TIMEOUT, trust)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_token_is_unreachable_and_says_which_flag_helps() {
        let e = AdminClient::find(Some("http://127.0.0.1:1/"), Some(Path::new("/nonexistent")))
            .unwrap_err();
        assert!(matches!(&e, CallError::Unreachable(m) if m.contains("--token-file")));
    }

    #[test]
    fn nothing_listening_is_unreachable() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("t");
        std::fs::write(&token, "secret\n").unwrap();
        // A port that was free a moment ago: nothing answers there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let c =
            AdminClient::find(Some(&format!("http://127.0.0.1:{port}/")), Some(&token)).unwrap();
        assert_eq!(c.url, format!("http://127.0.0.1:{port}"));
        assert!(matches!(c.get("/v1/plans"), Err(CallError::Unreachable(_))));
    }
}
