//! Page records (what the Hugo template, or a user's own build, writes) and the site-content
//! documents made from them (spec 2.4): exactly the spec's fields with their types, and the
//! spec's inclusion rule. Pure data; no I/O.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::calendar::rfc3339_of_secs;

/// Hugo's zero `time.Time` as Unix seconds: a page without that date.
pub const HUGO_ZERO_TIME: i64 = -62_135_596_800;

/// One page as emitted by `index.searchgatepages.json`: the document fields in raw form plus
/// `draft` and `private`, which decide inclusion.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageRecord {
    #[serde(rename = "objectID")]
    pub object_id: String,
    pub date: Option<i64>,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub dir: String,
    pub expirydate: Option<i64>,
    pub fuzzywordcount: i64,
    #[serde(default)]
    pub keywords: Value,
    pub kind: String,
    pub lang: String,
    pub lastmod: Option<i64>,
    pub permalink: String,
    pub publishdate: Option<i64>,
    pub readingtime: i64,
    pub relpermalink: String,
    #[serde(default)]
    pub summary: String,
    pub title: String,
    #[serde(rename = "type")]
    pub page_type: String,
    pub url: String,
    pub weight: i64,
    pub wordcount: i64,
    pub section: String,
    #[serde(default)]
    pub tags: Value,
    #[serde(default)]
    pub categories: Value,
    #[serde(default)]
    pub authors: Value,
    #[serde(default)]
    pub draft: bool,
    #[serde(default)]
    pub private: Value,
}

/// A site-content document (spec 2.4), serialised in the spec's field order. Dates marked
/// "Unix seconds, UTC" are integers; `publishdate` ("timestamp") is an RFC 3339 string in
/// UTC. A date the page does not have is `null`. Lists are arrays of strings, never null.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Document {
    #[serde(rename = "objectID")]
    pub object_id: String,
    pub date: Option<i64>,
    pub description: String,
    pub dir: String,
    pub expirydate: Option<i64>,
    pub fuzzywordcount: i64,
    pub keywords: Vec<String>,
    pub kind: String,
    pub lang: String,
    pub lastmod: Option<i64>,
    pub permalink: String,
    pub publishdate: Option<String>,
    pub readingtime: i64,
    pub relpermalink: String,
    pub summary: String,
    pub title: String,
    #[serde(rename = "type")]
    pub doc_type: String,
    pub url: String,
    pub weight: i64,
    pub wordcount: i64,
    pub section: String,
    pub tags: Vec<String>,
    pub categories: Vec<String>,
    pub authors: Vec<String>,
}

/// The field names of a document, in order (spec 2.4); the tests hold both the document and
/// the mapping to it.
#[cfg(test)]
pub const DOCUMENT_FIELDS: [&str; 24] = [
    "objectID",
    "date",
    "description",
    "dir",
    "expirydate",
    "fuzzywordcount",
    "keywords",
    "kind",
    "lang",
    "lastmod",
    "permalink",
    "publishdate",
    "readingtime",
    "relpermalink",
    "summary",
    "title",
    "type",
    "url",
    "weight",
    "wordcount",
    "section",
    "tags",
    "categories",
    "authors",
];

/// Why a page record could not become a document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// The record does not have the template's shape.
    #[error("malformed page record: {0}")]
    Malformed(String),
    /// A list field holds something other than strings, numbers or booleans.
    #[error("field {0} must be a string or a list of strings")]
    BadList(&'static str),
    /// The unique page identifier is empty.
    #[error("empty objectID")]
    EmptyId,
}

impl PageRecord {
    /// Reads one record from its JSON value.
    pub fn from_value(v: Value) -> Result<Self, PageError> {
        serde_json::from_value(v).map_err(|e| PageError::Malformed(e.to_string()))
    }

    /// Whether front matter marks the page private (`true`, `"true"`, a non-zero number).
    pub fn is_private(&self) -> bool {
        match &self.private {
            Value::Bool(b) => *b,
            Value::String(s) => s.trim().eq_ignore_ascii_case("true"),
            Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
            _ => false,
        }
    }

