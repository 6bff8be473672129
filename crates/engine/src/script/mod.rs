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

mod parse;
use parse::{tokenize, unsupported, Parser};

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
    /// Bytes of values the run may still build (see [`MAX_BUILT`]).
    left: usize,
}

/// The most a script's run may build (values read, computed or listed, counted by their
/// JSON size): each `s += s` doubles a string, so forty statements asked for terabytes
/// and the engine grew by gigabytes for minutes (issue 25). Past it the run fails, as
/// Elasticsearch fails a script its circuit breaker stops.
pub const MAX_BUILT: usize = 16 << 20;

/// The JSON size of `v`, counted no further than `cap`.
fn weight(v: &Value, cap: usize) -> usize {
    let mut n = 0usize;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        n += match v {
            Value::String(s) => s.len() + 2,
            Value::Array(a) => {
                stack.extend(a.iter());
                a.len() + 2
            }
            Value::Object(o) => {
                stack.extend(o.values());
                o.keys().map(|k| k.len() + 4).sum::<usize>() + 2
            }
            _ => 8,
        };
        if n > cap {
            break;
        }
    }
    n
}

impl Run<'_> {
    /// Counts `v` against what the run may build.
    fn charge(&mut self, v: Value) -> EngineResult<Value> {
        let w = weight(&v, self.left);
        if w > self.left {
            return Err(script_error(format!(
                "runtime error: the script built more than [{}mb] of values",
                MAX_BUILT >> 20
            )));
        }
        self.left -= w;
        Ok(v)
    }

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
        let v = self.eval_uncharged(e)?;
        self.charge(v)
    }

    fn eval_uncharged(&mut self, e: &Expr) -> EngineResult<Value> {
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
                    // the value of `=` was counted when evaluated; `+=` and `-=` build anew
                    let v = match op {
                        AssignOp::Set => r,
                        AssignOp::Add => binary(slot, "+", &r)?,
                        AssignOp::Sub => binary(slot, "-", &r)?,
                    };
                    let v = match op {
                        AssignOp::Set => v,
                        _ => self.charge(v)?,
                    };
                    *self.slot(&ks)? = v;
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
            left: MAX_BUILT,
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
mod tests;
