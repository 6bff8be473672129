//! Instants as text and calendar months, on jiff (the one date crate of the workspace; the
//! engine uses it too): RFC 3339 as the admin API, the config, the billing views and the
//! access log write and read it, HTTP dates (`Retry-After`), and the UTC calendar month
//! that invoices are cut by. Nothing here does its own day or leap-year arithmetic.
//!
//! Must not touch: clocks (callers pass instants in), prices, plans.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// Why a text is not an instant the control plane takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstantError {
    /// Not RFC 3339.
    NotATime,
    /// Before 1970-01-01T00:00:00Z.
    BeforeEpoch,
}

impl std::fmt::Display for InstantError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            InstantError::NotATime => "not a time (RFC 3339, e.g. 2030-03-01T00:00:00Z)",
            InstantError::BeforeEpoch => "before 1970",
        })
    }
}

/// Reads an RFC 3339 instant into milliseconds since the epoch, as the admin API and the
/// config accept it: `T` or a space between date and time, fractional seconds optional,
/// and the offset optional (UTC when absent).
pub fn parse_rfc3339_millis(text: &str) -> Result<i64, InstantError> {
    let ts = match text.parse::<Timestamp>() {
        Ok(ts) => ts,
        Err(_) => text
            .parse::<DateTime>()
            .ok()
            .and_then(|dt| TimeZone::UTC.to_timestamp(dt).ok())
            .ok_or(InstantError::NotATime)?,
    };
    match ts.as_millisecond() {
        ms if ms < 0 => Err(InstantError::BeforeEpoch),
        ms => Ok(ms),
    }
}

/// `t` as RFC 3339 in UTC, whole seconds (`2030-03-01T00:00:00Z`).
pub fn rfc3339_seconds(t: SystemTime) -> String {
    let mut out = String::with_capacity(20);
    write_utc(&mut out, t, false);
    out
}

/// Appends `t` as RFC 3339 in UTC with milliseconds (`2030-03-01T00:00:00.250Z`).
pub fn write_rfc3339_millis(out: &mut String, t: SystemTime) {
    write_utc(out, t, true);
}

/// `t` as ms since the epoch (before 1970: 0).
pub fn millis_of(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `ms` since the epoch as RFC 3339 (UTC, whole seconds); negative counts as 0.
pub fn rfc3339_of_millis(ms: i64) -> String {
    rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms.max(0).unsigned_abs()))
}

/// `secs` since the epoch as RFC 3339 (UTC, whole seconds), before 1970 too.
pub fn rfc3339_of_secs(secs: i64) -> String {
    match Timestamp::from_second(secs) {
        Ok(ts) => format!("{ts:.0}"),
        Err(_) => "invalid".to_string(),
    }
}

/// Reads an HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 5.6.7; the RFC 2822
/// forms with other zones too) into Unix seconds.
pub fn parse_http_date(s: &str) -> Option<i64> {
    let ts = jiff::fmt::rfc2822::DateTimeParser::new()
        .parse_timestamp(s.trim())
        .ok()?;
    Some(ts.as_second())
}

fn write_utc(out: &mut String, t: SystemTime, millis: bool) {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let ts =
        Timestamp::from_second(d.as_secs().min(i64::MAX as u64) as i64).unwrap_or(Timestamp::MAX);
    let dt = TimeZone::UTC.to_datetime(ts);
    let _ = write!(
        out,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    );
    if millis {
        let _ = write!(out, ".{:03}", d.subsec_millis());
    }
    out.push('Z');
}

/// A calendar month in UTC (years 1970 to 9999).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Month {
    year: i16,
    month: i8,
}

impl Month {
    /// `YYYY-MM`.
    pub fn parse(text: &str) -> Result<Month, String> {
        let bad = || format!("month `{text}`: write it as YYYY-MM, e.g. 2030-03");
        let b = text.as_bytes();
        let digits = b
            .iter()
            .enumerate()
            .all(|(i, c)| i == 4 || c.is_ascii_digit());
        if b.len() != 7 || b[4] != b'-' || !digits {
            return Err(bad());
        }
        let year: i16 = text[..4].parse().map_err(|_| bad())?;
        let month: i8 = text[5..].parse().map_err(|_| bad())?;
        if !(1..=12).contains(&month) {
            return Err(bad());
        }
        if year < 1970 {
            return Err(format!("month `{text}`: before 1970"));
        }
        Ok(Month { year, month })
    }

