use proptest::prelude::*;

use super::*;

const DAY: i64 = 86_400;

fn ms(month: &str, day: i64, secs: i64) -> Millis {
    (Month::parse(month).unwrap().start() + (day - 1) * DAY + secs) * 1000
}

fn row(at: Millis, plan: Option<&str>, price: u64) -> PriceChange {
    PriceChange {
        at,
        plan: plan.map(str::to_string),
        monthly_price_cents: price,
    }
}

fn summary(inv: &Invoice) -> Vec<(&'static str, &str, u64, i64)> {
    inv.lines
        .iter()
        .map(|l| (l.kind.as_str(), l.plan.as_str(), l.seconds, l.amount_cents))
        .collect()
}

#[test]
fn months_parse_and_have_their_own_length() {
    let m = Month::parse("2030-03").unwrap();
    assert_eq!(m.to_string(), "2030-03");
    assert_eq!(m.start(), 1_898_553_600, "2030-03-01T00:00:00Z");
    assert_eq!(m.seconds(), 31 * 86_400);
    assert_eq!(
        Month::parse("2028-02").unwrap().seconds(),
        29 * 86_400,
        "leap year"
    );
    assert_eq!(Month::parse("2030-02").unwrap().seconds(), 28 * 86_400);
    assert_eq!(
        Month::parse("2030-12").unwrap().next().to_string(),
        "2031-01"
    );
    assert_eq!(Month::of(m.start() * 1000), m);
    assert_eq!(Month::of(m.end() * 1000 - 1), m);
    assert_eq!(Month::of(m.end() * 1000).to_string(), "2030-04");
    for bad in [
        "2030-3",
        "2030-13",
        "2030-00",
        "203x-03",
        "2030/03",
        "1969-12",
        "",
        "2030-03-01",
    ] {
        assert!(Month::parse(bad).is_err(), "{bad}");
    }
}

// issue 12: each line is rounded once, half to even
#[test]
fn proration_rounds_half_to_even() {
    let s = 1000;
    assert_eq!(prorate(1, 500, s), 0, "0.5 -> 0");
    assert_eq!(prorate(3, 500, s), 2, "1.5 -> 2");
    assert_eq!(prorate(5, 500, s), 2, "2.5 -> 2");
    assert_eq!(prorate(7, 500, s), 4, "3.5 -> 4");
    assert_eq!(prorate(1, 501, s), 1, "0.501 -> 1");
    assert_eq!(prorate(1, 499, s), 0, "0.499 -> 0");
    assert_eq!(prorate(2900, s, s), 2900, "a whole month is the price");
    assert_eq!(prorate(2900, 0, s), 0);
    assert_eq!(
        prorate(u64::MAX, 31 * 86_400, 31 * 86_400),
        u64::MAX,
        "no overflow"
    );
}

// spec 1.8: provisioned mid-month, the rest of the month is charged (in advance)
#[test]
fn created_mid_month() {
    let m = Month::parse("2030-03").unwrap();
    let h = [row(ms("2030-03", 11, 0), Some("small"), 3100)];
    let inv = invoice(&h, m);
    assert_eq!(summary(&inv), vec![("charge", "small", 21 * 86_400, 2100)]);
    assert_eq!(inv.lines[0].from, m.start() + 10 * DAY);
    assert_eq!(inv.lines[0].to, m.end());
    assert_eq!(inv.total_cents, 2100);
    // the month before: nothing; the month after: the whole price
    assert!(invoice(&h, Month::parse("2030-02").unwrap())
        .lines
        .is_empty());
    let april = invoice(&h, m.next());
    assert_eq!(
        summary(&april),
        vec![("charge", "small", 30 * 86_400, 3100)]
    );
}

