//! Text analysis of an index: the built-in analyzers, and the custom analyzers and
//! normalizers an index defines under `index.analysis.*` (char filters, one tokenizer,
//! token filters), resolved by name as Elasticsearch 7.10's `AnalysisRegistry` resolves
//! them, with its messages. What the engine does not implement is refused by name.
//!
//! Owns: [`Analyzer`], [`Normalizer`], [`Analysis`] (the per-index registry) and how a
//! chain turns text into tokens (`chain`). Must not touch: mappings (they only name
//! analyzers), tantivy schemas or I/O.

mod chain;
mod html;
mod parse;

use std::collections::BTreeMap;
use std::sync::Arc;

use tantivy::tokenizer::{
    Language, LowerCaser, RawTokenizer, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer,
    WhitespaceTokenizer,
};

pub use chain::{Chain, ChainTokenizer, CharFilter, TokenFilter, Tokenizer};
pub use parse::from_settings;

/// Text analysis of a text field (index or search side), or of a query's `analyzer`.
#[derive(Debug, Clone, PartialEq)]
pub enum Analyzer {
    /// `standard` (approximated by tantivy's simple tokenizer: split on non-alphanumerics,
    /// lowercase, tokens of 256 bytes or more dropped).
    Standard,
    /// `whitespace`: split on whitespace, no lowercasing.
    Whitespace,
    /// `keyword`: the whole value as one token.
    Keyword,
    /// `english`: standard plus English stemming.
    English,
    /// A chain built from settings (or a built-in one such as `simple` or `stop`).
    Custom(Arc<Chain>),
}

impl Analyzer {
    /// The analyzer as a tantivy tokenizer chain (what shards register and queries use).
    pub fn text_analyzer(&self) -> TextAnalyzer {
        match self {
            Analyzer::Standard => TextAnalyzer::builder(SimpleTokenizer::default())
                .filter(RemoveLongFilter::limit(256))
                .filter(LowerCaser)
                .build(),
            Analyzer::Whitespace => TextAnalyzer::builder(WhitespaceTokenizer::default())
                .filter(RemoveLongFilter::limit(256))
                .build(),
            Analyzer::Keyword => TextAnalyzer::builder(RawTokenizer::default()).build(),
            Analyzer::English => TextAnalyzer::builder(SimpleTokenizer::default())
                .filter(RemoveLongFilter::limit(256))
                .filter(LowerCaser)
                .filter(Stemmer::new(Language::English))
                .build(),
            Analyzer::Custom(chain) => TextAnalyzer::from(ChainTokenizer::new(chain.clone())),
        }
    }

    /// The token texts of `text`.
    pub fn token_texts(&self, text: &str) -> Vec<String> {
        let mut a = self.text_analyzer();
        let mut out = Vec::new();
        a.token_stream(text)
            .process(&mut |t| out.push(t.text.clone()));
        out
    }

    /// The chain of a custom analyzer (`None` for the four fixed ones).
    pub fn chain(&self) -> Option<&Chain> {
        match self {
            Analyzer::Custom(c) => Some(c),
            _ => None,
        }
    }
}

/// A keyword field's `normalizer`: char filters and token filters over the whole value.
pub type Normalizer = Arc<Chain>;

/// The analyzers and normalizers one index can name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Analysis {
    pub analyzers: BTreeMap<String, Analyzer>,
    pub normalizers: BTreeMap<String, Normalizer>,
    /// Unknown names resolve to `standard` (only while reading a mapping persisted by an
    /// engine that kept custom analyzers without applying them).
    pub lenient: bool,
}

/// Why a name did not resolve.
#[derive(Debug, Clone, PartialEq)]
pub enum Missing {
    /// Elasticsearch has it, this engine does not (400 naming it).
    Unsupported(String),
    /// Neither defined nor built in.
    Unknown,
}

impl Analysis {
    /// The analyzer `name`: defined in the settings, else built in.
    pub fn analyzer(&self, name: &str) -> Result<Analyzer, Missing> {
        if let Some(a) = self.analyzers.get(name) {
            return Ok(a.clone());
        }
        match builtin_analyzer(name) {
            Ok(a) => Ok(a),
            Err(_) if self.lenient => Ok(Analyzer::Standard),
            Err(e) => Err(e),
        }
    }

    /// The default index analyzer of text fields (`analysis.analyzer.default`).
    pub fn default_analyzer(&self) -> Analyzer {
        self.analyzers
            .get("default")
            .cloned()
            .unwrap_or(Analyzer::Standard)
    }

    /// The default search analyzer (`default_search`, else the field's index analyzer).
    pub fn default_search_analyzer(&self) -> Option<Analyzer> {
        self.analyzers.get("default_search").cloned()
    }

    /// The normalizer `name`: defined in the settings, or the built-in `lowercase`.
    pub fn normalizer(&self, name: &str) -> Option<Normalizer> {
        if let Some(n) = self.normalizers.get(name) {
            return Some(n.clone());
        }
        (name == "lowercase").then(|| {
            Arc::new(Chain {
                name: "lowercase".into(),
                char_filters: vec![],
                tokenizer: Tokenizer::Keyword,
                filters: vec![TokenFilter::Lowercase],
            })
        })
    }
}

/// Analyzers every index has.
fn builtin_analyzer(name: &str) -> Result<Analyzer, Missing> {
    let chain = |name: &str, tokenizer: Tokenizer, filters: Vec<TokenFilter>| {
        Analyzer::Custom(Arc::new(Chain {
            name: name.into(),
            char_filters: vec![],
            tokenizer,
            filters,
        }))
    };
    Ok(match name {
        "standard" | "default" => Analyzer::Standard,
        "whitespace" => Analyzer::Whitespace,
        "keyword" => Analyzer::Keyword,
        "english" => Analyzer::English,
        "simple" => chain("simple", Tokenizer::Letter, vec![TokenFilter::Lowercase]),
        "stop" => chain(
            "stop",
            Tokenizer::Letter,
            vec![TokenFilter::Lowercase, TokenFilter::stop_english()],
        ),
        n if ES_ANALYZERS.contains(&n) => return Err(Missing::Unsupported(n.into())),
        _ => return Err(Missing::Unknown),
    })
}

/// Analyzers Elasticsearch 7.10 has built in that this engine does not.
const ES_ANALYZERS: &[&str] = &[
    "pattern",
    "fingerprint",
    "arabic",
    "armenian",
    "basque",
    "bengali",
    "brazilian",
    "bulgarian",
    "catalan",
    "cjk",
    "czech",
    "danish",
    "dutch",
    "estonian",
    "finnish",
    "french",
    "galician",
    "german",
    "greek",
    "hindi",
    "hungarian",
    "indonesian",
    "irish",
    "italian",
    "latvian",
    "lithuanian",
    "norwegian",
    "persian",
    "portuguese",
    "romanian",
    "russian",
    "sorani",
    "spanish",
    "swedish",
    "turkish",
    "thai",
    "snowball",
];

#[cfg(test)]
mod tests;
