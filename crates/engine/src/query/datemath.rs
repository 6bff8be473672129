//! Date math of range bounds on date fields: `now`, `2020-01-01||`, then any of `+1d`,
//! `-2h`, `/M` (units `y M w d h H m s`); rounding rounds down, or up to the unit's last
//! millisecond for `gt` and `lte` bounds, as Elasticsearch does. UTC only.

use crate::mapping::date::{
    civil_from_days, days_from_civil, days_in_month, parse_date, DateFormat,
};

const DAY: i64 = 86_400_000;

fn add_months(ms: i64, months: i64) -> i64 {
    let days = ms.div_euclid(DAY);
    let rem = ms.rem_euclid(DAY);
    let (y, m, d) = civil_from_days(days);
    let total = y * 12 + (m - 1) + months;
    let (ny, nm) = (total.div_euclid(12), total.rem_euclid(12) + 1);
    let nd = d.min(days_in_month(ny, nm));
    days_from_civil(ny, nm, nd) * DAY + rem
}

fn round_down(ms: i64, unit: char) -> Option<i64> {
    let days = ms.div_euclid(DAY);
    let (y, m, _) = civil_from_days(days);
    Some(match unit {
        'y' => days_from_civil(y, 1, 1) * DAY,
        'M' => days_from_civil(y, m, 1) * DAY,
        'w' => (days - (days + 3).rem_euclid(7)) * DAY,
        'd' => days * DAY,
        'h' | 'H' => ms - ms.rem_euclid(3_600_000),
        'm' => ms - ms.rem_euclid(60_000),
        's' => ms - ms.rem_euclid(1000),
        _ => return None,
    })
}

fn next_unit(ms: i64, unit: char) -> Option<i64> {
    Some(match unit {
        'y' => add_months(ms, 12),
        'M' => add_months(ms, 1),
        'w' => ms + 7 * DAY,
        'd' => ms + DAY,
        'h' | 'H' => ms + 3_600_000,
        'm' => ms + 60_000,
        's' => ms + 1000,
        _ => return None,
    })
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
                    'y' => add_months(t, 12 * n),
                    'M' => add_months(t, n),
                    _ => t + n * (next_unit(0, unit)? - round_down(0, unit)?),
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
