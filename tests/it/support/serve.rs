//! Runs `searchgate serve --config FILE` for `load-site` tests: waits for the banner, reads
//! the HTTPS port it bound (the config asks for port 0), and kills the process (and with it
//! any engine child) on drop. Also a ureq client that trusts only the edge's own CA.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub struct Serve {
    child: Child,
    pub https_port: u16,
    /// Every line the server printed so far (stdout and stderr), for failure messages.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Serve {
    /// Starts the edge and waits (up to `wait`) for its listening line.
    pub fn start(config: &Path, wait: Duration) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_searchgate"))
            .arg("serve")
            .arg("--config")
            .arg(config)
            .arg("--threads")
            .arg("1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start searchgate serve");
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let (tx, log) = (tx.clone(), log.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    log.lock().unwrap().push(line.clone());
                    let _ = tx.send(line);
                }
            });
        }
        let mut serve = Self {
            child,
            https_port: 0,
            log,
        };
        let deadline = std::time::Instant::now() + wait;
        while serve.https_port == 0 {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(addr) = line.split("https=").nth(1) {
                        let port = addr.trim().rsplit(':').next().unwrap_or("");
                        serve.https_port = port
                            .parse()
                            .unwrap_or_else(|_| panic!("https port in {line}"));
                    }
                }
                Err(_) => {
                    let status = serve.child.try_wait().ok().flatten();
                    panic!(
                        "searchgate serve did not start ({status:?}):\n{}",
                        serve.log.lock().unwrap().join("\n")
                    );
                }
            }
        }
        serve
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        // SIGTERM first so the edge stops its engine child; SIGKILL if it lingers.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        for _ in 0..50 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A ureq agent that trusts only the CA in `ca` (the edge writes `data/ca.pem`) and
/// returns every status as a response.
pub fn ca_agent(ca: &Path) -> ureq::Agent {
    let certs = searchgate::outbound::pem_certs(ca).expect("the CA the edge wrote");
    let trust = searchgate::outbound::Trust::Certs(certs);
    searchgate::outbound::agent("test", std::time::Duration::from_secs(60), trust)
}
