//! A fleet node's last known catalog, kept in its data directory so that the node can
//! start, and serve, while the shared store is unreachable.
//!
//! Two files: `fleet-catalog.json`, the whole catalog at one change of the feed (written to
//! a temporary file, synced, then renamed over the old one: a reader sees the old copy or
//! the new one, never half of one), and `fleet-catalog.journal`, one line per batch applied
//! since (appended a page of the feed at a time, with one sync per page, before the node
//! publishes the page: whatever a node has served survives its crash). Saving a batch therefore costs
//! what the batch holds, not the catalog's size; when the journal outgrows the copy, the
//! copy is written again and the journal emptied (so the total cost stays proportional to
//! the changes). A crash in the middle of an append leaves a torn last line, which loading
//! ignores; lines at or before the copy's change are skipped.
//!
//! Must not touch: the store, the registry's runtime state, anything else in the data
//! directory.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::store::{apply_events, Event};
use crate::registry::{Catalog, ClusterRecord, PlanRecord};

/// The copy of the whole catalog.
pub const COPY_FILE: &str = "fleet-catalog.json";
/// The batches applied after the copy.
pub const JOURNAL_FILE: &str = "fleet-catalog.journal";
/// The journal is folded into the copy once it is larger than the copy and this.
const MIN_JOURNAL: u64 = 1 << 20;

/// The catalog as the copy holds it.
#[derive(Serialize)]
struct CopyOut<'a> {
    seq: u64,
    plans: Vec<&'a PlanRecord>,
    clusters: Vec<&'a ClusterRecord>,
    declared: &'a Value,
}

#[derive(Deserialize)]
struct CopyIn {
    seq: u64,
    plans: Vec<PlanRecord>,
    clusters: Vec<ClusterRecord>,
    #[serde(default)]
    declared: Value,
}

/// One journal line: a batch of the feed (and the file's seed, when it applied one).
#[derive(Serialize)]
struct LineOut<'a> {
    seq: u64,
    events: &'a [Event],
    #[serde(skip_serializing_if = "Option::is_none")]
    declared: Option<&'a Value>,
}

#[derive(Deserialize)]
struct LineIn {
    seq: u64,
    events: Vec<Event>,
    #[serde(default)]
    declared: Option<Value>,
}

/// What was loaded: the catalog at change `seq`, and what the file last declared.
#[derive(Debug)]
pub struct Known {
    pub catalog: Catalog,
    pub seq: u64,
    pub declared: Value,
}

/// The writer of a node's last known catalog.
#[derive(Debug)]
pub struct LastKnown {
    dir: PathBuf,
    journal: Option<File>,
    journal_len: u64,
    copy_len: u64,
    declared: Value,
    syncs: u64,
}

fn io(path: &Path, e: std::io::Error) -> String {
    format!("{}: {e}", path.display())
}

/// Writes `bytes` to `dir/name` atomically and durably (temporary file, sync, rename,
/// sync of the directory), owner-only.
fn replace(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), String> {
    let tmp = dir.join(format!("{name}.tmp"));
    let path = dir.join(name);
    let mut opts = OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut f = opts.open(&tmp).map_err(|e| io(&tmp, e))?;
    f.write_all(bytes).map_err(|e| io(&tmp, e))?;
    f.sync_all().map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| io(&path, e))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io(dir, e))
}

impl LastKnown {
    /// The writer for `data_dir` (nothing written until [`LastKnown::save`]).
    pub fn new(data_dir: &Path) -> LastKnown {
        LastKnown {
            dir: data_dir.to_path_buf(),
            journal: None,
            journal_len: 0,
            copy_len: 0,
            declared: Value::Null,
            syncs: 0,
        }
    }

    /// Writes the whole catalog `cat` at change `seq` and empties the journal.
    pub fn save(&mut self, cat: &Catalog, seq: u64, declared: &Value) -> Result<(), String> {
        let out = CopyOut {
            seq,
            plans: cat.plans.values().map(|p| &**p).collect(),
            clusters: cat.clusters.values().map(|c| &**c).collect(),
            declared,
        };
        let bytes = serde_json::to_vec(&out).map_err(|e| e.to_string())?;
        replace(&self.dir, COPY_FILE, &bytes)?;
        let path = self.dir.join(JOURNAL_FILE);
        let mut opts = OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let f = opts.open(&path).map_err(|e| io(&path, e))?;
        f.sync_all().map_err(|e| io(&path, e))?;
        self.journal = Some(f);
        self.journal_len = 0;
        self.copy_len = bytes.len() as u64;
        self.declared = declared.clone();
        Ok(())
    }

    /// Appends batch `seq` (its `events`, and the file's seed `declared` when it applied
    /// one); `cat` is the catalog after it, written whole instead when the journal has
    /// outgrown the copy.
    pub fn append(
        &mut self,
        seq: u64,
        events: &[Event],
        declared: Option<&Value>,
        cat: &Catalog,
    ) -> Result<(), String> {
        self.append_page(&[(seq, events, declared)], cat)
    }

