//! The file's `[[plans]]` and `[[clusters]]` as a declarative seed, applied through the
//! same commands as the admin API, on start and on every reload (SIGHUP, file saved).
//!
//! Which wins when the file and the API disagree: **the latest change of each field**. The
//! store remembers what the file declared when it was last applied ([`Declared`]). On each
//! reload, a field the file changed since then is applied (the file wins, and when that
//! replaces a value set through the API the note says so); a field the file did not change
//! keeps whatever the API set since (the API wins, and each reload notes the difference).
//! A cluster removed from the file is destroyed; one destroyed through the API stays
//! destroyed while the file still declares it (noted). Plans exist only in the file.
//! Every note is printed, and the admin API shows a cluster's fields that differ from the
//! file (`differs_from_file`): file and API never disagree silently.
//!
//! Must not touch: the store and the runtime (it only plans commands).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::{ClusterClass, ClusterConfig, Config, Mode};

use crate::policy::auth::PasswordHash;
use crate::registry::catalog::{Catalog, ClusterRecord, Command, Millis, PlanRecord};
use crate::registry::seed::record_of;

/// A `[[clusters]]` entry as remembered (its password hashed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeclaredCluster {
    pub hostname: String,
    pub region: String,
    pub class: ClusterClass,
    pub plan: String,
    pub username: String,
    pub password: PasswordHash,
    pub mode: Mode,
    pub upstream: Option<Vec<String>>,
}

/// What the file declared when it was last applied.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Declared {
    pub plans: BTreeMap<String, PlanRecord>,
    pub clusters: BTreeMap<String, DeclaredCluster>,
}

/// The commands a reload makes, what the file now declares, and the notes to print.
#[derive(Debug, Default)]
pub struct SeedPlan {
    pub cmds: Vec<Command>,
    pub declared: Declared,
    pub notes: Vec<String>,
}

/// The fields of a cluster the file can declare, as compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Plan,
    Mode,
    Credentials,
    Address,
    Upstream,
}

impl Field {
    pub const ALL: [Field; 5] = [
        Field::Plan,
        Field::Mode,
        Field::Credentials,
        Field::Address,
        Field::Upstream,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Field::Plan => "plan",
            Field::Mode => "mode",
            Field::Credentials => "credentials",
            Field::Address => "address",
            Field::Upstream => "upstream",
        }
    }
}

/// Whether the file's entry `d` and the record `r` agree on `f`.
fn agrees(f: Field, d: &DeclaredCluster, r: &ClusterRecord) -> bool {
    match f {
        Field::Plan => d.plan == r.plan,
        // The overage ladder's mode is not an operator's: the file's `normal` still holds.
        Field::Mode => {
            let ladder = r.overage.as_ref().is_some_and(|o| o.owns_mode);
            d.mode == r.mode || (ladder && d.mode == crate::config::Mode::Normal)
        }
        Field::Credentials => d.username == r.username && d.password == r.password,
        Field::Address => d.hostname == r.hostname && d.region == r.region,
        Field::Upstream => d.upstream == r.upstream,
    }
}

/// Whether two declarations agree on `f` (passwords by hash: a rehash of the same password
/// is another hash, so `new` is compared by verifying its clear text).
fn same_declaration(f: Field, old: &DeclaredCluster, new: &ClusterConfig) -> bool {
    match f {
        Field::Plan => old.plan == new.plan,
        Field::Mode => old.mode == new.mode,
        Field::Credentials => {
            old.username == new.username && old.password.verify(new.password.expose().as_bytes())
        }
        Field::Address => old.hostname == new.hostname && old.region == new.region,
        Field::Upstream => old.upstream == new.upstream,
    }
}

/// The fields where a live record differs from what the file declared.
pub fn differs_from_file(d: &DeclaredCluster, r: &ClusterRecord) -> Vec<&'static str> {
    Field::ALL
        .into_iter()
        .filter(|f| !agrees(*f, d, r))
        .map(Field::name)
        .collect()
}

