//! Time values (`30s`, `1h`, `-1`), read as Elasticsearch 7.10's
//! `TimeValue.parseTimeValue` reads them, and written back in one canonical form.
//!
//! The grammar (from Elasticsearch's source): the value is lower-cased and trimmed (Java's
//! `trim`: every character up to U+0020); its unit is the first of these suffixes it ends
//! with: `nanos`, `micros`, `ms`, `s`, then `m` (tested on the value as sent, so `1M` and a
//! trailing space are not minutes), `h`, `d`; the rest, trimmed again, must be a Java
//! `long` (`+` and `-` allowed). Without a unit only `-1` (`-0*1`) and zero (`0+`) are
//! read. A fraction (`1.5h`) is refused ("fractional time values are not supported"), as
//! is a number past `i64`. Conversions saturate as `java.util.concurrent.TimeUnit`'s do,
//! so `150000000000000d` is a (huge) valid value, and a keep-alive check then refuses it.
//!
//! Must not touch: query strings, clocks (a value is data; the caller adds it to its own
//! `Instant`, with checked arithmetic).

use std::fmt;
use std::time::Duration;

use super::java::{self, Num};
use super::ParamError;

/// The unit a time value was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TimeUnit {
    Nanos,
    Micros,
    Millis,
    Seconds,
    Minutes,
    Hours,
    Days,
}

impl TimeUnit {
    /// Nanoseconds in one unit.
    pub const fn nanos(self) -> i64 {
        match self {
            TimeUnit::Nanos => 1,
            TimeUnit::Micros => 1_000,
            TimeUnit::Millis => 1_000_000,
            TimeUnit::Seconds => 1_000_000_000,
            TimeUnit::Minutes => 60_000_000_000,
            TimeUnit::Hours => 3_600_000_000_000,
            TimeUnit::Days => 86_400_000_000_000,
        }
    }

    /// The suffix Elasticsearch writes for it.
    pub const fn suffix(self) -> &'static str {
        match self {
            TimeUnit::Nanos => "nanos",
            TimeUnit::Micros => "micros",
            TimeUnit::Millis => "ms",
            TimeUnit::Seconds => "s",
            TimeUnit::Minutes => "m",
            TimeUnit::Hours => "h",
            TimeUnit::Days => "d",
        }
    }
}

/// A time value: a count of a unit, as Elasticsearch keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeValue {
    pub duration: i64,
    pub unit: TimeUnit,
}

/// Elasticsearch's `search.max_keep_alive` default: 24 hours.
pub const MAX_KEEP_ALIVE: TimeValue = TimeValue {
    duration: 24,
    unit: TimeUnit::Hours,
};

/// `search.default_keep_alive`: 5 minutes.
pub const DEFAULT_KEEP_ALIVE: TimeValue = TimeValue {
    duration: 5,
    unit: TimeUnit::Minutes,
};

impl TimeValue {
    pub const MINUS_ONE: TimeValue = TimeValue::millis_of(-1);
    pub const ZERO: TimeValue = TimeValue::millis_of(0);

    /// `n` milliseconds.
    pub const fn millis_of(n: i64) -> TimeValue {
        TimeValue {
            duration: n,
            unit: TimeUnit::Millis,
        }
    }

    /// `TimeUnit.toNanos`: saturating at `i64`'s bounds.
    pub fn nanos(&self) -> i64 {
        self.duration.saturating_mul(self.unit.nanos())
    }

    /// `TimeUnit.toMillis`: saturating for larger units, truncating toward zero for smaller.
    pub fn millis(&self) -> i64 {
        let per = self.unit.nanos();
        let ms = TimeUnit::Millis.nanos();
        if per >= ms {
            self.duration.saturating_mul(per / ms)
        } else {
            self.duration / (ms / per)
        }
    }

    /// As a `Duration` (a negative value, which Elasticsearch accepts and treats as
    /// already expired, is zero). At most `i64::MAX` nanoseconds (about 292 years).
    pub fn to_duration(&self) -> Duration {
        Duration::from_nanos(self.nanos().max(0) as u64)
    }

