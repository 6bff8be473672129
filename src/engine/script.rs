//! The Painless subset of `_update`, `_update_by_query`, `_reindex` and bulk `update`
//! scripts: statements separated by `;`, `if (...) ... else ...` with blocks, assignment
//! (`=`, `+=`, `-=`) to `ctx._source` fields (dotted or `['name']`) and to `ctx.op`,
//! `ctx._source.remove('f')`, `list.add(x)`, values from `params`, literals (numbers,
//! strings in `'` or `"`, `true`, `false`, `null`, lists `[a, b]`), `+ - * / %`, comparisons, `&& || !`,
//! `.size()`, `.contains(x)`, `.containsKey(x)`. Anything else is refused when the script
//! is compiled, naming what is not supported (400 `illegal_argument_exception` "failed to
//! execute script" caused by `script_exception`, as Elasticsearch reports script errors).
//!
//! Pure: a script runs on a context value and returns it changed.

use serde_json::{Map, Number, Value};

use super::error::{EngineError, EngineResult};

/// A parsed `script` (inline source, `lang` painless, `params`).
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    stmts: Vec<Stmt>,
    pub params: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq)]
enum Stmt {
    Assign(Vec<Expr>, AssignOp, Expr),
    Call(Expr),
    If(Expr, Vec<Stmt>, Vec<Stmt>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum AssignOp {
    Set,
    Add,
    Sub,
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Lit(Value),
    /// `ctx` or `params` followed by keys.
    Path(String, Vec<Expr>),
    Method(Box<Expr>, String, Vec<Expr>),
    /// A list literal `[a, b]`.
    List(Vec<Expr>),
    Bin(Box<Expr>, String, Box<Expr>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
}

/// A script failure as Elasticsearch renders it.
pub fn script_error(reason: impl Into<String>) -> EngineError {
    EngineError::Script(reason.into())
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64, bool),
    Str(String),
    Ident(String),
    Op(String),
}

fn tokenize(src: &str) -> EngineResult<Vec<Tok>> {
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

fn unsupported(what: &str) -> EngineError {
    script_error(format!(
        "compile error: [{what}] is not supported by this engine's Painless subset (assignments to ctx._source and ctx.op, +=, -=, remove, add, params, if/else)"
    ))
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
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

    fn stmts(&mut self, until_brace: bool) -> EngineResult<Vec<Stmt>> {
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

/// Parses the `script` of a request (a string, or `{source, lang, params}`).
pub fn parse_script(v: &Value) -> EngineResult<Script> {
    let (src, params) = match v {
        Value::String(s) => (s.clone(), Map::new()),
        Value::Object(o) => {
            let mut src = None;
            let mut params = Map::new();
            for (k, x) in o {
                match (k.as_str(), x) {
                    ("source" | "inline", Value::String(s)) => src = Some(s.clone()),
                    ("lang", Value::String(l)) if l == "painless" => {}
                    ("lang", other) => {
                        return Err(script_error(format!(
                            "script lang [{}] is not supported by this engine",
                            other.as_str().unwrap_or_default()
                        )))
                    }
                    ("params", Value::Object(p)) => params = p.clone(),
                    ("options", _) => {}
                    ("id", _) => {
                        return Err(EngineError::IllegalArgument(
                            "stored scripts ([id]) are not supported by this engine".into(),
                        ))
                    }
                    (other, _) => {
                        return Err(EngineError::Parsing(format!(
                            "[script] unknown field [{other}]"
                        )))
                    }
                }
            }
            (src.ok_or_else(|| EngineError::Parsing("must specify either [source] for an inline script or [id] for a stored script".into()))?, params)
        }
        _ => {
            return Err(EngineError::Parsing(
                "[script] must be a string or an object".into(),
            ))
        }
    };
    let mut p = Parser {
        toks: tokenize(&src)?,
        pos: 0,
    };
    let stmts = p.stmts(false)?;
    Ok(Script { stmts, params })
}

/// What a script's run decided for the document.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Index,
    Noop,
    Delete,
}

fn runtime(msg: impl std::fmt::Display) -> EngineError {
    script_error(format!("runtime error: {msg}"))
}

fn key_str(v: &Value) -> EngineResult<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(runtime(format!("cannot use [{other}] as a key"))),
    }
}

struct Run<'a> {
    ctx: &'a mut Value,
    params: &'a Value,
}

impl Run<'_> {
    fn keys(&mut self, keys: &[Expr]) -> EngineResult<Vec<Value>> {
        keys.iter().map(|k| self.eval(k)).collect()
    }

