//! A strict parser of Lucene's regular expression syntax (`org.apache.lucene.util.automaton.
//! RegExp`, every optional operator on: Elasticsearch's default `flags: ALL`) and a
//! canonical writer. Grammar, loosest binding first:
//! ```text
//! union    ::= inter ( '|' inter )*
//! inter    ::= concat ( '&' concat )*
//! concat   ::= repeat*                       (stops before ')', '|', '&')
//! repeat   ::= compl ( '?' | '*' | '+' | '{n}' | '{n,}' | '{n,m}' )*
//! compl    ::= '~' compl | class
//! class    ::= '[' '^'? ( char ( '-' char )? )+ ']' | simple
//! simple   ::= '.' | '#' | '@' | '"' <chars but '"'> '"' | '(' ')' | '(' union ')'
//!            | '<' n '-' m '>' | char
//! char     ::= '\' <any character> | <any character>
//! ```
//! `<name>` (a named automaton) is refused: the upstream has none to offer a tenant. The
//! canonical form escapes every literal that is not an ASCII letter or digit (so no later
//! Lucene can read `\d`-style classes into it) and writes groups wherever precedence needs
//! them. [`confine`] wraps it after the tenant's prefix.
//!
//! Must not touch: JSON, I/O.

use std::fmt::Write as _;

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Re {
    Union(Vec<Re>),
    Inter(Vec<Re>),
    Concat(Vec<Re>),
    Repeat(Box<Re>, Rep),
    Complement(Box<Re>),
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Char(char),
    /// `.`
    AnyChar,
    /// `#`: the empty language.
    Empty,
    /// `@`: any string.
    AnyString,
    /// `<n-m>`: a numeric interval (digits as written, for leading zeros).
    Interval(String, String),
}

/// A repetition operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rep {
    Opt,
    Star,
    Plus,
    Exactly(u32),
    AtLeast(u32),
    Between(u32, u32),
}

/// Why an expression is refused (position in characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReError {
    pub at: usize,
    pub what: &'static str,
}

/// Parses `s` completely.
pub fn parse(s: &str) -> Result<Re, ReError> {
    let chars: Vec<char> = s.chars().collect();
    let mut p = Parser {
        c: &chars,
        pos: 0,
        depth: 0,
    };
    let re = p.union()?;
    if p.pos != chars.len() {
        return Err(p.err("unexpected character (unbalanced ')' ?)"));
    }
    Ok(re)
}

/// The canonical form of a parsed expression.
pub fn canonical(re: &Re) -> String {
    let mut out = String::new();
    write(re, 0, &mut out);
    out
}

/// `"<prefix>"(<canonical form of s>)`: matches only strings that start with `prefix`,
/// whatever `s` is. The prefix is written as one quoted literal (Lucene's `"..."`), so its
/// bytes stay contiguous: an upstream that echoed the expression (a profile, an error
/// quoting the query) would show them as the response filter removes them, not in an
/// escaped form it cannot see (attacks-10 #11). `prefix` must hold no `"`.
pub fn confine(prefix: &str, s: &str) -> Result<String, ReError> {
    debug_assert!(!prefix.contains('"'));
    let re = parse(s)?;
    let mut out = String::with_capacity(prefix.len() + s.len() + 4);
    out.push('"');
    out.push_str(prefix);
    out.push('"');
    out.push('(');
    write(&re, 0, &mut out);
    out.push(')');
    Ok(out)
}

/// Deepest nesting of groups and operators accepted.
const MAX_DEPTH: usize = 64;