    /// A value of at most `d`, in milliseconds (for a wait the edge caps).
    pub fn from_duration_millis(d: Duration) -> TimeValue {
        TimeValue::millis_of(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    /// Whether this value is longer than `other` (`TimeValue.compareTo`).
    pub fn longer_than(&self, other: &TimeValue) -> bool {
        self.nanos_exact() > other.nanos_exact()
    }

    fn nanos_exact(&self) -> i128 {
        i128::from(self.duration) * i128::from(self.unit.nanos())
    }

    /// `TimeValue.toString()` (`toHumanReadableString(1)`): `1d`, `1.5h`, `106751.9d`;
    /// what Elasticsearch's messages show.
    pub fn human(&self) -> String {
        if self.duration < 0 {
            return self.duration.to_string();
        }
        let nanos = self.nanos();
        if nanos == 0 {
            return "0s".into();
        }
        let units = [
            TimeUnit::Days,
            TimeUnit::Hours,
            TimeUnit::Minutes,
            TimeUnit::Seconds,
            TimeUnit::Millis,
            TimeUnit::Micros,
        ];
        let unit = units
            .into_iter()
            .find(|u| nanos >= u.nanos())
            .unwrap_or(TimeUnit::Nanos);
        let value = nanos as f64 / unit.nanos() as f64;
        format!("{}{}", java::one_decimal(value), unit.suffix())
    }
}

/// The canonical form the edge forwards: `<count><unit>` (`-1` for minus one
/// millisecond), which Elasticsearch and this reader read back as the same value.
impl fmt::Display for TimeValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == TimeValue::MINUS_ONE {
            return f.write_str("-1");
        }
        write!(f, "{}{}", self.duration, self.unit.suffix())
    }
}

/// Reads `value` as Elasticsearch reads the time value of parameter (or setting) `name`;
/// the error is Elasticsearch's (400 `illegal_argument_exception`, naming `name` and the
/// value).
pub fn parse_time(value: &str, name: &str) -> Result<TimeValue, ParamError> {
    if !value.is_ascii() {
        return Err(ParamError::illegal(format!(
            "failed to parse [{value}]: only ASCII time values are read here (setting [{name}])"
        )));
    }
    let normalized = java::trim(value).to_ascii_lowercase();
    let n = normalized.as_str();
    let unit = if n.ends_with("nanos") {
        TimeUnit::Nanos
    } else if n.ends_with("micros") {
        TimeUnit::Micros
    } else if n.ends_with("ms") {
        TimeUnit::Millis
    } else if n.ends_with('s') {
        TimeUnit::Seconds
    } else if value.ends_with('m') {
        // case-sensitive and on the value as sent: `M` would be months
        TimeUnit::Minutes
    } else if n.ends_with('h') {
        TimeUnit::Hours
    } else if n.ends_with('d') {
        TimeUnit::Days
    } else if is_minus_one(n) {
        return Ok(TimeValue::MINUS_ONE);
    } else if !n.is_empty() && n.bytes().all(|b| b == b'0') {
        return Ok(TimeValue::ZERO);
    } else {
        return Err(ParamError::illegal(format!(
            "failed to parse setting [{name}] with value [{value}] as a time value: unit is missing or unrecognized"
        )));
    };
    let digits = java::trim(&n[..n.len() - unit.suffix().len()]);
    match java::parse_long(digits) {
        Ok(duration) => Ok(TimeValue { duration, unit }),
        Err(Num::Invalid) if java::is_double(digits) => Err(ParamError::illegal(format!(
            "failed to parse [{value}], fractional time values are not supported"
        ))),
        Err(_) => Err(ParamError::illegal(format!("failed to parse [{value}]"))),
    }
}

/// `-0*1`.
fn is_minus_one(n: &str) -> bool {
    n.strip_prefix('-')
        .and_then(|r| r.strip_suffix('1'))
        .is_some_and(|zeros| zeros.bytes().all(|b| b == b'0'))
}

/// Elasticsearch's check of a scroll's or point in time's keep-alive against
/// `search.max_keep_alive` (`max`): longer is a 400 whose message shows both values as
/// Elasticsearch writes them (`Keep alive for request (2d) is too large...`), wrapped as
/// the search phase failure Elasticsearch answers with.
pub fn check_keep_alive(keep_alive: &TimeValue, max: &TimeValue) -> Result<(), ParamError> {
    // Elasticsearch compares milliseconds (`keepAlive.millis() > maxKeepAlive`)
    if keep_alive.millis() <= max.millis() {
        return Ok(());
    }
    let shown = TimeValue::millis_of(keep_alive.millis());
    Err(ParamError::search_phase(format!(
        "Keep alive for request ({}) is too large. It must be less than ({}). This limit can be set by changing the [search.max_keep_alive] cluster level setting.",
        shown.human(),
        TimeValue::millis_of(max.millis()).human()
    )))
}