    fn read(&mut self, root: &str, keys: &[Expr]) -> EngineResult<Value> {
        let ks = self.keys(keys)?;
        let mut cur = if root == "ctx" {
            &*self.ctx
        } else {
            self.params
        };
        for k in &ks {
            cur = match (cur, k) {
                (Value::Object(o), k) => match o.get(&key_str(k)?) {
                    Some(v) => v,
                    None => return Ok(Value::Null),
                },
                (Value::Array(a), Value::Number(n)) => {
                    match a.get(n.as_u64().unwrap_or(u64::MAX) as usize) {
                        Some(v) => v,
                        None => return Err(runtime("index out of bounds")),
                    }
                }
                (Value::Null, _) => return Err(runtime("cannot access a field of null")),
                _ => return Err(runtime("cannot access a field of a value")),
            };
        }
        Ok(cur.clone())
    }

    /// The slot a `ctx` path names (objects on the way created as Painless maps would
    /// have to exist: a missing parent is a null error, as in Painless).
    fn slot(&mut self, keys: &[Value]) -> EngineResult<&mut Value> {
        let mut cur = &mut *self.ctx;
        let last = keys.len() - 1;
        for (i, k) in keys.iter().enumerate() {
            cur = match cur {
                Value::Object(o) => {
                    let name = key_str(k)?;
                    if i < last && !o.contains_key(&name) {
                        return Err(runtime(format!("cannot access [{name}]: it is null")));
                    }
                    o.entry(name).or_insert(Value::Null)
                }
                Value::Array(a) => {
                    let n = k
                        .as_u64()
                        .ok_or_else(|| runtime("list index must be a number"))?
                        as usize;
                    a.get_mut(n).ok_or_else(|| runtime("index out of bounds"))?
                }
                _ => return Err(runtime("cannot set a field of a value that is not a map")),
            };
        }
        Ok(cur)
    }

    fn eval(&mut self, e: &Expr) -> EngineResult<Value> {
        Ok(match e {
            Expr::Lit(v) => v.clone(),
            Expr::Path(root, keys) => self.read(root, keys)?,
            Expr::Not(x) => Value::Bool(!truthy(&self.eval(x)?)?),
            Expr::Neg(x) => arith(&Value::from(0), "-", &self.eval(x)?)?,
            Expr::Bin(a, op, b) => {
                if op == "&&" || op == "||" {
                    let l = truthy(&self.eval(a)?)?;
                    if (op == "&&" && !l) || (op == "||" && l) {
                        return Ok(Value::Bool(l));
                    }
                    return Ok(Value::Bool(truthy(&self.eval(b)?)?));
                }
                let (l, r) = (self.eval(a)?, self.eval(b)?);
                binary(&l, op, &r)?
            }
            Expr::Method(target, name, args) => self.call(target, name, args)?,
            Expr::List(items) => Value::Array(
                items
                    .iter()
                    .map(|x| self.eval(x))
                    .collect::<EngineResult<_>>()?,
            ),
        })
    }

