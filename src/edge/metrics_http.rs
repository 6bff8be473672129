//! The metrics listener (`[edge] metrics`, off by default): `GET /metrics` answers the
//! same Prometheus exposition as the admin listener's `GET /metrics`
//! (`metrics::expose::scrape`: one renderer for both), without its bearer token. So it
//! belongs on loopback or an operator network; one thread, blocking I/O, one request per
//! connection (scrapes are rare and small), on the crate's own codec.
//!
//! On a fleet node, `GET /fleet/homes.map` gives a load balancer each cluster's home.
//!
//! Tests wait on these gauges ("the second request is queued") instead of sleeping.
//!
//! Must not touch: the request path (it only reads the snapshot and the hub).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use super::core::Shared;
use crate::metrics::expose;
use crate::proto::{write_response_head, Framing, HeadLimits, Method, RequestHead, Version};

/// Binds the listener on `addr` (port 0: any) and serves it on a thread of its own;
/// returns the bound address.
pub fn spawn(addr: SocketAddr, shared: Arc<Shared>) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            for conn in listener.incoming().flatten() {
                let _ = serve(conn, &shared);
            }
        })?;
    Ok(bound)
}

fn serve(mut conn: TcpStream, shared: &Shared) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut buf = Vec::with_capacity(1024);
    let mut head = RequestHead::new();
    let limits = HeadLimits::default();
    let mut chunk = [0u8; 1024];
    loop {
        match head.parse(&buf, &limits) {
            Ok(true) => break,
            Ok(false) => {}
            Err(_) => return answer(&mut conn, 400, b"bad request\n"),
        }
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    if head.method == Method::Get && head.path(&buf) == b"/fleet/homes.map" {
        return homes_map(&mut conn, shared);
    }
    if head.method != Method::Get || head.path(&buf) != b"/metrics" {
        return answer(
            &mut conn,
            404,
            b"only GET /metrics and GET /fleet/homes.map here\n",
        );
    }
    let text = expose::scrape(&shared.metrics, &shared.registry.load(), &shared.nodes);
    answer(&mut conn, 200, text.as_bytes())
}

/// `GET /fleet/homes.map` (issue 27): each live cluster's host prefix
/// (`<hostname>.<region>.`) and its home node, for a load balancer's map (`map_beg` on the
/// TLS SNI, docs/fleet.md); 404 on a node that does not admit at homes.
fn homes_map(conn: &mut TcpStream, shared: &Shared) -> std::io::Result<()> {
    let Some(hook) = &shared.fleet else {
        return answer(
            conn,
            404,
            b"this node does not admit at homes ([fleet] peer_listen)\n",
        );
    };
    let snap = shared.registry.load();
    let clusters = snap
        .clusters()
        .map(|c| (c.id.as_str(), format!("{}.{}.", c.hostname, c.region)));
    let text = hook.membership.view().homes_map(clusters);
    answer(conn, 200, text.as_bytes())
}

fn answer(conn: &mut TcpStream, status: u16, body: &[u8]) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(256 + body.len());
    let headers: [(&str, &[u8]); 1] = [("Content-Type", expose::CONTENT_TYPE.as_bytes())];
    write_response_head(
        &mut out,
        Version::Http11,
        status,
        &headers,
        Framing::Length(body.len() as u64),
        false,
    );
    out.extend_from_slice(body);
    conn.write_all(&out)
}
