//! The index side: which request shapes the server speaks (typed as in spec 4, typed with
//! `include_type_name` on Elasticsearch 7, typeless on 8+), the mapping for site-content
//! documents, creating the index when missing (spec 2.2: no automatic creation) and telling
//! the user when an existing index's mapping conflicts with the documents.

use serde_json::{json, Map, Value};

use super::http::{Client, HttpError};

/// The `_type` of site-content documents (spec 2.4).
pub const DOC_TYPE: &str = "doc";

/// How the server wants types expressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Mappings under the type, `_type` in bulk actions (spec 4; Elasticsearch 6).
    Typed,
    /// As `Typed`, with `?include_type_name=true` on mapping requests (Elasticsearch 7,
    /// OpenSearch 1).
    TypedWithParam,
    /// No types anywhere (Elasticsearch 8+, OpenSearch 2+).
    Typeless,
}

impl Dialect {
    /// From the `version` object of `GET /`; unknown servers get the spec's typed shape.
    pub fn from_root(root: &Value) -> Self {
        let v = &root["version"];
        let major = v["number"]
            .as_str()
            .and_then(|n| n.split('.').next())
            .and_then(|m| m.parse::<u32>().ok());
        let opensearch = v["distribution"].as_str() == Some("opensearch");
        match (opensearch, major) {
            (true, Some(1)) => Self::TypedWithParam,
            (true, Some(_)) => Self::Typeless,
            (false, Some(7)) => Self::TypedWithParam,
            (false, Some(m)) if m >= 8 => Self::Typeless,
            _ => Self::Typed,
        }
    }

    /// The `_type` for bulk action lines.
    pub fn bulk_type(self) -> Option<&'static str> {
        (self != Self::Typeless).then_some(DOC_TYPE)
    }

    fn query(self) -> &'static str {
        if self == Self::TypedWithParam {
            "?include_type_name=true"
        } else {
            ""
        }
    }
}

/// The format of Unix-second date fields: integers are read as seconds, and queries may use
/// ISO dates (`"gte": "2023-03-01"`).
pub const UNIX_DATE_FORMAT: &str = "epoch_second||strict_date_optional_time";

/// Whether integers are read as Unix seconds: `epoch_second` is among the formats and no
/// lenient date format (which would read `1678786013` as a year) comes before it.
fn reads_unix_seconds(formats: &[&str]) -> bool {
    let Some(pos) = formats.iter().position(|f| *f == "epoch_second") else {
        return false;
    };
    formats[..pos]
        .iter()
        .all(|f| f.starts_with("strict_") || f.starts_with("epoch_"))
}

/// What the loader maps each field to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    /// Unix seconds (`epoch_second`), also queried with ISO dates.
    UnixDate,
    /// RFC 3339 text.
    IsoDate,
    Integer,
    Text,
    Keyword,
}

const FIELDS: [(&str, Want); 24] = [
    ("objectID", Want::Keyword),
    ("date", Want::UnixDate),
    ("description", Want::Text),
    ("dir", Want::Keyword),
    ("expirydate", Want::UnixDate),
    ("fuzzywordcount", Want::Integer),
    ("keywords", Want::Keyword),
    ("kind", Want::Keyword),
    ("lang", Want::Keyword),
    ("lastmod", Want::UnixDate),
    ("permalink", Want::Keyword),
    ("publishdate", Want::IsoDate),
    ("readingtime", Want::Integer),
    ("relpermalink", Want::Keyword),
    ("summary", Want::Text),
    ("title", Want::Text),
    ("type", Want::Keyword),
    ("url", Want::Keyword),
    ("weight", Want::Integer),
    ("wordcount", Want::Integer),
    ("section", Want::Keyword),
    ("tags", Want::Keyword),
    ("categories", Want::Keyword),
    ("authors", Want::Keyword),
];

fn field_mapping(want: Want) -> Value {
    match want {
        Want::UnixDate => json!({"type": "date", "format": UNIX_DATE_FORMAT}),
        Want::IsoDate => {
            json!({"type": "date", "format": "strict_date_optional_time||epoch_second"})
        }
        Want::Integer => json!({"type": "integer"}),
        Want::Text => json!({"type": "text"}),
        Want::Keyword => json!({"type": "keyword"}),
    }
}

