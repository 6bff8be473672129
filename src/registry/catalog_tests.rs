//! The catalog's commands, one table of refusals, and the guarantee that a refused command
//! leaves the catalog as it was.

use super::*;

fn no_usage(_: &str) -> Usage {
    Usage::default()
}

/// A context at `now` where every cluster uses nothing.
pub(crate) fn ctx(now: Millis) -> Ctx<'static> {
    Ctx {
        now,
        usage: &no_usage,
    }
}

pub(crate) use crate::registry::samples::{plan, record};

/// A catalog of these plans and clusters.
pub(crate) fn with(plans: &[PlanRecord], clusters: &[ClusterRecord]) -> Catalog {
    let cmds: Vec<Command> = plans
        .iter()
        .cloned()
        .map(Command::PutPlan)
        .chain(
            clusters
                .iter()
                .cloned()
                .map(|c| Command::CreateCluster(Box::new(c))),
        )
        .collect();
    apply_all(&Catalog::default(), &cmds, &ctx(0)).unwrap()
}

fn base() -> Catalog {
    with(
        &[plan("small", 2), plan("big", 8)],
        &[record("a", "small"), record("b", "small")],
    )
}

fn mode(id: &str, m: Mode, until: Option<Millis>) -> Command {
    Command::SetMode {
        id: id.into(),
        mode: m,
        reason: Some("why".into()),
        until,
    }
}

// Every refusal leaves the catalog exactly as it was.
#[test]
fn refusals_name_their_cause_and_change_nothing() {
    let cat = base();
    let before = cat.clone();
    let mut taken = record("c", "small");
    taken.hostname = "a".into();
    let mut user_taken = record("d", "small");
    user_taken.username = "buser".into();
    let mut bad_label = record("e", "small");
    bad_label.region = "Not A Label".into();
    let table: Vec<(Command, &str)> = vec![
        (
            Command::CreateCluster(Box::new(record("a", "small"))),
            "already exists",
        ),
        (
            Command::CreateCluster(Box::new(record("x", "gold"))),
            "no plan `gold` (the plans: big, small)",
        ),
        (
            Command::CreateCluster(Box::new(taken)),
            "already the address of cluster `a`",
        ),
        (
            Command::CreateCluster(Box::new(user_taken)),
            "already used by cluster `b`",
        ),
        (Command::CreateCluster(Box::new(bad_label)), "one DNS label"),
        (
            Command::ChangePlan {
                id: "zz".into(),
                plan: "big".into(),
            },
            "no cluster `zz`",
        ),
        (
            Command::ChangePlan {
                id: "a".into(),
                plan: "gold".into(),
            },
            "no plan `gold`",
        ),
        (mode("a", Mode::ReadOnly, Some(10)), "maintenance only"),
        (mode("a", Mode::Maintenance, Some(0)), "in the past"),
        (
            Command::RemovePlan {
                name: "small".into(),
            },
            "cluster `a` is on it",
        ),
        (
            Command::SetCredentials {
                id: "a".into(),
                username: "buser".into(),
                password: PasswordHash::new(b"x"),
                grace_until: None,
            },
            "already used by cluster `b`",
        ),
    ];
    for (cmd, want) in table {
        let e = apply(&cat, &cmd, &ctx(5)).unwrap_err();
        assert!(e.to_string().contains(want), "{cmd:?}: {e}");
    }
    assert_eq!(cat, before, "untouched (apply works on a copy)");
}

// spec 1.8: a plan change takes effect at once, unless usage exceeds the new plan
#[test]
fn a_downgrade_that_usage_exceeds_is_refused_with_the_numbers() {
    let cat = base();
    let eleven = |_: &str| Usage {
        shards: 11,
        bytes: 500,
        ..Usage::default()
    };
    let c = Ctx {
        now: 1,
        usage: &eleven,
    };
    let mut tight = plan("tight", 1);
    tight.shards = 10;
    let mut roomy = plan("big", 8);
    roomy.shards = 20;
    let cat = apply_all(
        &cat,
        &[Command::PutPlan(tight), Command::PutPlan(roomy)],
        &c,
    )
    .unwrap();
    let e = apply(
        &cat,
        &Command::ChangePlan {
            id: "a".into(),
            plan: "tight".into(),
        },
        &c,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "cluster `a` cannot move to plan `tight`: 11 shards in use, the plan allows 10"
    );
    assert!(matches!(
        e,
        Refusal::Downgrade {
            shards_in_use: 11,
            shards_allowed: 10,
            ..
        }
    ));
    let ok = apply(
        &cat,
        &Command::ChangePlan {
            id: "a".into(),
            plan: "big".into(),
        },
        &c,
    )
    .unwrap();
    assert_eq!(ok.clusters["a"].plan, "big");
    assert_eq!(
        ok.clusters["a"].version, 2,
        "every change bumps the version"
    );
}

