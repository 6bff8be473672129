//! Date-math index names (`<logs-{now/d}>`), resolved by the edge into the concrete name
//! it forwards, so that the upstream never reads them a second time (issue 30; the rule of
//! one reading): the edge checks, confines, counts and auto-creates the name the upstream
//! will use. Before, the multitenant class prefixed the static text and let the upstream
//! evaluate the rest, and the single-tenant class passed the expression: a write to
//! `<events-{now/s{yyyyMMddHHmmss}}>` made the upstream auto-create a new index every
//! second, past the edge's shard count; a format's quoted literal (`{now/d{'*'}}`) made a
//! wildcard appear after every check.
//!
//! The grammar is Elasticsearch 7.10's (`DateMathExpressionResolver`): an item of a comma
//! list that starts with `<` and ends with `>`; static text, with `\` escaping `{`, `}`
//! and `\`; placeholders `{<math>}` or `{<math>{<format>}}` or `{<math>{<format>|<zone>}}`;
//! the math `now` then `+N<unit>`, `-N<unit>`, `/<unit>` (units `y M w d h H m s`);
//! the default format `uuuu.MM.dd`, in UTC. What the edge reads: the format letters
//! `y u M d H m s` (and quoted literals), zones `Z`, `UTC`, `GMT` and fixed offsets.
//! Everything else (another zone name, other format letters, a math that does not start
//! with `now`, a result that is not a plain index name: a quoted `*`, `,`, `:`...) is
//! refused with 400 `parse_exception`, which is what Elasticsearch answers for
//! expressions it cannot read.
//!
//! Pure: the instant (`now_ms`, UTC) is passed in. Must not touch: prefixes, keys, I/O.

use jiff::civil::DateTime;
use jiff::tz::{Offset, TimeZone};
use jiff::{Span, Timestamp, Unit, Zoned};

use crate::errors::EdgeError;

/// The format of a placeholder that names none (Elasticsearch 7.x).
const DEFAULT_FORMAT: &str = "uuuu.MM.dd";

fn refused(expr: &[u8], why: impl std::fmt::Display) -> EdgeError {
    EdgeError::Refused {
        status: 400,
        kind: "parse_exception",
        reason: format!(
            "invalid dynamic name expression [{}]: {why}",
            String::from_utf8_lossy(expr)
        ),
    }
}

/// Whether `item` (one item of a comma list, decoded) is a date-math expression.
pub fn is_date_math(item: &[u8]) -> bool {
    item.len() >= 2 && item[0] == b'<' && item[item.len() - 1] == b'>'
}

/// Resolves every date-math item of the comma list `expr` at `now_ms` (ms since the
/// epoch, UTC); `None` when it holds none (forwarded as it is).
pub fn resolve_list(expr: &[u8], now_ms: i64) -> Result<Option<Vec<u8>>, EdgeError> {
    if !expr.split(|&b| b == b',').any(is_date_math) {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(expr.len() + 16);
    for (i, item) in expr.split(|&b| b == b',').enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if is_date_math(item) {
            out.extend_from_slice(resolve(item, now_ms)?.as_bytes());
        } else {
            out.extend_from_slice(item);
        }
    }
    Ok(Some(out))
}

/// The concrete index name of the date-math expression `expr` (`<...>`) at `now_ms`.
pub fn resolve(expr: &[u8], now_ms: i64) -> Result<String, EdgeError> {
    let text = std::str::from_utf8(expr).map_err(|_| refused(expr, "not UTF-8"))?;
    let inner = &text[1..text.len() - 1];
    let mut name = String::new();
    let mut holder = String::new();
    let (mut escape, mut in_holder, mut in_format) = (false, false, false);
    for c in inner.chars() {
        let escaped = std::mem::take(&mut escape);
        if c == '\\' && !escaped {
            escape = true;
            continue;
        }
        if !in_holder {
            match c {
                '{' if !escaped => in_holder = true,
                '}' if !escaped => {
                    return Err(refused(expr, "`{` and `}` are reserved characters and should be escaped when used as part of the index name using `\\`"));
                }
                _ => name.push(c),
            }
            continue;
        }
        match c {
            '{' | '}' if escaped && in_format => holder.push(c),
            '{' if !in_format => {
                in_format = true;
                holder.push(c);
            }
            '{' => return Err(refused(expr, "invalid character in placeholder")),
            '}' if in_format => {
                in_format = false;
                holder.push(c);
            }
            '}' => {
                name.push_str(&placeholder(expr, &holder, now_ms)?);
                holder.clear();
                in_holder = false;
            }
            _ => holder.push(c),
        }
    }
    if in_holder || escape {
        return Err(refused(expr, "date math placeholder is open ended"));
    }
    check_name(expr, &name)?;
    Ok(name)
}