// spec 1.8: plan changes at any second, each interval priced to the second
#[test]
fn several_plan_changes() {
    let m = Month::parse("2030-03").unwrap(); // 2,678,400 s
    let h = [
        row(ms("2030-02", 20, 0), Some("small"), 3100),
        row(ms("2030-03", 5, 3600) + 999, Some("big"), 31_000), // ms dropped
        row(ms("2030-03", 20, 1), Some("small"), 3100),
        row(ms("2030-03", 20, 1) + 500, Some("big"), 31_000), // the same second
    ];
    let inv = invoice(&h, m);
    let first = 4 * DAY as u64 + 3600;
    let second = 15 * DAY as u64 - 3600 + 1;
    let last = 12 * DAY as u64 - 1;
    assert_eq!(
        summary(&inv),
        vec![
            ("charge", "small", first, 404),
            ("charge", "big", second, 14_958),
            ("charge", "small", 0, 0),
            ("charge", "big", last, 12_000),
        ]
    );
    assert_eq!(first + second + last, m.seconds(), "every second once");
    assert_eq!(
        inv.lines[0].from,
        m.start(),
        "from the first second of the month"
    );
    assert_eq!(inv.lines[1].from, inv.lines[0].to);
    assert_eq!(inv.lines[3].to, m.end());
    // hand-worked: 3100 * 349200 / 2678400 = 404.17 -> 404; 31000 * 1292401 / 2678400
    // = 14958.34 -> 14958; 31000 * 1036799 / 2678400 = 11999.99 -> 12000
    assert_eq!(inv.total_cents, 27_362);
}

// spec 1.8, issue 12: deprovisioned mid-month: the unused time is a credit line
#[test]
fn deprovisioned_mid_month() {
    let m = Month::parse("2030-04").unwrap(); // 30 days
    let h = [
        row(ms("2030-03", 3, 0), Some("small"), 3000),
        row(ms("2030-04", 10, 0), Some("big"), 30_000),
        row(ms("2030-04", 16, 0), None, 0),
    ];
    let inv = invoice(&h, m);
    assert_eq!(
        summary(&inv),
        vec![
            ("charge", "small", 9 * 86_400, 900),
            ("charge", "big", 21 * 86_400, 21_000),
            ("credit", "big", 15 * 86_400, -15_000),
        ]
    );
    assert_eq!(inv.lines[2].from, m.start() + 15 * DAY);
    assert_eq!(inv.lines[2].to, m.end());
    assert_eq!(inv.total_cents, 900 + 6000, "what it used");
    // after the month it was destroyed in: nothing
    assert!(invoice(&h, m.next()).lines.is_empty());
    // created and destroyed in one month
    let h = [
        row(ms("2030-04", 2, 0), Some("small"), 3000),
        row(ms("2030-04", 4, 0), None, 0),
    ];
    let inv = invoice(&h, m);
    assert_eq!(
        summary(&inv),
        vec![
            ("charge", "small", 29 * 86_400, 2900),
            ("credit", "small", 27 * 86_400, -2700)
        ]
    );
    // destroyed at the first second of a month: nothing that month
    let h = [
        row(ms("2030-03", 2, 0), Some("small"), 3000),
        row(ms("2030-04", 1, 0), None, 0),
    ];
    assert!(invoice(&h, m).lines.is_empty());
}

// A plan's price change starts a new line at the new price; a re-created id starts again.
#[test]
fn price_changes_and_recreation() {
    let m = Month::parse("2030-04").unwrap();
    let h = [
        row(ms("2030-04", 1, 0), Some("small"), 3000),
        row(ms("2030-04", 11, 0), Some("small"), 6000),
        row(ms("2030-04", 21, 0), None, 0),
        row(ms("2030-04", 26, 0), Some("small"), 6000),
    ];
    let inv = invoice(&h, m);
    assert_eq!(
        summary(&inv),
        vec![
            ("charge", "small", 10 * 86_400, 1000),
            ("charge", "small", 20 * 86_400, 4000),
            ("credit", "small", 10 * 86_400, -2000),
            ("charge", "small", 5 * 86_400, 1000),
        ]
    );
    assert_eq!(inv.total_cents, 4000);
}