struct Parser<'a> {
    c: &'a [char],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn err(&self, what: &'static str) -> ReError {
        ReError { at: self.pos, what }
    }

    fn peek(&self) -> Option<char> {
        self.c.get(self.pos).copied()
    }

    fn eat(&mut self, ch: char) -> bool {
        if self.peek() == Some(ch) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn next(&mut self) -> Result<char, ReError> {
        let ch = self
            .peek()
            .ok_or_else(|| self.err("unexpected end of expression"))?;
        self.pos += 1;
        Ok(ch)
    }

    fn enter(&mut self) -> Result<(), ReError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err("expression nested too deeply"));
        }
        Ok(())
    }

    fn union(&mut self) -> Result<Re, ReError> {
        self.enter()?;
        let mut alts = vec![self.inter()?];
        while self.eat('|') {
            alts.push(self.inter()?);
        }
        self.depth -= 1;
        Ok(if alts.len() == 1 {
            alts.pop().expect("one")
        } else {
            Re::Union(alts)
        })
    }

    fn inter(&mut self) -> Result<Re, ReError> {
        let mut parts = vec![self.concat()?];
        while self.eat('&') {
            parts.push(self.concat()?);
        }
        Ok(if parts.len() == 1 {
            parts.pop().expect("one")
        } else {
            Re::Inter(parts)
        })
    }

    fn concat(&mut self) -> Result<Re, ReError> {
        let mut parts = Vec::new();
        while let Some(ch) = self.peek() {
            if matches!(ch, ')' | '|' | '&') {
                break;
            }
            parts.push(self.repeat()?);
        }
        Ok(if parts.len() == 1 {
            parts.pop().expect("one")
        } else {
            Re::Concat(parts)
        })
    }

    fn repeat(&mut self) -> Result<Re, ReError> {
        let mut re = self.compl()?;
        let mut stacked = 0;
        loop {
            let rep = match self.peek() {
                Some('?') => Rep::Opt,
                Some('*') => Rep::Star,
                Some('+') => Rep::Plus,
                Some('{') => {
                    self.pos += 1;
                    self.braces()?
                }
                _ => return Ok(re),
            };
            if !matches!(rep, Rep::Exactly(_) | Rep::AtLeast(_) | Rep::Between(..)) {
                self.pos += 1;
            }
            stacked += 1;
            if self.depth + stacked > MAX_DEPTH {
                return Err(self.err("expression nested too deeply"));
            }
            re = Re::Repeat(Box::new(re), rep);
        }
    }

    fn number(&mut self) -> Result<u32, ReError> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let digits: String = self.c[start..self.pos].iter().collect();
        digits.parse().map_err(|_| self.err("integer expected"))
    }

    fn braces(&mut self) -> Result<Rep, ReError> {
        let n = self.number()?;
        let rep = if self.eat(',') {
            if self.peek() == Some('}') {
                Rep::AtLeast(n)
            } else {
                Rep::Between(n, self.number()?)
            }
        } else {
            Rep::Exactly(n)
        };
        if !self.eat('}') {
            return Err(self.err("expected '}'"));
        }
        Ok(rep)
    }

    fn compl(&mut self) -> Result<Re, ReError> {
        if self.eat('~') {
            self.enter()?;
            let inner = self.compl()?;
            self.depth -= 1;
            return Ok(Re::Complement(Box::new(inner)));
        }
        if self.eat('[') {
            return self.class();
        }
        self.simple()
    }

    fn class(&mut self) -> Result<Re, ReError> {
        let negated = self.eat('^');
        let mut ranges = Vec::new();
        loop {
            let lo = self.char_exp()?;
            let hi = if self.eat('-') { self.char_exp()? } else { lo };
            if hi < lo {
                return Err(self.err("invalid character class range"));
            }
            ranges.push((lo, hi));
            if self.eat(']') {
                return Ok(Re::Class { negated, ranges });
            }
            if self.peek().is_none() {
                return Err(self.err("expected ']'"));
            }
        }
    }

    fn char_exp(&mut self) -> Result<char, ReError> {
        if self.eat('\\') {
            return self.next();
        }
        self.next()
    }

    fn simple(&mut self) -> Result<Re, ReError> {
        match self.peek() {
            Some('.') => self.one(Re::AnyChar),
            Some('#') => self.one(Re::Empty),
            Some('@') => self.one(Re::AnyString),
            Some('"') => {
                self.pos += 1;
                let mut chars = Vec::new();
                loop {
                    match self.next()? {
                        '"' => break,
                        ch => chars.push(Re::Char(ch)),
                    }
                }
                Ok(Re::Concat(chars))
            }
            Some('(') => {
                self.pos += 1;
                if self.eat(')') {
                    return Ok(Re::Concat(Vec::new()));
                }
                let inner = self.union()?;
                if !self.eat(')') {
                    return Err(self.err("expected ')'"));
                }
                Ok(inner)
            }
            Some('<') => {
                self.pos += 1;
                self.interval()
            }
            _ => self.char_exp().map(Re::Char),
        }
    }

    fn one(&mut self, re: Re) -> Result<Re, ReError> {
        self.pos += 1;
        Ok(re)
    }

    fn interval(&mut self) -> Result<Re, ReError> {
        let digits = |p: &mut Self| {
            let s = p.pos;
            while p.peek().is_some_and(|c| c.is_ascii_digit()) {
                p.pos += 1;
            }
            p.c[s..p.pos].iter().collect::<String>()
        };
        let lo = digits(self);
        if lo.is_empty() || !self.eat('-') {
            return Err(self.err("named automata are not supported; '<n-m>' intervals are"));
        }
        let hi = digits(self);
        if hi.is_empty() || !self.eat('>') {
            return Err(self.err("malformed '<n-m>' interval"));
        }
        Ok(Re::Interval(lo, hi))
    }
}

/// Binding strength: union 0, intersection 1, concatenation 2, repetition 3,
/// complement 4, atoms 5.
fn precedence(re: &Re) -> u8 {
    match re {
        Re::Union(_) => 0,
        Re::Inter(_) => 1,
        Re::Concat(v) if v.is_empty() => 5,
        Re::Concat(_) => 2,
        Re::Repeat(..) => 3,
        Re::Complement(_) => 4,
        _ => 5,
    }
}