/// Plans what applying `config` does to `cat`, given what the file declared last time
/// (`last`), at `now`; `grace` keeps a rotated-out password valid that long.
pub fn plan(
    config: &Config,
    last: &Declared,
    cat: &Catalog,
    now: Millis,
    grace: Duration,
) -> Result<SeedPlan, String> {
    let mut out = SeedPlan::default();
    for p in &config.plans {
        let rec = PlanRecord::from(p);
        if cat.plans.get(&p.name).is_none_or(|cur| **cur != rec) {
            out.cmds.push(Command::PutPlan(rec.clone()));
        }
        out.declared.plans.insert(p.name.clone(), rec);
    }
    for c in &config.clusters {
        let declared = cluster(
            c,
            last.clusters.get(&c.id),
            cat.clusters.get(&c.id),
            now,
            grace,
            &mut out,
        )?;
        out.declared.clusters.insert(c.id.clone(), declared);
    }
    for (id, _) in last
        .clusters
        .iter()
        .filter(|(id, _)| !out.declared.clusters.contains_key(*id))
    {
        if cat.clusters.get(id).is_some_and(|c| c.is_live()) {
            out.cmds.push(Command::Destroy { id: id.clone() });
        }
    }
    for name in cat
        .plans
        .keys()
        .filter(|n| !out.declared.plans.contains_key(*n))
    {
        out.cmds.push(Command::RemovePlan { name: name.clone() });
    }
    Ok(out)
}

/// Plans one `[[clusters]]` entry; returns what to remember of it.
fn cluster(
    c: &ClusterConfig,
    last: Option<&DeclaredCluster>,
    cur: Option<&std::sync::Arc<ClusterRecord>>,
    now: Millis,
    grace: Duration,
    out: &mut SeedPlan,
) -> Result<DeclaredCluster, String> {
    // Unchanged credentials keep their remembered hash (a rehash would look like a change).
    let password = match last {
        Some(l) if same_declaration(Field::Credentials, l, c) => l.password.clone(),
        _ => PasswordHash::new(c.password.expose().as_bytes()),
    };
    let declared = DeclaredCluster {
        hostname: c.hostname.clone(),
        region: c.region.clone(),
        class: c.class,
        plan: c.plan.clone(),
        username: c.username.clone(),
        password: password.clone(),
        mode: c.mode,
        upstream: c.upstream.clone(),
    };
    let cur = match cur {
        Some(r) if r.is_live() => r,
        Some(_) if last.is_some() => {
            out.notes.push(format!(
                "cluster {} was destroyed through the admin API; the file still declares it (remove it from the file)",
                c.id
            ));
            return Ok(declared);
        }
        _ => {
            let mut rec = record_of(c, now);
            rec.password = password;
            out.cmds.push(Command::CreateCluster(Box::new(rec)));
            return Ok(declared);
        }
    };
    if cur.class != c.class {
        return Err(format!(
            "cluster `{}`: its class cannot change ({} to {}); remove it and declare a new cluster",
            c.id,
            cur.class.as_str(),
            c.class.as_str()
        ));
    }
    for f in Field::ALL {
        let file_changed = last.is_none_or(|l| !same_declaration(f, l, c));
        let cur_agrees = if f == Field::Credentials {
            cur.username == c.username && cur.password.verify(c.password.expose().as_bytes())
        } else {
            agrees(f, &declared, cur)
        };
        if cur_agrees {
            continue;
        }
        if file_changed {
            if last.is_some_and(|l| !agrees(f, l, cur)) {
                out.notes.push(format!(
                    "cluster {}: the file's new {} replaces the value set through the admin API",
                    c.id,
                    f.name()
                ));
            }
            out.cmds.push(command(f, c, &declared, now, grace));
        } else {
            out.notes.push(format!(
                "cluster {}: {} was changed through the admin API and differs from the file; the API's value stays until the file changes it",
                c.id,
                f.name()
            ));
        }
    }
    Ok(declared)
}

/// The command that sets field `f` of cluster `c` to the file's value.
fn command(
    f: Field,
    c: &ClusterConfig,
    d: &DeclaredCluster,
    now: Millis,
    grace: Duration,
) -> Command {
    let id = c.id.clone();
    match f {
        Field::Plan => Command::ChangePlan {
            id,
            plan: c.plan.clone(),
        },
        Field::Mode => Command::SetMode {
            id,
            mode: c.mode,
            reason: None,
            until: None,
        },
        Field::Credentials => Command::SetCredentials {
            id,
            username: c.username.clone(),
            password: d.password.clone(),
            grace_until: (!grace.is_zero()).then(|| now + grace.as_millis() as Millis),
        },
        Field::Address => Command::SetAddress {
            id,
            hostname: c.hostname.clone(),
            region: c.region.clone(),
        },
        Field::Upstream => Command::SetUpstream {
            id,
            upstream: c.upstream.clone(),
        },
    }
}

#[cfg(test)]
#[path = "seed_tests.rs"]
mod tests;
