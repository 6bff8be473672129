//! Prorated pricing (spec 1.8, issue 12): a cluster's month as invoice lines, priced to the
//! second from the intervals it spent on each plan.
//!
//! The rules (docs/billing.md states them for customers):
//! - A month is a calendar month in UTC, `[first day 00:00:00, next month's first day)`;
//!   its price per second is the plan's `monthly_price_cents` divided by the month's own
//!   number of seconds, so a whole month costs exactly the monthly price, in February as in
//!   July.
//! - Instants are taken to the whole second (milliseconds dropped), so consecutive lines
//!   meet exactly and no second is counted twice or lost.
//! - One **charge** line per interval on a plan (a plan change, or a change of the plan's
//!   price, starts a new one). A running cluster is paid in advance: its last interval is
//!   charged to the end of the month.
//! - A cluster destroyed within the month: its last interval is still charged to the end of
//!   the month, and the time from the second it was destroyed to the end of the month is
//!   one **credit** line at the price of the plan it was on (the unused time). Charge minus
//!   credit is exactly the time it existed.
//! - Each line's amount is `price * seconds / month_seconds` in cents, rounded once, half to
//!   even (exact integer arithmetic, no floating point); credits are negative; the total is
//!   the sum of the lines.
//!
//! Must not touch: the store, the clock (the month and the history are passed in), I/O.

/// Milliseconds since the Unix epoch (as the store keeps instants).
pub type Millis = i64;

pub use crate::calendar::Month;

/// The start of an interval in a cluster's plan history: on `plan` at this price from `at`
/// on; `plan: None` ends the last interval (the cluster was destroyed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceChange {
    pub at: Millis,
    pub plan: Option<String>,
    pub monthly_price_cents: u64,
}

/// A charge, or a credit (unused time after deprovisioning).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Charge,
    Credit,
}

impl LineKind {
    /// `charge` or `credit`.
    pub fn as_str(self) -> &'static str {
        match self {
            LineKind::Charge => "charge",
            LineKind::Credit => "credit",
        }
    }
}

/// One invoice line: `[from, to)` in Unix seconds on `plan`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub kind: LineKind,
    pub plan: String,
    pub from: i64,
    pub to: i64,
    pub seconds: u64,
    pub monthly_price_cents: u64,
    /// Rounded once, half to even; negative for a credit.
    pub amount_cents: i64,
}

/// A cluster's month.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invoice {
    pub month: Month,
    pub lines: Vec<Line>,
    /// The sum of the lines' amounts.
    pub total_cents: i64,
}

/// `price * seconds / month_seconds`, rounded half to even, in exact integer arithmetic.
pub fn prorate(price_cents: u64, seconds: u64, month_seconds: u64) -> u64 {
    if month_seconds == 0 {
        return 0;
    }
    let num = u128::from(price_cents) * u128::from(seconds);
    let den = u128::from(month_seconds);
    let (q, r) = (num / den, num % den);
    let up = match (2 * r).cmp(&den) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Equal => q % 2 == 1,
        std::cmp::Ordering::Less => false,
    };
    u64::try_from(q + u128::from(up)).unwrap_or(u64::MAX)
}

/// An interval on a plan, in whole seconds; `end` is where the next history row starts it
/// (`None`: still running), `destroyed` whether that row is the deprovisioning.
struct Interval<'a> {
    plan: &'a str,
    price: u64,
    start: i64,
    end: Option<i64>,
    destroyed: bool,
}

fn intervals(history: &[PriceChange]) -> Vec<Interval<'_>> {
    let secs = |ms: Millis| ms.div_euclid(1000);
    let mut out = Vec::new();
    for (i, row) in history.iter().enumerate() {
        let Some(plan) = row.plan.as_deref() else {
            continue;
        };
        let next = history.get(i + 1);
        out.push(Interval {
            plan,
            price: row.monthly_price_cents,
            start: secs(row.at),
            end: next.map(|n| secs(n.at).max(secs(row.at))),
            destroyed: next.is_some_and(|n| n.plan.is_none()),
        });
    }
    out
}

/// The invoice of `month` for a cluster whose plan history (oldest first) is `history`.
pub fn invoice(history: &[PriceChange], month: Month) -> Invoice {
    let (m0, m1, len) = (month.start(), month.end(), month.seconds());
    let mut lines = Vec::new();
    let mut line = |kind: LineKind, iv: &Interval<'_>, from: i64, to: i64| {
        let seconds = (to - from).max(0) as u64;
        let amount = i64::try_from(prorate(iv.price, seconds, len)).unwrap_or(i64::MAX);
        lines.push(Line {
            kind,
            plan: iv.plan.to_string(),
            from,
            to,
            seconds,
            monthly_price_cents: iv.price,
            amount_cents: if kind == LineKind::Credit {
                -amount
            } else {
                amount
            },
        });
    };
    for iv in intervals(history) {
        let end = iv.end.unwrap_or(i64::MAX);
        let inside = if iv.start == end {
            (m0..m1).contains(&iv.start)
        } else {
            iv.start < m1 && end > m0
        };
        if !inside {
            continue;
        }
        let from = iv.start.max(m0);
        if iv.destroyed || iv.end.is_none() || end >= m1 {
            // Paid in advance to the end of the month; a deprovisioning gives the rest back.
            line(LineKind::Charge, &iv, from, m1);
            if iv.destroyed && end < m1 {
                line(LineKind::Credit, &iv, end.max(from), m1);
            }
        } else {
            line(LineKind::Charge, &iv, from, end);
        }
    }
    let total_cents = lines.iter().map(|l| l.amount_cents).sum();
    Invoice {
        month,
        lines,
        total_cents,
    }
}

#[cfg(test)]
#[path = "pricing_tests.rs"]
mod tests;
