//! Date bucketing of `date_histogram` (`calendar_interval`, `fixed_interval`, the older
//! `interval`, `time_zone`, `offset`) and the formatting of date keys (`format`, or the
//! field's `strict_date_optional_time` printed in the bucket's time zone), as
//! Elasticsearch 7.10 does. Calendar units follow the zone's local calendar (days that
//! last 23 or 25 hours across a daylight-saving change; weeks start on Monday); zones are
//! `Z`/`UTC`, offsets (`+01:00`) and IANA names (`Europe/Paris`, bundled tz database).
//!
//! Pure functions.

use jiff::civil::Weekday;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan, Zoned};

use crate::error::{EngineError, EngineResult};

/// A calendar unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

/// A bucket width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interval {
    Calendar(Unit),
    /// Fixed milliseconds.
    Fixed(i64),
}

fn bad(kind: &str, v: &str) -> EngineError {
    EngineError::IllegalArgument(format!(
        "The supplied interval [{v}] could not be parsed as a {kind} interval."
    ))
}

/// A `calendar_interval`.
pub fn calendar(v: &str) -> EngineResult<Interval> {
    Ok(Interval::Calendar(match v {
        "minute" | "1m" => Unit::Minute,
        "hour" | "1h" => Unit::Hour,
        "day" | "1d" => Unit::Day,
        "week" | "1w" => Unit::Week,
        "month" | "1M" => Unit::Month,
        "quarter" | "1q" => Unit::Quarter,
        "year" | "1y" => Unit::Year,
        other => return Err(bad("calendar", other)),
    }))
}

/// A `fixed_interval` (`ms`, `s`, `m`, `h`, `d` multiples).
pub fn fixed(v: &str) -> EngineResult<Interval> {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (n, unit) = v.split_at(split);
    let n: i64 = n.parse().map_err(|_| bad("fixed", v))?;
    let ms = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad("fixed", v)),
    };
    if n <= 0 {
        return Err(bad("fixed", v));
    }
    Ok(Interval::Fixed(n * ms))
}

/// The deprecated `interval`: a calendar unit when it names one, else fixed.
pub fn legacy(v: &str) -> EngineResult<Interval> {
    calendar(v).or_else(|_| fixed(v))
}

pub use crate::zones::zone;

fn zoned(ms: i64, tz: &TimeZone) -> EngineResult<Zoned> {
    Timestamp::from_millisecond(ms)
        .map(|t| t.to_zoned(tz.clone()))
        .map_err(|e| EngineError::IllegalArgument(format!("date out of range: {e}")))
}

fn err(e: jiff::Error) -> EngineError {
    EngineError::IllegalArgument(format!("date arithmetic failed: {e}"))
}

/// The start of the bucket holding `ms`.
pub fn floor(ms: i64, iv: Interval, tz: &TimeZone, offset_ms: i64) -> EngineResult<i64> {
    let ms = ms - offset_ms;
    let start = match iv {
        Interval::Fixed(w) => {
            let off = tz
                .to_offset(Timestamp::from_millisecond(ms).map_err(err)?)
                .seconds() as i64
                * 1000;
            let local = ms + off;
            local.div_euclid(w) * w - off
        }
        Interval::Calendar(u) => {
            let z = zoned(ms, tz)?;
            let d = z.date();
            let t = z.time();
            let civil = match u {
                Unit::Minute => d.to_datetime(
                    t.with()
                        .second(0)
                        .subsec_nanosecond(0)
                        .build()
                        .map_err(err)?,
                ),
                Unit::Hour => d.to_datetime(
                    t.with()
                        .minute(0)
                        .second(0)
                        .subsec_nanosecond(0)
                        .build()
                        .map_err(err)?,
                ),
                Unit::Day => d.to_datetime(jiff::civil::Time::midnight()),
                Unit::Week => {
                    let back = d.weekday().since(Weekday::Monday) as i64;
                    d.checked_sub(back.days())
                        .map_err(err)?
                        .to_datetime(jiff::civil::Time::midnight())
                }
                Unit::Month => d
                    .first_of_month()
                    .to_datetime(jiff::civil::Time::midnight()),
                Unit::Quarter => {
                    let m = (d.month() - 1) / 3 * 3 + 1;
                    jiff::civil::date(d.year(), m, 1).to_datetime(jiff::civil::Time::midnight())
                }
                Unit::Year => {
                    jiff::civil::date(d.year(), 1, 1).to_datetime(jiff::civil::Time::midnight())
                }
            };
            civil
                .to_zoned(tz.clone())
                .map_err(err)?
                .timestamp()
                .as_millisecond()
        }
    };
    Ok(start + offset_ms)
}

