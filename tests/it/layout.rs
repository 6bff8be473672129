//! The workspace's dependency rules, checked on the source (issues 15 and 31):
//! - no import cycle anywhere: in every crate, at every level, the modules of one folder
//!   (and the top-level modules of the crate) import each other in one direction only;
//! - `policy` imports nothing from `registry` (the registry uses policy's building blocks;
//!   policy sees clusters only through `policy::view`);
//! - the crates' manifests: the core crate depends on no sibling, the engine on the core
//!   alone, the edge's library not on the engine (the compiler then refuses any import).
//!
//! Every `use` item and every inline `crate::`/`super::` path of a source file is resolved
//! to the module (file) it names; test code (`tests.rs`, `*_tests.rs`, anything after
//! `#[cfg(test)]`) is left out: tests may use whatever they test with.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The workspace's crates: (name, source folder under the top directory).
const CRATES: [(&str, &str); 4] = [
    ("searchgate", "src"),
    ("searchgate-core", "crates/core/src"),
    ("searchgate-engine", "crates/engine/src"),
    ("searchgate-cli", "crates/cli/src"),
];

/// Module path (`edge::session`) of every source file of the crate whose sources are in
/// `dir`, and its text (test code removed).
fn sources_of(dir: &str) -> BTreeMap<String, String> {
    let root = crate::support::repo_root().join(dir);
    let mut out = BTreeMap::new();
    walk(&root, &root, &mut out);
    out
}

/// The edge's library crate (the top `src/`).
fn sources() -> BTreeMap<String, String> {
    sources_of("src")
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "tests" {
                walk(root, &path, out);
            }
            continue;
        }
        if !name.ends_with(".rs") || name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let rel = path.strip_prefix(root).unwrap().with_extension("");
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(
            parts.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            parts.pop();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let text = match text.find("#[cfg(test)]") {
            Some(i) => text[..i].to_string(),
            None => text,
        };
        out.insert(parts.join("::"), text);
    }
}

/// Lines of code without comments (`//` to the end of a line).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path a file names: the items of its `use` declarations (groups expanded one
/// level) and inline `crate::...`/`super::...` paths.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("use ") {
        let before = rest[..i].chars().last();
        let after = &rest[i + 4..];
        rest = after;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(end) = after.find(';') else { break };
        let item: String = after[..end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        match item.find('{') {
            Some(b) => {
                let base = &item[..b];
                let inner = item[b + 1..].trim_end_matches('}');
                for part in split_top(inner) {
                    out.push(format!("{base}{part}"));
                }
            }
            None => out.push(item),
        }
    }
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(start) {
            let at = from + i;
            from = at + start.len();
            if code[..at].ends_with("use ") || code[..at].ends_with(':') {
                continue;
            }
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            out.push(path);
        }
    }
    out
}

/// Splits `a, b::{c, d}, e` at the commas outside braces.
fn split_top(s: &str) -> Vec<String> {
    let (mut parts, mut depth, mut cur) = (Vec::new(), 0, String::new());
    for ch in s.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    parts.push(cur);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// The module a path names from module `from`: the longest known module that prefixes it.
fn resolve(from: &str, path: &str, known: &BTreeSet<String>) -> Option<String> {
    let mut segs: Vec<&str> = if let Some(p) = path.strip_prefix("crate::") {
        p.split("::").collect()
    } else if path.starts_with("super::") {
        let mut base: Vec<&str> = from.split("::").collect();
        let mut rest = path;
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        base.extend(rest.split("::"));
        base
    } else if let Some(p) = path.strip_prefix("self::") {
        from.split("::").chain(p.split("::")).collect()
    } else {
        return None; // std, external crates
    };
    while !segs.is_empty() {
        let m = segs.join("::");
        if known.contains(&m) {
            return Some(m);
        }
        segs.pop();
    }
    None
}

/// Module -> modules it imports (itself left out), in the edge's library crate.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    graph_of(&sources())
}

