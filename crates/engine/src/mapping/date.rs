//! Date parsing and formatting for `date` fields: `strict_date_optional_time`,
//! `date_optional_time`, `epoch_millis`, `epoch_second`, and Java-style patterns made of
//! `yyyy MM dd HH mm ss SSS`, quoted literals and zone letters (`Z`, `X`, `x`).
//! Dates are stored as epoch milliseconds (UTC), as Elasticsearch does; the calendar is
//! jiff's (years -9999 to 9999: a date outside them does not parse).
//!
//! Pure functions; must not touch the index.

/// One format of a `format` parameter (`a||b||c`).
#[derive(Debug, Clone, PartialEq)]
pub enum DateFormat {
    /// ISO 8601 with optional time part (`strict_date_optional_time`, `date_optional_time`,
    /// `date_time`, `strict_date_time`, `date`, `strict_date`...).
    Iso,
    /// Milliseconds since the epoch.
    EpochMillis,
    /// Seconds since the epoch.
    EpochSecond,
    /// A Java-style pattern.
    Pattern(Vec<Tok>),
}

/// A token of a Java-style pattern.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Fraction,
    Zone,
    Lit(char),
}

/// The default format of a `date` field.
pub const DEFAULT_FORMAT: &str = "strict_date_optional_time||epoch_millis";

/// Parses a `format` parameter into its alternatives.
pub fn parse_formats(spec: &str) -> Result<Vec<DateFormat>, String> {
    let mut out = Vec::new();
    for part in spec.split("||").map(str::trim) {
        out.push(match part {
            "strict_date_optional_time"
            | "date_optional_time"
            | "strict_date_optional_time_nanos"
            | "date_time"
            | "strict_date_time"
            | "date_time_no_millis"
            | "strict_date_time_no_millis"
            | "date"
            | "strict_date"
            | "basic_date_time" => DateFormat::Iso,
            "epoch_millis" => DateFormat::EpochMillis,
            "epoch_second" => DateFormat::EpochSecond,
            "" => return Err(format!("Invalid format: [{spec}]: empty format")),
            p => DateFormat::Pattern(parse_pattern(p)?),
        });
    }
    Ok(out)
}

fn parse_pattern(p: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = p.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    while i < chars.len() {
        let c = chars[i];
        let run = chars[i..].iter().take_while(|&&x| x == c).count();
        let tok = match c {
            'y' | 'u' => Tok::Year,
            'M' => Tok::Month,
            'd' => Tok::Day,
            'H' => Tok::Hour,
            'm' => Tok::Minute,
            's' => Tok::Second,
            'S' => Tok::Fraction,
            'Z' | 'X' | 'x' => Tok::Zone,
            '\'' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&x| x == '\'')
                    .ok_or_else(|| format!("Invalid format: [{p}]: unterminated quote"))?;
                out.extend(chars[i + 1..i + 1 + end].iter().map(|&ch| Tok::Lit(ch)));
                i += end + 2;
                continue;
            }
            c if c.is_ascii_alphabetic() => {
                return Err(format!(
                    "Invalid format: [{p}]: Unknown pattern letter: {c}"
                ))
            }
            c => Tok::Lit(c),
        };
        match tok {
            Tok::Lit(_) => {
                out.push(tok);
                i += 1;
            }
            _ => {
                out.push(tok);
                i += run;
            }
        }
    }
    Ok(out)
}

/// Parses `input` with the first format that accepts it; returns epoch milliseconds.
pub fn parse_date(formats: &[DateFormat], input: &str) -> Option<i64> {
    formats.iter().find_map(|f| match f {
        DateFormat::Iso => parse_iso(input),
        DateFormat::EpochMillis => parse_epoch(input, 1),
        DateFormat::EpochSecond => parse_epoch(input, 1000),
        DateFormat::Pattern(toks) => parse_with_pattern(toks, input),
    })
}

/// Interprets a JSON number for a date field with `formats` (seconds if the first epoch
/// format is `epoch_second`, else milliseconds).
pub fn number_to_millis(formats: &[DateFormat], n: f64) -> i64 {
    let secs = formats
        .iter()
        .find(|f| matches!(f, DateFormat::EpochMillis | DateFormat::EpochSecond))
        .is_some_and(|f| *f == DateFormat::EpochSecond);
    if secs {
        (n * 1000.0) as i64
    } else {
        n as i64
    }
}

fn parse_epoch(input: &str, mult: i64) -> Option<i64> {
    let s = input.trim();
    if s.is_empty() {
        return None;
    }
    if let Ok(v) = s.parse::<i64>() {
        return v.checked_mul(mult);
    }
    let f: f64 = s.parse().ok()?;
    f.is_finite().then_some((f * mult as f64) as i64)
}

