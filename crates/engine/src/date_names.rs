//! Date-math index names (`<logs-{now/d}>`, `<logs-{now/M{yyyy.MM}}>`), resolved as
//! Elasticsearch 7.10's `DateMathExpressionResolver` resolves them: static text (with `\`
//! escaping `{`, `}` and `\`), then `{math{format}}` blocks whose math is `now` with
//! `+1d`, `-1M`, `/d` steps (the range-query date math of `query::datemath`) and whose
//! format is a Java-style pattern (default `uuuu.MM.dd`). A time zone (`{now/d{yyyy|tz}}`)
//! other than UTC is refused by name: rounding is UTC only here.
//!
//! Pure: the clock is passed in. Must not touch: index name rules (`names`), HTTP.

use crate::error::{EngineError, EngineResult};

fn invalid(expr: &str, why: &str) -> EngineError {
    EngineError::Parsing(format!("invalid dynamic name expression [{expr}]. {why}"))
}

/// The wall clock (ms since the epoch, UTC) a request's date math is resolved at: taken
/// once per request by its handler and passed to the resolvers below.
pub fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Resolves each comma-separated part of `expr` that is date math; other parts (and an
/// expression without any) are returned as they are.
pub fn resolve_expression(expr: &str, now_ms: i64) -> EngineResult<String> {
    if !expr.contains('<') {
        return Ok(expr.to_string());
    }
    let parts: Vec<String> = expr
        .split(',')
        .map(|p| resolve_name(p, now_ms))
        .collect::<EngineResult<_>>()?;
    Ok(parts.join(","))
}

/// One name: `<...>` resolved, anything else unchanged.
pub fn resolve_name(name: &str, now_ms: i64) -> EngineResult<String> {
    let (neg, body) = match name.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", name),
    };
    let Some(inner) = body.strip_prefix('<').and_then(|b| b.strip_suffix('>')) else {
        return Ok(name.to_string());
    };
    let mut out = String::from(neg);
    let mut chars = inner.chars().peekable();
    let mut escaped = false;
    while let Some(c) = chars.next() {
        match c {
            _ if escaped => {
                out.push(c);
                escaped = false;
            }
            '\\' => escaped = true,
            '{' => {
                let block = read_block(inner, &mut chars)?;
                out.push_str(&eval_block(inner, &block, now_ms)?);
            }
            '}' => {
                return Err(invalid(
                    inner,
                    "invalid character in placeholder at position",
                ))
            }
            c => out.push(c),
        }
    }
    if escaped {
        return Err(invalid(inner, "trailing escape character"));
    }
    if out.is_empty() || out == neg {
        return Err(invalid(inner, "the resolved name is empty"));
    }
    Ok(out)
}

/// The text of one `{...}` block (nested `{format}` included), its closing brace consumed.
fn read_block(
    expr: &str,
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
) -> EngineResult<String> {
    let mut depth = 1;
    let mut block = String::new();
    for c in chars.by_ref() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Ok(block);
                }
            }
            _ => {}
        }
        if depth > 2 {
            return Err(invalid(expr, "nested placeholders are not allowed"));
        }
        block.push(c);
    }
    Err(invalid(expr, "date math placeholder is open ended"))
}

/// `now/d`, `now-1M{yyyy.MM}`, `now{yyyy.MM.dd|UTC}`.
fn eval_block(expr: &str, block: &str, now_ms: i64) -> EngineResult<String> {
    let (math, format) = match block.split_once('{') {
        Some((m, f)) => (
            m,
            Some(
                f.strip_suffix('}')
                    .ok_or_else(|| invalid(expr, "missing closing '}' of the date format"))?,
            ),
        ),
        None => (block, None),
    };
    let (pattern, tz) = match format.map(|f| f.split_once('|').unwrap_or((f, ""))) {
        Some((p, tz)) => (if p.is_empty() { None } else { Some(p) }, tz),
        None => (None, ""),
    };
    if !matches!(tz, "" | "UTC" | "Z" | "+00:00" | "Etc/UTC") {
        return Err(EngineError::IllegalArgument(format!(
            "time zone [{tz}] in a date math index name is not supported by this engine (UTC only)"
        )));
    }
    if !math.starts_with("now") {
        return Err(invalid(expr, "date math must start with [now]"));
    }
    let ms = crate::query::datemath::eval(math, &[], now_ms, false)
        .ok_or_else(|| invalid(expr, &format!("cannot evaluate [{math}]")))?;
    let pattern = pattern.unwrap_or("uuuu.MM.dd").replace('u', "y");
    crate::aggs::dates::format(ms, Some(&pattern), &jiff::tz::TimeZone::UTC)
        .map_err(|_| invalid(expr, &format!("invalid date format [{pattern}]")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2024-03-15T13:45:00Z.
    const NOW: i64 = 1_710_510_300_000;

    #[test]
    fn elasticsearch_reference_examples() {
        // Elasticsearch 7.10 reference, "Date math support in index names"
        for (expr, want) in [
            ("<logstash-{now/d}>", "logstash-2024.03.15"),
            ("<logstash-{now/M}>", "logstash-2024.03.01"),
            ("<logstash-{now/M{yyyy.MM}}>", "logstash-2024.03"),
            ("<logstash-{now/M-1M{yyyy.MM}}>", "logstash-2024.02"),
            ("<logstash-{now/d{yyyy.MM.dd|UTC}}>", "logstash-2024.03.15"),
            ("<elastic\\{ON\\}-{now/M}>", "elastic{ON}-2024.03.01"),
            ("plain", "plain"),
        ] {
            assert_eq!(resolve_name(expr, NOW).unwrap(), want, "{expr}");
        }
        assert_eq!(
            resolve_expression("<a-{now/d}>,b,-<c-{now/d}>", NOW).unwrap(),
            "a-2024.03.15,b,-c-2024.03.15"
        );
    }

    #[test]
    fn malformed_expressions_are_400() {
        for expr in [
            "<a-{now/d>",
            "<a-{now/d}}>",
            "<a-{now/d{yyyy}>",
            "<a-{x/d}>",
            "<a\\>",
            "<>",
        ] {
            let e = resolve_name(expr, NOW).unwrap_err();
            assert_eq!(e.status(), 400, "{expr}");
        }
        let e = resolve_name("<a-{now/d{yyyy|+12:00}}>", NOW).unwrap_err();
        assert!(e.to_string().contains("not supported"), "{e}");
    }
}