    /// The month that holds instant `ms` (clamped to 1970-01 .. 9999-12).
    pub fn of(ms: i64) -> Month {
        let secs = ms.div_euclid(1000).clamp(0, 253_402_300_799);
        let ts = Timestamp::from_second(secs).unwrap_or(Timestamp::UNIX_EPOCH);
        let d = TimeZone::UTC.to_datetime(ts);
        Month {
            year: d.year(),
            month: d.month(),
        }
    }

    /// The month after this one.
    pub fn next(self) -> Month {
        match self.month {
            12 => Month {
                year: self.year + 1,
                month: 1,
            },
            m => Month {
                year: self.year,
                month: m + 1,
            },
        }
    }

    /// Its first second (Unix seconds).
    pub fn start(self) -> i64 {
        jiff::civil::date(self.year, self.month, 1)
            .to_zoned(TimeZone::UTC)
            .map(|z| z.timestamp().as_second())
            .unwrap_or(i64::MAX)
    }

    /// The first second after it (Unix seconds).
    pub fn end(self) -> i64 {
        self.next().start()
    }

    /// How many seconds it has.
    pub fn seconds(self) -> u64 {
        self.end().saturating_sub(self.start()).unsigned_abs()
    }
}

impl std::fmt::Display for Month {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}", self.year, self.month)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rfc3339_as_the_api_accepts_it() {
        let at = 1_900_713_600_000; // 2030-03-26T00:00:00Z
        for text in [
            "2030-03-26T00:00:00Z",
            "2030-03-26 00:00:00Z",
            "2030-03-26T00:00:00",
            "2030-03-26T01:00:00+01:00",
            "2030-03-26T00:00:00.000Z",
        ] {
            assert_eq!(parse_rfc3339_millis(text), Ok(at), "{text}");
        }
        for bad in ["2030-02-30T00:00:00Z", "soon", ""] {
            assert_eq!(
                parse_rfc3339_millis(bad),
                Err(InstantError::NotATime),
                "{bad}"
            );
        }
        let early = parse_rfc3339_millis("1969-12-31T23:59:59Z");
        assert_eq!(early, Err(InstantError::BeforeEpoch));
    }

    #[test]
    fn writes_utc_seconds_and_millis() {
        let t = UNIX_EPOCH + Duration::from_millis(951_782_400_250);
        assert_eq!(rfc3339_seconds(t), "2000-02-29T00:00:00Z");
        let mut out = String::new();
        write_rfc3339_millis(&mut out, t);
        assert_eq!(out, "2000-02-29T00:00:00.250Z");
        assert_eq!(rfc3339_of_millis(-5), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_of_secs(-1), "1969-12-31T23:59:59Z");
        assert_eq!(rfc3339_of_secs(4_102_444_799), "2099-12-31T23:59:59Z");
    }

    #[test]
    fn reads_http_dates() {
        let table = [
            ("Sun, 06 Nov 1994 08:49:37 GMT", Some(784_111_777)),
            ("Thu, 01 Jan 1970 00:00:00 GMT", Some(0)),
            ("Sun, 06 Nov 1994 00:49:37 PST", Some(784_111_777)),
            ("Sun, 06 Foo 1994 08:49:37 GMT", None),
            ("Sun, 06 Nov 1994 25:49:37 GMT", None),
            ("", None),
        ];
        for (text, want) in table {
            assert_eq!(parse_http_date(text), want, "{text}");
        }
    }

    #[test]
    fn months_follow_the_calendar() {
        let feb = Month::parse("2000-02").unwrap();
        assert_eq!(feb.seconds(), 29 * 86_400);
        assert_eq!(
            Month::parse("2030-12").unwrap().next().to_string(),
            "2031-01"
        );
        assert_eq!(Month::of(951_782_400_000), feb);
        assert_eq!(Month::of(-1), Month::parse("1970-01").unwrap());
        for bad in ["2030-13", "2030-00", "2030-1", "1969-12", "20300-1"] {
            assert!(Month::parse(bad).is_err(), "{bad}");
        }
    }
}
