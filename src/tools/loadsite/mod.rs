//! `searchgate load-site`: bulk-load a Hugo site into any Elasticsearch-compatible cluster
//! URL (spec 2.4, 4, 4.1, 5, 7).
//!
//! Pages come from real Hugo running our template (`hugo`), or from a records file a user's
//! own build wrote; they become spec 2.4 documents (`page`), go to the cluster as bounded
//! NDJSON bulk batches (`bulk`) over ureq (`http`), into an index created with a fitting
//! mapping when missing (`mapping`), and `--prune` deletes documents of vanished pages
//! (`prune`). `report` counts and shows progress; `target` keeps the password out of every
//! message.
//!
//! A client of the public HTTP API only: must not import `edge`, `engine`, `registry`,
//! `policy` or `tenancy`.

mod bulk;
pub(crate) mod http;
mod hugo;
mod mapping;
mod page;
mod prune;
mod report;
pub(crate) mod target;

use crate::tools::out::{errln, outln};
use std::collections::HashSet;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use bulk::{Entry, Limits, Loader, Op};
use http::{Client, RetryPolicy, TlsOptions};
use mapping::{Dialect, IndexState};
use page::{Document, PageRecord, Selection, Verdict};
pub use report::ProgressMode;
use report::Report;
use target::ClusterUrl;
pub use target::SecretString;

/// `searchgate load-site` options.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 all pages loaded; 1 some pages failed (listed on stderr); 2 nothing loaded (setup error)."
)]
pub struct LoadSiteArgs {
    /// The Hugo site directory (not needed with --from-json or --print-template).
    pub site_dir: Option<PathBuf>,
    /// Cluster URL, https://user:pass@host... (secret: prefer the environment variable).
    #[arg(long, value_name = "URL")]
    pub url: Option<SecretString>,
    /// Environment variable holding the cluster URL when --url is absent.
    #[arg(long, value_name = "NAME", default_value = "SEARCHGATE_URL")]
    pub url_env: String,
    /// Index to load into (created with a fitting mapping when missing).
    #[arg(long, required_unless_present = "print_template")]
    pub index: Option<String>,
    /// Only pages of this section ("/" for pages at the site root).
    #[arg(long, value_name = "S")]
    pub section: Option<String>,
    /// Only pages of these kinds (page, section, home, taxonomy, term); default all.
    #[arg(long = "kind", value_name = "K", value_delimiter = ',')]
    pub kinds: Vec<String>,
    /// Read page records from this file (written by the template) instead of running Hugo.
    #[arg(long, value_name = "FILE")]
    pub from_json: Vec<PathBuf>,
    /// Print the Hugo template (with instructions) and exit.
    #[arg(long)]
    pub print_template: bool,
    /// The hugo executable.
    #[arg(long, value_name = "PATH", default_value = "hugo")]
    pub hugo: PathBuf,
    /// The site's config files, comma-separated and relative to the site (default: Hugo's).
    #[arg(long, value_name = "FILES")]
    pub hugo_config: Option<String>,
    /// Hugo environment (--environment).
    #[arg(long, value_name = "ENV")]
    pub hugo_environment: Option<String>,
    /// Extra trusted CA certificates (PEM), added to the system roots.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Do not verify the server certificate (testing only).
    #[arg(long)]
    pub insecure: bool,
    /// Delete documents of pages that no longer exist.
    #[arg(long)]
    pub prune: bool,
    /// Print the bulk body that would be sent (NDJSON) and send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Most documents per bulk request.
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub batch_docs: usize,
    /// Most bytes per bulk request.
    #[arg(long, value_name = "BYTES", default_value_t = 8 * 1024 * 1024)]
    pub batch_bytes: usize,
    /// Retries per request (429, 500, 502, 503, 504, dropped connections).
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub max_retries: u32,
    /// First retry backoff in milliseconds (doubled per retry, with jitter, up to 30 s).
    #[arg(long, value_name = "MS", default_value_t = 250)]
    pub retry_base_ms: u64,
    /// Time limit per request, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub timeout: u64,
    /// Progress display.
    #[arg(long, value_enum, default_value = "auto")]
    pub progress: ProgressMode,
}

