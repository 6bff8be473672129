//! The followers' doorbell: a PostgreSQL connection of its own that `LISTEN`s to the
//! channel every commit notifies, reopened when lost.
//!
//! Must not touch: the store's tables, the commit path.

use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, NoTls};

use super::{parse_url, CHANNEL};

/// The followers' doorbell: a connection of its own that `LISTEN`s to [`CHANNEL`].
pub struct Doorbell {
    config: postgres::Config,
    client: Option<Client>,
}

impl std::fmt::Debug for Doorbell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Doorbell")
            .field("connected", &self.client.is_some())
            .finish()
    }
}

/// Why [`Doorbell::wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rang {
    /// A commit notified.
    Rung,
    /// Nothing came within the wait (the slow poll).
    Quiet,
    /// The connection was (re)opened: notifications may have been missed.
    Reconnected,
    /// The store is unreachable.
    Down,
}

impl Doorbell {
    /// A doorbell for the store at `url` (connects on the first wait).
    pub fn new(url: &str) -> Result<Doorbell, String> {
        Ok(Doorbell {
            config: parse_url(url)?,
            client: None,
        })
    }

    /// Waits up to `wait` for a notification (several coming together count as one).
    pub fn wait(&mut self, wait: Duration) -> Rang {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = None;
            let mut c = match self.config.connect(NoTls) {
                Ok(c) => c,
                Err(_) => return Rang::Down,
            };
            if c.batch_execute(&format!("LISTEN {CHANNEL}")).is_err() {
                return Rang::Down;
            }
            self.client = Some(c);
            return Rang::Reconnected;
        }
        let c = self.client.as_mut().expect("connected above");
        let rang = {
            let mut n = c.notifications();
            let first = n.timeout_iter(wait).next().map(|x| x.is_some());
            match first {
                Ok(true) => {
                    // Drain what else is here: one read of the feed covers them all.
                    while let Ok(Some(_)) = n.iter().next() {}
                    Rang::Rung
                }
                Ok(false) => Rang::Quiet,
                Err(_) => Rang::Down,
            }
        };
        if rang == Rang::Down || c.is_closed() {
            self.client = None;
            return Rang::Down;
        }
        rang
    }
}
