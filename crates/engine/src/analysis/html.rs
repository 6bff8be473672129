//! The `html_strip` char filter: markup removed as Lucene's `HTMLStripCharFilter` removes
//! it (comments, `<script>`/`<style>` bodies and tags dropped, block-level tags replaced by
//! a line break so words on either side stay apart, character entities decoded).

/// Block-level elements whose tags separate words.
const BLOCK: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "td",
    "th",
    "tr",
    "ul",
];

/// `text` without markup.
pub fn strip_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        match c {
            '<' => match tag(rest) {
                Some((consumed, replacement)) => {
                    out.push_str(replacement);
                    rest = &rest[consumed..];
                }
                None => {
                    out.push('<');
                    rest = &rest[1..];
                }
            },
            '&' => match entity(rest) {
                Some((consumed, ch)) => {
                    out.push(ch);
                    rest = &rest[consumed..];
                }
                None => {
                    out.push('&');
                    rest = &rest[1..];
                }
            },
            c => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

/// A tag (or comment) at the start of `s`: bytes consumed and what replaces it.
fn tag(s: &str) -> Option<(usize, &'static str)> {
    if let Some(body) = s.strip_prefix("<!--") {
        let end = body.find("-->").map_or(s.len(), |i| 4 + i + 3);
        return Some((end, ""));
    }
    let close = s.find('>')?;
    let inner = &s[1..close];
    let name: String = inner
        .trim_start_matches(['/', '!', '?'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    if name.is_empty() && !inner.starts_with(['!', '?']) {
        return None; // `a < b` is text
    }
    if (name == "script" || name == "style") && !inner.starts_with('/') {
        let lower = s.to_ascii_lowercase();
        let end_tag = format!("</{name}");
        let end = lower[close..]
            .find(&end_tag)
            .and_then(|i| lower[close + i..].find('>').map(|j| close + i + j + 1))
            .unwrap_or(s.len());
        return Some((end, ""));
    }
    let replacement = if BLOCK.contains(&name.as_str()) {
        "\n"
    } else {
        ""
    };
    Some((close + 1, replacement))
}

/// A character entity at the start of `s`: bytes consumed and the character.
fn entity(s: &str) -> Option<(usize, char)> {
    let end = s[1..].find(';').map(|i| i + 1)?;
    if end > 12 {
        return None;
    }
    let name = &s[1..end];
    let ch = if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        char::from_u32(code)?
    } else {
        match name {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            "nbsp" => '\u{a0}',
            "copy" => '©',
            "reg" => '®',
            "eacute" => 'é',
            "egrave" => 'è',
            "agrave" => 'à',
            "uuml" => 'ü',
            "ouml" => 'ö',
            "auml" => 'ä',
            "szlig" => 'ß',
            "ndash" => '–',
            "mdash" => '—',
            "hellip" => '…',
            _ => return None,
        }
    };
    Some((end + 1, ch))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_comments_scripts_and_entities() {
        assert_eq!(strip_html("<b>bold</b>text"), "boldtext");
        assert_eq!(strip_html("<p>one</p><p>two</p>"), "\none\n\ntwo\n");
        assert_eq!(strip_html("a<!-- x -->b"), "ab");
        assert_eq!(strip_html("x<script>var a = 1 < 2;</script>y"), "xy");
        assert_eq!(
            strip_html("Fish &amp; chips &#233;&#xE9;"),
            "Fish & chips éé"
        );
        assert_eq!(strip_html("1 < 2 & 3 > 2"), "1 < 2 & 3 > 2");
        assert_eq!(strip_html("I&apos;m"), "I'm");
    }
}