    fn call(&mut self, target: &Expr, name: &str, args: &[Expr]) -> EngineResult<Value> {
        let args: Vec<Value> = args
            .iter()
            .map(|a| self.eval(a))
            .collect::<EngineResult<_>>()?;
        let Expr::Path(root, keys) = target else {
            return Err(unsupported("a method on an expression"));
        };
        if matches!(name, "remove" | "add") {
            if root != "ctx" || keys.is_empty() {
                return Err(unsupported("changing params"));
            }
            let ks = self.keys(keys)?;
            let arg = args.first().cloned().unwrap_or(Value::Null);
            return match (self.slot(&ks)?, name) {
                (Value::Object(o), "remove") => {
                    Ok(o.remove(&key_str(&arg)?).unwrap_or(Value::Null))
                }
                (Value::Array(a), "add") => {
                    a.push(arg);
                    Ok(Value::Bool(true))
                }
                (Value::Array(a), "remove") => {
                    let i = arg
                        .as_u64()
                        .ok_or_else(|| runtime("list index must be a number"))?
                        as usize;
                    if i >= a.len() {
                        return Err(runtime("index out of bounds"));
                    }
                    Ok(a.remove(i))
                }
                (Value::Null, _) => Err(runtime(format!("cannot invoke [{name}] on null"))),
                _ => Err(runtime(format!("cannot invoke [{name}] on this value"))),
            };
        }
        let v = self.read(root, keys)?;
        let arg = args.first();
        Ok(match (name, &v) {
            ("size", Value::Array(a)) => Value::from(a.len()),
            ("size", Value::Object(o)) => Value::from(o.len()),
            ("size", Value::String(s)) => Value::from(s.chars().count()),
            ("contains", Value::Array(a)) => Value::Bool(arg.is_some_and(|x| a.contains(x))),
            ("contains", Value::String(s)) => {
                Value::Bool(arg.and_then(Value::as_str).is_some_and(|x| s.contains(x)))
            }
            ("containsKey", Value::Object(o)) => {
                Value::Bool(arg.is_some_and(|x| key_str(x).is_ok_and(|k| o.contains_key(&k))))
            }
            (_, Value::Null) => return Err(runtime(format!("cannot invoke [{name}] on null"))),
            _ => return Err(runtime(format!("cannot invoke [{name}] on this value"))),
        })
    }

    fn exec(&mut self, stmts: &[Stmt]) -> EngineResult<()> {
        for s in stmts {
            match s {
                Stmt::If(c, t, e) => {
                    if truthy(&self.eval(c)?)? {
                        self.exec(t)?
                    } else {
                        self.exec(e)?
                    }
                }
                Stmt::Call(e) => {
                    self.eval(e)?;
                }
                Stmt::Assign(keys, op, rhs) => {
                    let r = self.eval(rhs)?;
                    let ks = self.keys(keys)?;
                    let slot = self.slot(&ks)?;
                    *slot = match op {
                        AssignOp::Set => r,
                        AssignOp::Add => binary(slot, "+", &r)?,
                        AssignOp::Sub => binary(slot, "-", &r)?,
                    };
                }
            }
        }
        Ok(())
    }
}

fn truthy(v: &Value) -> EngineResult<bool> {
    v.as_bool()
        .ok_or_else(|| runtime(format!("cannot cast [{v}] to boolean")))
}

fn arith(l: &Value, op: &str, r: &Value) -> EngineResult<Value> {
    let (Some(a), Some(b)) = (l.as_f64(), r.as_f64()) else {
        return Err(runtime(format!("cannot apply [{op}] to [{l}] and [{r}]")));
    };
    if let (Some(x), Some(y)) = (l.as_i64(), r.as_i64()) {
        let v = match op {
            "+" => x.checked_add(y),
            "-" => x.checked_sub(y),
            "*" => x.checked_mul(y),
            "/" => x.checked_div(y),
            _ => x.checked_rem(y),
        };
        return v
            .map(Value::from)
            .ok_or_else(|| runtime(format!("arithmetic error in [{op}]")));
    }
    let v = match op {
        "+" => a + b,
        "-" => a - b,
        "*" => a * b,
        "/" => a / b,
        _ => a % b,
    };
    Number::from_f64(v)
        .map(Value::Number)
        .ok_or_else(|| runtime("arithmetic result is not a number"))
}

fn binary(l: &Value, op: &str, r: &Value) -> EngineResult<Value> {
    Ok(match op {
        "==" => Value::Bool(l == r || (l.is_number() && l.as_f64() == r.as_f64())),
        "!=" => Value::Bool(!(l == r || (l.is_number() && l.as_f64() == r.as_f64()))),
        "<" | "<=" | ">" | ">=" => {
            let ord = match (l, r) {
                (Value::String(a), Value::String(b)) => a.cmp(b),
                _ => match (l.as_f64(), r.as_f64()) {
                    (Some(a), Some(b)) => a.total_cmp(&b),
                    _ => return Err(runtime(format!("cannot compare [{l}] and [{r}]"))),
                },
            };
            Value::Bool(match op {
                "<" => ord.is_lt(),
                "<=" => ord.is_le(),
                ">" => ord.is_gt(),
                _ => ord.is_ge(),
            })
        }
        "+" if l.is_string() || r.is_string() => {
            let s = |v: &Value| v.as_str().map_or_else(|| v.to_string(), String::from);
            Value::String(s(l) + &s(r))
        }
        _ => arith(l, op, r)?,
    })
}