/// A resolved name the edge forwards as one concrete index name, or 400.
fn check_name(expr: &[u8], name: &str) -> Result<(), EdgeError> {
    if name.is_empty() {
        return Err(refused(expr, "nothing captured"));
    }
    let bad = |c: char| {
        matches!(
            c,
            '\\' | '/' | '*' | '?' | '"' | '<' | '>' | '|' | ' ' | ',' | '#' | ':'
        ) || c.is_control()
    };
    if let Some(c) = name.chars().find(|&c| bad(c)) {
        return Err(refused(
            expr,
            format!("it resolves to [{name}], and [{c}] is not taken in a resolved index name"),
        ));
    }
    if name.starts_with(['_', '-', '+']) || name == "." || name == ".." {
        return Err(refused(
            expr,
            format!("it resolves to [{name}], which must not start with '_', '-', or '+', nor be '.' or '..'"),
        ));
    }
    Ok(())
}

/// One placeholder's text (between its outer braces): math, optional `{format|zone}`.
fn placeholder(expr: &[u8], holder: &str, now_ms: i64) -> Result<String, EdgeError> {
    let (math, format, zone) = match holder.find('{') {
        None => (holder, DEFAULT_FORMAT, "UTC"),
        Some(open) => {
            if !holder.ends_with('}') {
                return Err(refused(expr, "missing closing `}` for date math format"));
            }
            let inside = &holder[open + 1..holder.len() - 1];
            if inside.is_empty() {
                return Err(refused(expr, "missing date format"));
            }
            let (f, z) = inside.split_once('|').unwrap_or((inside, "UTC"));
            (&holder[..open], f, z)
        }
    };
    let offset = zone_offset(zone).ok_or_else(|| {
        refused(
            expr,
            format!(
                "the time zone [{zone}] is not read here (use Z, UTC or an offset such as +01:00)"
            ),
        )
    })?;
    let now = Timestamp::from_millisecond(now_ms).map_err(|e| refused(expr, e))?;
    let at = now.to_zoned(TimeZone::fixed(offset));
    let at = apply_math(expr, math, at)?;
    format_date(expr, format, &at.datetime())
}

/// `Z`, `UTC`, `GMT`, `+h`, `+hh`, `+hh:mm`, `+hhmm` (and `-`).
fn zone_offset(zone: &str) -> Option<Offset> {
    if matches!(zone, "Z" | "UTC" | "GMT") {
        return Some(Offset::UTC);
    }
    let (sign, rest) = match zone.as_bytes().first()? {
        b'+' => (1, &zone[1..]),
        b'-' => (-1, &zone[1..]),
        _ => return None,
    };
    if !rest.bytes().all(|b| b.is_ascii_digit() || b == b':') {
        return None;
    }
    let (h, m) = match (rest.len(), rest.split_once(':')) {
        (1 | 2, None) => (rest, "0"),
        (4, None) => rest.split_at(2),
        (5, Some((h, m))) if h.len() == 2 => (h, m),
        _ => return None,
    };
    let (h, m): (i32, i32) = (h.parse().ok()?, m.parse().ok()?);
    if h > 18 || m > 59 {
        return None;
    }
    Offset::from_seconds(sign * (h * 3600 + m * 60)).ok()
}

/// `now` followed by `+N<unit>`, `-N<unit>`, `/<unit>` (Elasticsearch's date math).
fn apply_math(expr: &[u8], math: &str, mut at: Zoned) -> Result<Zoned, EdgeError> {
    let Some(ops) = math.strip_prefix("now") else {
        return Err(refused(
            expr,
            format!("the date math [{math}] must start with `now` here"),
        ));
    };
    let b = ops.as_bytes();
    let mut i = 0;
    let bad = |why: String| refused(expr, why);
    while i < b.len() {
        let (round, sign) = match b[i] {
            b'/' => (true, 1i64),
            b'+' => (false, 1),
            b'-' => (false, -1),
            c => {
                return Err(bad(format!(
                    "operator not supported for date math [{}]",
                    c as char
                )))
            }
        };
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let num: i64 = match &ops[start..i] {
            "" => 1,
            digits => digits
                .parse::<i32>()
                .map_err(|_| bad(format!("the number [{digits}] is out of range")))?
                .into(),
        };
        let Some(&unit) = b.get(i) else {
            return Err(bad(format!("truncated date math [{ops}]")));
        };
        i += 1;
        if round && num != 1 {
            return Err(bad(format!(
                "rounding `/` can only be used on single unit types [{ops}]"
            )));
        }
        at = step(&at, unit, round, sign * num)
            .map_err(|e| bad(format!("the date math [{ops}] leaves the calendar: {e}")))?
            .ok_or_else(|| {
                bad(format!(
                    "unit [{}] not supported for date math [{ops}]",
                    unit as char
                ))
            })?;
    }
    Ok(at)
}

