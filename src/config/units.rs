//! Human units in the config file: byte sizes (`"40mb"`, `"1gb"`, or a plain integer of
//! bytes) and durations (`"5s"`, `"250ms"`, `"2m"`). Sizes use binary multiples, as
//! Elasticsearch does: `1kb` = 1024 bytes, so `40mb` = 41,943,040 bytes.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// A size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

/// Parses `"40mb"`, `"1gb"`, `"512"`, `"16kb"`, `"2.5gb"` (case-insensitive, `b` optional).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit.trim() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        other => {
            return Err(format!(
                "unknown size unit `{other}` in `{text}` (use b, kb, mb, gb, tb)"
            ))
        }
    };
    if num.is_empty() {
        return Err(format!("`{text}` is not a size (e.g. \"40mb\")"));
    }
    if let Ok(n) = num.parse::<u64>() {
        return n
            .checked_mul(mult)
            .ok_or_else(|| format!("size `{text}` is too large"));
    }
    let f: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a size (e.g. \"40mb\")"))?;
    let bytes = f * mult as f64;
    if !bytes.is_finite() || !(0.0..=u64::MAX as f64).contains(&bytes) {
        return Err(format!("size `{text}` is out of range"));
    }
    Ok(bytes.round() as u64)
}

/// Parses `"5s"`, `"250ms"`, `"2m"`, `"1h"`, `"10d"`, `"1.5s"`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let secs_per_unit = match unit.trim() {
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        "" => return Err(format!("duration `{text}` needs a unit (ms, s, m, h, d)")),
        other => return Err(format!("unknown duration unit `{other}` in `{text}`")),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. \"5s\")"))?;
    let secs = n * secs_per_unit;
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!("duration `{text}` is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size such as \"40mb\" or a number of bytes")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom("size must not be negative"))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                parse_size(v).map(ByteSize).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A duration read from `"5s"`-style text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dur(pub Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s).map(Dur).map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // spec 8: the 40MB body limit is 41,943,040 bytes; 41,943,041 is over it
    #[test]
    fn forty_megabytes_is_binary() {
        assert_eq!(parse_size("40mb").unwrap(), 41_943_040);
        assert_eq!(parse_size("40MB").unwrap(), 41_943_040);
        assert_eq!(parse_size("16kb").unwrap(), 16_384);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1gb").unwrap(), 1 << 30);
        assert_eq!(parse_size("512").unwrap(), 512);
        assert_eq!(parse_size("0.5kb").unwrap(), 512);
        assert!(parse_size("mb").is_err());
        assert!(parse_size("12xb").is_err());
        assert!(parse_size("99999999999tb").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("10d").unwrap(), Duration::from_secs(864_000));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5y").is_err());
    }
}
