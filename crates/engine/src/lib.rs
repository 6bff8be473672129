//! The embedded Elasticsearch-compatible engine on tantivy (`searchgate engine`).
//!
//! It is an upstream like any Elasticsearch node: the edge reaches it over HTTP only. Must
//! not import `edge`, `registry`, `policy` or `tenancy`; it uses `searchgate_core::proto` (HTTP/1.1)
//! and `searchgate_core::errors::ErrorBody` (every error body).
//!
//! # Data model
//!
//! **Indices and shards.** An index is `indices/<uuid>/` with `index.json` (name, settings,
//! mapping type, aliases, mapping) and one tantivy index per primary shard
//! (`indices/<uuid>/<n>/`). Documents go to shard `murmur3(_id or routing) mod
//! routing_shards / factor`, as Elasticsearch 7 routes them; the routing value is stored
//! with the document (`_routing`, and in its log record). Searches fan out to every
//! shard of every target index (or the shards their routing values select) and merge; counts are exact (`hits.total` reports them as
//! `track_total_hits` asks).
//! Replicas are recorded and reported; on one node they are never assigned, so an index
//! with replicas is `yellow`, as Elasticsearch would say.
//!
//! **Mappings -> one fixed tantivy schema.** Tantivy schemas cannot change, Elasticsearch
//! mappings grow, so every shard has the same schema and the mapping decides where values
//! go (`store::schema`):
//! - `_id` (raw, indexed, stored), `_source` (the original bytes, stored), `_version` and
//!   `_seq_no` (fast), `_field_names` (paths with a value, for `exists`);
//! - `k`, a JSON field (raw tokenizer, indexed and fast, dots expanded): keywords (and the
//!   `.keyword` sub-field of dynamic strings), numbers (i64/f64), dates (epoch ms, as
//!   Elasticsearch stores them) and booleans, by dotted path. Term, terms, range, prefix,
//!   wildcard, sorting and aggregations run on it;
//! - `s0`..`s15`: dedicated text fields with positions. Each text path gets one slot when
//!   first mapped (recorded in the mapping, never reassigned) and its analyzer, so BM25
//!   length norms are per field as in Elasticsearch;
//! - `t`, a JSON text field with positions for text paths beyond 16 (their norms are per
//!   document: the one approximation of BM25).
//!
//! The mapping (`mapping`) is explicit at creation or dynamic from documents (long,
//! double, boolean, date for ISO-8601 strings, text + keyword, object); values that do not
//! fit their field are refused with Elasticsearch's `mapper_parsing_exception`. A grown
//! mapping is written to `index.json` (fsync) before the document that grew it is applied.
//!
//! **Versions, seq_no, realtime GET.** Each shard has one write lock, a sequence number
//! (`_seq_no`, from the last commit's payload plus the log) and a *live version map*: for
//! every write since the last refresh, `_id -> (version, seq_no, position in the WAL)` (or
//! a delete tombstone). A lookup checks the live map, then an *id filter* (a hash set of
//! every id's 64-bit hash, rebuilt from the term dictionaries on open: no false
//! negatives, so new ids cost no index lookup and no delete), then the `_id` term in the
//! current searcher. Realtime GET reads unrefreshed documents back from the WAL, as
//! Elasticsearch reads its translog.
//!
//! **Durability.** One write-ahead log for the engine (`store::wal`): records are appended
//! under the shard lock (so per-shard order is seq_no order) into a buffer; a request's
//! writes are acknowledged only after a `fdatasync` covering them. Group commit: one
//! caller syncs for every writer waiting, so a bulk load pays one fsync per batch of
//! requests, not per document. On start, every record whose seq_no is above its shard's
//! last tantivy commit is replayed, the shards commit, and the old log is deleted.
//! A generation of the log is deleted once every shard with records in it has committed
//! past them.
//!
//! **Refresh.** A refresh is a tantivy commit (payload: the shard's max seq_no) plus a
//! reader reload; it empties the live version map. The refresher does it every
//! `index.refresh_interval` (1s) for shards with pending writes; `?refresh=true` does it
//! before answering; `?refresh=wait_for` waits for the next one. Idle writers are closed
//! after a minute (their threads and memory are freed).
//!
//! # Layout
//! ```text
//! api/      request handler: routing, media types, handlers per endpoint family
//! http/     HTTP/1.1 server on searchgate_core::proto, one thread per connection
//! store/    data dir, indices, shards, WAL, refresh, the write pipeline
//! mapping/  mappings, dynamic mapping, value coercion, dates
//! query/    query DSL -> AST -> tantivy queries, query_string, date math
//! search/   search execution, sort, _source filtering, scroll contexts
//! aggs/     aggregations (rewritten for tantivy's engine, rendered in Elasticsearch's shapes)
//! cat.rs    _cat tables
//! names.rs  index names, the auto-create whitelist, generated ids
//! resolve.rs index expressions (names, aliases, wildcards) -> concrete indices (pure)
//! alias_routing.rs aliases' routing, and the routing values of a search per index (pure)
//! ndjson.rs _bulk and _msearch line framing, as Elasticsearch 7.10 reads it (pure)
//! script.rs the Painless subset of update scripts (pure)
//! ```

#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(missing_debug_implementations)]

pub mod aggs;
pub mod alias_routing;
pub mod analysis;
pub mod api;
pub mod cancel;
pub mod cat;
pub mod date_names;
pub mod error;
pub mod http;
pub mod mapping;
pub mod names;
pub mod ndjson;
pub mod query;
pub mod resolve;
pub mod script;
pub mod search;
pub mod store;
pub mod zones;

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use api::{Engine, NodeInfo};
use names::{AutoCreate, DEFAULT_AUTO_CREATE};
use store::shard::WriterOptions;
use store::Store;

