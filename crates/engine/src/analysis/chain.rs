//! One analysis chain (char filters, a tokenizer, token filters) and how it turns text into
//! tokens, eagerly: the whole value is filtered, split, then every token filter runs in
//! order. [`ChainTokenizer`] is the same chain as a tantivy tokenizer (what shards register).

use std::collections::BTreeSet;

use tantivy::tokenizer::{
    AsciiFoldingFilter, BoxTokenStream, Language, RawTokenizer, SimpleTokenizer, Stemmer,
    TextAnalyzer, Token, TokenStream, Tokenizer as TTokenizer, WhitespaceTokenizer,
};

use super::html::strip_html;

/// Tokens at least this long are dropped by the `standard` tokenizer (as the built-in
/// `standard` analyzer does).
const MAX_STANDARD_TOKEN: usize = 256;

/// A tokenizer the engine implements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tokenizer {
    /// `standard` (the engine's approximation: split on non-alphanumerics).
    Standard,
    /// `whitespace`.
    Whitespace,
    /// `keyword`: the whole value.
    Keyword,
    /// `letter`: maximal runs of letters.
    Letter,
    /// `lowercase`: `letter` then lowercased.
    Lowercase,
}

/// A token filter the engine implements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenFilter {
    Lowercase,
    Uppercase,
    AsciiFolding {
        preserve_original: bool,
    },
    Stop {
        words: BTreeSet<String>,
        ignore_case: bool,
    },
    Trim,
    /// `porter_stem` and `stemmer` for English (tantivy's English snowball stemmer).
    EnglishStem,
    /// `length`: tokens of `min..=max` characters kept.
    Length {
        min: usize,
        max: usize,
    },
    /// `truncate`: tokens cut to `length` characters.
    Truncate {
        length: usize,
    },
    /// `unique`: later repeats of a token dropped.
    Unique,
}

impl TokenFilter {
    /// `stop` with Lucene's English stop words (`_english_`).
    pub fn stop_english() -> TokenFilter {
        TokenFilter::Stop {
            words: ENGLISH_STOP_WORDS.iter().map(|s| s.to_string()).collect(),
            ignore_case: false,
        }
    }

    /// Whether Elasticsearch allows the filter in a normalizer (it works on a whole value).
    pub fn normalizing(&self) -> bool {
        matches!(
            self,
            TokenFilter::Lowercase
                | TokenFilter::Uppercase
                | TokenFilter::AsciiFolding { .. }
                | TokenFilter::Trim
        )
    }
}

/// Lucene's `EnglishAnalyzer.ENGLISH_STOP_WORDS_SET` (`_english_`).
pub const ENGLISH_STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// A char filter the engine implements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CharFilter {
    /// `html_strip`: tags removed (block-level ones become a line break), entities decoded.
    HtmlStrip,
    /// `mapping`: each key replaced by its value, longest key first.
    Mapping(Vec<(String, String)>),
}

impl CharFilter {
    fn apply(&self, text: &str) -> String {
        match self {
            CharFilter::HtmlStrip => strip_html(text),
            CharFilter::Mapping(pairs) => apply_mapping(pairs, text),
        }
    }
}

fn apply_mapping(pairs: &[(String, String)], text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'outer: while !rest.is_empty() {
        // pairs are sorted longest key first when parsed
        for (k, v) in pairs {
            if !k.is_empty() && rest.starts_with(k.as_str()) {
                out.push_str(v);
                rest = &rest[k.len()..];
                continue 'outer;
            }
        }
        let c = rest.chars().next().expect("not empty");
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// An analyzer or normalizer definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    /// The name it was defined under (errors and equality name it).
    pub name: String,
    pub char_filters: Vec<CharFilter>,
    pub tokenizer: Tokenizer,
    pub filters: Vec<TokenFilter>,
}

impl Chain {
    /// The tokens of `text`, with positions and offsets (offsets into the filtered text).
    pub fn analyze(&self, text: &str) -> Vec<Token> {
        run(self, text, &mut Tools::default())
    }

    /// A normalizer's output for one keyword value.
    pub fn normalize(&self, value: &str) -> String {
        let toks = self.analyze(value);
        match toks.len() {
            1 => toks.into_iter().next().expect("one").text,
            0 => String::new(),
            _ => toks
                .into_iter()
                .map(|t| t.text)
                .collect::<Vec<_>>()
                .join(""),
        }
    }
}

/// The tantivy tokenizers and one-token analyzers a chain borrows.
#[derive(Clone)]
struct Tools {
    simple: SimpleTokenizer,
    whitespace: WhitespaceTokenizer,
    raw: RawTokenizer,
    fold: TextAnalyzer,
    stem: TextAnalyzer,
}

impl Default for Tools {
    fn default() -> Self {
        Tools {
            simple: SimpleTokenizer::default(),
            whitespace: WhitespaceTokenizer::default(),
            raw: RawTokenizer::default(),
            fold: TextAnalyzer::builder(RawTokenizer::default())
                .filter(AsciiFoldingFilter)
                .build(),
            stem: TextAnalyzer::builder(RawTokenizer::default())
                .filter(Stemmer::new(Language::English))
                .build(),
        }
    }
}

