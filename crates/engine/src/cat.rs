//! `_cat` tables: the nine columns of spec 2.3 for `_cat/indices`, Elasticsearch's text
//! layout (header row with `?v`, columns padded to their width, numbers right-aligned),
//! `?format=json` (every value a string), `?h=` column selection, `?s=` sorting and
//! `?bytes=` units. Sizes print as Elasticsearch's `ByteSizeValue` does (`208b`, `5.1kb`).
//!
//! Pure rendering; the numbers come from the caller.

use serde_json::{Map, Value};

use super::error::{EngineError, EngineResult};

/// A column: name, alignment, short names (`h=` and `s=` accept them), and whether it is
/// shown without `h=`.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    pub right: bool,
    pub short: &'static [&'static str],
    pub default: bool,
}

/// A column shown by default.
pub const fn col(name: &'static str, right: bool, short: &'static [&'static str]) -> Column {
    Column {
        name,
        right,
        short,
        default: true,
    }
}

/// A column shown only when `h=` names it.
pub const fn extra(name: &'static str, right: bool, short: &'static [&'static str]) -> Column {
    Column {
        name,
        right,
        short,
        default: false,
    }
}

/// The columns of `_cat/indices`: the nine of spec 2.3 by default, in order, then the
/// ones `h=` can ask for.
pub const INDICES: [Column; 12] = [
    col("health", false, &["h"]),
    col("status", false, &["s"]),
    col("index", false, &["i", "idx"]),
    col("pri", true, &["p", "shards.primary", "shardsPrimary"]),
    col("rep", true, &["r", "shards.replica", "shardsReplica"]),
    col("docs.count", true, &["dc", "docsCount"]),
    col("docs.deleted", true, &["dd", "docsDeleted"]),
    col("store.size", true, &["ss", "storeSize"]),
    col("pri.store.size", true, &[]),
    extra("uuid", false, &["id", "uuid"]),
    extra("creation.date", true, &["cd"]),
    extra("creation.date.string", false, &["cds"]),
];

/// A cell: text plus a sort key (numbers sort numerically).
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    Num(String, f64),
    /// A value that may be absent (empty: blank in text, null in JSON).
    Opt(String),
}

impl Cell {
    fn text(&self) -> &str {
        match self {
            Cell::Text(s) | Cell::Num(s, _) | Cell::Opt(s) => s,
        }
    }

    /// Whether the cell's text is `s`.
    pub fn text_is(&self, s: &str) -> bool {
        self.text() == s
    }

    fn json(&self) -> Value {
        match self {
            Cell::Opt(s) if s.is_empty() => Value::Null,
            other => Value::String(other.text().to_string()),
        }
    }
}

/// How `?bytes=` asks sizes to be printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteUnit {
    Human,
    B,
    Kb,
    Mb,
    Gb,
}

impl ByteUnit {
    /// From the `bytes` parameter.
    pub fn parse(v: Option<&str>) -> EngineResult<ByteUnit> {
        Ok(match v {
            None => ByteUnit::Human,
            Some("b") => ByteUnit::B,
            Some("kb" | "k") => ByteUnit::Kb,
            Some("mb" | "m") => ByteUnit::Mb,
            Some("gb" | "g") => ByteUnit::Gb,
            Some(other) => {
                return Err(EngineError::IllegalArgument(format!(
                    "failed to parse [bytes] unit [{other}]"
                )))
            }
        })
    }
}

/// A byte count as `?bytes=` asks (human: Elasticsearch's one-decimal truncated form).
pub fn format_bytes(bytes: u64, unit: ByteUnit) -> String {
    let div = |d: u64| (bytes / d).to_string();
    match unit {
        ByteUnit::B => bytes.to_string(),
        ByteUnit::Kb => div(1 << 10),
        ByteUnit::Mb => div(1 << 20),
        ByteUnit::Gb => div(1 << 30),
        ByteUnit::Human => {
            let units = [
                (1u64 << 50, "pb"),
                (1 << 40, "tb"),
                (1 << 30, "gb"),
                (1 << 20, "mb"),
                (1 << 10, "kb"),
            ];
            let (d, suffix) = units
                .iter()
                .find(|(d, _)| bytes >= *d)
                .copied()
                .unwrap_or((1, "b"));
            let whole = bytes / d;
            let tenth = (bytes % d) * 10 / d;
            if tenth == 0 {
                format!("{whole}{suffix}")
            } else {
                format!("{whole}.{tenth}{suffix}")
            }
        }
    }
}

/// Options of a `_cat` request.
#[derive(Debug, Clone, Default)]
pub struct CatOpts {
    pub verbose: bool,
    pub json: bool,
    pub columns: Option<Vec<String>>,
    pub sort: Vec<(String, bool)>,
}