impl Script {
    /// Runs the script on a document's source; `op` is the starting `ctx.op` (`index`, or
    /// `create` for a scripted upsert). Returns the decision and the new source.
    pub fn run(
        &self,
        source: Map<String, Value>,
        id: &str,
        index: &str,
        op: &str,
    ) -> EngineResult<(Op, Map<String, Value>)> {
        let mut ctx = serde_json::json!({"_source": source, "op": op, "_id": id, "_index": index});
        let params = Value::Object(self.params.clone());
        Run {
            ctx: &mut ctx,
            params: &params,
        }
        .exec(&self.stmts)?;
        let decided = match ctx.get("op").and_then(Value::as_str) {
            Some("index" | "create") => Op::Index,
            Some("none" | "noop") => Op::Noop,
            Some("delete") => Op::Delete,
            other => {
                return Err(runtime(format!(
                    "Operation type [{}] not allowed, only [noop, index, delete] are allowed",
                    other.unwrap_or("null")
                )))
            }
        };
        let source = match ctx.get_mut("_source").map(Value::take) {
            Some(Value::Object(m)) => m,
            _ => return Err(runtime("ctx._source must remain a map")),
        };
        Ok((decided, source))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(src: &str, params: Value, doc: Value) -> EngineResult<(Op, Value)> {
        let s = parse_script(&json!({"source": src, "lang": "painless", "params": params}))?;
        let (op, m) = s.run(doc.as_object().unwrap().clone(), "1", "i", "index")?;
        Ok((op, Value::Object(m)))
    }

    #[test]
    fn the_documented_subset() {
        let d = json!({"n": 1, "tags": ["a"], "o": {"x": 1}, "gone": true});
        let (op, v) = run("ctx._source.n += params.k; ctx._source.tags.add(params.t); ctx._source.remove('gone'); ctx._source['o'].x -= 1; ctx._source.s = 'a' + 'b'", json!({"k": 2, "t": "b"}), d.clone()).unwrap();
        assert_eq!(op, Op::Index);
        assert_eq!(
            v,
            json!({"n": 3, "tags": ["a", "b"], "o": {"x": 0}, "s": "ab"})
        );
        let (op, _) = run(
            "if (ctx._source.n > 5) { ctx.op = 'delete' } else { ctx.op = 'none' }",
            json!({}),
            d.clone(),
        )
        .unwrap();
        assert_eq!(op, Op::Noop);
        let (op, _) = run("if (ctx._source.tags.contains('a') && !ctx._source.containsKey('zz')) ctx.op = 'delete'", json!({}), d.clone()).unwrap();
        assert_eq!(op, Op::Delete);
        let (_, v) = run("ctx._source.price = ctx._source.n * 2.5", json!({}), d).unwrap();
        assert_eq!(v["price"], json!(2.5));
    }

    #[test]
    fn unsupported_constructs_are_named() {
        for (src, what) in [
            ("for (int i = 0; i < 3; i++) {}", "[for]"),
            ("def x = 1", "[def]"),
            ("ctx._source.n = Math.max(1, 2)", "[Math]"),
            ("ctx._source.n++", "not supported"),
            ("params.x = 1", "assignment to anything but"),
            ("ctx._source.n = doc['n'].value", "[doc]"),
        ] {
            let e = parse_script(&json!(src)).unwrap_err();
            assert_eq!(e.status(), 400, "{src}");
            let cause = e.body().caused_by.unwrap();
            assert_eq!(cause.0, "script_exception");
            assert!(cause.1.contains(what), "{src}: {}", cause.1);
        }
        let e = run("ctx._source.missing += 1", json!({}), json!({})).unwrap_err();
        assert!(e.body().caused_by.unwrap().1.contains("runtime error"));
        let e = run("ctx.op = 'explode'", json!({}), json!({})).unwrap_err();
        assert!(e.body().caused_by.unwrap().1.contains("not allowed"));
        assert!(parse_script(&json!({"source": "1", "lang": "expression"})).is_err());
        assert!(parse_script(&json!({"id": "stored"})).is_err());
    }
}