// The property below, at its edge: a plan change within the month's first second leaves
// the plan held before the month without a line (it ran for no second of the month); the
// rest of the month is billed whole. (The property once expected a line for every row,
// which failed about once in 500 runs when a generated point fell in that second.)
#[test]
fn a_change_in_the_first_second_leaves_the_old_plan_no_line() {
    let m = Month::parse("2030-04").unwrap();
    let h = [
        row(m.start() * 1000 - 1, Some("p0"), 3000),
        row(m.start() * 1000 + 500, Some("p1"), 3000),
    ];
    let inv = invoice(&h, m);
    assert_eq!(summary(&inv), vec![("charge", "p1", 30 * 86_400, 3000)]);
    let h = [
        row(m.start() * 1000 - 1, Some("p0"), 3000),
        row(m.start() * 1000 + 1000, Some("p1"), 3000),
    ];
    let inv = invoice(&h, m);
    let lines = summary(&inv);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!((lines[0].1, lines[0].2), ("p0", 1));
}

/// A month and sorted change points inside it.
fn month_and_points() -> impl Strategy<Value = (Month, Vec<i64>)> {
    (2024i32..2040, 1u8..=12).prop_flat_map(|(y, mo)| {
        let m = Month::parse(&format!("{y:04}-{mo:02}")).unwrap();
        let (a, b) = (m.start() * 1000, m.end() * 1000);
        (Just(m), prop::collection::vec(a..b, 0..40)).prop_map(|(m, mut points)| {
            points.sort_unstable();
            (m, points)
        })
    })
}

proptest! {
    // issue 12: any set of change points inside a month sums to the full monthly price,
    // within the rounding bound (half a cent per line, so under a cent per line)
    #[test]
    fn any_change_points_sum_to_the_monthly_price(
        (m, points) in month_and_points(),
        price in 0u64..10_000_000,
    ) {
        let mut h = vec![row(m.start() * 1000 - 1, Some("p0"), price)];
        for (i, at) in points.iter().enumerate() {
            h.push(row(*at, Some(if i % 2 == 0 { "p1" } else { "p2" }), price));
        }
        let inv = invoice(&h, m);
        // p0 has a line unless the first change falls in the month's first second: then
        // p0 ran for no second of this month ([start, start) lies outside it).
        let p0_line = points.first().is_none_or(|&at| at.div_euclid(1000) > m.start());
        prop_assert_eq!(inv.lines.len(), points.len() + usize::from(p0_line));
        let seconds: u64 = inv.lines.iter().map(|l| l.seconds).sum();
        prop_assert_eq!(seconds, m.seconds());
        let off = (inv.total_cents - price as i64).unsigned_abs();
        prop_assert!(2 * off <= inv.lines.len() as u64, "{} lines, total {} vs {}", inv.lines.len(), inv.total_cents, price);
    }

    // With other prices and a deprovisioning: the total is within the rounding bound of the
    // exact price of the time used.
    #[test]
    fn any_history_is_within_rounding_of_the_exact_price(
        (m, points) in month_and_points(),
        prices in prop::collection::vec(0u64..1_000_000, 41),
        destroy in any::<bool>(),
    ) {
        let mut h = vec![row(m.start() * 1000, Some("p0"), prices[0])];
        for (i, at) in points.iter().enumerate() {
            h.push(row(*at, Some("p"), prices[i + 1]));
        }
        let end = if destroy && !points.is_empty() {
            let at = h.pop().unwrap().at;
            h.push(row(at, None, 0));
            at.div_euclid(1000)
        } else {
            m.end()
        };
        let inv = invoice(&h, m);
        // exact: sum of price * seconds over the time used, in cent-seconds per month-second
        let mut exact: u128 = 0;
        for w in h.windows(2).chain(std::iter::once(&h[h.len() - 1..])) {
            let (Some(_), from) = (w[0].plan.as_ref(), w[0].at.div_euclid(1000)) else { continue };
            let to = w.get(1).map_or(end, |n| n.at.div_euclid(1000)).max(from);
            exact += u128::from(w[0].monthly_price_cents) * (to - from) as u128;
        }
        let total = inv.total_cents as i128 * m.seconds() as i128;
        let off = (total - exact as i128).unsigned_abs();
        // each line is off by at most half a cent
        prop_assert!(2 * off <= inv.lines.len() as u128 * m.seconds() as u128);
        prop_assert_eq!(inv.total_cents, inv.lines.iter().map(|l| l.amount_cents).sum::<i64>());
    }
}