    /// Appends a page of batches, in feed order, with one sync for the page: when it
    /// returns, every batch of the page is durable (a crash before leaves a prefix of the
    /// page, whole lines then perhaps one torn line, which loading ignores). `cat` is the
    /// catalog after the last batch, written whole instead when the journal has outgrown
    /// the copy.
    pub fn append_page(
        &mut self,
        page: &[(u64, &[Event], Option<&Value>)],
        cat: &Catalog,
    ) -> Result<(), String> {
        let Some(&(last, _, _)) = page.last() else {
            return Ok(());
        };
        if let Some(d) = page.iter().rev().find_map(|b| b.2) {
            self.declared = d.clone();
        }
        if self.journal_len > self.copy_len.max(MIN_JOURNAL) || self.journal.is_none() {
            let d = self.declared.clone();
            return self.save(cat, last, &d);
        }
        let mut bytes = Vec::new();
        for &(seq, events, declared) in page {
            let line = LineOut {
                seq,
                events,
                declared,
            };
            serde_json::to_writer(&mut bytes, &line).map_err(|e| e.to_string())?;
            bytes.push(b'\n');
        }
        let path = self.dir.join(JOURNAL_FILE);
        let f = self.journal.as_mut().expect("opened by save");
        f.write_all(&bytes)
            .and_then(|()| f.sync_data())
            .map_err(|e| io(&path, e))?;
        self.journal_len += bytes.len() as u64;
        self.syncs += 1;
        Ok(())
    }

    /// Journal syncs so far (one per page appended).
    pub fn syncs(&self) -> u64 {
        self.syncs
    }

    /// The last known catalog in `data_dir` (`None`: this node never kept one).
    pub fn load(data_dir: &Path) -> Result<Option<Known>, String> {
        let path = data_dir.join(COPY_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(&path, e)),
        };
        let copy: CopyIn = serde_json::from_slice(&bytes).map_err(|e| io(&path, e.into()))?;
        let mut known = Known {
            catalog: Catalog::default(),
            seq: copy.seq,
            declared: copy.declared,
        };
        for p in copy.plans {
            known.catalog.plans.insert(p.name.clone(), p.into());
        }
        for c in copy.clusters {
            known.catalog.put(c);
        }
        let path = data_dir.join(JOURNAL_FILE);
        let journal = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Some(known)),
            Err(e) => return Err(io(&path, e)),
        };
        for line in BufReader::new(journal).lines() {
            let Ok(line) = line else { break };
            // A torn last line (a crash during the append) ends the journal.
            let Ok(l) = serde_json::from_str::<LineIn>(&line) else {
                break;
            };
            if l.seq <= known.seq {
                continue;
            }
            apply_events(&mut known.catalog, &l.events);
            known.seq = l.seq;
            if let Some(d) = l.declared {
                known.declared = d;
            }
        }
        Ok(Some(known))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::catalog::tests::{plan, record, with};

    fn cluster(cat: &Catalog, id: &str) -> ClusterRecord {
        ClusterRecord::clone(cat.clusters.get(id).expect("the cluster"))
    }

    // issue 26: the copy and the journal give back the catalog of the last batch appended;
    // a torn last line is ignored; lines the copy already holds are skipped.
    #[test]
    fn the_copy_and_its_journal_give_back_the_last_catalog() {
        let dir = tempfile::tempdir().unwrap();
        assert!(LastKnown::load(dir.path()).unwrap().is_none());
        let mut cat = with(&[plan("p", 2)], &[record("a", "p")]);
        let mut lk = LastKnown::new(dir.path());
        lk.save(&cat, 7, &serde_json::json!({"plans": []})).unwrap();
        let mut b = record("b", "p");
        b.name = Some("second".into());
        let events = vec![Event::Cluster {
            record: Box::new(b.clone()),
        }];
        apply_events(&mut cat, &events);
        lk.append(8, &events, None, &cat).unwrap();
        let known = LastKnown::load(dir.path()).unwrap().unwrap();
        assert_eq!(known.seq, 8);
        assert_eq!(cluster(&known.catalog, "b"), b);
        assert!(known.catalog.by_username(&b.username).is_some(), "indexed");
        assert_eq!(known.declared, serde_json::json!({"plans": []}));

        // A crash in the middle of the next append.
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join(JOURNAL_FILE))
            .unwrap();
        f.write_all(br#"{"seq":9,"events":[{"kind":"clus"#).unwrap();
        let known = LastKnown::load(dir.path()).unwrap().unwrap();
        assert_eq!(known.seq, 8, "the torn line is not applied");
        assert_eq!(known.catalog.clusters.len(), 2);

        // Saved whole at 8 again: the journal's line 8 is not applied twice.
        lk.save(&cat, 8, &Value::Null).unwrap();
        assert_eq!(LastKnown::load(dir.path()).unwrap().unwrap().seq, 8);
    }

    // The journal is folded into the copy once it outgrows it (the cost of a batch stays
    // that of the batch, and the journal does not grow without end).
    #[test]
    fn a_long_journal_is_folded_into_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let mut cat = with(&[plan("p", 2)], &[record("a", "p")]);
        let mut lk = LastKnown::new(dir.path());
        lk.save(&cat, 1, &Value::Null).unwrap();
        let mut seq = 1;
        let journal = || {
            std::fs::metadata(dir.path().join(JOURNAL_FILE))
                .unwrap()
                .len()
        };
        let mut folded = false;
        while seq < 20_000 && !folded {
            seq += 1;
            let mut a = cluster(&cat, "a");
            a.version += 1;
            let events = vec![Event::Cluster {
                record: Box::new(a),
            }];
            apply_events(&mut cat, &events);
            let before = journal();
            lk.append(seq, &events, None, &cat).unwrap();
            folded = journal() < before;
        }
        assert!(folded, "folded before {seq} batches");
        assert!(journal() <= MIN_JOURNAL + 4096);
        let known = LastKnown::load(dir.path()).unwrap().unwrap();
        assert_eq!(known.seq, seq);
        assert_eq!(cluster(&known.catalog, "a"), cluster(&cat, "a"));
    }
}
