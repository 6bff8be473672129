use super::*;

const T0: Millis = 1_900_000_000_000;
const LIMITS: Limits = Limits {
    disk: 1000,
    shards: 10,
};

fn used(bytes: u64, shards: u64) -> Usage {
    Usage {
        indices: 1,
        shards,
        primaries: shards,
        docs: 1,
        bytes,
    }
}

fn at(days: i64) -> Millis {
    T0 + days * DAY_MS
}

/// The overage after a reading at `now` from `current` (panics when nothing moved).
fn step(current: Option<&Overage>, mode: Mode, u: Usage, now: Millis) -> Moved {
    evaluate(current, mode, u, LIMITS, Settings::default(), now).expect("a move")
}

fn overage(step: Step, owns: bool) -> Overage {
    Overage {
        since: T0,
        step,
        step_at: T0,
        extreme: false,
        owns_mode: owns,
        read_only_at: at(10),
        disabled_at: at(25),
        disk_bytes: 1500,
        disk_allowed: 1000,
        shards: 2,
        shards_allowed: 10,
        extreme_factor: 2,
    }
}

/// A row of the transition table: name, the overage so far, the mode, the reading, the
/// time, and the step and mode the reading leads to (`None`: nothing changes).
type Row<'a> = (
    &'static str,
    Option<&'a Overage>,
    Mode,
    Usage,
    Millis,
    Option<(Option<Step>, Option<Mode>)>,
);

// issue 12: every transition of the ladder, from tables (spec 3 "usage overage")
#[test]
fn transitions() {
    use Mode::*;
    let n = overage(Step::Notice, true);
    let ro = overage(Step::ReadOnly, true);
    let dis = overage(Step::Disabled, true);
    let ext = Overage {
        extreme: true,
        ..dis.clone()
    };
    #[rustfmt::skip]
    let table: Vec<Row<'_>> = vec![
        // name                      current    mode      usage              now         -> step, mode set
        ("under, nothing to do",     None,      Normal,   used(1000, 10),    at(0),      None),
        ("over disk: notice",        None,      Normal,   used(1001, 1),     at(0),      Some((Some(Step::Notice), None))),
        ("over shards: notice",      None,      Normal,   used(10, 11),      at(0),      Some((Some(Step::Notice), None))),
        ("notice, grace not over",   Some(&n),  Normal,   used(1500, 1),     at(10) - 1, None),
        ("grace over: read-only",    Some(&n),  Normal,   used(1500, 1),     at(10),     Some((Some(Step::ReadOnly), Some(ReadOnly)))),
        ("late reading: disabled",   Some(&n),  Normal,   used(1500, 1),     at(25),     Some((Some(Step::Disabled), Some(Disabled)))),
        ("read-only, not yet",       Some(&ro), ReadOnly, used(1500, 1),     at(25) - 1, None),
        ("second period: disabled",  Some(&ro), ReadOnly, used(1500, 1),     at(25),     Some((Some(Step::Disabled), Some(Disabled)))),
        ("disabled stays",           Some(&dis),Disabled, used(1500, 1),     at(90),     None),
        ("extreme: disabled at once",None,      Normal,   used(2001, 1),     at(0),      Some((Some(Step::Disabled), Some(Disabled)))),
        ("at 2x is not extreme",     None,      Normal,   used(2000, 1),     at(0),      Some((Some(Step::Notice), None))),
        ("notice turns extreme",     Some(&n),  Normal,   used(5000, 1),     at(1),      Some((Some(Step::Disabled), Some(Disabled)))),
        ("extreme falls to notice",  Some(&ext),Disabled, used(1500, 1),     at(1),      Some((Some(Step::Notice), Some(Normal)))),
        ("extreme falls to ro",      Some(&ext),Disabled, used(1500, 1),     at(11),     Some((Some(Step::ReadOnly), Some(ReadOnly)))),
        ("notice cleared",           Some(&n),  Normal,   used(1000, 10),    at(3),      Some((None, None))),
        ("read-only cleared",        Some(&ro), ReadOnly, used(10, 1),       at(12),     Some((None, Some(Normal)))),
        ("disabled cleared",         Some(&dis),Disabled, used(0, 0),        at(40),     Some((None, Some(Normal)))),
    ];
    for (name, current, mode, u, now, want) in table {
        let got = evaluate(current, mode, u, LIMITS, Settings::default(), now);
        let got = got.map(|m| (m.overage.map(|o| o.step), m.mode.map(|(m, _)| m)));
        assert_eq!(got, want, "{name}");
    }
}

