//! Client connections as one type over plain TCP and TLS, with owned-buffer I/O in the
//! style monoio needs: reads append into a `Vec`'s spare capacity, writes take a `Vec` and
//! a range of it and give the `Vec` back.
//!
//! Must not touch: HTTP, policy. Only bytes in and out.

use std::io;
use std::ops::Range;
use std::time::Duration;

use monoio::buf::{IoBuf, IoBufMut, SliceMut};
use monoio::io::{AsyncReadRent, AsyncWriteRentExt, CancelableAsyncReadRent};
use monoio::net::TcpStream;

use super::tls::TlsStream;

/// A client connection, plain or TLS.
#[derive(Debug)]
pub enum ClientIo {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

/// Reads into the spare capacity of `buf` (after its current length) from `tcp`.
pub async fn read_tcp(tcp: &mut TcpStream, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
    let (res, slice) = tcp.read(spare(buf)).await;
    (res, slice.into_inner())
}

/// `buf`'s spare capacity (after its length), made room for when there is none.
fn spare(mut buf: Vec<u8>) -> SliceMut<Vec<u8>> {
    if buf.len() == buf.capacity() {
        buf.reserve(16 * 1024);
    }
    let len = buf.len();
    let cap = buf.capacity();
    buf.slice_mut(len..cap)
}

/// As [`read_tcp`], but cancelable through `cancel`: a canceled read ends with an error and
/// gives the buffer back, and a read that completed before the cancel took effect keeps its
/// bytes (dropping a pending io_uring read instead could lose them).
pub async fn read_tcp_cancelable(
    tcp: &mut TcpStream,
    buf: Vec<u8>,
    cancel: monoio::io::CancelHandle,
) -> (io::Result<usize>, Vec<u8>) {
    let (res, slice) = tcp.cancelable_read(spare(buf), cancel).await;
    (res, slice.into_inner())
}

/// Writes `buf[range]` fully to `tcp`.
pub async fn write_tcp(
    tcp: &mut TcpStream,
    buf: Vec<u8>,
    range: Range<usize>,
) -> (io::Result<()>, Vec<u8>) {
    if range.is_empty() {
        return (Ok(()), buf);
    }
    let (res, slice) = tcp.write_all(buf.slice(range)).await;
    (res.map(|_| ()), slice.into_inner())
}

impl ClientIo {
    /// Appends what arrives into `buf`'s spare capacity; `Ok(0)` is end of stream.
    pub async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        match self {
            ClientIo::Plain(tcp) => read_tcp(tcp, buf).await,
            ClientIo::Tls(tls) => tls.read(buf).await,
        }
    }

    /// Writes `buf[range]` fully.
    pub async fn write(&mut self, buf: Vec<u8>, range: Range<usize>) -> (io::Result<()>, Vec<u8>) {
        match self {
            ClientIo::Plain(tcp) => write_tcp(tcp, buf, range).await,
            ClientIo::Tls(tls) => {
                let res = tls.write_all(&buf[range]).await;
                (res, buf)
            }
        }
    }

    /// Writes all of `buf`.
    pub async fn write_all(&mut self, buf: Vec<u8>) -> (io::Result<()>, Vec<u8>) {
        let len = buf.len();
        self.write(buf, 0..len).await
    }

    /// The server name the client asked for in its TLS handshake, if any.
    pub fn sni(&self) -> Option<&str> {
        match self {
            ClientIo::Plain(_) => None,
            ClientIo::Tls(tls) => tls.sni(),
        }
    }

    /// Plain TCP (no TLS).
    pub fn is_plain(&self) -> bool {
        matches!(self, ClientIo::Plain(_))
    }

    /// `"https"` or `"http"`.
    pub fn scheme(&self) -> &'static [u8] {
        match self {
            ClientIo::Plain(_) => b"http",
            ClientIo::Tls(_) => b"https",
        }
    }

    fn tcp(&self) -> &TcpStream {
        match self {
            ClientIo::Plain(tcp) => tcp,
            ClientIo::Tls(tls) => tls.tcp(),
        }
    }

    /// How many bytes must be queued before the socket reads as ready (see
    /// [`super::sock::set_recv_lowat`]).
    pub fn set_recv_lowat(&self, bytes: usize) -> io::Result<()> {
        super::sock::set_recv_lowat(self.tcp(), bytes)
    }

    /// Whether the peer has closed its side (checked without consuming any byte).
    pub fn peer_closed(&self) -> bool {
        super::sock::peer_closed(self.tcp())
    }

    /// Ends the connection politely: TLS close_notify, then a write shutdown, then a short
    /// drain of what the client still sends (so our last response is not lost to a reset).
    pub async fn close(mut self, scratch: Vec<u8>, linger: Duration) {
        if let ClientIo::Tls(tls) = &mut self {
            let _ = tls.close_notify().await;
        }
        {
            let tcp = match &mut self {
                ClientIo::Plain(tcp) => tcp,
                ClientIo::Tls(tls) => tls.tcp_mut(),
            };
            let _ = monoio::io::AsyncWriteRent::shutdown(tcp).await;
        }
        let mut buf = scratch;
        let deadline = std::time::Instant::now() + linger;
        let mut drained = 0usize;
        while drained < (1 << 20) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            buf.clear();
            let tcp = match &mut self {
                ClientIo::Plain(tcp) => tcp,
                ClientIo::Tls(tls) => tls.tcp_mut(),
            };
            match monoio::time::timeout(left, read_tcp(tcp, buf)).await {
                Ok((Ok(n), b)) if n > 0 => {
                    drained += n;
                    buf = b;
                }
                _ => break,
            }
        }
    }
}
