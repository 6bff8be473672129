//! The few pieces of Java's standard library Elasticsearch's value readers stand on, as
//! they behave on the text a client can send: `String.trim`, `Long.parseLong`,
//! `Integer.parseInt`, `Double.parseDouble` (which forms it accepts, and the value of the
//! decimal ones), `Character.isWhitespace`, and `TimeValue`'s one-decimal rendering.
//!
//! One deliberate difference: Java's integer parsers accept any Unicode decimal digit
//! (`Character.digit`), so `١s` is one second to Elasticsearch. These readers take ASCII
//! digits only and report the rest as [`Num::NonAscii`], which the callers refuse: a value
//! the edge could not re-serialise as the upstream reads it is never forwarded.
//!
//! Must not touch: parameter names, error rendering (see the sibling modules).

/// Why a text is not a Java `long`/`int`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Num {
    /// Not a number at all (`NumberFormatException`), or out of range.
    Invalid,
    /// Holds a character outside ASCII: Java might read it (Unicode digits), these readers
    /// do not.
    NonAscii,
}

/// `String.trim()`: strips every character up to U+0020 (controls included) at both ends.
pub fn trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// `Character.isWhitespace` (Unicode space separators except the no-break ones, and the
/// ASCII controls 0x09-0x0D, 0x1C-0x1F).
pub fn is_whitespace(c: char) -> bool {
    match c {
        '\u{00A0}' | '\u{2007}' | '\u{202F}' => false,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | '\u{1C}'..='\u{1F}' => true,
        ' ' | '\u{1680}' | '\u{2000}'..='\u{200A}' | '\u{2028}' | '\u{2029}' => true,
        '\u{205F}' | '\u{3000}' => true,
        _ => false,
    }
}

/// `Long.parseLong(s)` (radix 10): an optional `+` or `-`, then one or more digits, within
/// `i64`.
pub fn parse_long(s: &str) -> Result<i64, Num> {
    parse_signed(s, i64::MIN, i64::MAX)
}

/// `Integer.parseInt(s)` (radix 10), within `i32`.
pub fn parse_int(s: &str) -> Result<i32, Num> {
    parse_signed(s, i64::from(i32::MIN), i64::from(i32::MAX)).map(|n| n as i32)
}

fn parse_signed(s: &str, min: i64, max: i64) -> Result<i64, Num> {
    if !s.is_ascii() {
        return Err(Num::NonAscii);
    }
    let b = s.as_bytes();
    let (negative, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() {
        return Err(Num::Invalid);
    }
    // accumulate negatively, as Java does, so that the minimum fits
    let mut n: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return Err(Num::Invalid);
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_sub(i64::from(d - b'0')))
            .ok_or(Num::Invalid)?;
    }
    let n = if negative {
        n
    } else {
        n.checked_neg().ok_or(Num::Invalid)?
    };
    if n < min || n > max {
        return Err(Num::Invalid);
    }
    Ok(n)
}

/// Whether `Double.parseDouble(s)` accepts `s`: after `trim`, an optional sign, then
/// `NaN`, `Infinity`, a decimal (`1`, `1.`, `.5`, `1.5e-3`) or a hexadecimal floating
/// literal (`0x1.8p3`), either of the last two optionally followed by one of `fFdD`.
pub fn is_double(s: &str) -> bool {
    let s = trim(s);
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    if s == "NaN" || s == "Infinity" {
        return true;
    }
    let s = s.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(s);
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return is_hex_float(hex);
    }
    decimal_parts(s).is_some()
}

/// The value `Double.parseDouble(s)` gives for a decimal form (`None` for the
/// hexadecimal, `NaN` and `Infinity` forms, and for what is not a double).
pub fn decimal_value(s: &str) -> Option<f64> {
    let s = trim(s);
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let body = unsigned
        .strip_suffix(['f', 'F', 'd', 'D'])
        .unwrap_or(unsigned);
    decimal_parts(body)?;
    let negative = s.starts_with('-');
    // Rust reads the same decimal grammar (without the sign's `+` and the type suffix).
    let v: f64 = body.parse().ok()?;
    Some(if negative { -v } else { v })
}

/// `digits [. digits] [e [sign] digits]` with at least one digit in the mantissa.
fn decimal_parts(s: &str) -> Option<()> {
    let b = s.as_bytes();
    let mut i = 0;
    let int_digits = count_digits(&b[i..]);
    i += int_digits;
    let mut frac_digits = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = count_digits(&b[i..]);
        i += frac_digits;
    }
    if int_digits + frac_digits == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp = count_digits(&b[i..]);
        if exp == 0 {
            return None;
        }
        i += exp;
    }
    (i == b.len()).then_some(())
}

fn is_hex_float(s: &str) -> bool {
    let b = s.as_bytes();
    let hex = |b: &[u8]| b.iter().take_while(|c| c.is_ascii_hexdigit()).count();
    let mut i = hex(b);
    let mut digits = i;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let f = hex(&b[i..]);
        digits += f;
        i += f;
    }
    if digits == 0 || !matches!(b.get(i), Some(b'p' | b'P')) {
        return false;
    }
    i += 1;
    if matches!(b.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let exp = count_digits(&b[i..]);
    exp > 0 && i + exp == b.len()
}

fn count_digits(b: &[u8]) -> usize {
    b.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// `TimeValue.formatDecimal(value, 1)` for the values `toHumanReadableString(1)` passes
/// (at least 1, below 10^7, so Java writes no exponent): the integral part, then one
/// decimal when it is not `0` (truncated, not rounded).
pub fn one_decimal(value: f64) -> String {
    let text = format!("{value}");
    match text.split_once('.') {
        Some((int, frac)) => match frac.as_bytes().first() {
            Some(d) if *d != b'0' => format!("{int}.{}", *d as char),
            _ => int.to_string(),
        },
        None => text,
    }
}
