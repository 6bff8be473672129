//! Runs real Hugo on the user's site and reads the page records it writes, or reads records
//! a user's own build wrote (`--from-json`).
//!
//! The user's directory is never written to: Hugo publishes into a temporary directory, and a
//! config overlay (passed after the site's own config, so it wins) moves `resourceDir` there,
//! turns off the build lock and `hugo_stats.json`, adds our output format to the home page,
//! and points `layoutDir` at a temporary copy of the site's `layouts/` plus our template.
//! Themes and Hugo modules are untouched. Drafts are built (`--buildDrafts`) so that the
//! loader applies the spec's rule itself; future and expired pages follow the site's config.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The Hugo template that writes page records (also printed by `--print-template`).
pub const TEMPLATE: &str = include_str!("index.searchgatepages.json");
/// The template's file name inside `layouts/`.
pub const TEMPLATE_NAME: &str = "index.searchgatepages.json";
/// The file Hugo writes per language.
pub const OUTPUT_NAME: &str = "searchgate-pages.json";
/// The `generator` marker the template writes.
pub const GENERATOR: &str = "searchgate-load-site";

/// Config file names Hugo looks for, in its order of preference.
const CONFIG_NAMES: [&str; 8] = [
    "hugo.toml",
    "hugo.yaml",
    "hugo.yml",
    "hugo.json",
    "config.toml",
    "config.yaml",
    "config.yml",
    "config.json",
];

/// Why the pages could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HugoError {
    /// The site directory is missing or has no Hugo config.
    #[error("{0} is not a Hugo site: {1}")]
    NotASite(PathBuf, &'static str),
    /// The `hugo` executable could not be started.
    #[error("cannot run {0}: {1} (install Hugo, e.g. `apt-get install hugo`, pass --hugo PATH, or use --from-json)")]
    Spawn(PathBuf, io::Error),
    /// Hugo exited with an error.
    #[error("hugo failed ({status}):\n{output}")]
    Failed { status: String, output: String },
    /// Hugo ran but wrote no page records.
    #[error("hugo wrote no {OUTPUT_NAME}; is the home page kind disabled, or do module mounts replace layoutDir? Add the template yourself (--print-template) and use --from-json")]
    NoOutput,
    /// A records file could not be read or parsed.
    #[error("{0}: {1}")]
    Read(PathBuf, String),
    /// Temporary files could not be written.
    #[error("temporary directory: {0}")]
    Temp(io::Error),
}

/// How to run Hugo.
#[derive(Debug, Clone)]
pub struct HugoRun {
    /// The `hugo` executable.
    pub hugo: PathBuf,
    /// The site directory.
    pub site: PathBuf,
    /// Site config files (comma-separated, relative to the site), when not the default.
    pub config: Option<String>,
    /// Hugo environment (`--environment`).
    pub environment: Option<String>,
}

/// A directory removed when dropped.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates a fresh private directory under the system temporary directory.
    pub fn new(prefix: &str) -> io::Result<Self> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        for _ in 0..100 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let dir =
                std::env::temp_dir().join(format!("{prefix}-{}-{nanos}-{n}", std::process::id()));
            match fs::create_dir(&dir) {
                Ok(()) => return Ok(Self(dir)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "no free temporary name",
        ))
    }
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Runs Hugo and returns the page records it wrote, in Hugo's order.
pub fn build(run: &HugoRun) -> Result<Vec<Value>, HugoError> {
    let site = fs::canonicalize(&run.site)
        .map_err(|_| HugoError::NotASite(run.site.clone(), "no such directory"))?;
    if !site.is_dir() {
        return Err(HugoError::NotASite(run.site.clone(), "not a directory"));
    }
    let config = match &run.config {
        Some(c) => c.clone(),
        None => site_config(&site)?,
    };
    let tmp = TempDir::new("searchgate-load-site").map_err(HugoError::Temp)?;
    let layouts = tmp.path().join("layouts");
    copy_tree(&site.join("layouts"), &layouts).map_err(HugoError::Temp)?;
    fs::write(layouts.join(TEMPLATE_NAME), TEMPLATE).map_err(HugoError::Temp)?;
    let overlay = tmp.path().join("searchgate-overlay.toml");
    fs::write(&overlay, overlay_toml(tmp.path())).map_err(HugoError::Temp)?;
    let public = tmp.path().join("public");
    let mut configs = config;
    if !configs.is_empty() {
        configs.push(',');
    }
    configs.push_str(&overlay.to_string_lossy());
    run_hugo(run, &site, &configs, &public)?;
    collect(&public)
}

/// Runs Hugo; a failure carries its output.
fn run_hugo(run: &HugoRun, site: &Path, configs: &str, public: &Path) -> Result<(), HugoError> {
    let mut cmd = Command::new(&run.hugo);
    cmd.arg("--source")
        .arg(site)
        .arg("--destination")
        .arg(public);
    cmd.arg("--config")
        .arg(configs)
        .arg("--buildDrafts")
        .arg("--quiet");
    if let Some(env) = &run.environment {
        cmd.arg("--environment").arg(env);
    }
    let out = cmd
        .output()
        .map_err(|e| HugoError::Spawn(run.hugo.clone(), e))?;
    if out.status.success() {
        return Ok(());
    }
    let mut output = String::from_utf8_lossy(&out.stderr).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stdout));
    Err(HugoError::Failed {
        status: out.status.to_string(),
        output,
    })
}