    /// Spec 2.4: a page is included only when it is not a draft and not private, or when its
    /// section is the site root.
    pub fn included_by_rule(&self) -> bool {
        (!self.draft && !self.is_private()) || self.section.is_empty()
    }

    /// A name for reports: the relative permalink and the language.
    pub fn label(&self) -> String {
        format!("{} [{}]", self.relpermalink, self.lang)
    }

    /// The document for this page.
    pub fn to_document(&self) -> Result<Document, PageError> {
        if self.object_id.trim().is_empty() {
            return Err(PageError::EmptyId);
        }
        Ok(Document {
            object_id: self.object_id.clone(),
            date: unix_date(self.date),
            description: self.description.clone(),
            dir: self.dir.clone(),
            expirydate: unix_date(self.expirydate),
            fuzzywordcount: self.fuzzywordcount,
            keywords: string_list(&self.keywords, "keywords")?,
            kind: self.kind.clone(),
            lang: self.lang.clone(),
            lastmod: unix_date(self.lastmod),
            permalink: self.permalink.clone(),
            publishdate: unix_date(self.publishdate).map(rfc3339_of_secs),
            readingtime: self.readingtime,
            relpermalink: self.relpermalink.clone(),
            summary: self.summary.clone(),
            title: self.title.clone(),
            doc_type: self.page_type.clone(),
            url: self.url.clone(),
            weight: self.weight,
            wordcount: self.wordcount,
            section: self.section.clone(),
            tags: string_list(&self.tags, "tags")?,
            categories: string_list(&self.categories, "categories")?,
            authors: string_list(&self.authors, "authors")?,
        })
    }
}

fn unix_date(v: Option<i64>) -> Option<i64> {
    v.filter(|&s| s > HUGO_ZERO_TIME)
}

/// Front matter lists: absent/null is `[]`, a lone string is a one-element list.
fn string_list(v: &Value, field: &'static str) -> Result<Vec<String>, PageError> {
    fn scalar(v: &Value) -> Option<String> {
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }
    match v {
        Value::Null => Ok(Vec::new()),
        Value::String(s) if s.trim().is_empty() => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .map(|i| scalar(i).ok_or(PageError::BadList(field)))
            .collect(),
        other => scalar(other)
            .map(|s| vec![s])
            .ok_or(PageError::BadList(field)),
    }
}

/// Which pages the user asked for (`--section`, `--kind`), before the spec's rule.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// `Some("")` is the site root; `None` takes every section.
    pub section: Option<String>,
    /// Empty takes every kind.
    pub kinds: Vec<String>,
}

/// What happens to one page record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Becomes a document.
    Include,
    /// Outside the selected section or kinds.
    SkipFilter,
    /// Excluded by the spec 2.4 rule (draft or private outside the site root).
    SkipRule,
}

impl Selection {
    /// Builds a selection; `--section /` (or an empty string) names the site root.
    pub fn new(section: Option<&str>, kinds: &[String]) -> Self {
        let section = section.map(|s| s.trim_matches('/').to_owned());
        Self {
            section,
            kinds: kinds.to_vec(),
        }
    }