impl CatOpts {
    /// From `v`, `format`, `h`, `s`.
    pub fn new(
        v: bool,
        format: Option<&str>,
        h: Option<&str>,
        s: Option<&str>,
    ) -> EngineResult<CatOpts> {
        let json = match format {
            None | Some("txt" | "text") => false,
            Some("json") => true,
            Some(other) => {
                return Err(EngineError::IllegalArgument(format!(
                    "Unsupported format [{other}]"
                )))
            }
        };
        let list = |x: &str| {
            x.split(',')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect::<Vec<_>>()
        };
        let sort = s
            .map(|s| {
                list(s)
                    .into_iter()
                    .map(|c| match c.split_once(':') {
                        Some((n, o)) => (n.to_string(), o == "desc"),
                        None => (c, false),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(CatOpts {
            verbose: v,
            json,
            columns: h.map(list),
            sort,
        })
    }
}

/// A column to show: its index and the name it is shown under (as `h=` gave it).
type Pick = (usize, String);

/// Column families of Elasticsearch 7.10's `_cat/indices` (statistics of caches, indexing,
/// searches, merges...) that this engine does not keep: asking for one is a 400, never an
/// answer without it. Names Elasticsearch does not know are skipped, as it skips them.
const UNKEPT: &[&str] = &[
    "completion.",
    "fielddata.",
    "query_cache.",
    "request_cache.",
    "flush.",
    "get.",
    "indexing.",
    "merges.",
    "refresh.",
    "search.",
    "segments.",
    "suggest.",
    "warmer.",
    "memory.",
    "pri.",
];

fn pick_columns(cols: &[Column], opts: &CatOpts) -> EngineResult<Vec<Pick>> {
    let Some(names) = &opts.columns else {
        return Ok((0..cols.len())
            .filter(|&i| cols[i].default)
            .map(|i| (i, cols[i].name.to_string()))
            .collect());
    };
    let mut out = Vec::new();
    for n in names {
        if n.contains('*') {
            for (i, c) in cols.iter().enumerate() {
                let hit = crate::names::wildcard_match(n, c.name)
                    || c.short.iter().any(|s| crate::names::wildcard_match(n, s));
                if hit {
                    out.push((i, c.name.to_string()));
                }
            }
        } else if let Some(i) = column_of(cols, n) {
            // shown under the name asked for, as Elasticsearch does; unknown names are skipped
            out.push((i, n.clone()));
        } else if UNKEPT.iter().any(|p| n.starts_with(p)) {
            return Err(EngineError::IllegalArgument(format!(
                "[_cat] column [{n}] is not supported by this engine; it has [{}]",
                cols.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
            )));
        }
    }
    Ok(out)
}

fn column_of(cols: &[Column], name: &str) -> Option<usize> {
    cols.iter()
        .position(|c| c.name == name || c.short.contains(&name))
}

fn sort_rows(cols: &[Column], rows: &mut [Vec<Cell>], sort: &[(String, bool)]) -> EngineResult<()> {
    for (name, desc) in sort.iter().rev() {
        let i = column_of(cols, name).ok_or_else(|| {
            EngineError::IllegalArgument(format!("Unable to sort by unknown sort key `{name}`"))
        })?;
        rows.sort_by(|a, b| {
            let o = match (&a[i], &b[i]) {
                (Cell::Num(_, x), Cell::Num(_, y)) => x.total_cmp(y),
                (x, y) => x.text().cmp(y.text()),
            };
            if *desc {
                o.reverse()
            } else {
                o
            }
        });
    }
    Ok(())
}

fn render_json(rows: &[Vec<Cell>], pick: &[Pick]) -> EngineResult<String> {
    let arr: Vec<Value> = rows
        .iter()
        .map(|r| {
            let obj: Map<String, Value> = pick
                .iter()
                .map(|(i, shown)| (shown.clone(), r[*i].json()))
                .collect();
            Value::Object(obj)
        })
        .collect();
    serde_json::to_string(&arr).map_err(EngineError::internal)
}

fn render_text(cols: &[Column], rows: &[Vec<Cell>], pick: &[Pick], verbose: bool) -> String {
    let mut widths: Vec<usize> = pick
        .iter()
        .map(|(_, shown)| if verbose { shown.len() } else { 0 })
        .collect();
    for r in rows {
        for (w, (i, _)) in widths.iter_mut().zip(pick) {
            *w = (*w).max(r[*i].text().chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .zip(pick)
            .map(|((c, w), (i, _))| {
                if cols[*i].right {
                    format!("{c:>w$}")
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect();
        out.push_str(&parts.join(" "));
        out.push('\n');
    };
    if verbose {
        line(pick.iter().map(|(_, shown)| shown.as_str()).collect());
    }
    for r in rows {
        line(pick.iter().map(|(i, _)| r[*i].text()).collect());
    }
    out
}

/// Renders rows of `cols`: (body, whether it is JSON).
pub fn render(
    cols: &[Column],
    mut rows: Vec<Vec<Cell>>,
    opts: &CatOpts,
) -> EngineResult<(String, bool)> {
    let pick = pick_columns(cols, opts)?;
    sort_rows(cols, &mut rows, &opts.sort)?;
    if opts.json {
        return Ok((render_json(&rows, &pick)?, true));
    }
    Ok((render_text(cols, &rows, &pick, opts.verbose), false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_elasticsearch_has_and_this_engine_does_not_keep_are_refused() {
        let opts = |h: &str| CatOpts::new(false, None, Some(h), None).unwrap();
        let picked = pick_columns(&INDICES, &opts("i,dc,nonsense")).unwrap();
        assert_eq!(picked, vec![(2, "i".to_string()), (5, "dc".to_string())]);
        let e = pick_columns(&INDICES, &opts("index,search.query_total")).unwrap_err();
        assert!(e.body().reason.contains("[search.query_total]"));
        assert!(pick_columns(&INDICES, &opts("pri.store.size")).is_ok());
    }

    #[test]
    fn byte_sizes_as_elasticsearch() {
        let h = ByteUnit::Human;
        assert_eq!(format_bytes(208, h), "208b");
        assert_eq!(format_bytes(1024, h), "1kb");
        assert_eq!(format_bytes(5222, h), "5.0kb".replace(".0", ""));
        assert_eq!(format_bytes(5325, h), "5.2kb");
        assert_eq!(format_bytes(3 * 1024 * 1024 + 600 * 1024, h), "3.5mb");
        assert_eq!(format_bytes(2 << 30, h), "2gb");
        assert_eq!(format_bytes(5325, ByteUnit::B), "5325");
        assert_eq!(format_bytes(5325, ByteUnit::Kb), "5");
    }

    fn rows() -> Vec<Vec<Cell>> {
        let row = |name: &str, docs: u64| {
            vec![
                Cell::Text("green".into()),
                Cell::Text("open".into()),
                Cell::Text(name.into()),
                Cell::Num("1".into(), 1.0),
                Cell::Num("0".into(), 0.0),
                Cell::Num(docs.to_string(), docs as f64),
                Cell::Num("0".into(), 0.0),
                Cell::Num("208b".into(), 208.0),
                Cell::Num("208b".into(), 208.0),
                Cell::Text("uuid".into()),
                Cell::Num("5".into(), 5.0),
                Cell::Text("1970-01-01T00:00:00.005Z".into()),
            ]
        };
        vec![row("books", 12), row("a", 3)]
    }

    // spec 2.3: nine columns in order, header with ?v
    #[test]
    fn text_table() {
        let opts = CatOpts::new(true, None, None, Some("index")).unwrap();
        let (s, json) = render(&INDICES, rows(), &opts).unwrap();
        assert!(!json);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            vec![
                "health",
                "status",
                "index",
                "pri",
                "rep",
                "docs.count",
                "docs.deleted",
                "store.size",
                "pri.store.size"
            ]
        );
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            vec!["green", "open", "a", "1", "0", "3", "0", "208b", "208b"]
        );
        assert!(lines[1].contains("a     "), "{s}");
        assert!(lines[1].contains("          3 "), "right-aligned: {s}");
    }

    #[test]
    fn json_selection_and_sort() {
        let opts = CatOpts::new(
            false,
            Some("json"),
            Some("index,docs.count"),
            Some("docs.count:desc"),
        )
        .unwrap();
        let (s, json) = render(&INDICES, rows(), &opts).unwrap();
        assert!(json);
        let v: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(
            v,
            serde_json::json!([{"index": "books", "docs.count": "12"}, {"index": "a", "docs.count": "3"}])
        );
        // unknown headers are skipped, short names shown as asked
        let opts = CatOpts::new(false, Some("json"), Some("i,nope,dc"), Some("i")).unwrap();
        let (s, _) = render(&INDICES, rows(), &opts).unwrap();
        let v: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v[0], serde_json::json!({"i": "a", "dc": "3"}));
        let opts = CatOpts::new(true, None, Some("docs.*"), None).unwrap();
        let (s, _) = render(&INDICES, rows(), &opts).unwrap();
        assert!(s.starts_with("docs.count docs.deleted"), "{s}");
        assert!(CatOpts::new(false, Some("yaml"), None, None).is_err());
    }
}
