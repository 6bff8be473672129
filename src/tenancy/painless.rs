//! The Painless subset allowed in the scripts of `_update`, bulk `update`,
//! `_update_by_query` and `_reindex` on multitenant clusters. A script there runs with
//! `ctx._index` and `ctx._routing` in reach (in `_reindex` it can redirect a write to any
//! index by setting `ctx._index`), so only this grammar is accepted; anything else is
//! refused with 400 naming what is not supported:
//! ```text
//! script  ::= stmt*
//! stmt    ::= 'if' '(' cond ')' body ( 'else' ( body | stmt ) )?
//!           | target ( '=' | '+=' | '-=' ) expr end
//!           | 'ctx.op' '=' string end                  ('noop', 'delete': checked upstream)
//!           | source '.remove(' string ')' end
//! body    ::= '{' stmt* '}' | stmt
//! end     ::= ';' | (before '}' or the end of the script)
//! target  ::= 'ctx._source' ( '.' ident | '[' string ']' )+
//! source  ::= 'ctx._source' ( '.' ident | '[' string ']' )*
//! cond    ::= and ( '||' and )* ;  and ::= not ( '&&' not )* ;  not ::= '!' not | cmp
//! cmp     ::= expr ( ( '==' | '!=' | '<' | '<=' | '>' | '>=' ) expr )?
//! expr    ::= term ( ( '+' | '-' | '*' | '/' ) term )*
//! term    ::= number | string | 'true' | 'false' | 'null' | '-' term | '(' cond ')'
//!           | 'params' ( '.' ident | '[' string ']' )+ | source
//! ```
//! Strings are Painless's: single or double quotes, escapes `\\` and the quote only. No
//! comments, no other identifiers, no method calls but `remove`, and map keys only as
//! literals: nothing can read or set `ctx._index`/`ctx._routing` or compute a key.
//! The text is forwarded unchanged (the subset means the same to Painless).
//!
//! Must not touch: JSON structure beyond the `script` object, I/O.

use super::json::Value;
use super::refusals::{illegal, known_keys, parsing};
use crate::errors::EdgeError;

/// Deepest nesting of conditions, expressions and blocks.
const MAX_DEPTH: usize = 32;

/// Checks a `script` value (`"source"` or `{source|inline, lang, params}`).
pub fn check_script(v: &Value, where_: &str) -> Result<(), EdgeError> {
    let source = match v {
        Value::String(s) => s.as_str(),
        Value::Object(o) => {
            known_keys(o, &["source", "inline", "lang", "params"], where_).map_err(|_| {
                illegal(format!(
                    "[{where_}] only inline Painless scripts are supported on this cluster (stored scripts and options are not)"
                ))
            })?;
            if let Some(lang) = o.get("lang") {
                if lang.as_str() != Some("painless") {
                    return Err(illegal(format!(
                        "[{where_}] only [painless] scripts are supported on this cluster"
                    )));
                }
            }
            match (o.get("source"), o.get("inline")) {
                (Some(Value::String(s)), None) | (None, Some(Value::String(s))) => s.as_str(),
                _ => return Err(parsing(format!("[{where_}] requires one string [source]"))),
            }
        }
        _ => return Err(parsing(format!("[{where_}] must be a string or an object"))),
    };
    check_source(source).map_err(|(at, what)| {
        illegal(format!(
            "[{where_}] uses Painless outside the subset this cluster supports, at character {at}: {what}"
        ))
    })
}

/// Checks a script text against the subset; `Err((position, what))`.
pub fn check_source(src: &str) -> Result<(), (usize, String)> {
    let toks = lex(src)?;
    let mut p = P {
        t: &toks,
        i: 0,
        depth: 0,
        len: src.len(),
    };
    while !p.done() {
        p.stmt()?;
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str,
    Num,
    Sym(&'static str),
}

const SYMS: &[&str] = &[
    "+=", "-=", "==", "!=", "<=", ">=", "&&", "||", "=", "<", ">", "+", "-", "*", "/", "(", ")",
    "{", "}", "[", "]", ".", ";", "!",
];

fn lex(src: &str) -> Result<Vec<(usize, Tok)>, (usize, String)> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        } else if c == b'/' && matches!(b.get(i + 1), Some(b'/' | b'*')) {
            return Err((i, "comments".into()));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((s, Tok::Ident(src[s..i].to_string())));
        } else if c.is_ascii_digit() {
            let s = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if b.get(i)
                .is_some_and(|x| x.is_ascii_alphanumeric() || *x == b'_')
            {
                return Err((i, "a number suffix".into()));
            }
            out.push((s, Tok::Num));
        } else if c == b'\'' || c == b'"' {
            let s = i;
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err((s, "an unterminated string".into())),
                    Some(b'\\') if matches!(b.get(i + 1), Some(&q) if q == c || q == b'\\') => {
                        i += 2
                    }
                    Some(b'\\') => {
                        return Err((i, "an escape other than \\\\ or the quote".into()))
                    }
                    Some(&q) if q == c => break,
                    Some(_) => i += 1,
                }
            }
            i += 1;
            out.push((s, Tok::Str));
        } else if let Some(sym) = SYMS.iter().find(|s| b[i..].starts_with(s.as_bytes())) {
            out.push((i, Tok::Sym(sym)));
            i += sym.len();
        } else {
            return Err((
                i,
                format!(
                    "the character '{}'",
                    &src[i..].chars().next().unwrap_or('?')
                ),
            ));
        }
    }
    Ok(out)
}

