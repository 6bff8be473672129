//! Client transports: the [`Transport`] trait the request path is written against, and
//! [`ClientIo`], the real one over plain TCP and TLS. (Tests run whole exchanges over an
//! in-memory duplex that implements the same trait: `duplex.rs`.)
//!
//! Must not touch: HTTP, policy. Only bytes in and out.

use std::io;
use std::ops::Range;
use std::time::{Duration, Instant};

use monoio::net::TcpStream;

use super::tcp::{read_tcp, read_tcp_cancelable, write_tcp};
use super::timer::Timer;
use super::tls::TlsStream;

/// How a read that waits for a whole buffer ([`Transport::read_patiently`]) ended.
#[derive(Debug)]
pub(crate) enum Patient {
    /// It completed: bytes (or the end of the stream, or an error).
    Done(io::Result<usize>),
    /// Nothing came within its patience; it was canceled and took nothing.
    Canceled,
    /// This transport cannot wait for a low-water mark (TLS, tests): read as usual.
    Unsupported,
}

/// A client connection as the request path sees it.
pub(crate) trait Transport {
    /// Appends what arrives into `buf`'s spare capacity; `Ok(0)` is end of stream.
    async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>);

    /// Writes `buf[range]` fully.
    async fn write(&mut self, buf: Vec<u8>, range: Range<usize>) -> (io::Result<()>, Vec<u8>);

    /// Writes all of `buf`.
    async fn write_all(&mut self, buf: Vec<u8>) -> (io::Result<()>, Vec<u8>) {
        let len = buf.len();
        self.write(buf, 0..len).await
    }

    /// A read that waits for the socket's low-water mark ([`Transport::set_recv_lowat`])
    /// until `patience` (on `timer`, the connection's), then is canceled (taking nothing).
    /// Plain TCP only.
    async fn read_patiently(
        &mut self,
        buf: Vec<u8>,
        timer: &mut Timer,
        patience: Instant,
    ) -> (Patient, Vec<u8>) {
        let _ = (timer, patience);
        (Patient::Unsupported, buf)
    }

    /// The server name the client asked for in its TLS handshake, if any.
    fn sni(&self) -> Option<&str>;

    /// Plain TCP (no TLS): reads can wait for a low-water mark.
    fn is_plain(&self) -> bool;

    /// `"https"` or `"http"`.
    fn scheme(&self) -> &'static [u8];

    /// How many bytes must be queued before the socket reads as ready (see
    /// [`super::sock::set_recv_lowat`]).
    fn set_recv_lowat(&self, bytes: usize) -> io::Result<()>;

    /// Whether the peer has closed its side (checked without consuming any byte).
    fn peer_closed(&self) -> bool;

    /// Ends the connection politely: close_notify (TLS), a write shutdown, then a short
    /// drain of what the client still sends (so the last response is not lost to a reset).
    async fn close(self, scratch: Vec<u8>, linger: Duration);
}

/// A client connection, plain or TLS.
#[derive(Debug)]
pub enum ClientIo {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

impl Transport for ClientIo {
    async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        match self {
            ClientIo::Plain(tcp) => read_tcp(tcp, buf).await,
            ClientIo::Tls(tls) => tls.read(buf).await,
        }
    }

    async fn write(&mut self, buf: Vec<u8>, range: Range<usize>) -> (io::Result<()>, Vec<u8>) {
        match self {
            ClientIo::Plain(tcp) => write_tcp(tcp, buf, range).await,
            ClientIo::Tls(tls) => {
                let res = tls.write_all(&buf[range]).await;
                (res, buf)
            }
        }
    }

    /// The read is canceled, not dropped, when its patience runs out: a pending io_uring
    /// read dropped just as it completed could lose the bytes it took.
    async fn read_patiently(
        &mut self,
        buf: Vec<u8>,
        timer: &mut Timer,
        patience: Instant,
    ) -> (Patient, Vec<u8>) {
        let ClientIo::Plain(tcp) = self else {
            return (Patient::Unsupported, buf);
        };
        let canceller = monoio::io::Canceller::new();
        let mut read = std::pin::pin!(read_tcp_cancelable(tcp, buf, canceller.handle()));
        let first = timer.run(patience, read.as_mut()).await;
        let (res, buf) = match first {
            Some(done) => done,
            None => {
                canceller.cancel();
                read.await
            }
        };
        match res {
            Err(e) if e.raw_os_error() == Some(libc::ECANCELED) => (Patient::Canceled, buf),
            res => (Patient::Done(res), buf),
        }
    }

    fn sni(&self) -> Option<&str> {
        match self {
            ClientIo::Plain(_) => None,
            ClientIo::Tls(tls) => tls.sni(),
        }
    }

    fn is_plain(&self) -> bool {
        matches!(self, ClientIo::Plain(_))
    }

    fn scheme(&self) -> &'static [u8] {
        match self {
            ClientIo::Plain(_) => b"http",
            ClientIo::Tls(_) => b"https",
        }
    }

    fn set_recv_lowat(&self, bytes: usize) -> io::Result<()> {
        super::sock::set_recv_lowat(self.tcp(), bytes)
    }

    fn peer_closed(&self) -> bool {
        super::sock::peer_closed(self.tcp())
    }

    async fn close(mut self, scratch: Vec<u8>, linger: Duration) {
        if let ClientIo::Tls(tls) = &mut self {
            let _ = tls.close_notify().await;
        }
        let _ = monoio::io::AsyncWriteRent::shutdown(self.tcp_mut()).await;
        let mut buf = scratch;
        let deadline = Instant::now() + linger;
        let mut drained = 0usize;
        while drained < (1 << 20) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            buf.clear();
            match monoio::time::timeout(left, read_tcp(self.tcp_mut(), buf)).await {
                Ok((Ok(n), b)) if n > 0 => {
                    drained += n;
                    buf = b;
                }
                _ => break,
            }
        }
    }
}

impl ClientIo {
    fn tcp(&self) -> &TcpStream {
        match self {
            ClientIo::Plain(tcp) => tcp,
            ClientIo::Tls(tls) => tls.tcp(),
        }
    }

    fn tcp_mut(&mut self) -> &mut TcpStream {
        match self {
            ClientIo::Plain(tcp) => tcp,
            ClientIo::Tls(tls) => tls.tcp_mut(),
        }
    }
}
