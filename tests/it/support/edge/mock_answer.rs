//! How the mock answers one request: the plan its `X-Mock` header asks for (see the
//! parent module's documentation) and the bytes of the answer.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use super::{Head, State};

/// How one request is answered (from its `X-Mock` header).
#[derive(Debug, Default)]
pub(super) struct Plan {
    pub(super) delay: Option<Duration>,
    pub(super) hold: bool,
    pub(super) status: Option<u16>,
    pub(super) size: Option<usize>,
    pub(super) resp: String,
    pub(super) then: Option<String>,
    pub(super) echo: bool,
}

pub(super) fn plan_of(value: Option<&str>) -> Plan {
    let mut p = Plan {
        resp: "length".into(),
        ..Plan::default()
    };
    for item in value.unwrap_or("").split(';').map(str::trim) {
        let (k, v) = item.split_once('=').unwrap_or((item, ""));
        match k {
            "delay" => p.delay = Some(Duration::from_millis(v.parse().expect("delay=<ms>"))),
            "hold" => p.hold = true,
            "status" => p.status = Some(v.parse().expect("status=<n>")),
            "size" => p.size = Some(v.parse().expect("size=<n>")),
            "resp" => p.resp = v.to_string(),
            "then" => p.then = Some(v.to_string()),
            "echo" => p.echo = true,
            "" => {}
            other => panic!("unknown X-Mock item `{other}`"),
        }
    }
    p
}

pub(super) fn wait_plan(st: &State, plan: &Plan) {
    if let Some(d) = plan.delay {
        std::thread::sleep(d);
    }
    if plan.hold {
        let mut g = st.lock();
        while !g.released {
            g = st.changed.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Writes the answer; returns whether the connection stays open.
pub(super) fn answer(
    w: &mut TcpStream,
    head: &Head,
    plan: &Plan,
    (conn, seq): (usize, usize),
    got: usize,
    echo: Option<String>,
) -> bool {
    let status = plan.status.unwrap_or(200);
    let body = match plan.size {
        Some(n) => (0..n).map(|i| b'a' + (i % 26) as u8).collect::<Vec<u8>>(),
        None => {
            let mut v = serde_json::json!({
                "mock": true, "conn": conn, "seq": seq, "method": head.method,
                "target": head.target, "body_len": got,
            });
            if let Some(e) = echo {
                v["echo"] = e.into();
            }
            serde_json::to_vec(&v).unwrap()
        }
    };
    let mut line =
        format!("HTTP/1.1 {status} Mock\r\nContent-Type: application/json\r\nX-Upstream: mock\r\n");
    // As Elasticsearch does (`DefaultRestChannel`): the request's opaque id comes back.
    if let Some(id) = head.header("x-opaque-id") {
        line.push_str(&format!("X-Opaque-Id: {id}\r\n"));
    }
    let bytes = match plan.resp.as_str() {
        // A response to HEAD has no body, whatever its Content-Length says.
        "length" if head.method == "HEAD" => {
            format!("{line}Content-Length: {}\r\n\r\n", body.len()).into_bytes()
        }
        "length" => [
            line.as_bytes(),
            format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes(),
            &body,
        ]
        .concat(),
        "chunked" => {
            let mut out = format!("{line}Transfer-Encoding: chunked\r\n\r\n").into_bytes();
            for piece in body.chunks(7) {
                out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                out.extend_from_slice(piece);
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"0\r\n\r\n");
            out
        }
        "close" => [line.as_bytes(), b"Connection: close\r\n\r\n", &body].concat(),
        "malformed" => b"HTTP/1.1 2x0 Nope\r\nContent-Length: 0\r\n\r\n".to_vec(),
        // Ambiguous framing from the upstream (response smuggling).
        "clte" => format!("{line}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
            .into_bytes(),
        "twocl" => {
            format!("{line}Content-Length: 2\r\nContent-Length: 5\r\n\r\nhello").into_bytes()
        }
        "cut" => b"HTTP/1.1 200 OK\r\nContent-Ty".to_vec(),
        other => panic!("unknown resp={other}"),
    };
    if w.write_all(&bytes).is_err() {
        return false;
    }
    plan.resp == "length" || plan.resp == "chunked"
}
