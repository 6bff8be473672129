//! A webhook receiver for the overage notices (issue 12): an HTTP/1.1 server on
//! 127.0.0.1:0 that answers each POST as its script says (a status, or holding the
//! connection open until the test releases it and then closing it unanswered), 204 once
//! the script is done, and reports every POST (what it will answer, the JSON it got) as
//! soon as the body is read.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::mpsc::{channel, Receiver, Sender};

use serde_json::Value;

/// How the receiver answers one POST.
pub enum Reply {
    /// This status, empty body.
    Status(u16),
    /// Nothing until the sender is dropped or sends; then the connection is closed
    /// without an answer.
    Hold(Receiver<()>),
}

/// A POST the receiver got: the status it answers (`None`: held, then closed) and the body.
pub type Got = (Option<u16>, Value);

/// A running receiver.
pub struct Hook {
    pub addr: SocketAddr,
    pub got: Receiver<Got>,
}

impl Hook {
    /// Starts a receiver that follows `script`, then answers 204.
    pub fn start(script: Vec<Reply>) -> Hook {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, got) = channel();
        std::thread::spawn(move || serve(listener, script, tx));
        Hook { addr, got }
    }

    /// The webhook URL for the config.
    pub fn url(&self) -> String {
        format!("http://{}/notices", self.addr)
    }
}

/// A `(Reply::Hold, release)` pair: drop or send on `release` to close the held POST.
pub fn hold() -> (Reply, Sender<()>) {
    let (release, held) = channel();
    (Reply::Hold(held), release)
}

fn serve(listener: TcpListener, script: Vec<Reply>, tx: Sender<Got>) {
    let mut script = script.into_iter();
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { return };
        let Some(body) = read_post(&mut conn) else {
            continue;
        };
        let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
        match script.next().unwrap_or(Reply::Status(204)) {
            Reply::Status(status) => {
                if tx.send((Some(status), json)).is_err() {
                    return;
                }
                let head = format!(
                    "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                let _ = conn.write_all(head.as_bytes());
            }
            Reply::Hold(release) => {
                if tx.send((None, json)).is_err() {
                    return;
                }
                let _ = release.recv();
                drop(conn);
            }
        }
    }
}

/// The body of one request on `conn` (`None`: the client went away first).
fn read_post(conn: &mut std::net::TcpStream) -> Option<Vec<u8>> {
    let mut reader = BufReader::new(conn.try_clone().ok()?);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().ok()?;
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}