/// The start of the bucket after the one starting at `start`.
pub fn next(start: i64, iv: Interval, tz: &TimeZone, offset_ms: i64) -> EngineResult<i64> {
    let base = start - offset_ms;
    let n = match iv {
        Interval::Fixed(w) => base + w,
        Interval::Calendar(u) => {
            let z = zoned(base, tz)?;
            let span = match u {
                Unit::Minute => 1.minute(),
                Unit::Hour => 1.hour(),
                Unit::Day => 1.day(),
                Unit::Week => 1.week(),
                Unit::Month => 1.month(),
                Unit::Quarter => 3.months(),
                Unit::Year => 1.year(),
            };
            z.checked_add(span)
                .map_err(err)?
                .timestamp()
                .as_millisecond()
        }
    };
    Ok(n + offset_ms)
}

/// Most buckets one aggregation may make (`search.max_buckets`).
pub const MAX_BUCKETS: usize = 65_535;

/// Bucket starts from the bucket of `min` to the one of `max`, plus the end of the last.
pub fn boundaries(
    min: i64,
    max: i64,
    iv: Interval,
    tz: &TimeZone,
    offset_ms: i64,
) -> EngineResult<Vec<i64>> {
    let mut out = vec![floor(min, iv, tz, offset_ms)?];
    loop {
        let last = *out.last().expect("one");
        if last > max {
            return Ok(out);
        }
        if out.len() > MAX_BUCKETS {
            return Err(EngineError::TooManyBuckets(out.len()));
        }
        out.push(next(last, iv, tz, offset_ms)?);
    }
}

/// Formats epoch milliseconds in `tz` with a Java-style pattern or a named format
/// (`strict_date_optional_time` by default, `epoch_millis`, `epoch_second`, `date`, ...).
pub fn format(ms: i64, pattern: Option<&str>, tz: &TimeZone) -> EngineResult<String> {
    let first = pattern.map(|p| p.split("||").next().unwrap_or(p));
    let pat = match first.unwrap_or("strict_date_optional_time") {
        "epoch_millis" => return Ok(ms.to_string()),
        "epoch_second" => return Ok(ms.div_euclid(1000).to_string()),
        "strict_date_optional_time"
        | "date_optional_time"
        | "strict_date_time"
        | "date_time"
        | "strict_date_optional_time_nanos" => "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
        "strict_date" | "date" => "yyyy-MM-dd",
        "basic_date" => "yyyyMMdd",
        "strict_year_month" | "year_month" => "yyyy-MM",
        "strict_year" | "year" => "yyyy",
        "strict_date_hour_minute_second" | "date_hour_minute_second" => "yyyy-MM-dd'T'HH:mm:ss",
        "strict_date_hour_minute" | "date_hour_minute" => "yyyy-MM-dd'T'HH:mm",
        "strict_date_hour" | "date_hour" => "yyyy-MM-dd'T'HH",
        "strict_hour_minute_second" | "hour_minute_second" => "HH:mm:ss",
        p => p,
    };
    let z = zoned(ms, tz)?;
    Ok(java_format(&z, pat))
}

