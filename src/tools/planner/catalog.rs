//! The plan catalog the planner chooses from, and the choice: the smallest plan whose
//! shard capacity, disk, memory and concurrency allowance fit the figures, with the reason
//! each smaller plan does not.
//!
//! Plans come from a config file's `[[plans]]` (`--config`), the admin API's
//! `GET /v1/plans` answer ([`Catalog::from_api`]: the same [`CatalogPlan`] fields in JSON;
//! the planner fetches it), or the embedded default.
//!
//! Must not touch: the network, the sizing rules (see `rules`).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::rules::Figures;
use crate::config::{embedded, Config};

/// One plan as the planner sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogPlan {
    pub name: String,
    pub shards: u64,
    pub disk_bytes: u64,
    pub memory_bytes: u64,
    /// The search concurrency allowance (simultaneous connections).
    pub concurrency: u64,
    pub monthly_price_cents: u64,
}

/// Plans, smallest first (by price, then memory, disk, shards, concurrency).
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    plans: Vec<CatalogPlan>,
    /// Where the plans came from, for the output.
    pub source: String,
}

/// A plan the planner passed over, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejected {
    pub plan: String,
    pub why: Vec<String>,
}

/// The choice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    /// The smallest plan that fits (`None`: none does).
    pub plan: Option<CatalogPlan>,
    /// Every smaller plan (every plan when none fits), with what does not fit.
    pub rejected: Vec<Rejected>,
}

impl Catalog {
    /// A catalog of `plans` from `source`.
    pub fn from_plans(mut plans: Vec<CatalogPlan>, source: &str) -> Catalog {
        plans.sort_by_key(|p| {
            (
                p.monthly_price_cents,
                p.memory_bytes,
                p.disk_bytes,
                p.shards,
                p.concurrency,
            )
        });
        Catalog {
            plans,
            source: source.to_string(),
        }
    }

    /// The plans of the admin API's `GET /v1/plans` answer (`{"plans": [...]}`).
    pub fn from_api(answer: &serde_json::Value, source: &str) -> Result<Catalog, String> {
        let plans = answer
            .get("plans")
            .cloned()
            .ok_or_else(|| format!("{source}: no `plans` in the answer"))?;
        let plans: Vec<CatalogPlan> =
            serde_json::from_value(plans).map_err(|e| format!("{source}: the plans: {e}"))?;
        Ok(Catalog::from_plans(plans, source))
    }

    /// The `[[plans]]` of a validated config.
    pub fn from_config(config: &Config, source: &str) -> Catalog {
        let plans = config
            .plans
            .iter()
            .map(|p| CatalogPlan {
                name: p.name.clone(),
                shards: p.shards,
                disk_bytes: p.disk.0,
                memory_bytes: p.memory.0,
                concurrency: u64::from(p.concurrency),
                monthly_price_cents: p.monthly_price_cents,
            })
            .collect();
        Catalog::from_plans(plans, source)
    }

    /// The plans of `path`, or of the embedded default: `./data/searchgate.toml` when the
    /// edge created it there, else the default text itself (nothing is written).
    pub fn load(path: Option<&Path>) -> Result<Catalog, String> {
        if let Some(p) = path {
            let c = Config::load(p).map_err(|e| e.to_string())?;
            return Ok(Catalog::from_config(&c, &p.display().to_string()));
        }
        let kept = Path::new("./data").join(embedded::FILE_NAME);
        if kept.exists() {
            let c = Config::load(&kept).map_err(|e| e.to_string())?;
            return Ok(Catalog::from_config(&c, &kept.display().to_string()));
        }
        let text = embedded::default_text(Path::new("./data"));
        let c = Config::parse(&text, "embedded default").map_err(|e| e.to_string())?;
        Ok(Catalog::from_config(&c, "embedded default"))
    }

    /// Plans, smallest first.
    pub fn plans(&self) -> &[CatalogPlan] {
        &self.plans
    }

    /// The smallest plan that fits `f`.
    pub fn choose(&self, f: &Figures) -> Choice {
        let mut rejected = Vec::new();
        for p in &self.plans {
            let why = misfits(p, f);
            if why.is_empty() {
                return Choice {
                    plan: Some(p.clone()),
                    rejected,
                };
            }
            rejected.push(Rejected {
                plan: p.name.clone(),
                why,
            });
        }
        Choice {
            plan: None,
            rejected,
        }
    }
}

/// What of `f` does not fit `p` (memory: the plan must reach the band's lower bound).
fn misfits(p: &CatalogPlan, f: &Figures) -> Vec<String> {
    let mut why = Vec::new();
    if f.shards > p.shards {
        why.push(format!("shards {} > capacity {}", f.shards, p.shards));
    }
    if f.disk_bytes > p.disk_bytes {
        why.push(format!("disk {} B > {} B", f.disk_bytes, p.disk_bytes));
    }
    if f.memory_bytes_min > p.memory_bytes {
        why.push(format!(
            "memory {} B < the {} B the band starts at",
            p.memory_bytes, f.memory_bytes_min
        ));
    }
    if f.connections > p.concurrency {
        why.push(format!(
            "connections {} > concurrency allowance {}",
            f.connections, p.concurrency
        ));
    }
    why
}