/// One step: rounding down to `unit`, or adding `n` of it. `Ok(None)`: no such unit.
fn step(at: &Zoned, unit: u8, round: bool, n: i64) -> Result<Option<Zoned>, jiff::Error> {
    let dt = at.datetime();
    let day = |d: jiff::civil::Date| d.to_datetime(jiff::civil::Time::midnight());
    let next = match (unit, round) {
        (b'y', true) => day(dt.date().first_of_year()),
        (b'M', true) => day(dt.date().first_of_month()),
        (b'w', true) => {
            let back = i64::from(dt.weekday().to_monday_zero_offset());
            day(dt.date().checked_sub(Span::new().try_days(back)?)?)
        }
        (b'd', true) => day(dt.date()),
        (b'h' | b'H', true) => dt.round(
            jiff::civil::DateTimeRound::new()
                .smallest(Unit::Hour)
                .mode(jiff::RoundMode::Trunc),
        )?,
        (b'm', true) => dt.round(
            jiff::civil::DateTimeRound::new()
                .smallest(Unit::Minute)
                .mode(jiff::RoundMode::Trunc),
        )?,
        (b's', true) => dt.round(
            jiff::civil::DateTimeRound::new()
                .smallest(Unit::Second)
                .mode(jiff::RoundMode::Trunc),
        )?,
        (b'y', false) => dt.checked_add(Span::new().try_years(n)?)?,
        (b'M', false) => dt.checked_add(Span::new().try_months(n)?)?,
        (b'w', false) => dt.checked_add(Span::new().try_weeks(n)?)?,
        (b'd', false) => dt.checked_add(Span::new().try_days(n)?)?,
        (b'h' | b'H', false) => dt.checked_add(Span::new().try_hours(n)?)?,
        (b'm', false) => dt.checked_add(Span::new().try_minutes(n)?)?,
        (b's', false) => dt.checked_add(Span::new().try_seconds(n)?)?,
        _ => return Ok(None),
    };
    Ok(Some(next.to_zoned(at.time_zone().clone())?))
}

/// Formats `dt` with a Java `DateTimeFormatter` pattern of the letters the edge reads.
fn format_date(expr: &[u8], pattern: &str, dt: &DateTime) -> Result<String, EdgeError> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let run = chars[i..].iter().take_while(|&&x| x == c).count();
        match c {
            '\'' => {
                let close = chars[i + 1..].iter().position(|&x| x == '\'');
                let Some(close) = close else {
                    return Err(refused(expr, "unclosed quote in the date format"));
                };
                if close == 0 {
                    out.push('\'');
                } else {
                    out.extend(&chars[i + 1..i + 1 + close]);
                }
                i += close + 2;
                continue;
            }
            'y' | 'u' => {
                let year = i32::from(dt.year());
                if run == 2 {
                    out.push_str(&format!("{:02}", year.rem_euclid(100)));
                } else if (0..=9999).contains(&year) {
                    out.push_str(&format!("{year:0run$}"));
                } else {
                    return Err(refused(expr, "the year is out of range"));
                }
            }
            'M' | 'd' | 'H' | 'm' | 's' if run <= 2 => {
                let v = match c {
                    'M' => dt.month(),
                    'd' => dt.day(),
                    'H' => dt.hour(),
                    'm' => dt.minute(),
                    _ => dt.second(),
                };
                out.push_str(&format!("{v:0run$}"));
            }
            c if c.is_ascii_alphabetic() || matches!(c, '[' | ']' | '{' | '}' | '#') => {
                return Err(refused(
                    expr,
                    format!("the date format [{pattern}] uses [{c}], which is not read here"),
                ));
            }
            _ => out.extend(std::iter::repeat_n(c, run)),
        }
        i += run;
    }
    Ok(out)
}

#[cfg(test)]
#[path = "datemath_tests.rs"]
mod tests;
