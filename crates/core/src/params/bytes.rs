//! Byte sizes (`10kb`, `1gb`, `-1`), read as Elasticsearch 7.10's
//! `ByteSizeValue.parseBytesSizeValue` reads them, and written back canonically.
//!
//! The grammar (from Elasticsearch's source): lower-cased and trimmed; the unit is the first
//! suffix matched of `k`, `kb`, `m`, `mb`, `g`, `gb`, `t`, `tb`, `p`, `pb`, then `b`;
//! without one only `-1` and `0` are read. The number before a unit other than bytes is a
//! Java `long`, or else a double (deprecated fractional sizes: `1.5kb` is 1536 bytes,
//! truncated); before `b` only a `long`. A size below -1 (or -1 with a unit other than
//! bytes) and a size past `i64::MAX` bytes are refused. Hexadecimal doubles (`0x1p3kb`),
//! which Java would read, are refused here (see `java`).
//!
//! Must not touch: query strings, I/O.

use std::fmt;

use super::java::{self, Num};
use super::ParamError;

/// The unit a size was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ByteUnit {
    Bytes,
    Kb,
    Mb,
    Gb,
    Tb,
    Pb,
}

impl ByteUnit {
    /// Bytes in one unit.
    pub const fn bytes(self) -> i64 {
        match self {
            ByteUnit::Bytes => 1,
            ByteUnit::Kb => 1 << 10,
            ByteUnit::Mb => 1 << 20,
            ByteUnit::Gb => 1 << 30,
            ByteUnit::Tb => 1 << 40,
            ByteUnit::Pb => 1 << 50,
        }
    }

    pub const fn suffix(self) -> &'static str {
        match self {
            ByteUnit::Bytes => "b",
            ByteUnit::Kb => "kb",
            ByteUnit::Mb => "mb",
            ByteUnit::Gb => "gb",
            ByteUnit::Tb => "tb",
            ByteUnit::Pb => "pb",
        }
    }
}

/// A byte size: a count of a unit (never past `i64::MAX` bytes; -1 only in bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize {
    pub size: i64,
    pub unit: ByteUnit,
}

impl ByteSize {
    /// The size in bytes (exact: the constructor refused anything larger).
    pub fn bytes(&self) -> i64 {
        self.size * self.unit.bytes()
    }

    /// Elasticsearch's constructor checks.
    fn new(size: i64, unit: ByteUnit) -> Result<ByteSize, String> {
        let shown = || format!("{size}{}", unit.suffix());
        if size < -1 || (size == -1 && unit != ByteUnit::Bytes) {
            return Err(format!(
                "Values less than -1 bytes are not supported: {}",
                shown()
            ));
        }
        if size > i64::MAX / unit.bytes() {
            return Err(format!(
                "Values greater than {} bytes are not supported: {}",
                i64::MAX,
                shown()
            ));
        }
        Ok(ByteSize { size, unit })
    }
}

/// `getStringRep`: `<size><unit>`, or the bare number when not positive.
impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.size <= 0 {
            return write!(f, "{}", self.size);
        }
        write!(f, "{}{}", self.size, self.unit.suffix())
    }
}

const UNITS: [(&str, ByteUnit); 10] = [
    ("k", ByteUnit::Kb),
    ("kb", ByteUnit::Kb),
    ("m", ByteUnit::Mb),
    ("mb", ByteUnit::Mb),
    ("g", ByteUnit::Gb),
    ("gb", ByteUnit::Gb),
    ("t", ByteUnit::Tb),
    ("tb", ByteUnit::Tb),
    ("p", ByteUnit::Pb),
    ("pb", ByteUnit::Pb),
];

/// Reads `value` as Elasticsearch reads the byte size of setting or parameter `name`.
pub fn parse_bytes(value: &str, name: &str) -> Result<ByteSize, ParamError> {
    if !value.is_ascii() {
        return Err(ParamError::parse(format!(
            "failed to parse [{value}]: only ASCII sizes are read here (setting [{name}])"
        )));
    }
    let lower = java::trim(value).to_ascii_lowercase();
    if let Some((suffix, unit)) = UNITS.iter().find(|(s, _)| lower.ends_with(s)) {
        return parse_unit(value, &lower[..lower.len() - suffix.len()], *unit, name);
    }
    if let Some(digits) = lower.strip_suffix('b') {
        // Elasticsearch lets these errors through unwrapped
        let n = java::parse_long(java::trim(digits)).map_err(|_| {
            ParamError::new(
                "number_format_exception",
                format!("For input string: \"{}\"", java::trim(digits)),
            )
        })?;
        return ByteSize::new(n, ByteUnit::Bytes).map_err(ParamError::illegal);
    }
    match lower.as_str() {
        "-1" => Ok(ByteSize {
            size: -1,
            unit: ByteUnit::Bytes,
        }),
        "0" => Ok(ByteSize {
            size: 0,
            unit: ByteUnit::Bytes,
        }),
        _ => Err(ParamError::parse(format!(
            "failed to parse setting [{name}] with value [{value}] as a size in bytes: unit is missing or unrecognized"
        ))),
    }
}

fn parse_unit(
    value: &str,
    digits: &str,
    unit: ByteUnit,
    name: &str,
) -> Result<ByteSize, ParamError> {
    let digits = java::trim(digits);
    let wrapped = |why: String| {
        ParamError::parse(format!(
            "failed to parse setting [{name}] with value [{value}] as a size in bytes"
        ))
        .caused_by("illegal_argument_exception", why)
    };
    match java::parse_long(digits) {
        Ok(n) => ByteSize::new(n, unit).map_err(wrapped),
        Err(Num::Invalid) => match java::decimal_value(digits) {
            // Java's `(long)` cast: truncation, saturating, NaN as 0
            Some(v) => {
                ByteSize::new((v * unit.bytes() as f64) as i64, ByteUnit::Bytes).map_err(wrapped)
            }
            None => Err(ParamError::parse(format!("failed to parse [{value}]"))),
        },
        Err(Num::NonAscii) => Err(ParamError::parse(format!("failed to parse [{value}]"))),
    }
}