    /// The verdict for `page`.
    pub fn verdict(&self, page: &PageRecord) -> Verdict {
        let section_ok = self.section.as_ref().is_none_or(|s| *s == page.section);
        let kind_ok = self.kinds.is_empty() || self.kinds.contains(&page.kind);
        if !(section_ok && kind_ok) {
            Verdict::SkipFilter
        } else if page.included_by_rule() {
            Verdict::Include
        } else {
            Verdict::SkipRule
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record_json(section: &str, draft: bool, private: Value) -> Value {
        json!({
            "objectID": "abc", "date": 1_672_621_445, "description": "d", "dir": "posts/",
            "expirydate": HUGO_ZERO_TIME, "fuzzywordcount": 100, "keywords": ["k"],
            "kind": "page", "lang": "en", "lastmod": 1_672_621_500, "permalink": "https://e/p/",
            "publishdate": 1_672_621_445, "readingtime": 1, "relpermalink": "/p/",
            "summary": "s", "title": "T", "type": "posts", "url": "/p/", "weight": 3,
            "wordcount": 7, "section": section, "tags": "solo", "categories": null,
            "authors": ["Ann", "Bo"], "draft": draft, "private": private
        })
    }

    fn record(section: &str, draft: bool, private: Value) -> PageRecord {
        PageRecord::from_value(record_json(section, draft, private)).unwrap()
    }

    #[test]
    fn inclusion_rule_every_branch() {
        // spec 2.4: included when not draft and not private, or when the section is the root.
        let cases = [
            ("posts", false, json!(null), true),
            ("posts", false, json!(false), true),
            ("posts", true, json!(null), false),
            ("posts", false, json!(true), false),
            ("posts", false, json!("true"), false),
            ("posts", true, json!(true), false),
            ("", true, json!(null), true),
            ("", false, json!(true), true),
            ("", true, json!(true), true),
            ("", false, json!(null), true),
        ];
        for (section, draft, private, want) in cases {
            let r = record(section, draft, private.clone());
            assert_eq!(
                r.included_by_rule(),
                want,
                "{section:?} draft={draft} private={private}"
            );
        }
    }

    #[test]
    fn selection_filters_before_the_rule() {
        let all = Selection::new(None, &[]);
        assert_eq!(
            all.verdict(&record("posts", true, json!(null))),
            Verdict::SkipRule
        );
        let root = Selection::new(Some("/"), &[]);
        assert_eq!(
            root.verdict(&record("posts", false, json!(null))),
            Verdict::SkipFilter
        );
        assert_eq!(
            root.verdict(&record("", true, json!(null))),
            Verdict::Include
        );
        let kinds = Selection::new(Some("posts"), &["section".to_owned()]);
        assert_eq!(
            kinds.verdict(&record("posts", false, json!(null))),
            Verdict::SkipFilter
        );
    }

    #[test]
    fn document_has_exactly_the_spec_fields_with_their_types() {
        let doc = record("posts", false, json!(null)).to_document().unwrap();
        let v = serde_json::to_value(&doc).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want = DOCUMENT_FIELDS.to_vec();
        want.sort_unstable();
        let mut got = keys.clone();
        got.sort_unstable();
        assert_eq!(got, want);
        assert_eq!(v["date"], json!(1_672_621_445));
        assert_eq!(v["expirydate"], Value::Null);
        assert_eq!(v["publishdate"], json!("2023-01-02T01:04:05Z"));
        assert_eq!(v["tags"], json!(["solo"]));
        assert_eq!(v["categories"], json!([]));
        assert_eq!(v["authors"], json!(["Ann", "Bo"]));
        assert_eq!(v["type"], json!("posts"));
        // Serialisation order is the spec's order.
        let text = serde_json::to_string(&doc).unwrap();
        let positions: Vec<usize> = DOCUMENT_FIELDS
            .iter()
            .map(|f| text.find(&format!("\"{f}\":")).unwrap())
            .collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    }

    #[test]
    fn bad_records_are_refused_with_a_reason() {
        let mut v = record_json("p", false, json!(null));
        v["weight"] = json!("heavy");
        assert!(matches!(
            PageRecord::from_value(v.clone()),
            Err(PageError::Malformed(_))
        ));
        v["weight"] = json!(3);
        v["surprise"] = json!(1);
        assert!(matches!(
            PageRecord::from_value(v),
            Err(PageError::Malformed(_))
        ));
        let mut r = record("p", false, json!(null));
        r.tags = json!([{"nested": 1}]);
        assert_eq!(r.to_document().unwrap_err(), PageError::BadList("tags"));
        r.tags = json!([]);
        r.object_id = " ".into();
        assert_eq!(r.to_document().unwrap_err(), PageError::EmptyId);
    }
}
