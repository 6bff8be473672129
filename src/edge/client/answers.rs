//! Writing to the client: the staged bytes in `out`, slices of another buffer, the
//! interim `100 Continue`, and the edge's own answers (errors through `errors`, the CORS
//! pre-check's 204), each deciding keep-alive through [`Client::reusable`].
//!
//! Must not touch: how bytes are read (`reads`), the upstream, policy.

use crate::edge::io::Transport;
use crate::edge::outcome::{Cut, Next, Outcome, SendFail};
use crate::errors::{EdgeError, ProtoLimits};
use crate::policy::cors;
use crate::proto::{write_response_head, Framing, Method, ProtoError};

use super::Client;

impl<T: Transport> Client<T> {
    /// The 504 of a request whose deadline passed.
    pub fn deadline_refusal(&self) -> SendFail {
        SendFail::Refuse(EdgeError::GatewayTimeout(
            self.core.shared.limits.deadline.as_secs(),
        ))
    }

    /// Writes and empties `out`.
    pub async fn send_out(&mut self) -> Result<(), Cut> {
        if self.out.is_empty() {
            return Ok(());
        }
        self.wrote = true;
        let out = std::mem::take(&mut self.out);
        let (res, mut out) = self.io.write_all(out).await;
        out.clear();
        self.out = out;
        res.map_err(|_| Cut::Client)
    }

    /// Writes `out`, then `bytes[range]` (bytes of another buffer, e.g. the upstream's),
    /// without copying them; gives `bytes` back.
    pub async fn send_slice(
        &mut self,
        bytes: Vec<u8>,
        range: std::ops::Range<usize>,
    ) -> (Result<(), Cut>, Vec<u8>) {
        if let Err(cut) = self.send_out().await {
            return (Err(cut), bytes);
        }
        self.wrote = true;
        let (res, bytes) = self.io.write(bytes, range).await;
        (res.map_err(|_| Cut::Client), bytes)
    }

    /// Answers `Expect: 100-continue` (once admitted, and once only); false when the
    /// client is gone.
    pub async fn send_continue(&mut self) -> bool {
        if !(self.head.expect_continue && self.has_body()) || self.req.continued {
            return true;
        }
        self.req.continued = true;
        self.out.clear();
        self.out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        let wrote = self.wrote;
        let sent = self.send_out().await.is_ok();
        self.wrote = wrote; // an interim answer: the final one can still be an error
        sent
    }

    /// The one failure path of a request whose response has not begun: the client gone
    /// (nothing to send), the upstream failing while the request was sent (502), or a
    /// refusal of the edge's own. A body that is whole in the buffer is skipped, so the
    /// answer can keep the connection; whether it does is [`Client::reusable`].
    pub async fn fail(&mut self, fail: impl Into<SendFail>) -> Outcome {
        let e = match fail.into() {
            SendFail::Client => return Outcome::gone(),
            SendFail::Upstream => EdgeError::BadGateway(
                "the search engine closed the connection while receiving the request",
            ),
            SendFail::Refuse(e) => e,
        };
        self.skip_buffered_body();
        self.answer_error(&e).await
    }

    /// Sends an error of the edge's own, keeping the connection when
    /// [`Client::reusable`] says so.
    async fn answer_error(&mut self, e: &EdgeError) -> Outcome {
        let body = e.body().to_bytes();
        let keep = self.reusable();
        self.out.clear();
        let mut headers: Vec<(&str, &[u8])> =
            vec![("Content-Type", b"application/json; charset=UTF-8")];
        headers.extend(e.headers().iter().map(|(k, v)| (*k, v.as_bytes())));
        if !self.cors_origin.is_empty() {
            headers.extend(cors::response_headers(&self.cors_origin));
        }
        write_response_head(
            &mut self.out,
            self.req.version,
            e.status(),
            &headers,
            Framing::Length(body.len() as u64),
            keep,
        );
        if self.req.method != Method::Head {
            self.out.extend_from_slice(&body);
        }
        let (next, bytes_out) = self.sent_answer(keep).await;
        Outcome {
            status: e.status(),
            bytes_out,
            next,
            ..Outcome::gone()
        }
    }

    /// The edge's own answer to an allowed CORS pre-check from `cors_origin`: 204, the
    /// headers a browser checks, no body and no upstream call.
    pub async fn answer_preflight(&mut self) -> Outcome {
        self.skip_buffered_body();
        let keep = self.reusable();
        self.out.clear();
        let headers = cors::preflight_headers(&self.cors_origin);
        write_response_head(
            &mut self.out,
            self.req.version,
            204,
            &headers,
            Framing::None,
            keep,
        );
        let (next, bytes_out) = self.sent_answer(keep).await;
        Outcome {
            status: 204,
            bytes_out,
            next,
            ..Outcome::gone()
        }
    }

    /// Writes the answer staged in `out` (announcing `keep`): what the connection does
    /// next, and the bytes written.
    async fn sent_answer(&mut self, keep: bool) -> (Next, u64) {
        let len = self.out.len() as u64;
        let next = match (self.send_out().await.is_ok(), keep) {
            (true, true) => Next::KeepAlive,
            (true, false) => Next::Linger,
            (false, _) => Next::Close,
        };
        (next, len)
    }

    /// A protocol error in the request body read under `limit`: the answer (400, 413) as a
    /// send failure. The one mapping for every body the edge reads, streamed or whole.
    pub fn body_error(&self, e: ProtoError, limit: u64) -> SendFail {
        let limits = ProtoLimits {
            max_body: limit,
            ..self.proto_limits()
        };
        SendFail::Refuse(EdgeError::from_proto(e, limits))
    }
}