/// The `properties` object for site-content documents.
pub fn properties() -> Value {
    let map: Map<String, Value> = FIELDS
        .iter()
        .map(|(f, w)| ((*f).to_owned(), field_mapping(*w)))
        .collect();
    Value::Object(map)
}

/// The body of `PUT /<index>` in `dialect`.
pub fn create_body(dialect: Dialect) -> Value {
    let props = json!({ "properties": properties() });
    match dialect {
        Dialect::Typeless => json!({ "mappings": props }),
        _ => json!({ "mappings": { DOC_TYPE: props } }),
    }
}

/// Differences between an existing mapping and what the documents need.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MappingCheck {
    /// Fields (or the type) whose mapping would reject the values or lose their meaning.
    pub conflicts: Vec<String>,
    /// Fields the mapping lacks; dynamic mapping will pick their types.
    pub missing: Vec<String>,
}

fn accepts(want: Want, field: &Value) -> Result<(), String> {
    let ty = field["type"].as_str().unwrap_or("object");
    let formats: Vec<&str> = field["format"]
        .as_str()
        .map(|f| f.split("||").collect())
        .unwrap_or_default();
    let ok = match want {
        Want::UnixDate => matches!(ty, "date" | "date_nanos") && reads_unix_seconds(&formats),
        Want::IsoDate => {
            matches!(ty, "date" | "date_nanos")
                && (formats.is_empty()
                    || formats
                        .iter()
                        .any(|f| f.contains("date_optional_time") || f.contains("date_time")))
        }
        Want::Integer => matches!(ty, "integer" | "long" | "unsigned_long"),
        Want::Text | Want::Keyword => {
            matches!(
                ty,
                "text" | "keyword" | "match_only_text" | "wildcard" | "search_as_you_type"
            )
        }
    };
    if ok {
        return Ok(());
    }
    let have = match field["format"].as_str() {
        Some(f) => format!("{ty} (format {f})"),
        None => ty.to_owned(),
    };
    let need = field_mapping(want);
    let need = match need["format"].as_str() {
        Some(f) => format!("{} (format {f})", need["type"].as_str().unwrap_or("")),
        None => need["type"].as_str().unwrap_or("").to_owned(),
    };
    Err(format!("{have}, needs {need}"))
}

/// Compares the `GET /<index>/_mapping` answer with the documents' fields.
pub fn check_mapping(answer: &Value, dialect: Dialect) -> MappingCheck {
    let mut check = MappingCheck::default();
    let mappings = answer
        .as_object()
        .and_then(|o| o.values().next())
        .map(|i| &i["mappings"]);
    let mappings = mappings.cloned().unwrap_or(Value::Null);
    let root = if mappings.get("properties").is_some() || dialect == Dialect::Typeless {
        mappings
    } else if let Some(doc) = mappings.get(DOC_TYPE) {
        doc.clone()
    } else {
        let other: Vec<&String> = mappings
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        if let Some(t) = other.first() {
            check.conflicts.push(format!(
                "the index holds type {t}; site documents use type {DOC_TYPE} (spec 2.4)"
            ));
            return check;
        }
        Value::Null
    };
    let strict = root["dynamic"].as_str() == Some("strict") || root["dynamic"] == json!(false);
    for (name, want) in FIELDS {
        match root["properties"].get(name) {
            Some(field) => {
                if let Err(e) = accepts(want, field) {
                    check.conflicts.push(format!("{name}: mapped as {e}"));
                }
            }
            None if strict => check
                .conflicts
                .push(format!("{name}: not mapped and dynamic mapping is off")),
            None => check.missing.push(name.to_owned()),
        }
    }
    check
}

/// What `ensure_index` did.
#[derive(Debug, PartialEq, Eq)]
pub enum IndexState {
    /// Created with the loader's mapping.
    Created,
    /// Already there with a compatible mapping; lists fields it lacks.
    Existing { missing: Vec<String> },
}

