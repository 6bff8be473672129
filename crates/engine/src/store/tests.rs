//! Store tests: writes, versions, realtime GET, refresh, restart and WAL replay.

use serde_json::json;

use super::index::CreateIndex;
use super::shard::{Cond, DocResult, WriterOptions};
use super::*;
use crate::mapping::parse_mappings;
use crate::names::{AutoCreate, DEFAULT_AUTO_CREATE};

fn open(dir: &Path) -> Store {
    Store::open(
        dir,
        WriterOptions::default(),
        AutoCreate::parse(DEFAULT_AUTO_CREATE).unwrap(),
    )
    .unwrap()
}

fn item(action: Action, index: &str, id: &str, src: serde_json::Value) -> WriteItem {
    WriteItem {
        action,
        index: index.into(),
        type_name: None,
        id: Some(id.into()),
        routing: None,
        source: serde_json::to_vec(&src).unwrap(),
        update: None,
        cond: Cond::default(),
    }
}

fn write1(store: &Store, it: WriteItem) -> ItemResult {
    let (mut r, t) = store.write(vec![it]);
    store.finish(&t, RefreshPolicy::None).unwrap();
    r.remove(0)
}

fn get(store: &Store, index: &str, id: &str) -> Option<serde_json::Value> {
    let h = store.require(index).unwrap();
    h.shard_for(id)
        .get(&store.wal, id, true)
        .unwrap()
        .map(|s| serde_json::from_slice(&s.source).unwrap())
}

#[test]
fn versions_created_updated_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store.create("books", CreateIndex::default()).unwrap();
    let r = write1(&store, item(Action::Index, "books", "1", json!({"t": "a"})));
    let o = r.outcome.unwrap();
    assert_eq!((o.result, o.version, o.seq_no), (DocResult::Created, 1, 0));
    let o = write1(&store, item(Action::Index, "books", "1", json!({"t": "b"})))
        .outcome
        .unwrap();
    assert_eq!((o.result, o.version, o.seq_no), (DocResult::Updated, 2, 1));
    assert_eq!(get(&store, "books", "1").unwrap()["t"], "b");
    let e = write1(&store, item(Action::Create, "books", "1", json!({})))
        .outcome
        .unwrap_err();
    assert_eq!(e.status(), 409);
    let o = write1(&store, item(Action::Delete, "books", "1", json!(null)))
        .outcome
        .unwrap();
    assert_eq!((o.result, o.version), (DocResult::Deleted, 3));
    assert!(get(&store, "books", "1").is_none());
    let o = write1(&store, item(Action::Delete, "books", "1", json!(null)))
        .outcome
        .unwrap();
    assert_eq!(o.result, DocResult::NotFound);
    let o = write1(&store, item(Action::Index, "books", "1", json!({"t": "c"})))
        .outcome
        .unwrap();
    assert_eq!((o.result, o.version), (DocResult::Created, 4));
}

#[test]
fn versions_survive_refresh() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store.create("books", CreateIndex::default()).unwrap();
    write1(&store, item(Action::Index, "books", "1", json!({"t": "a"})));
    store.require("books").unwrap().refresh(&store.wal).unwrap();
    assert_eq!(get(&store, "books", "1").unwrap()["t"], "a");
    let o = write1(&store, item(Action::Index, "books", "1", json!({"t": "b"})))
        .outcome
        .unwrap();
    assert_eq!((o.result, o.version), (DocResult::Updated, 2));
    store.require("books").unwrap().refresh(&store.wal).unwrap();
    let h = store.require("books").unwrap();
    assert_eq!(h.stats().docs, 1);
}

#[test]
fn missing_index_and_whitelist() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let e = write1(&store, item(Action::Index, "books", "1", json!({})))
        .outcome
        .unwrap_err();
    assert!(
        e.body().reason.ends_with("create it first with PUT /books"),
        "{}",
        e.body().reason
    );
    assert!(store.get("books").is_none());
    let r = write1(
        &store,
        item(Action::Index, "logstash-1", "1", json!({"n": 1})),
    );
    assert!(r.outcome.is_ok());
    assert!(store.get("logstash-1").is_some());
}