// issue 12: an operator's mode is never overridden by the ladder; its steps still count
#[test]
fn an_operators_mode_is_never_overridden() {
    use Mode::*;
    // Over while the operator has it in maintenance: the ladder records, never sets.
    let m = step(None, Maintenance, used(1500, 1), at(0));
    let o = m.overage.unwrap();
    assert!(!o.owns_mode);
    assert_eq!(m.mode, None);
    let m = step(Some(&o), Maintenance, used(1500, 1), at(10));
    assert_eq!(m.overage.as_ref().unwrap().step, Step::ReadOnly);
    assert_eq!(m.mode, None, "maintenance stays");
    // The operator set read-only during the overage (owns_mode cleared by the catalog):
    // back under the plan does not lift it.
    let ro = overage(Step::ReadOnly, false);
    let m = step(Some(&ro), ReadOnly, used(10, 1), at(12));
    assert_eq!((m.overage, m.mode), (None, None));
    // The operator set normal on a disabled cluster: it stays normal for this overage.
    let dis = overage(Step::Disabled, false);
    assert_eq!(
        evaluate(
            Some(&dis),
            Normal,
            used(1500, 1),
            LIMITS,
            Settings::default(),
            at(60)
        ),
        None
    );
    let extreme = step(
        Some(&overage(Step::Notice, false)),
        Normal,
        used(9000, 1),
        at(1),
    );
    assert_eq!(extreme.mode, None);
}

// issue 12: the ladder moves read-only then disabled, and back to normal by itself
#[test]
fn a_whole_overage_and_its_reset() {
    let s = Settings::default();
    let mut mode = Mode::Normal;
    let mut cur: Option<Overage> = None;
    let mut seen = Vec::new();
    for (day, bytes) in [
        (0, 1500),
        (5, 1600),
        (10, 1600),
        (20, 1700),
        (25, 1700),
        (26, 900),
    ] {
        if let Some(m) = evaluate(cur.as_ref(), mode, used(bytes, 1), LIMITS, s, at(day)) {
            if let Some((next, _)) = &m.mode {
                mode = *next;
            }
            seen.push((day, m.overage.as_ref().map(|o| o.step), mode));
            cur = m.overage;
        }
    }
    assert_eq!(
        seen,
        vec![
            (0, Some(Step::Notice), Mode::Normal),
            (10, Some(Step::ReadOnly), Mode::ReadOnly),
            (25, Some(Step::Disabled), Mode::Disabled),
            (26, None, Mode::Normal),
        ]
    );
    // Over again later: a new overage, a new grace period.
    let m = step(None, mode, used(1500, 1), at(40));
    let o = m.overage.unwrap();
    assert_eq!(
        (o.since, o.read_only_at, o.disabled_at),
        (at(40), at(50), at(65))
    );
}

// issue 12: per-plan settings
#[test]
fn settings_are_the_plans() {
    let s = Settings {
        grace_ms: 0,
        disable_after_ms: 3 * DAY_MS,
        extreme_factor: 3,
    };
    let m = evaluate(None, Mode::Normal, used(2500, 1), LIMITS, s, at(0)).unwrap();
    assert_eq!(m.overage.as_ref().unwrap().step, Step::ReadOnly, "no grace");
    let o = m.overage.unwrap();
    let m = evaluate(Some(&o), Mode::ReadOnly, used(2500, 1), LIMITS, s, at(3)).unwrap();
    assert_eq!(m.mode.unwrap().0, Mode::Disabled);
    let m = evaluate(None, Mode::Normal, used(3001, 1), LIMITS, s, at(0)).unwrap();
    assert!(m.overage.unwrap().extreme, "above 3x");
    // A factor of 0 counts as 1; huge limits do not overflow.
    let s = Settings {
        extreme_factor: 0,
        ..Settings::default()
    };
    let m = evaluate(None, Mode::Normal, used(1001, 1), LIMITS, s, at(0)).unwrap();
    assert!(m.overage.unwrap().extreme);
    let big = Limits {
        disk: u64::MAX / 2 + 1,
        shards: 1,
    };
    let m = evaluate(
        None,
        Mode::Normal,
        used(u64::MAX, 1),
        big,
        Settings::default(),
        i64::MAX - 1,
    );
    assert!(!m.unwrap().overage.unwrap().extreme);
}

// issue 12: the 403 reason says what is over, since when, and what comes next
#[test]
fn reasons_name_the_numbers_and_the_dates() {
    let m = step(
        Some(&overage(Step::Notice, true)),
        Mode::Normal,
        used(1500, 12),
        at(10),
    );
    let (mode, why) = m.mode.unwrap();
    assert_eq!(mode, Mode::ReadOnly);
    let why = why.unwrap();
    assert_eq!(
        why,
        "usage over the plan since 2030-03-17T17:46:40Z (12 shards in use, the plan allows 10; \
         1500 bytes of disk in use, the plan allows 1000): read-only since 2030-03-27T17:46:40Z, \
         disabled from 2030-04-11T17:46:40Z unless usage is back under the plan"
    );
    let m = step(None, Mode::Normal, used(2500, 1), at(0));
    let why = m.mode.unwrap().1.unwrap();
    assert!(
        why.starts_with(
            "usage far over the plan (2500 bytes of disk in use, the plan allows 1000: more \
             than 2x its disk): disabled at once on 2030-03-17T17:46:40Z"
        ),
        "{why}"
    );
    let notice = reason(&overage(Step::Notice, true));
    assert!(
        notice.contains("read-only from 2030-03-27T17:46:40Z"),
        "{notice}"
    );
}