fn one_token(a: &mut TextAnalyzer, text: &str) -> String {
    let mut out = text.to_string();
    a.token_stream(text).process(&mut |t| out = t.text.clone());
    out
}

fn run(chain: &Chain, text: &str, tools: &mut Tools) -> Vec<Token> {
    let filtered;
    let text = if chain.char_filters.is_empty() {
        text
    } else {
        let mut s = text.to_string();
        for cf in &chain.char_filters {
            s = cf.apply(&s);
        }
        filtered = s;
        &filtered
    };
    let mut toks = tokenize(&chain.tokenizer, text, tools);
    for f in &chain.filters {
        toks = filter(f, toks, tools);
    }
    toks
}

fn collect<S: TokenStream>(mut s: S) -> Vec<Token> {
    let mut out = Vec::new();
    s.process(&mut |t| out.push(t.clone()));
    out
}

fn tokenize(t: &Tokenizer, text: &str, tools: &mut Tools) -> Vec<Token> {
    match t {
        Tokenizer::Standard => collect(tools.simple.token_stream(text))
            .into_iter()
            .filter(|t| t.text.len() < MAX_STANDARD_TOKEN)
            .collect(),
        Tokenizer::Whitespace => collect(tools.whitespace.token_stream(text)),
        Tokenizer::Keyword => collect(tools.raw.token_stream(text)),
        Tokenizer::Letter => letters(text),
        Tokenizer::Lowercase => letters(text)
            .into_iter()
            .map(|mut t| {
                t.text = t.text.to_lowercase();
                t
            })
            .collect(),
    }
}

fn letters(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut start = None;
    let push = |from: usize, to: usize, out: &mut Vec<Token>| {
        let position = out.len();
        out.push(Token {
            offset_from: from,
            offset_to: to,
            position,
            text: text[from..to].to_string(),
            position_length: 1,
        });
    };
    for (i, c) in text.char_indices() {
        match (c.is_alphabetic(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                push(s, i, &mut out);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        push(s, text.len(), &mut out);
    }
    out
}

fn filter(f: &TokenFilter, toks: Vec<Token>, tools: &mut Tools) -> Vec<Token> {
    let map = |toks: Vec<Token>, g: &mut dyn FnMut(&str) -> String| -> Vec<Token> {
        toks.into_iter()
            .map(|mut t| {
                t.text = g(&t.text);
                t
            })
            .collect()
    };
    match f {
        TokenFilter::Lowercase => map(toks, &mut |s| s.to_lowercase()),
        TokenFilter::Uppercase => map(toks, &mut |s| s.to_uppercase()),
        TokenFilter::Trim => map(toks, &mut |s| s.trim().to_string()),
        TokenFilter::EnglishStem => map(toks, &mut |s| one_token(&mut tools.stem, s)),
        TokenFilter::AsciiFolding { preserve_original } => {
            let mut out = Vec::with_capacity(toks.len());
            for t in toks {
                let folded = one_token(&mut tools.fold, &t.text);
                if *preserve_original && folded != t.text {
                    out.push(t.clone());
                }
                out.push(Token { text: folded, ..t });
            }
            out
        }
        TokenFilter::Stop { words, ignore_case } => toks
            .into_iter()
            .filter(|t| {
                if *ignore_case {
                    !words.contains(&t.text.to_lowercase())
                } else {
                    !words.contains(&t.text)
                }
            })
            .collect(),
        TokenFilter::Length { min, max } => toks
            .into_iter()
            .filter(|t| (*min..=*max).contains(&t.text.chars().count()))
            .collect(),
        TokenFilter::Truncate { length } => map(toks, &mut |s| s.chars().take(*length).collect()),
        TokenFilter::Unique => {
            let mut seen = BTreeSet::new();
            toks.into_iter()
                .filter(|t| seen.insert(t.text.clone()))
                .collect()
        }
    }
}

/// A chain as a tantivy tokenizer (registered per text slot of a shard).
#[derive(Clone)]
pub struct ChainTokenizer {
    chain: std::sync::Arc<Chain>,
    tools: Tools,
}

impl std::fmt::Debug for ChainTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ChainTokenizer")
            .field(&self.chain.name)
            .finish()
    }
}

impl ChainTokenizer {
    pub fn new(chain: std::sync::Arc<Chain>) -> Self {
        ChainTokenizer {
            chain,
            tools: Tools::default(),
        }
    }
}

/// Tokens computed up front, handed out one by one.
struct VecTokenStream {
    tokens: Vec<Token>,
    next: usize,
}

impl TokenStream for VecTokenStream {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

impl TTokenizer for ChainTokenizer {
    type TokenStream<'a> = BoxTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> BoxTokenStream<'a> {
        let tokens = run(&self.chain, text, &mut self.tools);
        BoxTokenStream::new(VecTokenStream { tokens, next: 0 })
    }
}