/// Why the index cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The name breaks Elasticsearch's index-name rules.
    #[error("invalid index name {0:?}: {1}")]
    BadName(String, &'static str),
    /// The existing mapping conflicts with the documents.
    #[error("index {index} has a mapping that conflicts with site documents:\n  {}\ndelete the index (it will be recreated) or load into another index", .conflicts.join("\n  "))]
    Conflict {
        index: String,
        conflicts: Vec<String>,
    },
    /// The server refused a request.
    #[error("{what}: HTTP {status}: {summary}")]
    Status {
        what: String,
        status: u16,
        summary: String,
    },
    /// Transport failure.
    #[error(transparent)]
    Http(#[from] HttpError),
}

/// Checks an index name against Elasticsearch's rules.
pub fn validate_index_name(name: &str) -> Result<(), IndexError> {
    let bad = |why| Err(IndexError::BadName(name.to_owned(), why));
    if name.is_empty() || name == "." || name == ".." {
        return bad("empty, . or ..");
    }
    if name.len() > 255 {
        return bad("longer than 255 bytes");
    }
    if name.starts_with(['-', '_', '+']) {
        return bad("starts with -, _ or +");
    }
    if name.chars().any(|c| c.is_uppercase()) {
        return bad("must be lowercase");
    }
    if name.contains(['\\', '/', '*', '?', '"', '<', '>', '|', ' ', ',', '#', ':']) {
        return bad("contains one of \\ / * ? \" < > | space , # :");
    }
    Ok(())
}

/// Creates `index` when missing, else checks its mapping.
pub fn ensure_index(
    client: &Client,
    index: &str,
    dialect: Dialect,
) -> Result<IndexState, IndexError> {
    validate_index_name(index)?;
    if let Some(state) = check_existing(client, index, dialect)? {
        return Ok(state);
    }
    let body = serde_json::to_vec(&create_body(dialect)).unwrap_or_default();
    let path = format!("/{index}{}", dialect.query());
    let reply = client.send("PUT", &path, Some(("application/json", &body)))?;
    if reply.ok() {
        return Ok(IndexState::Created);
    }
    if reply.status == 400 && reply.json()["error"]["type"] == "resource_already_exists_exception" {
        if let Some(state) = check_existing(client, index, dialect)? {
            return Ok(state);
        }
    }
    Err(IndexError::Status {
        what: format!("creating index {index}"),
        status: reply.status,
        summary: reply.error_summary(),
    })
}

fn check_existing(
    client: &Client,
    index: &str,
    dialect: Dialect,
) -> Result<Option<IndexState>, IndexError> {
    let reply = client.send(
        "GET",
        &format!("/{index}/_mapping{}", dialect.query()),
        None,
    )?;
    if reply.status == 404 {
        return Ok(None);
    }
    if !reply.ok() {
        let what = format!("reading the mapping of {index}");
        return Err(IndexError::Status {
            what,
            status: reply.status,
            summary: reply.error_summary(),
        });
    }
    let check = check_mapping(&reply.json(), dialect);
    if check.conflicts.is_empty() {
        Ok(Some(IndexState::Existing {
            missing: check.missing,
        }))
    } else {
        Err(IndexError::Conflict {
            index: index.to_owned(),
            conflicts: check.conflicts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialect_from_version() {
        let v = |n: &str| json!({"version": {"number": n}});
        assert_eq!(Dialect::from_root(&v("6.8.23")), Dialect::Typed);
        assert_eq!(Dialect::from_root(&v("7.10.2")), Dialect::TypedWithParam);
        assert_eq!(Dialect::from_root(&v("8.15.0")), Dialect::Typeless);
        assert_eq!(Dialect::from_root(&json!({})), Dialect::Typed);
        let os = |n: &str| json!({"version": {"number": n, "distribution": "opensearch"}});
        assert_eq!(Dialect::from_root(&os("1.3.0")), Dialect::TypedWithParam);
        assert_eq!(Dialect::from_root(&os("2.11.0")), Dialect::Typeless);
        assert_eq!(Dialect::Typeless.bulk_type(), None);
        assert_eq!(Dialect::Typed.bulk_type(), Some("doc"));
    }

    #[test]
    fn mapping_covers_every_document_field() {
        let props = properties();
        let mut names: Vec<&str> = props
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut spec = super::super::page::DOCUMENT_FIELDS.to_vec();
        names.sort_unstable();
        spec.sort_unstable();
        assert_eq!(names, spec);
        assert_eq!(
            props["date"],
            json!({"type": "date", "format": "epoch_second||strict_date_optional_time"})
        );
        assert_eq!(
            create_body(Dialect::Typed)["mappings"]["doc"]["properties"],
            props
        );
        assert_eq!(
            create_body(Dialect::Typeless)["mappings"]["properties"],
            props
        );
    }

    #[test]
    fn our_own_mapping_passes_the_check_in_both_shapes() {
        let typed = json!({"site": {"mappings": {"doc": {"properties": properties()}}}});
        assert_eq!(
            check_mapping(&typed, Dialect::Typed),
            MappingCheck::default()
        );
        let typeless = json!({"site": {"mappings": {"properties": properties()}}});
        assert_eq!(
            check_mapping(&typeless, Dialect::Typeless),
            MappingCheck::default()
        );
        assert_eq!(
            check_mapping(&typeless, Dialect::TypedWithParam),
            MappingCheck::default()
        );
    }

    #[test]
    fn conflicts_and_missing_fields_are_reported() {
        let mut props = properties();
        props["date"] = json!({"type": "date"}); // epoch_millis by default: wrong dates
        props["weight"] = json!({"type": "text"});
        props["title"] = json!({"type": "long"});
        props.as_object_mut().unwrap().remove("tags");
        let answer = json!({"site": {"mappings": {"doc": {"properties": props}}}});
        let check = check_mapping(&answer, Dialect::Typed);
        assert_eq!(check.missing, ["tags"]);
        assert_eq!(check.conflicts.len(), 3, "{:?}", check.conflicts);
        assert!(check.conflicts[0].starts_with(
            "date: mapped as date, needs date (format epoch_second||strict_date_optional_time)"
        ));
        assert!(check
            .conflicts
            .iter()
            .any(|c| c.starts_with("weight: mapped as text")));
    }

    #[test]
    fn strict_dynamic_turns_missing_into_conflicts_and_foreign_types_conflict() {
        let answer =
            json!({"site": {"mappings": {"doc": {"dynamic": "strict", "properties": {}}}}});
        assert_eq!(check_mapping(&answer, Dialect::Typed).conflicts.len(), 24);
        let foreign = json!({"site": {"mappings": {"_doc": {"properties": {}}}}});
        let c = check_mapping(&foreign, Dialect::TypedWithParam);
        assert!(c.conflicts[0].contains("type _doc"), "{c:?}");
        let empty = json!({"site": {"mappings": {}}});
        assert_eq!(check_mapping(&empty, Dialect::Typed).missing.len(), 24);
    }

    #[test]
    fn unix_second_formats() {
        assert!(reads_unix_seconds(&["epoch_second"]));
        assert!(reads_unix_seconds(&[
            "epoch_second",
            "strict_date_optional_time"
        ]));
        assert!(reads_unix_seconds(&[
            "strict_date_optional_time",
            "epoch_second"
        ]));
        assert!(!reads_unix_seconds(&["date_optional_time", "epoch_second"]));
        assert!(!reads_unix_seconds(&[
            "strict_date_optional_time",
            "epoch_millis"
        ]));
        assert!(!reads_unix_seconds(&[]));
    }

    #[test]
    fn index_names_follow_elasticsearch_rules() {
        for ok in ["site", "my-site_2", "a.b"] {
            assert!(validate_index_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "_x",
            "-x",
            "+x",
            "Site",
            "a b",
            "a/b",
            "a,b",
            "a#b",
            "a:b",
            &"x".repeat(256),
        ] {
            assert!(validate_index_name(bad).is_err(), "{bad}");
        }
    }
}
