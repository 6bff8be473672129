//! Time zones as requests name them (`time_zone` of date aggregations and range queries):
//! `Z`/`UTC`, offsets (`+01:00`, `+0100`, `-5`) and IANA names (the bundled tz database),
//! and a zone's offset at an instant. Below both `query` and `aggs`, so neither calls back
//! into the other for time.
//!
//! Pure functions; must not touch: calendars and bucketing (`aggs::dates`), date math
//! (`query::datemath`).

use jiff::tz::{Offset, TimeZone};

use crate::error::{EngineError, EngineResult};

/// A `time_zone`.
pub fn zone(v: &str) -> EngineResult<TimeZone> {
    if v == "Z" || v.eq_ignore_ascii_case("utc") {
        return Ok(TimeZone::UTC);
    }
    if let Some(off) = parse_offset(v) {
        return Ok(TimeZone::fixed(off));
    }
    TimeZone::get(v).map_err(|_| EngineError::IllegalArgument(format!("Unknown time-zone ID: {v}")))
}

fn parse_offset(v: &str) -> Option<Offset> {
    let (sign, rest) = match v.as_bytes().first()? {
        b'+' => (1, &v[1..]),
        b'-' => (-1, &v[1..]),
        _ => return None,
    };
    let (h, m) = match rest.split_once(':') {
        Some((h, m)) => (h.parse::<i32>().ok()?, m.parse::<i32>().ok()?),
        None if rest.len() == 4 => (rest[..2].parse().ok()?, rest[2..].parse().ok()?),
        None => (rest.parse().ok()?, 0),
    };
    Offset::from_seconds(sign * (h * 3600 + m * 60)).ok()
}

/// The offset of `tz` (an offset, `UTC` or an IANA name) at `ms`, in milliseconds.
pub fn zone_offset_ms(tz: &str, ms: i64) -> Option<i64> {
    let z = zone(tz).ok()?;
    let t = jiff::Timestamp::from_millisecond(ms).ok()?;
    Some(z.to_offset(t).seconds() as i64 * 1000)
}