/// Reads every records file Hugo wrote (one per language), in path order.
fn collect(public: &Path) -> Result<Vec<Value>, HugoError> {
    let mut files = Vec::new();
    find_outputs(public, &mut files).map_err(HugoError::Temp)?;
    if files.is_empty() {
        return Err(HugoError::NoOutput);
    }
    files.sort();
    let mut pages = Vec::new();
    for f in &files {
        pages.extend(read_records(f)?);
    }
    Ok(pages)
}

/// The site's own config file (relative name), or "" when it uses only a `config/` directory.
fn site_config(site: &Path) -> Result<String, HugoError> {
    if let Some(name) = CONFIG_NAMES.iter().find(|n| site.join(n).is_file()) {
        return Ok((*name).to_owned());
    }
    if site.join("config").is_dir() {
        return Ok(String::new());
    }
    Err(HugoError::NotASite(
        site.to_owned(),
        "no hugo.toml, config.toml (or .yaml/.json) and no config/ directory",
    ))
}

/// The config overlay; every path lives in `tmp`.
fn overlay_toml(tmp: &Path) -> String {
    let q = |p: PathBuf| toml::Value::String(p.to_string_lossy().into_owned()).to_string();
    format!(
        "# written by searchgate load-site; applied after the site's config\n\
         noBuildLock = true\n\
         resourceDir = {res}\n\
         layoutDir = {lay}\n\
         [build]\n\
         writeStats = false\n\
         [outputFormats.SearchgatePages]\n\
         mediaType = \"application/json\"\n\
         baseName = \"searchgate-pages\"\n\
         isPlainText = true\n\
         notAlternative = true\n\
         [outputs]\n\
         home = [\"HTML\", \"SearchgatePages\"]\n",
        res = q(tmp.join("resources")),
        lay = q(tmp.join("layouts")),
    )
}

/// Copies a directory tree (following symlinks); a missing source is an empty tree.
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir_all(to)?;
    let entries = match fs::read_dir(from) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let src = entry.path();
        let dst = to.join(entry.file_name());
        if fs::metadata(&src)?.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

fn find_outputs(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            find_outputs(&path, out)?;
        } else if entry.file_name() == OUTPUT_NAME {
            out.push(path);
        }
    }
    Ok(())
}

/// Reads a records file: the template's `{"generator", "format", "pages"}` object, or a bare
/// array of records.
pub fn read_records(path: &Path) -> Result<Vec<Value>, HugoError> {
    let err = |m: String| HugoError::Read(path.to_owned(), m);
    let bytes = fs::read(path).map_err(|e| err(e.to_string()))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| err(format!("not JSON: {e}")))?;
    match v {
        Value::Array(pages) => Ok(pages),
        Value::Object(mut o) => {
            if o.get("generator").and_then(Value::as_str) != Some(GENERATOR) {
                return Err(err(format!("no \"generator\": \"{GENERATOR}\" marker")));
            }
            if o.get("format").and_then(Value::as_u64) != Some(1) {
                return Err(err("unsupported \"format\" (expected 1)".into()));
            }
            match o.remove("pages") {
                Some(Value::Array(pages)) => Ok(pages),
                Some(Value::Null) => Ok(Vec::new()),
                _ => Err(err("\"pages\" is not an array".into())),
            }
        }
        _ => Err(err(
            "expected an object with \"pages\" or an array of pages".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_is_valid_toml_pointing_into_tmp() {
        let tmp = Path::new("/tmp/x \"quoted\"");
        let v: toml::Value = toml::from_str(&overlay_toml(tmp)).unwrap();
        assert_eq!(v["noBuildLock"].as_bool(), Some(true));
        assert_eq!(v["layoutDir"].as_str(), Some("/tmp/x \"quoted\"/layouts"));
        assert_eq!(v["build"]["writeStats"].as_bool(), Some(false));
        assert_eq!(v["outputs"]["home"][1].as_str(), Some("SearchgatePages"));
    }

    #[test]
    fn template_is_embedded_and_documents_its_use() {
        assert!(TEMPLATE.contains(GENERATOR));
        assert!(TEMPLATE.contains(TEMPLATE_NAME));
        assert!(TEMPLATE.contains("--buildDrafts"));
    }

    #[test]
    fn records_files_are_checked() {
        let tmp = TempDir::new("searchgate-test").unwrap();
        let f = tmp.path().join("p.json");
        fs::write(
            &f,
            r#"{"generator":"searchgate-load-site","format":1,"pages":[{"a":1}]}"#,
        )
        .unwrap();
        assert_eq!(read_records(&f).unwrap().len(), 1);
        fs::write(&f, r#"[{"a":1},{"b":2}]"#).unwrap();
        assert_eq!(read_records(&f).unwrap().len(), 2);
        fs::write(&f, r#"{"generator":"other","pages":[]}"#).unwrap();
        assert!(read_records(&f).unwrap_err().to_string().contains("marker"));
        fs::write(&f, "{not json").unwrap();
        assert!(read_records(&f)
            .unwrap_err()
            .to_string()
            .contains("not JSON"));
        let dir = tmp.path().to_owned();
        drop(tmp);
        assert!(!dir.exists());
    }

    #[test]
    fn a_directory_without_config_is_not_a_site() {
        let tmp = TempDir::new("searchgate-test").unwrap();
        let run = HugoRun {
            hugo: "hugo".into(),
            site: tmp.path().to_owned(),
            config: None,
            environment: None,
        };
        assert!(matches!(build(&run), Err(HugoError::NotASite(..))));
    }
}
