//! Date math of range bounds on date fields: `now`, `2020-01-01||`, then any of `+1d`,
//! `-2h`, `/M` (units `y M w d h H m s`); rounding rounds down, or up to the unit's last
//! millisecond for `gt` and `lte` bounds, as Elasticsearch does. UTC only. Calendar units
//! (months, years) are jiff's; every step is checked, so a bound out of range is `None`
//! (a 400 for the caller), never an overflow.

use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

use crate::mapping::date::{parse_date, DateFormat};

const DAY: i64 = 86_400_000;

/// `ms` as a UTC civil date-time, when jiff can represent it (years -9999 to 9999).
fn civil(ms: i64) -> Option<jiff::civil::DateTime> {
    Some(TimeZone::UTC.to_datetime(Timestamp::from_millisecond(ms).ok()?))
}

/// Epoch milliseconds of a UTC civil date-time.
fn millis(dt: jiff::civil::DateTime) -> Option<i64> {
    Some(TimeZone::UTC.to_timestamp(dt).ok()?.as_millisecond())
}

/// `ms` plus `months` calendar months, the day clamped to the month's last (as Java's
/// `plusMonths`); `None` out of range.
fn add_months(ms: i64, months: i64) -> Option<i64> {
    let months = i32::try_from(months).ok()?;
    millis(civil(ms)?.checked_add(months.months()).ok()?)
}

fn round_down(ms: i64, unit: char) -> Option<i64> {
    let days = ms.div_euclid(DAY);
    Some(match unit {
        'y' => millis(
            civil(ms)?
                .date()
                .first_of_year()
                .to_datetime(jiff::civil::Time::midnight()),
        )?,
        'M' => millis(
            civil(ms)?
                .date()
                .first_of_month()
                .to_datetime(jiff::civil::Time::midnight()),
        )?,
        // Weeks start on Monday; 1970-01-01 was a Thursday.
        'w' => (days - (days + 3).rem_euclid(7)).checked_mul(DAY)?,
        'd' => days.checked_mul(DAY)?,
        'h' | 'H' | 'm' | 's' => ms.checked_sub(ms.rem_euclid(fixed_unit(unit)?))?,
        _ => return None,
    })
}

/// The length of one `unit` in milliseconds (units of fixed length only).
fn fixed_unit(unit: char) -> Option<i64> {
    Some(match unit {
        'w' => 7 * DAY,
        'd' => DAY,
        'h' | 'H' => 3_600_000,
        'm' => 60_000,
        's' => 1000,
        _ => return None,
    })
}

fn next_unit(ms: i64, unit: char) -> Option<i64> {
    match unit {
        'y' => add_months(ms, 12),
        'M' => add_months(ms, 1),
        u => ms.checked_add(fixed_unit(u)?),
    }
}

/// Evaluates a date bound. `round_up` is true for `gt` and `lte`.
pub fn eval(s: &str, formats: &[DateFormat], now_ms: i64, round_up: bool) -> Option<i64> {
    let (mut t, ops) = if let Some(rest) = s.strip_prefix("now") {
        (now_ms, rest)
    } else if let Some((date, rest)) = s.split_once("||") {
        (parse_date(formats, date)?, rest)
    } else {
        return parse_date(formats, s);
    };
    let b: Vec<char> = ops.chars().collect();
    let mut i = 0;
    while i < b.len() {
        let op = b[i];
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let n: i64 = if i > start {
            b[start..i].iter().collect::<String>().parse().ok()?
        } else {
            1
        };
        let unit = *b.get(i)?;
        i += 1;
        t = match op {
            '+' | '-' => {
                let n = if op == '-' { -n } else { n };
                match unit {
                    'y' => add_months(t, n.checked_mul(12)?)?,
                    'M' => add_months(t, n)?,
                    u => t.checked_add(n.checked_mul(fixed_unit(u)?)?)?,
                }
            }
            '/' => {
                let down = round_down(t, unit)?;
                if round_up {
                    next_unit(down, unit)? - 1
                } else {
                    down
                }
            }
            _ => return None,
        };
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::date::{parse_formats, parse_iso, DEFAULT_FORMAT};

    fn f() -> Vec<DateFormat> {
        parse_formats(DEFAULT_FORMAT).unwrap()
    }

    #[test]
    fn now_arithmetic_and_rounding() {
        let now = parse_iso("2020-03-15T10:30:00Z").unwrap();
        assert_eq!(eval("now", &f(), now, false), Some(now));
        assert_eq!(eval("now-1d", &f(), now, false), Some(now - DAY));
        assert_eq!(eval("now/d", &f(), now, false), parse_iso("2020-03-15"));
        assert_eq!(
            eval("now/d", &f(), now, true),
            Some(parse_iso("2020-03-16").unwrap() - 1)
        );
        assert_eq!(eval("now-1M/M", &f(), now, false), parse_iso("2020-02-01"));
        assert_eq!(
            eval("now+1y", &f(), now, false),
            parse_iso("2021-03-15T10:30:00Z")
        );
        assert_eq!(eval("now/w", &f(), now, false), parse_iso("2020-03-09"));
    }

    #[test]
    fn anchored_dates() {
        assert_eq!(
            eval("2020-01-31||+1M", &f(), 0, false),
            parse_iso("2020-02-29")
        );
        assert_eq!(eval("2020-01-01", &f(), 0, false), parse_iso("2020-01-01"));
        assert_eq!(eval("now+1x", &f(), 0, false), None);
        assert_eq!(eval("garbage", &f(), 0, false), None);
    }
}
