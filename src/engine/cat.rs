//! `_cat` tables: the nine columns of spec 2.3 for `_cat/indices`, Elasticsearch's text
//! layout (header row with `?v`, columns padded to their width, numbers right-aligned),
//! `?format=json` (every value a string), `?h=` column selection, `?s=` sorting and
//! `?bytes=` units. Sizes print as Elasticsearch's `ByteSizeValue` does (`208b`, `5.1kb`).
//!
//! Pure rendering; the numbers come from the caller.

use serde_json::{Map, Value};

use super::error::{EngineError, EngineResult};

/// A column: name and whether it is right-aligned.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    pub right: bool,
}

/// The nine columns of `_cat/indices` (spec 2.3), in order.
pub const INDICES: [Column; 9] = [
    Column {
        name: "health",
        right: false,
    },
    Column {
        name: "status",
        right: false,
    },
    Column {
        name: "index",
        right: false,
    },
    Column {
        name: "pri",
        right: true,
    },
    Column {
        name: "rep",
        right: true,
    },
    Column {
        name: "docs.count",
        right: true,
    },
    Column {
        name: "docs.deleted",
        right: true,
    },
    Column {
        name: "store.size",
        right: true,
    },
    Column {
        name: "pri.store.size",
        right: true,
    },
];

/// A cell: text plus a sort key (numbers sort numerically).
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    Num(String, f64),
}

impl Cell {
    fn text(&self) -> &str {
        match self {
            Cell::Text(s) | Cell::Num(s, _) => s,
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

/// Renders rows of `cols` (text or JSON body).
pub fn render(
    cols: &[Column],
    mut rows: Vec<Vec<Cell>>,
    opts: &CatOpts,
) -> EngineResult<(String, bool)> {
    let pick: Vec<usize> = match &opts.columns {
        None => (0..cols.len()).collect(),
        Some(names) => names
            .iter()
            .map(|n| {
                cols.iter().position(|c| c.name == n).ok_or_else(|| {
                    EngineError::IllegalArgument(format!("header [{n}] does not exist"))
                })
            })
            .collect::<EngineResult<_>>()?,
    };
    for (name, desc) in opts.sort.iter().rev() {
        let i = cols.iter().position(|c| c.name == name).ok_or_else(|| {
            EngineError::Parsing(format!("Unable to sort by unknown sort key `{name}`"))
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
    if opts.json {
        let arr: Vec<Value> = rows
            .iter()
            .map(|r| {
                Value::Object(
                    pick.iter()
                        .map(|&i| {
                            (
                                cols[i].name.to_string(),
                                Value::String(r[i].text().to_string()),
                            )
                        })
                        .collect::<Map<_, _>>(),
                )
            })
            .collect();
        return Ok((
            serde_json::to_string(&arr).map_err(EngineError::internal)?,
            true,
        ));
    }
    let mut widths: Vec<usize> = pick
        .iter()
        .map(|&i| if opts.verbose { cols[i].name.len() } else { 0 })
        .collect();
    for r in &rows {
        for (w, &i) in widths.iter_mut().zip(&pick) {
            *w = (*w).max(r[i].text().chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .zip(&pick)
            .map(|((c, w), &i)| {
                if cols[i].right {
                    format!("{c:>w$}")
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect();
        out.push_str(&parts.join(" "));
        out.push('\n');
    };
    if opts.verbose {
        line(pick.iter().map(|&i| cols[i].name).collect());
    }
    for r in &rows {
        line(pick.iter().map(|&i| r[i].text()).collect());
    }
    Ok((out, false))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(render(
            &INDICES,
            rows(),
            &CatOpts::new(false, None, Some("nope"), None).unwrap()
        )
        .is_err());
        assert!(CatOpts::new(false, Some("yaml"), None, None).is_err());
    }
}