/// Dynamic date detection (`dynamic_date_formats`): full ISO dates (at least `yyyy-MM-dd`)
/// and `yyyy/MM/dd[ HH:mm:ss]`.
pub fn detect_date(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() >= 10 && b[4] == b'-' && b[7] == b'-' {
        return parse_iso(s);
    }
    if b.len() >= 10 && b[4] == b'/' && b[7] == b'/' {
        let long = parse_pattern("yyyy/MM/dd HH:mm:ss").ok()?;
        let short = parse_pattern("yyyy/MM/dd").ok()?;
        return parse_with_pattern(&long, s).or_else(|| parse_with_pattern(&short, s));
    }
    None
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn digits(&mut self, min: usize, max: usize) -> Option<i64> {
        let start = self.i;
        while self.i < self.b.len() && self.i - start < max && self.b[self.i].is_ascii_digit() {
            self.i += 1;
        }
        if self.i - start < min {
            return None;
        }
        std::str::from_utf8(&self.b[start..self.i])
            .ok()?
            .parse()
            .ok()
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn done(&self) -> bool {
        self.i == self.b.len()
    }
    /// Fraction digits -> milliseconds.
    fn fraction(&mut self) -> Option<i64> {
        let start = self.i;
        while self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
            self.i += 1;
        }
        let n = self.i - start;
        if n == 0 || n > 9 {
            return None;
        }
        let mut ms = 0i64;
        for k in 0..3 {
            ms = ms * 10
                + self
                    .b
                    .get(start + k)
                    .filter(|_| k < n)
                    .map_or(0, |d| (d - b'0') as i64);
        }
        Some(ms)
    }
    /// `Z`, `+HH`, `+HH:mm`, `+HHmm` -> offset in minutes.
    fn zone(&mut self) -> Option<i64> {
        if self.eat(b'Z') || self.eat(b'z') {
            return Some(0);
        }
        let sign = if self.eat(b'+') {
            1
        } else if self.eat(b'-') {
            -1
        } else {
            return None;
        };
        let h = self.digits(2, 2)?;
        self.eat(b':');
        let m = if self.done() { 0 } else { self.digits(2, 2)? };
        (h <= 18 && m < 60).then_some(sign * (h * 60 + m))
    }
}

/// ISO 8601: `yyyy[-MM[-dd[Thh[:mm[:ss[.fff]]]][zone]]]`.
pub fn parse_iso(s: &str) -> Option<i64> {
    let mut c = Cursor {
        b: s.as_bytes(),
        i: 0,
    };
    let neg = c.eat(b'-');
    let mut year = c.digits(4, 4)?;
    if neg {
        year = -year;
    }
    let (mut mo, mut d, mut h, mut mi, mut sec, mut ms, mut off) = (1, 1, 0, 0, 0, 0, 0);
    if c.eat(b'-') {
        mo = c.digits(2, 2)?;
        if c.eat(b'-') {
            d = c.digits(2, 2)?;
            if c.eat(b'T') || c.eat(b't') {
                h = c.digits(2, 2)?;
                if c.eat(b':') {
                    mi = c.digits(2, 2)?;
                    if c.eat(b':') {
                        sec = c.digits(2, 2)?;
                        if c.eat(b'.') || c.eat(b',') {
                            ms = c.fraction()?;
                        }
                    }
                }
                if !c.done() {
                    off = c.zone()?;
                }
            } else if !c.done() {
                off = c.zone()?;
            }
        }
    }
    if !c.done() {
        return None;
    }
    to_millis(year, mo, d, h, mi, sec, ms, off)
}

fn parse_with_pattern(toks: &[Tok], s: &str) -> Option<i64> {
    let mut c = Cursor {
        b: s.as_bytes(),
        i: 0,
    };
    let (mut y, mut mo, mut d, mut h, mut mi, mut sec, mut ms, mut off) =
        (1970, 1, 1, 0, 0, 0, 0, 0);
    for t in toks {
        match t {
            Tok::Year => y = c.digits(4, 4)?,
            Tok::Month => mo = c.digits(1, 2)?,
            Tok::Day => d = c.digits(1, 2)?,
            Tok::Hour => h = c.digits(1, 2)?,
            Tok::Minute => mi = c.digits(1, 2)?,
            Tok::Second => sec = c.digits(1, 2)?,
            Tok::Fraction => ms = c.fraction()?,
            Tok::Zone => {
                c.eat(b' ');
                off = c.zone()?;
            }
            Tok::Lit(ch) => {
                let mut buf = [0u8; 4];
                for &b in ch.encode_utf8(&mut buf).as_bytes() {
                    if !c.eat(b) {
                        return None;
                    }
                }
            }
        }
    }
    if !c.done() {
        return None;
    }
    to_millis(y, mo, d, h, mi, sec, ms, off)
}

