//! Cluster settings (`_cluster/settings`): persistent ones kept in `cluster_settings.json`
//! (written atomically), transient ones in memory, a transient value winning over a
//! persistent one, `null` resetting a setting, as Elasticsearch 7.10.
//!
//! Settings the engine knows: `action.auto_create_index` (`true`, `false`, or `+`/`-`
//! patterns; the service default is the spec's whitelist, `--auto-create-index`), and the
//! shard allocation, rebalancing and recovery settings, which change nothing on one node
//! and are kept so that tools which set them work. Any other setting is refused naming it,
//! and a refused update changes nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{json, Map, Value};

use super::index::write_atomic;
use super::settings::{flatten_plain, insert_dotted};
use crate::error::{EngineError, EngineResult};
use crate::names::AutoCreate;

/// The setting whose value decides automatic index creation.
pub const AUTO_CREATE: &str = "action.auto_create_index";

/// Prefixes of settings without effect on a single node.
const NO_EFFECT_PREFIXES: &[&str] = &[
    "cluster.routing.allocation.",
    "cluster.routing.rebalance.",
    "indices.recovery.",
    "cluster.info.update.",
];

/// Flat settings, key -> value as given (strings, numbers, booleans).
type Flat = BTreeMap<String, Value>;

/// Persistent and transient cluster settings.
#[derive(Debug)]
pub struct ClusterSettings {
    path: PathBuf,
    state: Mutex<(Flat, Flat)>,
}

fn check(scope: &str, key: &str, v: &Value) -> EngineResult<()> {
    if key == AUTO_CREATE {
        let s = match v {
            Value::Bool(b) => b.to_string(),
            Value::String(s) => s.clone(),
            Value::Null => return Ok(()),
            other => other.to_string(),
        };
        return AutoCreate::parse(&s).map(|_| ()).map_err(|e| {
            EngineError::IllegalArgument(format!(
                "illegal value can't update [{AUTO_CREATE}] from [{}] to [{s}]: {e}",
                "true"
            ))
        });
    }
    if NO_EFFECT_PREFIXES.iter().any(|p| key.starts_with(p)) {
        return Ok(());
    }
    Err(EngineError::IllegalArgument(format!(
        "{scope} setting [{key}], not recognized"
    )))
}

fn nested(flat: &Flat) -> Value {
    let mut root = Map::new();
    for (k, v) in flat {
        insert_dotted(&mut root, k, v.clone());
    }
    Value::Object(root)
}

/// Settings as `GET` shows them: values as strings, nested unless `flat`.
fn render(flat: &Flat, as_flat: bool) -> Value {
    let strings: Flat = flat
        .iter()
        .map(|(k, v)| {
            let s = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), Value::String(s))
        })
        .collect();
    if as_flat {
        Value::Object(strings.into_iter().collect())
    } else {
        nested(&strings)
    }
}

impl ClusterSettings {
    /// Loads the persistent settings of the data directory `dir`.
    pub fn open(dir: &Path) -> EngineResult<ClusterSettings> {
        let path = dir.join("cluster_settings.json");
        let persistent: Flat = match std::fs::read(&path) {
            Ok(b) => serde_json::from_slice(&b).map_err(EngineError::internal)?,
            Err(_) => Flat::new(),
        };
        Ok(ClusterSettings {
            path,
            state: Mutex::new((persistent, Flat::new())),
        })
    }

    /// `action.auto_create_index` when a transient or persistent setting gives it.
    pub fn auto_create(&self) -> Option<AutoCreate> {
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let v = st.1.get(AUTO_CREATE).or_else(|| st.0.get(AUTO_CREATE))?;
        let s = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        AutoCreate::parse(&s).ok()
    }

    /// `PUT /_cluster/settings`: validates every setting, then applies them all; returns
    /// the response body.
    pub fn update(&self, body: &Value) -> EngineResult<Value> {
        let obj = body
            .as_object()
            .ok_or_else(|| EngineError::Parsing("request body must be an object".into()))?;
        let mut changes: [Flat; 2] = [Flat::new(), Flat::new()];
        for (k, v) in obj {
            let slot = match k.as_str() {
                "persistent" => 0,
                "transient" => 1,
                other => {
                    return Err(EngineError::Parsing(format!(
                        "[cluster_update_settings_request] unknown field [{other}]"
                    )))
                }
            };
            let flat = flatten_plain(v)?;
            for (key, val) in &flat {
                check(k, key, val)?;
            }
            changes[slot] = flat;
        }
        if changes[0].is_empty() && changes[1].is_empty() {
            return Err(EngineError::Validation(
                vec!["no settings to update".into()],
            ));
        }
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut persistent = st.0.clone();
        apply(&mut persistent, &changes[0]);
        if !changes[0].is_empty() {
            let bytes = serde_json::to_vec_pretty(&persistent).map_err(EngineError::internal)?;
            write_atomic(&self.path, &bytes)?;
        }
        st.0 = persistent;
        let mut transient = st.1.clone();
        apply(&mut transient, &changes[1]);
        st.1 = transient;
        let applied = |f: &Flat| -> Flat {
            f.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        Ok(json!({
            "acknowledged": true,
            "persistent": render(&applied(&changes[0]), false),
            "transient": render(&applied(&changes[1]), false),
        }))
    }

    /// `GET /_cluster/settings`; `defaults` adds the defaults section.
    pub fn get(&self, flat: bool, defaults: Option<&AutoCreate>) -> Value {
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = json!({
            "persistent": render(&st.0, flat),
            "transient": render(&st.1, flat),
        });
        if let Some(d) = defaults {
            let mut f = Flat::new();
            f.insert(AUTO_CREATE.into(), Value::String(d.to_setting()));
            out["defaults"] = render(&f, flat);
        }
        out
    }
}

fn apply(target: &mut Flat, changes: &Flat) {
    for (k, v) in changes {
        if v.is_null() {
            target.remove(k);
        } else {
            target.insert(k.clone(), v.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persistent_transient_and_refusals() {
        let d = tempfile::tempdir().unwrap();
        let s = ClusterSettings::open(d.path()).unwrap();
        assert_eq!(s.auto_create(), None);
        let r = s
            .update(&json!({"persistent": {"action": {"auto_create_index": "+a*,-b*"}}}))
            .unwrap();
        assert_eq!(r["persistent"]["action"]["auto_create_index"], "+a*,-b*");
        assert!(s.auto_create().unwrap().allows("ab"));
        s.update(&json!({"transient": {"action.auto_create_index": false}}))
            .unwrap();
        assert!(!s.auto_create().unwrap().allows("ab"));
        // a refused update changes nothing
        let e = s
            .update(&json!({"transient": {"action.auto_create_index": true, "foo.bar": 1}}))
            .unwrap_err();
        assert!(e
            .to_string()
            .contains("transient setting [foo.bar], not recognized"));
        assert!(!s.auto_create().unwrap().allows("ab"));
        s.update(&json!({"transient": {"action.auto_create_index": null}}))
            .unwrap();
        assert!(s.auto_create().unwrap().allows("ab"));
        let again = ClusterSettings::open(d.path()).unwrap();
        assert!(again.auto_create().unwrap().allows("ab"));
        let g = again.get(true, None);
        assert_eq!(g["persistent"]["action.auto_create_index"], "+a*,-b*");
        assert_eq!(g["transient"], json!({}));
        assert!(s
            .update(&json!({"persistent": {"action.auto_create_index": "+,x"}}))
            .is_err());
        assert!(s.update(&json!({})).is_err());
    }
}