/// `searchgate engine` options.
#[derive(Debug, clap::Args)]
pub struct EngineArgs {
    /// Address to listen on (port 0: any free port; the bound address is printed).
    #[arg(long, default_value = "127.0.0.1:9201")]
    pub listen: String,
    /// Data directory.
    #[arg(long, default_value = "./data/engine")]
    pub data_dir: PathBuf,
    /// Index names a write may create (`action.auto_create_index`): true, false, or
    /// patterns with optional +/- prefixes.
    #[arg(long, default_value = DEFAULT_AUTO_CREATE, allow_hyphen_values = true)]
    pub auto_create_index: String,
    /// Indexing threads per shard writer.
    #[arg(long, default_value_t = 1)]
    pub indexing_threads: usize,
    /// Indexing memory per writer thread, in MB (at least 15).
    #[arg(long, default_value_t = 48)]
    pub writer_memory_mb: usize,
    /// Largest request body, in MB (Elasticsearch's http.max_content_length).
    #[arg(long, default_value_t = 100)]
    pub max_body_mb: u64,
    /// Most connections served at once.
    #[arg(long, default_value_t = 4096)]
    pub max_connections: usize,
    /// Open scroll contexts allowed at once, counted per shard searched (Elasticsearch's
    /// `search.max_open_scroll_context`).
    #[arg(long, default_value_t = search::MAX_OPEN_SCROLL_CONTEXT)]
    pub max_open_scroll_context: usize,
    /// Node name shown by `GET /`.
    #[arg(long, default_value = "searchgate-engine")]
    pub node_name: String,
    /// Cluster name shown by `GET /` and health.
    #[arg(long, default_value = "searchgate")]
    pub cluster_name: String,
    /// Tests only: a request with the header `x-searchgate-debug-panic: engine` panics in
    /// its handler, `engine-exit` ends the process. Never set by a default configuration.
    #[arg(long, hide = true)]
    pub debug_panic_hooks: bool,
}

fn cluster_uuid(dir: &std::path::Path) -> std::io::Result<String> {
    let path = dir.join("cluster_uuid");
    match std::fs::read_to_string(&path) {
        Ok(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        _ => {
            let u = names::generate_uuid();
            store::index::write_atomic(&path, u.as_bytes())?;
            Ok(u)
        }
    }
}

fn open(args: &EngineArgs) -> Result<(Arc<Engine>, TcpListener), String> {
    let auto = AutoCreate::parse(&args.auto_create_index)
        .map_err(|e| format!("--auto-create-index: {e}"))?;
    let opts = WriterOptions {
        threads: args.indexing_threads.clamp(1, 8),
        memory_per_thread: args.writer_memory_mb.max(15) << 20,
    };
    std::fs::create_dir_all(&args.data_dir)
        .map_err(|e| format!("{}: {e}", args.data_dir.display()))?;
    let listener = TcpListener::bind(&args.listen)
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let store = Store::open(&args.data_dir, opts, auto).map_err(|e| e.to_string())?;
    let uuid = cluster_uuid(&args.data_dir).map_err(|e| e.to_string())?;
    let engine = Engine {
        store: Arc::new(store),
        node: NodeInfo {
            name: args.node_name.clone(),
            cluster_name: args.cluster_name.clone(),
            cluster_uuid: uuid,
        },
        max_body: args.max_body_mb << 20,
        scrolls: Arc::new(search::Scrolls::new(args.max_open_scroll_context)),
        pits: Arc::new(search::Pits::default()),
    };
    Ok((Arc::new(engine), listener))
}

fn on_signals(store: Arc<Store>) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT])?;
    std::thread::Builder::new()
        .name("engine-signals".into())
        .spawn(move || {
            if signals.forever().next().is_some() {
                if let Err(e) = store.flush_all() {
                    eprintln!(
                        "searchgate engine: final commit failed (the log will be replayed): {e}"
                    );
                }
                std::process::exit(0);
            }
        })?;
    Ok(())
}

/// Runs the engine until SIGTERM/SIGINT (which commit every shard before exiting).
pub fn run(args: EngineArgs) -> ExitCode {
    let (engine, listener) = match open(&args) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("searchgate engine: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = on_signals(engine.store.clone()) {
        eprintln!("searchgate engine: cannot install signal handlers: {e}");
        return ExitCode::FAILURE;
    }
    let store = engine.store.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let refresher = std::thread::Builder::new()
        .name("engine-refresh".into())
        .spawn(move || store.run_refresher(&stop));
    if let Err(e) = refresher {
        eprintln!("searchgate engine: cannot start the refresher: {e}");
        return ExitCode::FAILURE;
    }
    let (scrolls, pits) = (engine.scrolls.clone(), engine.pits.clone());
    let reaper = std::thread::Builder::new()
        .name("engine-scroll-reaper".into())
        .spawn(move || loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
            scrolls.sweep();
            pits.sweep();
        });
    if let Err(e) = reaper {
        eprintln!("searchgate engine: cannot start the scroll reaper: {e}");
        return ExitCode::FAILURE;
    }
    match listener.local_addr() {
        Ok(addr) => {
            println!("searchgate engine listening on {addr}");
            let _ = std::io::stdout().flush();
        }
        Err(e) => {
            eprintln!("searchgate engine: {e}");
            return ExitCode::FAILURE;
        }
    }
    let opts = http::ConnOptions {
        debug_hooks: args.debug_panic_hooks,
    };
    http::serve(engine, listener, args.max_connections, opts);
    ExitCode::SUCCESS
}