#[cfg(test)]
mod tests {
    use super::super::rules::{figures, Inputs, DEFAULT_OPEN_FILES};
    use super::*;

    const GB: u64 = 1 << 30;

    fn plan(
        name: &str,
        shards: u64,
        disk_gb: u64,
        mem_gb: u64,
        conc: u64,
        price: u64,
    ) -> CatalogPlan {
        CatalogPlan {
            name: name.into(),
            shards,
            disk_bytes: disk_gb * GB,
            memory_bytes: mem_gb * GB,
            concurrency: conc,
            monthly_price_cents: price,
        }
    }

    impl CatalogPlan {
        fn with_memory(mut self, bytes: u64) -> CatalogPlan {
            self.memory_bytes = bytes;
            self
        }
    }

    fn catalog() -> Catalog {
        Catalog::from_plans(
            vec![
                plan("large", 200, 400, 64, 100, 90_000),
                plan("small", 20, 10, 2, 10, 5_000),
                plan("medium", 60, 50, 8, 40, 20_000),
            ],
            "test",
        )
    }

    fn inputs(documents: u64, peak_rps: f64) -> Inputs {
        Inputs {
            documents,
            bytes_per_doc: 1_000.0,
            primaries: 5,
            replicas: 1,
            time_series: None,
            peak_rps,
            p99_ms: 100.0,
            features: Vec::new(),
            open_files: DEFAULT_OPEN_FILES,
        }
    }

    #[test]
    fn the_smallest_fitting_plan_and_why_smaller_ones_do_not() {
        let c = catalog();
        let names: Vec<&str> = c.plans().iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["small", "medium", "large"]);
        // 10M docs x 1000 B x 2 = 20 GB data (18.6 GiB), disk 24 GB (22.4 GiB), memory
        // 2-6 GB (1.86-5.59 GiB), 10 shards, 300 rps x 100 ms = 30 connections.
        let f = figures(&inputs(10_000_000, 300.0));
        let choice = c.choose(&f);
        assert_eq!(choice.plan.unwrap().name, "medium");
        assert_eq!(choice.rejected.len(), 1);
        assert_eq!(choice.rejected[0].plan, "small");
        assert_eq!(
            choice.rejected[0].why,
            [
                "disk 24000000000 B > 10737418240 B",
                "connections 30 > concurrency allowance 10",
            ]
        );
    }

    #[test]
    fn memory_must_reach_the_bands_lower_bound() {
        // 1.2M docs: data 2.4 GB, band from 240 MB; small (2 GiB) fits on memory.
        let f = figures(&inputs(1_200_000, 10.0));
        assert_eq!(catalog().choose(&f).plan.unwrap().name, "small");
        // 12M docs: band from 2.4 GB > 2 GiB small, and disk 28.8 GB > 10 GiB.
        let f = figures(&inputs(12_000_000, 10.0));
        let c = catalog().choose(&f);
        assert_eq!(c.plan.unwrap().name, "medium");
        assert!(c.rejected[0]
            .why
            .iter()
            .any(|w| w.starts_with("memory 2147483648 B < the 2400000000 B")));
    }

    #[test]
    fn nothing_fits_lists_every_plan() {
        let f = figures(&inputs(1_000_000_000, 10.0));
        let c = catalog().choose(&f);
        assert!(c.plan.is_none());
        assert_eq!(c.rejected.len(), 3);
    }

    #[test]
    fn the_admin_apis_plans_are_a_catalog() {
        let answer = serde_json::json!({"plans": [
            {"name": "big", "concurrency": 40, "queue_size": 10, "queue_timeout_ms": 5000,
             "shards": 60, "disk_bytes": 50 * GB, "memory_bytes": 8 * GB,
             "max_bulk_actions": 1000, "max_open_contexts": 500, "monthly_price_cents": 20_000},
            {"name": "tiny", "concurrency": 2, "queue_size": 10, "queue_timeout_ms": 5000,
             "shards": 10, "disk_bytes": GB, "memory_bytes": GB / 4,
             "max_bulk_actions": 1000, "max_open_contexts": 500, "monthly_price_cents": 0},
        ]});
        let c = Catalog::from_api(&answer, "admin API at http://x").unwrap();
        assert_eq!(
            c.plans()[0],
            plan("tiny", 10, 1, 0, 2, 0).with_memory(GB / 4)
        );
        assert_eq!(c.plans()[1].name, "big");
        assert_eq!(c.source, "admin API at http://x");
        let e = Catalog::from_api(&serde_json::json!({"plans": [{"name": 1}]}), "api").unwrap_err();
        assert!(e.starts_with("api: the plans: "), "{e}");
        assert!(Catalog::from_api(&serde_json::json!({}), "api").is_err());
    }

    #[test]
    fn the_embedded_default_is_a_catalog() {
        let text = embedded::default_text(Path::new("./data"));
        let c = Catalog::from_config(&Config::parse(&text, "x").unwrap(), "x");
        assert_eq!(c.plans()[0].name, "sandbox");
        assert_eq!(c.plans()[0].concurrency, 4);
    }
}
