//! The tokenizer and parser of the Painless subset (statements, expressions, the error
//! that names an unsupported construct).

use serde_json::Value;

use super::{script_error, AssignOp, Expr, Stmt};
use crate::error::{EngineError, EngineResult};

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Num(f64, bool),
    Str(String),
    Ident(String),
    Op(String),
}

pub(super) fn tokenize(src: &str) -> EngineResult<Vec<Tok>> {
    let c: Vec<char> = src.chars().collect();
    let (mut i, mut out) = (0, Vec::new());
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch.is_ascii_digit() {
            let start = i;
            while i < c.len() && (c[i].is_ascii_digit() || c[i] == '.') {
                i += 1;
            }
            let s: String = c[start..i].iter().collect();
            let float = s.contains('.');
            let n = s
                .parse()
                .map_err(|_| script_error(format!("compile error: bad number [{s}]")))?;
            out.push(Tok::Num(n, float));
        } else if ch == '\'' || ch == '"' {
            let q = ch;
            let mut s = String::new();
            i += 1;
            while i < c.len() && c[i] != q {
                if c[i] == '\\' && i + 1 < c.len() {
                    i += 1;
                }
                s.push(c[i]);
                i += 1;
            }
            if i >= c.len() {
                return Err(script_error("compile error: unterminated string"));
            }
            i += 1;
            out.push(Tok::Str(s));
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(c[start..i].iter().collect()));
        } else {
            let two: String = c[i..(i + 2).min(c.len())].iter().collect();
            let op = match two.as_str() {
                "+=" | "-=" | "==" | "!=" | "<=" | ">=" | "&&" | "||" => two,
                _ => ch.to_string(),
            };
            if !matches!(
                op.as_str(),
                "+=" | "-="
                    | "=="
                    | "!="
                    | "<="
                    | ">="
                    | "&&"
                    | "||"
                    | "="
                    | "+"
                    | "-"
                    | "*"
                    | "/"
                    | "%"
                    | "<"
                    | ">"
                    | "!"
                    | "("
                    | ")"
                    | "{"
                    | "}"
                    | "["
                    | "]"
                    | "."
                    | ";"
                    | ","
            ) {
                return Err(unsupported(&op));
            }
            i += op.chars().count();
            out.push(Tok::Op(op));
        }
    }
    Ok(out)
}

pub(super) fn unsupported(what: &str) -> EngineError {
    script_error(format!(
        "compile error: [{what}] is not supported by this engine's Painless subset (assignments to ctx._source and ctx.op, +=, -=, remove, add, params, if/else)"
    ))
}

