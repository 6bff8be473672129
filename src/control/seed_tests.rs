//! The seed's three-way rule: the file's changes apply, the API's stay until the file
//! changes the same field, and every disagreement is noted.

use super::*;
use crate::policy::shards::Usage;
use crate::registry::catalog::{apply_all, Ctx};
use crate::registry::tests::config;

fn no_usage(_: &str) -> Usage {
    Usage::default()
}

/// Applies `plan`'s commands to `cat`.
fn run(cat: &Catalog, p: &SeedPlan) -> Catalog {
    let ctx = Ctx {
        now: 1,
        usage: &no_usage,
    };
    apply_all(cat, &p.cmds, &ctx).unwrap()
}

fn first() -> (Catalog, Declared) {
    let c = config("", 2);
    let p = plan(
        &c,
        &Declared::default(),
        &Catalog::default(),
        0,
        Duration::ZERO,
    )
    .unwrap();
    assert_eq!(p.cmds.len(), 2, "a plan and a cluster: {:?}", p.cmds);
    assert!(p.notes.is_empty());
    (run(&Catalog::default(), &p), p.declared)
}

fn set_mode(cat: &Catalog, m: Mode) -> Catalog {
    let cmd = Command::SetMode {
        id: "acme".into(),
        mode: m,
        reason: Some("api".into()),
        until: None,
    };
    run(
        cat,
        &SeedPlan {
            cmds: vec![cmd],
            ..SeedPlan::default()
        },
    )
}

#[test]
fn an_unchanged_file_changes_nothing() {
    let (cat, declared) = first();
    let p = plan(&config("", 2), &declared, &cat, 5, Duration::ZERO).unwrap();
    assert!(p.cmds.is_empty(), "{:?}", p.cmds);
    assert!(p.notes.is_empty());
    assert_eq!(
        p.declared.clusters["acme"].password,
        declared.clusters["acme"].password
    );
}

#[test]
fn the_files_changes_apply() {
    let (cat, declared) = first();
    let mut c = config("", 2);
    c.clusters[0].mode = Mode::ReadOnly;
    c.clusters[0].password = crate::config::Secret::new("rotated1");
    let p = plan(&c, &declared, &cat, 5, Duration::from_secs(2)).unwrap();
    let after = run(&cat, &p);
    let acme = &after.clusters["acme"];
    assert_eq!(acme.mode, Mode::ReadOnly);
    assert!(acme.password.verify(b"rotated1"));
    assert_eq!(
        acme.previous.as_ref().unwrap().until,
        2005,
        "the configured grace"
    );
    assert!(p.notes.is_empty());
}

// issue 11: file and API never disagree silently
#[test]
fn an_api_change_stays_until_the_file_changes_that_field() {
    let (cat, declared) = first();
    let cat = set_mode(&cat, Mode::Maintenance);
    let p = plan(&config("", 2), &declared, &cat, 5, Duration::ZERO).unwrap();
    assert!(p.cmds.is_empty(), "the API's mode stays: {:?}", p.cmds);
    assert_eq!(p.notes.len(), 1);
    assert!(
        p.notes[0].contains("mode was changed through the admin API"),
        "{}",
        p.notes[0]
    );
    assert_eq!(
        differs_from_file(&p.declared.clusters["acme"], &cat.clusters["acme"]),
        vec!["mode"]
    );
    // The file now changes the mode too: the file wins, and says so.
    let mut c = config("", 2);
    c.clusters[0].mode = Mode::Disabled;
    let p = plan(&c, &declared, &cat, 5, Duration::ZERO).unwrap();
    assert!(
        p.notes[0].contains("replaces the value set through the admin API"),
        "{:?}",
        p.notes
    );
    assert_eq!(run(&cat, &p).clusters["acme"].mode, Mode::Disabled);
}

#[test]
fn removed_from_the_file_is_destroyed_and_class_cannot_change() {
    let (cat, declared) = first();
    let mut c = config("", 2);
    c.clusters.clear();
    let p = plan(&c, &declared, &cat, 5, Duration::ZERO).unwrap();
    assert_eq!(p.cmds, vec![Command::Destroy { id: "acme".into() }]);
    let mut c = config("", 2);
    c.clusters[0].class = ClusterClass::SingleTenant;
    let e = plan(&c, &declared, &cat, 5, Duration::ZERO).unwrap_err();
    assert!(e.contains("class cannot change"), "{e}");
}