// spec 5.4: rotation keeps the old pair for the grace only
#[test]
fn rotation_keeps_the_old_pair_until_the_grace_ends() {
    let cat = base();
    let rotate = |grace: Option<Millis>| Command::SetCredentials {
        id: "a".into(),
        username: "anew".into(),
        password: PasswordHash::new(b"newpass"),
        grace_until: grace,
    };
    let now = apply(&cat, &rotate(None), &ctx(100)).unwrap();
    assert!(now.clusters["a"].previous.is_none());
    assert!(
        now.by_username("auser").is_none(),
        "the old username is free"
    );
    assert_eq!(now.by_username("anew").unwrap().id, "a");
    let later = apply(&cat, &rotate(Some(220)), &ctx(100)).unwrap();
    let prev = later.clusters["a"].previous.clone().unwrap();
    assert_eq!((prev.username.as_str(), prev.until), ("auser", 220));
    assert!(prev.password.verify(b"apass"));
}

// spec 3: deprovisioning leaves a tombstone whose id is never reused by the API
#[test]
fn destroy_leaves_a_tombstone_and_frees_the_address() {
    let cat = apply(&base(), &Command::Destroy { id: "a".into() }, &ctx(50)).unwrap();
    let a = &cat.clusters["a"];
    assert_eq!(
        (a.state(), a.destroyed_at, a.purged),
        ("destroyed", Some(50), false)
    );
    assert!(cat.by_host("a.r1").is_none() && cat.by_username("auser").is_none());
    for cmd in [
        mode("a", Mode::Normal, None),
        Command::Destroy { id: "a".into() },
    ] {
        assert_eq!(
            apply(&cat, &cmd, &ctx(51)).unwrap_err(),
            Refusal::Destroyed("a".into())
        );
    }
    let again = Command::CreateCluster(Box::new(record("a", "small")));
    assert!(
        apply(&cat, &again, &ctx(52)).is_err(),
        "not while its indices remain"
    );
    let purged = apply(&cat, &Command::MarkPurged { id: "a".into() }, &ctx(53)).unwrap();
    assert!(
        apply(&purged, &again, &ctx(54)).is_err(),
        "never through the API"
    );
    let mut from_file = record("a", "small");
    from_file.source = Source::File;
    let revived = apply(
        &purged,
        &Command::CreateCluster(Box::new(from_file)),
        &ctx(55),
    )
    .unwrap();
    assert_eq!(revived.clusters["a"].state(), "running");
}

#[test]
fn maintenance_with_until_and_reason() {
    let cat = apply(&base(), &mode("a", Mode::Maintenance, Some(900)), &ctx(100)).unwrap();
    let a = &cat.clusters["a"];
    assert_eq!(a.mode, Mode::Maintenance);
    assert_eq!(a.mode_until, Some(900));
    assert_eq!(a.mode_reason.as_deref(), Some("why"));
}

// issue 12: the ladder's step sets the overage and its mode; an operator's mode during an
// overage takes the mode away from the ladder
#[test]
fn overage_steps_and_the_operators_mode() {
    use crate::policy::ladder::{Overage, Step};
    let cat = base();
    let over = Overage {
        since: 10,
        step: Step::ReadOnly,
        step_at: 20,
        extreme: false,
        owns_mode: true,
        read_only_at: 20,
        disabled_at: 30,
        disk_bytes: 2000,
        disk_allowed: 1000,
        shards: 1,
        shards_allowed: 10,
        extreme_factor: 2,
    };
    let step = Command::SetOverage {
        id: "a".into(),
        overage: Some(over.clone()),
        mode: Some((Mode::ReadOnly, Some("usage over the plan".into()))),
    };
    assert_eq!(step.action(), "cluster.overage");
    let next = apply(&cat, &step, &ctx(20)).unwrap();
    let a = &next.clusters["a"];
    assert_eq!(
        (a.mode, a.mode_reason.as_deref()),
        (Mode::ReadOnly, Some("usage over the plan"))
    );
    assert_eq!(a.overage.as_ref(), Some(&over));
    assert_eq!(a.version, 2);
    let d = crate::registry::diff::diff(&cat, &next);
    assert_eq!(d.records, ["a"]);
    // The operator sets a mode: the overage stays, the ladder no longer owns the mode.
    let next = apply(&next, &mode("a", Mode::Normal, None), &ctx(21)).unwrap();
    let a = &next.clusters["a"];
    assert_eq!(a.mode, Mode::Normal);
    assert!(!a.overage.as_ref().unwrap().owns_mode);
    // A step without a mode changes only the overage.
    let end = Command::SetOverage {
        id: "a".into(),
        overage: None,
        mode: None,
    };
    let next = apply(&next, &end, &ctx(22)).unwrap();
    assert_eq!(
        (next.clusters["a"].mode, next.clusters["a"].overage.clone()),
        (Mode::Normal, None)
    );
}