pub(super) struct Parser {
    pub toks: Vec<Tok>,
    pub pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Some(Tok::Op(o)) if o == op)
    }
    fn eat(&mut self, op: &str) -> bool {
        let hit = self.is_op(op);
        if hit {
            self.pos += 1;
        }
        hit
    }
    fn expect(&mut self, op: &str) -> EngineResult<()> {
        if self.eat(op) {
            Ok(())
        } else {
            Err(script_error(format!(
                "compile error: expected [{op}] near token {}",
                self.pos
            )))
        }
    }

    pub fn stmts(&mut self, until_brace: bool) -> EngineResult<Vec<Stmt>> {
        let mut out = Vec::new();
        loop {
            while self.eat(";") {}
            match self.peek() {
                None if !until_brace => return Ok(out),
                None => return Err(script_error("compile error: missing [}]")),
                Some(Tok::Op(o)) if o == "}" && until_brace => {
                    self.pos += 1;
                    return Ok(out);
                }
                _ => out.push(self.stmt()?),
            }
        }
    }

    fn body(&mut self) -> EngineResult<Vec<Stmt>> {
        if self.eat("{") {
            self.stmts(true)
        } else {
            Ok(vec![self.stmt()?])
        }
    }

    fn stmt(&mut self) -> EngineResult<Stmt> {
        if let Some(Tok::Ident(w)) = self.peek() {
            match w.as_str() {
                "if" => {
                    self.pos += 1;
                    self.expect("(")?;
                    let cond = self.expr()?;
                    self.expect(")")?;
                    let then = self.body()?;
                    let otherwise = if matches!(self.peek(), Some(Tok::Ident(e)) if e == "else") {
                        self.pos += 1;
                        self.body()?
                    } else {
                        vec![]
                    };
                    return Ok(Stmt::If(cond, then, otherwise));
                }
                "for" | "while" | "do" | "def" | "int" | "long" | "double" | "String"
                | "return" | "new" | "List" | "Map" | "float" | "boolean" => {
                    return Err(unsupported(w))
                }
                _ => {}
            }
        }
        let lhs = self.expr()?;
        let op = match self.peek() {
            Some(Tok::Op(o)) if o == "=" => AssignOp::Set,
            Some(Tok::Op(o)) if o == "+=" => AssignOp::Add,
            Some(Tok::Op(o)) if o == "-=" => AssignOp::Sub,
            _ => {
                return match lhs {
                    Expr::Method(..) => Ok(Stmt::Call(lhs)),
                    _ => Err(unsupported(
                        "an expression that is not an assignment or a call",
                    )),
                }
            }
        };
        self.pos += 1;
        let target = match lhs {
            Expr::Path(root, keys) if root == "ctx" && !keys.is_empty() => keys,
            _ => {
                return Err(unsupported(
                    "assignment to anything but ctx._source or ctx.op",
                ))
            }
        };
        let rhs = self.expr()?;
        Ok(Stmt::Assign(target, op, rhs))
    }

    fn expr(&mut self) -> EngineResult<Expr> {
        self.binary(0)
    }

    fn binary(&mut self, level: usize) -> EngineResult<Expr> {
        const LEVELS: [&[&str]; 5] = [
            &["||"],
            &["&&"],
            &["==", "!=", "<", "<=", ">", ">="],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        while let Some(Tok::Op(o)) = self.peek() {
            if !LEVELS[level].contains(&o.as_str()) {
                break;
            }
            let op = o.clone();
            self.pos += 1;
            let rhs = self.binary(level + 1)?;
            lhs = Expr::Bin(Box::new(lhs), op, Box::new(rhs));
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> EngineResult<Expr> {
        if self.eat("!") {
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        if self.eat("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        let mut e = self.primary()?;
        loop {
            if self.eat(".") {
                let Some(Tok::Ident(name)) = self.peek().cloned() else {
                    return Err(script_error("compile error: expected a name after [.]"));
                };
                self.pos += 1;
                if self.eat("(") {
                    let mut args = Vec::new();
                    while !self.eat(")") {
                        args.push(self.expr()?);
                        self.eat(",");
                    }
                    if !matches!(
                        name.as_str(),
                        "remove" | "add" | "size" | "contains" | "containsKey"
                    ) {
                        return Err(unsupported(&format!("{name}()")));
                    }
                    e = Expr::Method(Box::new(e), name, args);
                } else {
                    e = push_key(e, Expr::Lit(Value::String(name)))?;
                }
            } else if self.eat("[") {
                let k = self.expr()?;
                self.expect("]")?;
                e = push_key(e, k)?;
            } else {
                return Ok(e);
            }
        }
    }

    fn primary(&mut self) -> EngineResult<Expr> {
        let t = self
            .peek()
            .cloned()
            .ok_or_else(|| script_error("compile error: unexpected end of script"))?;
        self.pos += 1;
        Ok(match t {
            Tok::Num(n, float) => Expr::Lit(if float {
                Value::from(n)
            } else {
                Value::from(n as i64)
            }),
            Tok::Str(s) => Expr::Lit(Value::String(s)),
            Tok::Ident(w) => match w.as_str() {
                "true" => Expr::Lit(Value::Bool(true)),
                "false" => Expr::Lit(Value::Bool(false)),
                "null" => Expr::Lit(Value::Null),
                "ctx" | "params" => Expr::Path(w, vec![]),
                other => return Err(unsupported(other)),
            },
            Tok::Op(o) if o == "(" => {
                let e = self.expr()?;
                self.expect(")")?;
                e
            }
            Tok::Op(o) if o == "[" => {
                let mut items = Vec::new();
                while !self.eat("]") {
                    items.push(self.expr()?);
                    if !self.eat(",") && !self.is_op("]") {
                        return Err(script_error("compile error: expected [,] or []] in a list"));
                    }
                }
                Expr::List(items)
            }
            Tok::Op(o) => return Err(unsupported(&o)),
        })
    }
}

fn push_key(e: Expr, k: Expr) -> EngineResult<Expr> {
    match e {
        Expr::Path(root, mut keys) => {
            keys.push(k);
            Ok(Expr::Path(root, keys))
        }
        _ => Err(unsupported("a field of a method result")),
    }
}