#[allow(clippy::too_many_arguments)]
fn to_millis(
    y: i64,
    mo: i64,
    d: i64,
    h: i64,
    mi: i64,
    s: i64,
    ms: i64,
    off_min: i64,
) -> Option<i64> {
    if h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let narrow = |v: i64| i8::try_from(v).ok();
    let date = jiff::civil::Date::new(i16::try_from(y).ok()?, narrow(mo)?, narrow(d)?).ok()?;
    let time = jiff::civil::Time::new(narrow(h)?, narrow(mi)?, narrow(s)?, 0).ok()?;
    let utc = jiff::tz::TimeZone::UTC
        .to_timestamp(date.to_datetime(time))
        .ok()?;
    utc.as_millisecond()
        .checked_sub(off_min.checked_mul(60_000)?)?
        .checked_add(ms)
}

/// Formats epoch milliseconds as `yyyy-MM-ddTHH:mm:ss.SSSZ` (UTC); outside the years jiff
/// represents (-9999 to 9999), the number itself.
pub fn format_millis(ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(t) => {
            let dt = jiff::tz::TimeZone::UTC.to_datetime(t);
            format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                dt.year(),
                dt.month(),
                dt.day(),
                dt.hour(),
                dt.minute(),
                dt.second(),
                dt.millisecond()
            )
        }
        Err(_) => ms.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_forms() {
        assert_eq!(parse_iso("1970-01-01"), Some(0));
        assert_eq!(parse_iso("1970-01-01T00:00:01Z"), Some(1000));
        assert_eq!(parse_iso("1970-01-01T00:00:01.5Z"), Some(1500));
        assert_eq!(parse_iso("1970-01-01T00:00:01.123456789Z"), Some(1123));
        assert_eq!(parse_iso("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(parse_iso("1970-01-01T01:00:00+0100"), Some(0));
        assert_eq!(parse_iso("2015-01-01T12:10:30"), Some(1_420_114_230_000));
        assert_eq!(parse_iso("2015"), Some(1_420_070_400_000));
        assert_eq!(parse_iso("2015-02"), Some(1_422_748_800_000));
        assert_eq!(parse_iso("2016-02-29"), Some(1_456_704_000_000));
    }

    #[test]
    fn iso_rejects_garbage() {
        for s in [
            "",
            "abc",
            "2015-13-01",
            "2015-02-30",
            "2015-01-01T25:00",
            "2015-01-01X",
            "2015-1-1",
            "20150101",
            "1970-01-01T00:00:00+99:00",
        ] {
            assert_eq!(parse_iso(s), None, "{s}");
        }
    }

    #[test]
    fn epoch_formats() {
        let f = parse_formats(DEFAULT_FORMAT).unwrap();
        assert_eq!(parse_date(&f, "1420070400001"), Some(1_420_070_400_001));
        // four digits are a year first, as strict_date_optional_time reads them
        assert_eq!(parse_date(&f, "1970"), Some(0));
        assert_eq!(parse_date(&f, "1970-01-02"), Some(86_400_000));
        let s = parse_formats("epoch_second").unwrap();
        assert_eq!(parse_date(&s, "2"), Some(2000));
        assert_eq!(number_to_millis(&s, 2.0), 2000);
        assert_eq!(number_to_millis(&f, 2.0), 2);
    }

    #[test]
    fn patterns() {
        let f = parse_formats("yyyy-MM-dd HH:mm:ss||yyyy/MM/dd").unwrap();
        assert_eq!(parse_date(&f, "1970-01-01 00:01:00"), Some(60_000));
        assert_eq!(parse_date(&f, "1970/01/02"), Some(86_400_000));
        assert_eq!(parse_date(&f, "1970-01-01"), None);
        let q = parse_formats("yyyy-MM-dd'T'HH:mm:ssZ").unwrap();
        assert_eq!(parse_date(&q, "1970-01-01T00:00:00Z"), Some(0));
        assert!(parse_formats("yyyy-qq").is_err());
    }

    #[test]
    fn detection_needs_a_full_date() {
        assert!(detect_date("2015-01-01").is_some());
        assert!(detect_date("2015/01/01 10:00:00").is_some());
        assert!(detect_date("2015").is_none());
        assert!(detect_date("hello world").is_none());
        assert!(detect_date("2015-01-01 is a date").is_none());
    }

    #[test]
    fn formatting_round_trips() {
        for ms in [0i64, 1_420_114_230_123, -86_400_000, 951_782_400_000] {
            assert_eq!(parse_iso(&format_millis(ms)), Some(ms));
        }
        assert_eq!(format_millis(0), "1970-01-01T00:00:00.000Z");
    }
}
