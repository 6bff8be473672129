//! A TLS server stream: rustls' `ServerConnection` driven over a monoio `TcpStream` with
//! owned buffers.
//!
//! Written here rather than taken from monoio-rustls because the edge needs the client's SNI
//! after the handshake (monoio-rustls does not expose the session), and wants one
//! ciphertext buffer per connection that it controls.
//!
//! Must not touch: HTTP or policy.

use std::io::{self, BufRead, Write};
use std::sync::Arc;

use monoio::net::TcpStream;
use rustls::{ServerConfig, ServerConnection};

use super::tcp::{read_tcp, write_tcp};

/// Ciphertext read size: one maximal TLS record plus header.
const CIPHER_BUF: usize = 17 * 1024;
/// Largest plaintext window offered to rustls per read.
const PLAIN_WINDOW: usize = 32 * 1024;

/// A server-side TLS stream over TCP.
pub struct TlsStream {
    tcp: TcpStream,
    conn: ServerConnection,
    /// Ciphertext received and not yet handed to rustls: `cipher[cpos..]`.
    cipher: Vec<u8>,
    cpos: usize,
    /// Ciphertext to send.
    out: Vec<u8>,
}

impl std::fmt::Debug for TlsStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsStream")
            .field("sni", &self.sni())
            .finish()
    }
}