fn java_format(z: &Zoned, pat: &str) -> String {
    let c: Vec<char> = pat.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '\'' {
            let end = c[i + 1..]
                .iter()
                .position(|&x| x == '\'')
                .map_or(c.len(), |p| i + 1 + p);
            out.extend(&c[i + 1..end]);
            i = end + 1;
            continue;
        }
        let mut n = 1;
        while i + n < c.len() && c[i + n] == ch {
            n += 1;
        }
        let pad = |v: i64, w: usize| format!("{v:0w$}");
        match ch {
            'y' | 'u' | 'Y' => out.push_str(&if n == 2 {
                pad(z.year() as i64 % 100, 2)
            } else {
                pad(z.year() as i64, n.max(4))
            }),
            'M' => out.push_str(&pad(z.month() as i64, n.min(2))),
            'd' => out.push_str(&pad(z.day() as i64, n.min(2))),
            'H' => out.push_str(&pad(z.hour() as i64, n.min(2))),
            'h' => out.push_str(&pad(((z.hour() as i64 + 11) % 12) + 1, n.min(2))),
            'm' => out.push_str(&pad(z.minute() as i64, n.min(2))),
            's' => out.push_str(&pad(z.second() as i64, n.min(2))),
            'S' => {
                let frac = pad(z.millisecond() as i64, 3);
                out.push_str(&format!("{frac:0<n$}")[..n]);
            }
            'a' => out.push_str(if z.hour() < 12 { "AM" } else { "PM" }),
            'X' | 'x' | 'Z' => {
                let secs = z.offset().seconds();
                if secs == 0 && ch == 'X' {
                    out.push('Z');
                } else {
                    let sign = if secs < 0 { '-' } else { '+' };
                    let (h, m) = (secs.abs() / 3600, secs.abs() % 3600 / 60);
                    if n >= 3 && ch != 'Z' {
                        out.push_str(&format!("{sign}{h:02}:{m:02}"));
                    } else {
                        out.push_str(&format!("{sign}{h:02}{m:02}"));
                    }
                }
            }
            other => {
                for _ in 0..n {
                    out.push(other);
                }
            }
        }
        i += n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> i64 {
        s.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn calendar_buckets_in_a_zone() {
        let paris = zone("Europe/Paris").unwrap();
        let month = calendar("month").unwrap();
        // 2020-03-15 in Paris falls in the month starting 2020-03-01T00:00+01:00
        assert_eq!(
            floor(ms("2020-03-15T12:00:00Z"), month, &paris, 0).unwrap(),
            ms("2020-02-29T23:00:00Z")
        );
        // April starts after the DST change: +02:00
        assert_eq!(
            next(ms("2020-02-29T23:00:00Z"), month, &paris, 0).unwrap(),
            ms("2020-03-31T22:00:00Z")
        );
        let week = calendar("1w").unwrap();
        // 2021-01-07 (a Thursday) is in the week of Monday 2021-01-04
        assert_eq!(
            floor(ms("2021-01-07T10:00:00Z"), week, &TimeZone::UTC, 0).unwrap(),
            ms("2021-01-04T00:00:00Z")
        );
        let q = calendar("quarter").unwrap();
        assert_eq!(
            floor(ms("2021-05-07T10:00:00Z"), q, &TimeZone::UTC, 0).unwrap(),
            ms("2021-04-01T00:00:00Z")
        );
        let b = boundaries(
            ms("2021-01-10T00:00:00Z"),
            ms("2021-03-02T00:00:00Z"),
            month,
            &TimeZone::UTC,
            0,
        )
        .unwrap();
        assert_eq!(b.len(), 4);
        assert!(calendar("2d").is_err());
        assert!(zone("Mars/Base").is_err());
    }

    #[test]
    fn fixed_buckets_and_offsets() {
        let h = fixed("90m").unwrap();
        assert_eq!(h, Interval::Fixed(5_400_000));
        let plus1 = zone("+01:00").unwrap();
        let day = fixed("1d").unwrap();
        // local midnight at +01:00
        assert_eq!(
            floor(ms("2020-01-01T00:30:00Z"), day, &plus1, 0).unwrap(),
            ms("2019-12-31T23:00:00Z")
        );
        assert_eq!(
            floor(
                ms("2020-01-01T05:00:00Z"),
                day,
                &TimeZone::UTC,
                6 * 3_600_000
            )
            .unwrap(),
            ms("2019-12-31T06:00:00Z")
        );
        assert!(fixed("1M").is_err());
        assert_eq!(legacy("month").unwrap(), Interval::Calendar(Unit::Month));
        assert_eq!(legacy("2h").unwrap(), Interval::Fixed(7_200_000));
    }

    #[test]
    fn key_formats() {
        let t = ms("2020-03-01T05:06:07.089Z");
        assert_eq!(
            format(t, None, &TimeZone::UTC).unwrap(),
            "2020-03-01T05:06:07.089Z"
        );
        assert_eq!(
            format(t, None, &zone("+01:00").unwrap()).unwrap(),
            "2020-03-01T06:06:07.089+01:00"
        );
        assert_eq!(
            format(t, Some("yyyy-MM-dd"), &TimeZone::UTC).unwrap(),
            "2020-03-01"
        );
        assert_eq!(
            format(t, Some("yyyy/MM'T'HH"), &TimeZone::UTC).unwrap(),
            "2020/03T05"
        );
        assert_eq!(
            format(t, Some("epoch_millis"), &TimeZone::UTC).unwrap(),
            t.to_string()
        );
    }
}