/// Module -> modules it imports (itself left out), for one crate's sources.
fn graph_of(src: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let known: BTreeSet<String> = src.keys().cloned().collect();
    src.iter()
        .map(|(m, text)| {
            let deps = paths(&code(text))
                .iter()
                .filter_map(|p| resolve(m, p, &known))
                .filter(|d| d != m)
                .collect();
            (m.clone(), deps)
        })
        .collect()
}

/// A cycle among `nodes` (following only edges inside them), if there is one.
fn find_cycle(
    g: &BTreeMap<String, BTreeSet<String>>,
    nodes: &BTreeSet<String>,
) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        nodes: &BTreeSet<String>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for d in g
            .get(n)
            .into_iter()
            .flatten()
            .filter(|d| nodes.contains(*d))
        {
            match state.get(d).copied().unwrap_or(0) {
                1 => {
                    let i = stack.iter().position(|s| s == d).unwrap();
                    let mut cycle = stack[i..].to_vec();
                    cycle.push(d.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(d, g, nodes, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in nodes {
        if state.get(n).copied().unwrap_or(0) == 0 {
            let mut stack = Vec::new();
            if let Some(c) = visit(n, g, nodes, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

// issue 15: the request path is a pipeline without circles. `edge` itself (mod.rs) is left
// out: it only declares the modules and hands `searchgate serve` to `start`.
#[test]
fn the_edge_modules_import_each_other_without_a_cycle() {
    let g = graph();
    let edge: BTreeSet<String> = g
        .keys()
        .filter(|m| m.starts_with("edge::"))
        .cloned()
        .collect();
    assert!(edge.len() > 10, "found the edge's modules: {edge:?}");
    if let Some(cycle) = find_cycle(&g, &edge) {
        panic!("import cycle in edge/: {}", cycle.join(" -> "));
    }
    // The pipeline's order: no stage imports the one that runs it. A stage split into a
    // folder (`exchange/`) imports what any of its files imports.
    let deps = |m: &str| -> BTreeSet<String> {
        let inside = format!("{m}::");
        g.iter()
            .filter(|(k, _)| *k == m || k.starts_with(&inside))
            .flat_map(|(_, d)| d.iter().filter(|d| !d.starts_with(&inside)).cloned())
            .collect()
    };
    assert!(deps("edge::session").contains("edge::exchange"));
    assert!(deps("edge::exchange").contains("edge::send"));
    assert!(deps("edge::exchange").contains("edge::relay"));
    assert!(
        deps("edge::outcome").iter().all(|d| !d.starts_with("edge")),
        "outcome is a leaf"
    );
}

// issue 15, DESIGN.md: `registry` and `policy` do not import each other in a circle.
#[test]
fn policy_imports_nothing_from_the_registry() {
    let g = graph();
    for (m, deps) in &g {
        if m == "policy" || m.starts_with("policy::") {
            let bad: Vec<&String> = deps.iter().filter(|d| d.starts_with("registry")).collect();
            assert!(bad.is_empty(), "{m} imports {bad:?}");
        }
    }
    let registry_uses_policy = g
        .iter()
        .any(|(m, deps)| m.starts_with("registry") && deps.iter().any(|d| d.starts_with("policy")));
    assert!(
        registry_uses_policy,
        "the check sees the registry's imports"
    );
}

// The checker itself, on a small example.
#[test]
fn the_checker_resolves_paths_and_finds_cycles() {
    let known: BTreeSet<String> = ["edge", "edge::a", "edge::b", "policy::decide"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let code = "use super::b::{X, Y};\nuse crate::policy::decide::{decide, Targets};\nfn f() { super::a::g(); std::mem::take(x); }";
    let found: BTreeSet<String> = paths(code)
        .iter()
        .filter_map(|p| resolve("edge::a", p, &known))
        .collect();
    let want: BTreeSet<String> = ["edge::b", "policy::decide", "edge::a"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(found, want);
    let mut g = BTreeMap::new();
    g.insert("x".to_string(), BTreeSet::from(["y".to_string()]));
    g.insert("y".to_string(), BTreeSet::from(["x".to_string()]));
    let nodes: BTreeSet<String> = g.keys().cloned().collect();
    assert_eq!(find_cycle(&g, &nodes).map(|c| c.len()), Some(3));
}

/// The child of `parent` (a module path, "" for the crate's root) that `m` lies in, if any.
fn child_of<'a>(parent: &str, m: &'a str) -> Option<&'a str> {
    let rest = if parent.is_empty() {
        m
    } else {
        m.strip_prefix(parent)?.strip_prefix("::")?
    };
    let seg = rest.split("::").next().filter(|s| !s.is_empty())?;
    Some(&m[..m.len() - rest.len() + seg.len()])
}

/// Modules of `g` that reach each other, in groups of more than one (strongly connected
/// components, by reachability: the graphs here have a few dozen nodes at most).
fn tangles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for d in g.get(&n).into_iter().flatten() {
                if seen.insert(d.clone()) {
                    todo.push(d.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = g.keys().map(|n| (n, reach(n))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for n in g.keys() {
        let group: BTreeSet<String> = reaches[n]
            .iter()
            .filter(|m| reaches.get(m).is_some_and(|r| r.contains(n)))
            .cloned()
            .collect();
        if group.len() > 1 && !out.contains(&group) {
            out.push(group);
        }
    }
    out
}

/// Groups of siblings that import each other in a circle, at every level of one crate:
/// an edge `a -> b` between two children of a folder when anything inside `a` imports
/// anything inside `b`. Each group is written `folder: child child ...` (the children's
/// last names, sorted; the crate's root folder is `<root>`).
fn sibling_cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut parents: BTreeSet<String> = BTreeSet::from([String::new()]);
    for m in g.keys() {
        let segs: Vec<&str> = m.split("::").collect();
        for n in 1..segs.len() {
            parents.insert(segs[..n].join("::"));
        }
    }
    let mut cycles = Vec::new();
    for parent in &parents {
        let mut lifted: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (m, deps) in g {
            let Some(a) = child_of(parent, m) else {
                continue;
            };
            let entry = lifted.entry(a.to_string()).or_default();
            for d in deps {
                if let Some(b) = child_of(parent, d).filter(|b| *b != a) {
                    entry.insert(b.to_string());
                }
            }
        }
        for group in tangles(&lifted) {
            let names: Vec<&str> = group
                .iter()
                .map(|m| m.rsplit("::").next().unwrap_or(m))
                .collect();
            let folder = if parent.is_empty() { "<root>" } else { parent };
            cycles.push(format!("{folder}: {}", names.join(" ")));
        }
    }
    cycles
}

/// Import cycles that were there when the check came (issue 31) and are being taken
/// apart: `crate folder: members`. The list only shrinks. A cycle not on it fails the
/// test, and so does an entry that is gone (take it off the list when you remove it).
const CYCLES_BEING_REMOVED: &[&str] = &[];

// issue 31: no import cycles anywhere, at any level, in any crate of the workspace.
#[test]
fn no_module_imports_another_in_a_cycle_at_any_level() {
    let mut found = BTreeSet::new();
    for (name, dir) in CRATES {
        let g = graph_of(&sources_of(dir));
        assert!(!g.is_empty(), "{name}: found its sources in {dir}");
        for c in sibling_cycles(&g) {
            found.insert(format!("{name} {c}"));
        }
    }
    let known: BTreeSet<String> = CYCLES_BEING_REMOVED.iter().map(|s| s.to_string()).collect();
    let new: Vec<&String> = found.difference(&known).collect();
    assert!(new.is_empty(), "import cycles: {new:#?}");
    let gone: Vec<&String> = known.difference(&found).collect();
    assert!(
        gone.is_empty(),
        "cycles removed: take them off CYCLES_BEING_REMOVED: {gone:#?}"
    );
}

/// The `[dependencies]` table of a crate's manifest: the names of its dependencies.
fn dependencies(manifest: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(crate::support::repo_root().join(manifest)).unwrap();
    let doc: toml::Table = toml::from_str(&text).unwrap();
    doc.get("dependencies")
        .and_then(|d| d.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

// issue 31: the layers the compiler enforces. A crate can only import what its manifest
// names, so these three facts make "the edge never imports the engine" and "the engine
// never imports the edge" compile errors.
#[test]
fn the_crates_depend_on_each_other_in_one_direction() {
    let siblings = |m: &str| -> BTreeSet<String> {
        dependencies(m)
            .into_iter()
            .filter(|d| d.starts_with("searchgate"))
            .collect()
    };
    assert_eq!(siblings("crates/core/Cargo.toml"), BTreeSet::new());
    assert_eq!(
        siblings("crates/engine/Cargo.toml"),
        BTreeSet::from(["searchgate-core".to_string()])
    );
    assert_eq!(
        siblings("Cargo.toml"),
        BTreeSet::from(["searchgate-core".to_string()])
    );
    assert!(siblings("crates/cli/Cargo.toml").contains("searchgate-engine"));
}

// The sibling check itself, on a small example: `a::x -> b` and `b -> a::y` is a cycle
// between `a` and `b`; `a::x -> a::y -> a` (a child using its parent) is not.
#[test]
fn the_sibling_check_lifts_imports_to_each_level() {
    let edges = |pairs: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    let g = edges(&[("a::x", "b"), ("b", "a::y")]);
    assert_eq!(sibling_cycles(&g), vec!["<root>: a b"]);
    let g = edges(&[("a::x", "a::y"), ("a::y", "a")]);
    assert!(sibling_cycles(&g).is_empty());
    let g = edges(&[("a::x", "a::y"), ("a::y", "a::x"), ("a::y", "c")]);
    assert_eq!(sibling_cycles(&g), vec!["a: x y"]);
}

// issue 31: every integration test is in the one binary. A file left beside it (in `tests/`)
// or not declared in `tests/it/main.rs` would never be compiled, and its tests never run.
#[test]
fn every_integration_test_file_is_in_the_one_binary() {
    let root = crate::support::repo_root();
    let stray: Vec<String> = std::fs::read_dir(root.join("tests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.display().to_string())
        .collect();
    assert!(stray.is_empty(), "test files outside tests/it: {stray:?}");
    let main = std::fs::read_to_string(root.join("tests/it/main.rs")).unwrap();
    let declared: BTreeSet<&str> = main
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    for e in std::fs::read_dir(root.join("tests/it")).unwrap() {
        let path = e.unwrap().path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let is_module = path.is_dir() || path.extension().is_some_and(|x| x == "rs");
        if is_module && stem != "main" {
            assert!(
                declared.contains(stem),
                "tests/it/main.rs does not declare `mod {stem};`"
            );
        }
    }
}

/// The text files of the repository a merge can leave markers in (build output, VCS data
/// and fuzz corpora left out).
fn text_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(
                name.as_str(),
                "target" | ".git" | "node_modules" | "corpus" | "artifacts"
            ) {
                text_files(&path, out);
            }
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("rs" | "md" | "toml" | "py" | "sh" | "lua" | "html" | "cfg" | "yml")
        ) || name == "run"
        {
            out.push(path);
        }
    }
}

// A merge resolved in haste once left its conflict markers in the README, on main.
#[test]
fn no_file_holds_the_markers_of_an_unresolved_merge() {
    let root = crate::support::repo_root();
    let mut files = Vec::new();
    text_files(&root, &mut files);
    assert!(files.len() > 100, "{} files", files.len());
    let mut found = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if line.starts_with("<<<<<<< ") || line.starts_with(">>>>>>> ") {
                found.push(format!("{}:{}", f.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "conflict markers at {found:?}");
}