fn tls_err(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl TlsStream {
    /// Runs the server handshake on `tcp`, whose first bytes, when something read them
    /// before (`preamble`), are `early`.
    pub async fn accept(
        tcp: TcpStream,
        config: Arc<ServerConfig>,
        early: Vec<u8>,
    ) -> io::Result<TlsStream> {
        let conn = ServerConnection::new(config).map_err(tls_err)?;
        let mut cipher = Vec::with_capacity(CIPHER_BUF.max(early.len()));
        cipher.extend_from_slice(&early);
        let mut s = TlsStream {
            tcp,
            conn,
            cipher,
            cpos: 0,
            out: Vec::with_capacity(CIPHER_BUF),
        };
        while s.conn.is_handshaking() {
            s.flush_tls().await?;
            if !s.conn.is_handshaking() {
                break;
            }
            if s.conn.wants_read() && !s.feed_tls().await? {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "closed during TLS handshake",
                ));
            }
        }
        s.flush_tls().await?;
        Ok(s)
    }

    /// The server name the client sent (SNI), lowercase as rustls keeps it.
    pub fn sni(&self) -> Option<&str> {
        self.conn.server_name()
    }

    pub(super) fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    pub(super) fn tcp_mut(&mut self) -> &mut TcpStream {
        &mut self.tcp
    }

    /// Sends whatever rustls has queued.
    async fn flush_tls(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            let mut out = std::mem::take(&mut self.out);
            out.clear();
            self.conn.write_tls(&mut out)?;
            let len = out.len();
            let (res, out) = write_tcp(&mut self.tcp, out, 0..len).await;
            self.out = out;
            res?;
        }
        Ok(())
    }

    /// Hands buffered ciphertext to rustls, reading more from TCP when none is buffered.
    /// Returns false at TCP end of stream.
    async fn feed_tls(&mut self) -> io::Result<bool> {
        if self.cpos >= self.cipher.len() {
            let mut buf = std::mem::take(&mut self.cipher);
            buf.clear();
            self.cpos = 0;
            let (res, buf) = read_tcp(&mut self.tcp, buf).await;
            self.cipher = buf;
            if res? == 0 {
                return Ok(false);
            }
        }
        let n = self.conn.read_tls(&mut &self.cipher[self.cpos..])?;
        self.cpos += n;
        if let Err(e) = self.conn.process_new_packets() {
            // Tell the peer why (an alert), then fail.
            let _ = self.flush_tls().await;
            return Err(tls_err(e));
        }
        Ok(true)
    }

    /// Appends decrypted bytes into `buf`'s spare capacity; `Ok(0)` at end of stream.
    pub async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        if buf.len() == buf.capacity() {
            buf.reserve(16 * 1024);
        }
        loop {
            match self.take_plaintext(&mut buf) {
                Ok(n) => return (Ok(n), buf), // n == 0: close_notify received
                Err(e) if e.kind() != io::ErrorKind::WouldBlock => return (Err(e), buf),
                Err(_) => {}
            }
            if let Err(e) = self.flush_tls().await {
                return (Err(e), buf);
            }
            match self.feed_tls().await {
                Ok(true) => {}
                Ok(false) => return (Ok(0), buf),
                Err(e) => return (Err(e), buf),
            }
        }
    }

    /// Appends decrypted bytes that rustls holds to `buf`, at most `PLAIN_WINDOW` and never
    /// past its capacity, copied straight from rustls' records (nothing is zero-filled
    /// first: a 32KB `resize` per read cost 2% of the CPU of small TLS requests).
    /// `WouldBlock` when none is there; `Ok(0)` after close_notify.
    fn take_plaintext(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        let room = (buf.capacity() - buf.len()).min(PLAIN_WINDOW);
        let mut reader = self.conn.reader();
        let mut n = 0;
        while n < room {
            let chunk = match reader.fill_buf() {
                Ok(chunk) => chunk,
                // Hand over what was taken; the condition shows again at the next call.
                Err(_) if n > 0 => break,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                break; // close_notify: nothing more will come
            }
            let take = chunk.len().min(room - n);
            buf.extend_from_slice(&chunk[..take]);
            reader.consume(take);
            n += take;
        }
        Ok(n)
    }

    /// Encrypts and sends all of `data`.
    pub async fn write_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let n = self.conn.writer().write(data)?;
            data = &data[n..];
            self.flush_tls().await?;
        }
        Ok(())
    }

    /// Sends close_notify.
    pub async fn close_notify(&mut self) -> io::Result<()> {
        self.conn.send_close_notify();
        self.flush_tls().await
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::net::TcpListener as StdListener;

    use rustls::pki_types::{pem::PemObject, CertificateDer, ServerName};

    use super::*;
    use crate::edge::certs;

    /// A rustls client on a plain thread: sends `body` in writes of `piece` bytes (one or
    /// more TLS records each), then close_notify, then waits for the server to close.
    fn client(addr: std::net::SocketAddr, ca: std::path::PathBuf, body: Vec<u8>, piece: usize) {
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_file_iter(&ca).unwrap() {
            roots.add(c.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from("localhost").unwrap();
        let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let tcp = std::net::TcpStream::connect(addr).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, tcp);
        for p in body.chunks(piece) {
            tls.write_all(p).unwrap();
        }
        tls.conn.send_close_notify();
        tls.flush().unwrap();
        let mut rest = Vec::new();
        let _ = tls.sock.read_to_end(&mut rest);
    }

    /// Reads the whole stream with `read`, checking every call's bounds.
    async fn read_all(s: &mut TlsStream) -> Vec<u8> {
        let mut got = Vec::new();
        let mut buf = Vec::with_capacity(64 * 1024);
        loop {
            let cap = buf.capacity().max(buf.len() + 16 * 1024);
            let before = buf.len();
            let (res, b) = s.read(buf).await;
            buf = b;
            let n = res.expect("no TLS error");
            assert_eq!(buf.len(), before + n, "the bytes read are appended");
            assert!(n <= PLAIN_WINDOW, "at most one window per read");
            assert!(
                buf.capacity() <= cap,
                "read never grows the buffer past one reserve"
            );
            if n == 0 {
                return got; // close_notify
            }
            got.extend_from_slice(&buf);
            buf.clear();
        }
    }

    // Plaintext taken straight from rustls' records: every byte once, in order, whatever
    // the record sizes, then end of stream at close_notify.
    #[test]
    fn read_delivers_every_byte_then_eof_at_close_notify() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = certs::issue_leaf(dir.path(), &["localhost".to_string()]).unwrap();
        let config = certs::server_config(&cert, &key).unwrap();
        let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        for piece in [7, 1000, 16 * 1024, 100_000] {
            let std = StdListener::bind("127.0.0.1:0").unwrap();
            let addr = std.local_addr().unwrap();
            let (ca, sent) = (dir.path().join(certs::CA_CERT), body.clone());
            let peer = std::thread::spawn(move || client(addr, ca, sent, piece));
            let got = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
                .enable_timer()
                .build()
                .unwrap()
                .block_on(async {
                    std.set_nonblocking(true).unwrap();
                    let l = monoio::net::TcpListener::from_std(std).unwrap();
                    let (tcp, _) = l.accept().await.unwrap();
                    let mut s = TlsStream::accept(tcp, config.clone(), Vec::new())
                        .await
                        .unwrap();
                    assert_eq!(s.sni(), Some("localhost"));
                    read_all(&mut s).await
                });
            peer.join().unwrap();
            assert_eq!(got.len(), body.len(), "piece {piece}");
            assert!(got == body, "piece {piece}: bytes differ");
        }
    }
}
