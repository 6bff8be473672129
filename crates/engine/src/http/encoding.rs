//! `Content-Encoding` of request bodies: gzip (one or more members) and deflate (zlib),
//! decoded while streaming, with the engine's body limit applied to the decoded bytes
//! (a small compressed body cannot expand into unbounded memory).

use std::io::{self, BufRead, BufReader, Read};

use flate2::bufread::{MultiGzDecoder, ZlibDecoder};

/// A request body coding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    Identity,
    Gzip,
    Deflate,
}

impl Coding {
    /// From the `Content-Encoding` value; Err for a coding the engine cannot decode.
    pub fn parse(v: Option<&str>) -> Result<Coding, String> {
        match v.map(|s| s.trim().to_ascii_lowercase()).as_deref() {
            None | Some("" | "identity") => Ok(Coding::Identity),
            Some("gzip" | "x-gzip") => Ok(Coding::Gzip),
            Some("deflate") => Ok(Coding::Deflate),
            Some(other) => Err(format!("unsupported Content-Encoding [{other}]")),
        }
    }
}

/// Counts decoded bytes and fails past `limit`.
#[derive(Debug)]
pub struct Limited<R> {
    inner: R,
    left: u64,
    /// The limit was passed.
    pub exceeded: bool,
}

impl<R: Read> Limited<R> {
    pub fn new(inner: R, limit: u64) -> Self {
        Limited {
            inner,
            left: limit,
            exceeded: false,
        }
    }
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        if n as u64 > self.left {
            self.exceeded = true;
            return Err(io::Error::other("the decompressed body is over the limit"));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Runs `f` with the decoded body of `raw`; returns its result and whether the decoded
/// body passed `limit`.
pub fn with_decoded<T>(
    coding: Coding,
    raw: &mut dyn BufRead,
    limit: u64,
    f: impl FnOnce(&mut dyn BufRead) -> T,
) -> (T, bool) {
    match coding {
        Coding::Identity => (f(raw), false),
        Coding::Gzip => {
            let mut lim = Limited::new(MultiGzDecoder::new(raw), limit);
            let out = f(&mut BufReader::with_capacity(64 << 10, &mut lim));
            (out, lim.exceeded)
        }
        Coding::Deflate => {
            let mut lim = Limited::new(ZlibDecoder::new(raw), limit);
            let out = f(&mut BufReader::with_capacity(64 << 10, &mut lim));
            (out, lim.exceeded)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::{GzEncoder, ZlibEncoder};
    use flate2::Compression;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn read(coding: Coding, wire: &[u8], limit: u64) -> (io::Result<Vec<u8>>, bool) {
        let mut raw: &[u8] = wire;
        with_decoded(coding, &mut raw, limit, |r| {
            let mut v = Vec::new();
            r.read_to_end(&mut v).map(|_| v)
        })
    }

    #[test]
    fn codings() {
        assert_eq!(Coding::parse(Some("GZIP")).unwrap(), Coding::Gzip);
        assert_eq!(Coding::parse(None).unwrap(), Coding::Identity);
        assert!(Coding::parse(Some("br")).is_err());
    }

    #[test]
    fn gzip_members_and_deflate_decode() {
        let mut two = gzip(b"hello ");
        two.extend(gzip(b"world"));
        assert_eq!(read(Coding::Gzip, &two, 100).0.unwrap(), b"hello world");
        let mut z = ZlibEncoder::new(Vec::new(), Compression::fast());
        z.write_all(b"abc").unwrap();
        assert_eq!(
            read(Coding::Deflate, &z.finish().unwrap(), 100).0.unwrap(),
            b"abc"
        );
        assert!(read(Coding::Gzip, b"not gzip", 100).0.is_err());
    }

    #[test]
    fn decoded_size_is_limited() {
        let bomb = gzip(&vec![0u8; 1 << 20]);
        assert!(bomb.len() < 10_000);
        let (res, exceeded) = read(Coding::Gzip, &bomb, 1000);
        assert!(res.is_err() && exceeded);
        let (res, exceeded) = read(Coding::Gzip, &bomb, 1 << 20);
        assert!(res.is_ok() && !exceeded);
    }
}