/// Why a run stopped before loading.
#[derive(Debug, thiserror::Error)]
enum LoadError {
    #[error(transparent)]
    Url(#[from] target::UrlError),
    #[error(transparent)]
    Hugo(#[from] hugo::HugoError),
    #[error(transparent)]
    Http(#[from] http::HttpError),
    #[error(transparent)]
    Index(#[from] mapping::IndexError),
    #[error(transparent)]
    Prune(#[from] prune::PruneError),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Server(String),
}

/// Runs the loader.
pub fn run(args: LoadSiteArgs) -> ExitCode {
    if args.print_template {
        crate::tools::out::out(hugo::TEMPLATE);
        return ExitCode::SUCCESS;
    }
    let mut report = Report::new(args.progress);
    let result = execute(&args, &mut report);
    report.finish_loading();
    let show = report.counts.seen > 0 || result.is_ok();
    if show && args.dry_run {
        errln!("{}", report.summary());
    } else if show {
        outln!("{}", report.summary());
    }
    match result {
        Err(e) => {
            errln!("searchgate load-site: {e}");
            ExitCode::from(2)
        }
        Ok(()) if report.counts.failed > 0 => {
            errln!(
                "searchgate load-site: {} page(s) failed",
                report.counts.failed
            );
            ExitCode::from(1)
        }
        Ok(()) => ExitCode::SUCCESS,
    }
}

fn execute(args: &LoadSiteArgs, report: &mut Report) -> Result<(), LoadError> {
    let index = args.index.clone().unwrap_or_default();
    mapping::validate_index_name(&index)?;
    let selection = Selection::new(args.section.as_deref(), &args.kinds);
    let records = read_pages(args)?;
    let docs = select(records, &selection, report);
    if args.dry_run {
        return dry_run(&index, &docs);
    }
    let session = connect(args, index, report)?;
    let limits = Limits {
        max_docs: args.batch_docs.max(1),
        max_bytes: args.batch_bytes.max(1),
    };
    let result = session.load(&docs, limits, args.prune.then_some(&selection), report);
    report.counts.retries += session.client.retries();
    result
}

/// A connected cluster with its index ready.
#[derive(Debug)]
struct Session {
    client: Client,
    index: String,
    dialect: Dialect,
    policy: RetryPolicy,
}

/// Builds the client, learns the server's dialect and makes sure the index is usable.
fn connect(args: &LoadSiteArgs, index: String, report: &mut Report) -> Result<Session, LoadError> {
    let explicit_env = args.url.is_none() && args.url_env != "SEARCHGATE_URL";
    let url = ClusterUrl::from_sources(args.url.as_ref(), &args.url_env, explicit_env)?;
    let policy = RetryPolicy {
        max_retries: args.max_retries,
        base: Duration::from_millis(args.retry_base_ms),
        cap: Duration::from_secs(30),
    };
    let tls = TlsOptions {
        cacert: args.cacert.clone(),
        insecure: args.insecure,
    };
    if args.insecure && url.is_https() {
        report.note("warning: --insecure: the server certificate is not verified");
    }
    let client = Client::new(url, &tls, policy, Duration::from_secs(args.timeout))?;
    let dialect = detect_dialect(&client)?;
    match mapping::ensure_index(&client, &index, dialect)? {
        IndexState::Created => report.note(&format!("created index {index}")),
        IndexState::Existing { missing } if !missing.is_empty() => report.note(&format!(
            "warning: index {index} does not map {}; the server will guess their types",
            missing.join(", ")
        )),
        IndexState::Existing { .. } => {}
    }
    Ok(Session {
        client,
        index,
        dialect,
        policy,
    })
}

impl Session {
    /// Loads the documents, refreshes, and prunes within `prune` when asked.
    fn load(
        &self,
        docs: &[(String, Document)],
        limits: Limits,
        prune: Option<&Selection>,
        report: &mut Report,
    ) -> Result<(), LoadError> {
        let doc_type = self.dialect.bulk_type();
        let entries: Vec<Entry> = docs
            .iter()
            .map(|(label, d)| Entry {
                label: label.clone(),
                id: d.object_id.clone(),
                bytes: bulk::encode(Op::Index, &self.index, doc_type, &d.object_id, Some(d)),
            })
            .collect();
        report.start_loading(
            entries.len() as u64,
            &format!("loading into {}", self.index),
        );
        let mut loader = Loader::new(&self.client, limits, self.policy, Op::Index);
        loader.load(&entries, report);
        report.finish_loading();
        let refreshed = prune::refresh(&self.client, &self.index);
        let Some(selection) = prune else {
            return Ok(());
        };
        if !refreshed {
            report.note("note: _refresh failed; pruning may miss documents written moments ago");
        }
        let keep: HashSet<&str> = docs.iter().map(|(_, d)| d.object_id.as_str()).collect();
        self.prune(selection, &keep, loader.limits(), report)
    }

    /// Deletes site documents of the selection whose ids are not in `keep`.
    fn prune(
        &self,
        selection: &Selection,
        keep: &HashSet<&str>,
        limits: Limits,
        report: &mut Report,
    ) -> Result<(), LoadError> {
        let (client, index) = (&self.client, self.index.as_str());
        let mut seen = HashSet::new();
        let mut loader = Loader::new(client, limits, self.policy, Op::Delete);
        loop {
            let doc_type = self.dialect.bulk_type();
            let stale = prune::find_stale(client, index, doc_type, selection, keep, &mut seen)?;
            if stale.is_empty() {
                return Ok(());
            }
            report.start_loading(stale.len() as u64, &format!("pruning {index}"));
            loader.load(&stale, report);
            report.finish_loading();
            // Deletes become visible to searches (and the next round) after a refresh.
            prune::refresh(client, index);
            if stale.len() < prune::PAGE_SIZE {
                return Ok(());
            }
        }
    }
}

/// Page records from `--from-json` files or from Hugo.
fn read_pages(args: &LoadSiteArgs) -> Result<Vec<serde_json::Value>, LoadError> {
    if !args.from_json.is_empty() {
        let mut pages = Vec::new();
        for f in &args.from_json {
            pages.extend(hugo::read_records(f)?);
        }
        return Ok(pages);
    }
    let site = args
        .site_dir
        .clone()
        .ok_or_else(|| LoadError::Usage("give the site directory, or --from-json FILE".into()))?;
    let run = hugo::HugoRun {
        hugo: args.hugo.clone(),
        site,
        config: args.hugo_config.clone(),
        environment: args.hugo_environment.clone(),
    };
    Ok(hugo::build(&run)?)
}

/// Applies the selection and the spec 2.4 rule; returns (label, document) pairs. Records that
/// cannot become documents, and repeated ids, are reported as failed pages.
fn select(
    records: Vec<serde_json::Value>,
    selection: &Selection,
    report: &mut Report,
) -> Vec<(String, Document)> {
    let mut docs = Vec::new();
    let mut ids = HashSet::new();
    for (n, value) in records.into_iter().enumerate() {
        report.counts.seen += 1;
        let page = match PageRecord::from_value(value) {
            Ok(p) => p,
            Err(e) => {
                report.fail(&format!("page record #{}", n + 1), &e.to_string());
                continue;
            }
        };
        match selection.verdict(&page) {
            Verdict::SkipFilter => report.counts.skipped_filter += 1,
            Verdict::SkipRule => report.counts.skipped_rule += 1,
            Verdict::Include => match page.to_document() {
                Err(e) => report.fail(&page.label(), &e.to_string()),
                Ok(_) if !ids.insert(page.object_id.clone()) => {
                    report.fail(
                        &page.label(),
                        &format!("objectID {} repeats an earlier page", page.object_id),
                    );
                }
                Ok(doc) => {
                    report.counts.included += 1;
                    docs.push((page.label(), doc));
                }
            },
        }
    }
    docs
}

fn dry_run(index: &str, docs: &[(String, Document)]) -> Result<(), LoadError> {
    let mut out = std::io::stdout().lock();
    for (_, d) in docs {
        let bytes = bulk::encode(
            Op::Index,
            index,
            Some(mapping::DOC_TYPE),
            &d.object_id,
            Some(d),
        );
        match out.write_all(&bytes) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                crate::tools::out::closed_pipe()
            }
            r => r.map_err(|e| LoadError::Usage(format!("stdout: {e}")))?,
        }
    }
    match out.flush() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => crate::tools::out::closed_pipe(),
        r => r.map_err(|e| LoadError::Usage(format!("stdout: {e}"))),
    }
}

/// `GET /`: the server's version decides how types are written; 401 stops here.
fn detect_dialect(client: &Client) -> Result<Dialect, LoadError> {
    let reply = client.send("GET", "/", None)?;
    match reply.status {
        s if (200..300).contains(&s) => Ok(Dialect::from_root(&reply.json())),
        401 => Err(LoadError::Server(format!(
            "GET {}/: HTTP 401 ({}): check the credentials in the cluster URL",
            client.masked_url(),
            reply.error_summary()
        ))),
        403 | 404 => Err(LoadError::Server(format!(
            "GET {}/: HTTP {}: {}",
            client.masked_url(),
            reply.status,
            reply.error_summary()
        ))),
        _ => Ok(Dialect::Typed),
    }
}
