//! Owned-buffer reads and writes on a monoio `TcpStream`, in the style monoio needs: reads
//! append into a `Vec`'s spare capacity, writes take a `Vec` and a range of it and give
//! the `Vec` back. Shared by the client transports, TLS and the upstream connections.
//!
//! Must not touch: HTTP, TLS, policy.

use std::io;
use std::ops::Range;

use monoio::buf::{IoBuf, IoBufMut, SliceMut};
use monoio::io::{AsyncReadRent, AsyncWriteRentExt, CancelableAsyncReadRent};
use monoio::net::TcpStream;

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

/// Reads from `tcp` into `buf` until at most `want` bytes are in it (never past them: the
/// bytes after belong to whoever reads next).
pub async fn read_tcp_upto(
    tcp: &mut TcpStream,
    mut buf: Vec<u8>,
    want: usize,
) -> (io::Result<usize>, Vec<u8>) {
    let len = buf.len();
    if want <= len {
        return (Ok(0), buf);
    }
    buf.reserve(want - len);
    let (res, slice) = tcp.read(buf.slice_mut(len..want)).await;
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