#[test]
fn update_merges_and_detects_noop() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store.create("i", CreateIndex::default()).unwrap();
    write1(
        &store,
        item(Action::Index, "i", "1", json!({"a": 1, "o": {"x": 1}})),
    );
    let mut up = item(Action::Update, "i", "1", json!(null));
    up.update = Some(UpdateBody {
        doc: Some(json!({"o": {"y": 2}}).as_object().unwrap().clone()),
        detect_noop: true,
        ..Default::default()
    });
    let o = write1(&store, up.clone()).outcome.unwrap();
    assert_eq!((o.result, o.version), (DocResult::Updated, 2));
    assert_eq!(
        get(&store, "i", "1").unwrap(),
        json!({"a": 1, "o": {"x": 1, "y": 2}})
    );
    let o = write1(&store, up.clone()).outcome.unwrap();
    assert_eq!(o.result, DocResult::Noop);
    let mut missing = up.clone();
    missing.id = Some("2".into());
    assert_eq!(
        write1(&store, missing.clone())
            .outcome
            .unwrap_err()
            .status(),
        404
    );
    missing.update.as_mut().unwrap().doc_as_upsert = true;
    let o = write1(&store, missing).outcome.unwrap();
    assert_eq!(o.result, DocResult::Created);
}

#[test]
fn restart_replays_unrefreshed_writes() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        let mut req = CreateIndex::default();
        req.settings.shards = 3;
        store.create("books", req).unwrap();
        let items: Vec<WriteItem> = (0..50)
            .map(|i| {
                item(
                    Action::Index,
                    "books",
                    &i.to_string(),
                    json!({"n": i, "title": format!("book {i}")}),
                )
            })
            .collect();
        let (r, t) = store.write(items);
        assert!(r.iter().all(|r| r.outcome.is_ok()));
        store.finish(&t, RefreshPolicy::None).unwrap();
        write1(&store, item(Action::Delete, "books", "7", json!(null)));
        // dropped without flush: a crash as far as the tantivy commits are concerned
    }
    let store = open(dir.path());
    let h = store.require("books").unwrap();
    assert_eq!(h.shards.len(), 3);
    assert_eq!(h.stats().docs, 49);
    assert!(get(&store, "books", "7").is_none());
    assert_eq!(get(&store, "books", "8").unwrap()["n"], 8);
    assert!(h.mapping().field("title.keyword").is_some());
    let o = write1(&store, item(Action::Index, "books", "8", json!({"n": 0})))
        .outcome
        .unwrap();
    assert_eq!(o.version, 2);
}

#[test]
fn delete_index_and_resolve() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for n in ["a1", "a2", "b1"] {
        store.create(n, CreateIndex::default()).unwrap();
    }
    let names = |e: &str| -> Vec<String> {
        store
            .resolve(e, Options::default())
            .unwrap()
            .iter()
            .map(|h| h.name.clone())
            .collect()
    };
    assert_eq!(names("a*"), vec!["a1", "a2"]);
    assert_eq!(names("_all"), vec!["a1", "a2", "b1"]);
    assert_eq!(names("*,-a1"), vec!["a2", "b1"]);
    assert_eq!(names("b1,a1"), vec!["a1", "b1"]);
    assert!(store.resolve("zz", Options::default()).is_err());
    assert!(
        store
            .create("a1", CreateIndex::default())
            .unwrap_err()
            .status()
            == 400
    );
    store.delete("a1").unwrap();
    assert_eq!(names("*"), vec!["a2", "b1"]);
    drop(store);
    let store = open(dir.path());
    assert!(store.get("a1").is_none());
    assert!(store.get("a2").is_some());
}

#[test]
fn one_type_per_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let pm = parse_mappings(
        &json!({"doc": {"properties": {"n": {"type": "long"}}}}),
        &Default::default(),
    )
    .unwrap();
    store
        .create(
            "i",
            CreateIndex {
                mapping: pm.mapping,
                type_name: pm.type_name,
                ..Default::default()
            },
        )
        .unwrap();
    let mut it = item(Action::Index, "i", "1", json!({"n": 1}));
    it.type_name = Some("other".into());
    let e = write1(&store, it).outcome.unwrap_err();
    assert!(e.to_string().contains("more than 1 type"));
    let mut it = item(Action::Index, "i", "1", json!({"n": 1}));
    it.type_name = Some("doc".into());
    assert!(write1(&store, it).outcome.is_ok());
    let e = write1(&store, item(Action::Index, "i", "2", json!({"n": "x"})))
        .outcome
        .unwrap_err();
    assert_eq!(e.body().caused_by.unwrap().0, "number_format_exception");
}

#[test]
fn second_engine_on_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _store = open(dir.path());
    let e = Store::open(dir.path(), WriterOptions::default(), AutoCreate::None).unwrap_err();
    assert!(e.to_string().contains("in use"));
}