fn write(re: &Re, need: u8, out: &mut String) {
    let wrap = precedence(re) < need;
    if wrap {
        out.push('(');
    }
    match re {
        Re::Union(v) => join(v, '|', 1, out),
        Re::Inter(v) => join(v, '&', 2, out),
        Re::Concat(v) if v.is_empty() => out.push_str("()"),
        Re::Concat(v) => v.iter().for_each(|r| write(r, 3, out)),
        Re::Repeat(r, rep) => {
            write(r, 4, out);
            match rep {
                Rep::Opt => out.push('?'),
                Rep::Star => out.push('*'),
                Rep::Plus => out.push('+'),
                Rep::Exactly(n) => {
                    let _ = write!(out, "{{{n}}}");
                }
                Rep::AtLeast(n) => {
                    let _ = write!(out, "{{{n},}}");
                }
                Rep::Between(n, m) => {
                    let _ = write!(out, "{{{n},{m}}}");
                }
            }
        }
        Re::Complement(r) => {
            out.push('~');
            write(r, 4, out);
        }
        Re::Class { negated, ranges } => {
            out.push('[');
            if *negated {
                out.push('^');
            }
            for &(lo, hi) in ranges {
                push_literal(lo, out);
                if hi != lo {
                    out.push('-');
                    push_literal(hi, out);
                }
            }
            out.push(']');
        }
        Re::Char(c) => push_literal(*c, out),
        Re::AnyChar => out.push('.'),
        Re::Empty => out.push('#'),
        Re::AnyString => out.push('@'),
        Re::Interval(lo, hi) => {
            let _ = write!(out, "<{lo}-{hi}>");
        }
    }
    if wrap {
        out.push(')');
    }
}

fn join(v: &[Re], sep: char, need: u8, out: &mut String) {
    for (i, r) in v.iter().enumerate() {
        if i > 0 {
            out.push(sep);
        }
        write(r, need, out);
    }
}

/// A literal character: ASCII letters and digits as they are, everything else escaped.
fn push_literal(c: char, out: &mut String) {
    if !c.is_ascii_alphanumeric() {
        out.push('\\');
    }
    out.push(c);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms() {
        let table: &[(&str, &str)] = &[
            ("abc", "abc"),
            ("a.c", "a.c"),
            ("a|b", "a|b"),
            ("(a|b)c", "(a|b)c"),
            ("ab*", "ab*"),
            ("(ab)*", "(ab)*"),
            ("a{2,3}", "a{2,3}"),
            ("a{2,}b{3}", "a{2,}b{3}"),
            ("[a-z_]+", "[a-z\\_]+"),
            ("[^-]", "[^\\-]"),
            ("[]a]", "[\\]a]"),
            ("~(ab)", "~(ab)"),
            ("~a*", "~a*"),
            ("a&b", "a&b"),
            ("\"a.b\"", "a\\.b"),
            ("()", "()"),
            ("#|@", "#|@"),
            ("<1-10>", "<1-10>"),
            ("\\_index", "\\_index"),
            ("\\\\", "\\\\"),
            ("é", "\\é"),
            ("a**", "(a*)*"),
        ];
        for (input, want) in table {
            let re = parse(input).unwrap_or_else(|e| panic!("{input}: {e:?}"));
            let c = canonical(&re);
            assert_eq!(c, *want, "{input}");
            // canonical is a fixed point
            assert_eq!(canonical(&parse(&c).unwrap()), c, "{input}");
        }
    }

    #[test]
    fn refused() {
        for bad in [
            "(", ")", "a)", "[a", "[", "a{", "a{x}", "a{1", "<name>", "<1->", "\"abc", "\\",
            "[z-a]", "a|(b",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let deep = format!("{}a{}", "(".repeat(100), ")".repeat(100));
        assert!(parse(&deep).is_err());
    }

    // Whatever the tenant writes, the result starts with its prefix, quoted, and one group:
    // no alternation, intersection or complement can escape it (attacks-10 #11: the
    // prefix's bytes are contiguous, so an echo of the expression would be stripped).
    #[test]
    fn confined_after_the_prefix() {
        let p = "abcdefghijklmnopqrst-";
        for s in ["b.*", ".*|x", "a)|(.*", "~(x)", "@", "x&@", "#"] {
            match confine(p, s) {
                Ok(c) => {
                    assert!(c.starts_with("\"abcdefghijklmnopqrst-\"("), "{c}");
                    assert!(c.ends_with(')'));
                    let re = parse(&c).unwrap();
                    let Re::Concat(parts) = re else { panic!("{c}") };
                    assert_eq!(parts.len(), 2, "{c}");
                    assert_eq!(canonical(&parts[0]), "abcdefghijklmnopqrst\\-");
                }
                Err(_) => assert_eq!(s, "a)|(.*"),
            }
        }
    }
}