struct P<'a> {
    t: &'a [(usize, Tok)],
    i: usize,
    depth: usize,
    len: usize,
}

type R<T = ()> = Result<T, (usize, String)>;

impl P<'_> {
    fn done(&self) -> bool {
        self.i >= self.t.len()
    }
    fn pos(&self) -> usize {
        self.t.get(self.i).map_or(self.len, |t| t.0)
    }
    fn fail<T>(&self, what: &str) -> R<T> {
        let found = match self.t.get(self.i) {
            Some((_, Tok::Ident(s))) => format!(" (found [{s}])"),
            Some((_, Tok::Sym(s))) => format!(" (found [{s}])"),
            _ => String::new(),
        };
        Err((self.pos(), format!("expected {what}{found}")))
    }
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i).map(|t| &t.1)
    }
    fn sym(&mut self, s: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Sym(x)) if *x == s) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn ident(&mut self, s: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Ident(x)) if x == s) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, s: &str) -> R {
        if self.sym(s) {
            Ok(())
        } else {
            self.fail(&format!("'{s}'"))
        }
    }
    fn enter(&mut self) -> R {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err((self.pos(), "nesting too deep".into()));
        }
        Ok(())
    }

    fn stmt(&mut self) -> R {
        self.enter()?;
        if self.ident("if") {
            self.expect("(")?;
            self.cond()?;
            self.expect(")")?;
            self.body()?;
            if self.ident("else") {
                self.body()?;
            }
        } else if self.ident("ctx") {
            self.expect(".")?;
            self.ctx_stmt()?;
            self.end()?;
        } else {
            return self.fail("a statement (if, or an assignment to ctx._source or ctx.op)");
        }
        self.depth -= 1;
        Ok(())
    }

    fn ctx_stmt(&mut self) -> R {
        if self.ident("op") {
            self.expect("=")?;
            if self.peek() != Some(&Tok::Str) {
                return self.fail("'noop', 'delete' or 'index' for ctx.op");
            }
            self.i += 1;
            return Ok(());
        }
        if !self.ident("_source") {
            return self.fail("_source or op after ctx");
        }
        let steps = self.path()?;
        if self.sym("(") {
            // `.remove('literal')`: the last step was the method name
            if steps.last().map(String::as_str) != Some("remove") {
                return self.fail("only remove('key') as a method");
            }
            self.string()?;
            return self.expect(")");
        }
        if steps.is_empty() {
            return self.fail("a field of ctx._source");
        }
        if !(self.sym("=") || self.sym("+=") || self.sym("-=")) {
            return self.fail("'=', '+=' or '-='");
        }
        self.expr()
    }

    /// `( '.' ident | '[' string ']' )*`; returns the identifiers seen.
    fn path(&mut self) -> R<Vec<String>> {
        let mut steps = Vec::new();
        loop {
            if self.sym(".") {
                match self.peek() {
                    Some(Tok::Ident(s)) => {
                        steps.push(s.clone());
                        self.i += 1;
                    }
                    _ => return self.fail("a field name"),
                }
            } else if self.sym("[") {
                self.string()?;
                self.expect("]")?;
                steps.push(String::new());
            } else {
                return Ok(steps);
            }
        }
    }

    fn string(&mut self) -> R {
        if self.peek() == Some(&Tok::Str) {
            self.i += 1;
            Ok(())
        } else {
            self.fail("a string literal")
        }
    }

    fn end(&mut self) -> R {
        if self.sym(";") || self.done() || self.peek() == Some(&Tok::Sym("}")) {
            Ok(())
        } else {
            self.fail("';'")
        }
    }

    fn body(&mut self) -> R {
        if self.sym("{") {
            while !self.sym("}") {
                if self.done() {
                    return self.fail("'}'");
                }
                self.stmt()?;
            }
            Ok(())
        } else {
            self.stmt()
        }
    }

    fn cond(&mut self) -> R {
        self.enter()?;
        self.and()?;
        while self.sym("||") {
            self.and()?;
        }
        self.depth -= 1;
        Ok(())
    }
    fn and(&mut self) -> R {
        self.not()?;
        while self.sym("&&") {
            self.not()?;
        }
        Ok(())
    }
    fn not(&mut self) -> R {
        if self.sym("!") {
            self.enter()?;
            self.not()?;
            self.depth -= 1;
            return Ok(());
        }
        self.expr()?;
        if ["==", "!=", "<=", ">=", "<", ">"]
            .iter()
            .any(|s| self.sym(s))
        {
            self.expr()?;
        }
        Ok(())
    }
    fn expr(&mut self) -> R {
        self.term()?;
        while ["+", "-", "*", "/"].iter().any(|s| self.sym(s)) {
            self.term()?;
        }
        Ok(())
    }
    fn term(&mut self) -> R {
        match self.peek() {
            Some(Tok::Num | Tok::Str) => {
                self.i += 1;
                Ok(())
            }
            Some(Tok::Ident(s)) if matches!(s.as_str(), "true" | "false" | "null") => {
                self.i += 1;
                Ok(())
            }
            Some(Tok::Sym("-")) => {
                self.i += 1;
                self.enter()?;
                self.term()?;
                self.depth -= 1;
                Ok(())
            }
            Some(Tok::Sym("(")) => {
                self.i += 1;
                self.cond()?;
                self.expect(")")
            }
            Some(Tok::Ident(s)) if s == "params" => {
                self.i += 1;
                if self.path()?.is_empty() {
                    return self.fail("a parameter name");
                }
                Ok(())
            }
            Some(Tok::Ident(s)) if s == "ctx" => {
                self.i += 1;
                self.expect(".")?;
                if !self.ident("_source") {
                    return self.fail("_source (only ctx._source can be read)");
                }
                self.path().map(|_| ())
            }
            _ => self.fail("a literal, params.<name> or ctx._source.<field>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subset_passes() {
        for s in [
            "ctx._source.count += params.n",
            "ctx._source.count += 1;",
            "ctx._source['tags'] = params.tags; ctx._source.a.b = 'x'",
            "ctx._source.remove('old')",
            "ctx._source.a.remove(\"b\");",
            "if (ctx._source.n > 10) { ctx.op = 'noop' } else { ctx._source.n -= 1 }",
            "if (ctx._source.n == null || !(params.x != 'a')) ctx.op = 'delete'; else if (true) ctx._source.k = -1.5",
            "ctx._source.total = ctx._source.a * (ctx._source.b + 2) / params['d']",
            "ctx._source.s = 'it\\'s'",
            "",
        ] {
            assert_eq!(check_source(s), Ok(()), "{s}");
        }
    }

    #[test]
    fn everything_else_is_refused() {
        for s in [
            "ctx._index = 'other'",
            "ctx['_index'] = 'other'",
            "ctx._routing = 'x'",
            "ctx._source.x = ctx._index",
            "ctx._source[params.k] = 1",
            "ctx._source.x = params[params.k]",
            "def x = 1",
            "ctx._source.x = 1 // c",
            "ctx._source.x = 1 /* c */",
            "ctx._source.x.add(1)",
            "ctx._source.x.remove(params.k)",
            "ctx.op = params.op",
            "while (true) {}",
            "ctx._source.x = 1 ctx._source.y = 2",
            "ctx._source = params.doc",
            "ctx._source.s = 'a\\nb'",
            "ctx._source.x = Math.max(1, 2)",
            "if (ctx._source.n > 1 { }",
            "ctx._source.x = 1;;",
            "ctx._source.x = 0x1F",
        ] {
            assert!(check_source(s).is_err(), "{s}");
        }
        let deep = format!("ctx._source.x = {}1{}", "(".repeat(50), ")".repeat(50));
        assert!(check_source(&deep).is_err());
    }

    #[test]
    fn script_objects() {
        use crate::tenancy::json::parse;
        let ok =
            parse(br#"{"source":"ctx._source.n += params.n","lang":"painless","params":{"n":1}}"#)
                .unwrap();
        assert!(check_script(&ok, "script").is_ok());
        for bad in [
            &br#"{"id":"stored"}"#[..],
            br#"{"source":"ctx._source.n = 1","lang":"expression"}"#,
            br#"{"source":"ctx._index = 'x'"}"#,
            br#"{"source":"x","options":{}}"#,
        ] {
            let e = check_script(&parse(bad).unwrap(), "script").unwrap_err();
            assert_eq!(e.status(), 400);
            assert!(e.body().reason.contains("[script]"), "{e:?}");
        }
    }
}
