//! Elasticsearch 7.10's documented date-math index names (the reference's table, at
//! 2024-03-22T12:00:00Z), the grammar's corners, and what the edge refuses.

use super::*;

/// 2024-03-22T12:00:00Z, the instant of Elasticsearch's documentation table.
const NOW: i64 = 1_711_108_800_000;

fn r(expr: &str) -> Result<String, u16> {
    resolve(expr.as_bytes(), NOW).map_err(|e| e.body().status)
}

#[test]
fn the_documented_examples() {
    for (expr, want) in [
        ("<logstash-{now/d}>", "logstash-2024.03.22"),
        ("<logstash-{now/M}>", "logstash-2024.03.01"),
        ("<logstash-{now/M{yyyy.MM}}>", "logstash-2024.03"),
        ("<logstash-{now/M-1M{yyyy.MM}}>", "logstash-2024.02"),
        (
            "<logstash-{now/d{yyyy.MM.dd|+12:00}}>",
            "logstash-2024.03.23",
        ),
        ("<elastic\\{ON\\}-{now/M}>", "elastic{ON}-2024.03.01"),
    ] {
        assert_eq!(r(expr).as_deref(), Ok(want), "{expr}");
    }
}

#[test]
fn math_formats_and_zones() {
    for (expr, want) in [
        ("<{now/d}>", "2024.03.22"),
        ("<a-{now}>", "a-2024.03.22"),
        ("<a-{now+1d}>", "a-2024.03.23"),
        ("<a-{now-1y/y{uuuu}}>", "a-2023"),
        ("<a-{now/w}>", "a-2024.03.18"),
        ("<a-{now+13h{yyyy.MM.dd-HH}}>", "a-2024.03.23-01"),
        ("<a-{now/h{HH.mm.ss}}>", "a-12.00.00"),
        ("<a-{now-30m/m{H-m}}>", "a-11-30"),
        ("<a-{now/d{yy}}>", "a-24"),
        ("<a-{now/d{yyyy'w'MM}}>", "a-2024w03"),
        ("<a-{now/d{yyyy''MM}}>", "a-2024'03"),
        ("<a-{now{yyyy.MM.dd|-13:00}}>", "a-2024.03.21"),
        ("<a-{now{HH|+0530}}>", "a-17"),
        ("<a-{now{HH|Z}}>", "a-12"),
        ("<a-{now/d}-{now/M{MM}}>", "a-2024.03.22-03"),
        ("<x\\\\y-{now/d}>", "refused"),
    ] {
        let got = r(expr).unwrap_or_else(|s| {
            if s == 400 {
                "refused".into()
            } else {
                s.to_string()
            }
        });
        assert_eq!(got, want, "{expr}");
    }
}

// attack: quoted literals, nested brackets, escapes, zones and numbers the edge cannot read
#[test]
fn what_is_refused_with_400() {
    for expr in [
        "<logs-{now/d{yyyy.MM.dd'*'}}>",
        "<logs-{now/d{'*'}}>",
        "<{now/d{'_all'}}>",
        "<{now/d{'-x'}}>",
        "<{now/d{'.'}}>",
        "<{now/d{'..'}}>",
        "<{now/d{'a:b'}}>",
        "<{now/d{'a/b'}}>",
        "<<logs-{now/d}>>",
        "<logs-{now/d}",
        "<logs-{now/d{yyyy}>",
        "<logs-{now/d}}>",
        "<logs-{{now/d}}>",
        "<logs-{now/d{}}>",
        "<logs-{now/d{yyyy|Europe/Paris}}>",
        "<logs-{now/d{yyyy|+25:00}}>",
        "<logs-{now/d{EEE}}>",
        "<logs-{now/d{yyyy[MM]}}>",
        "<logs-{now/2d}>",
        "<logs-{now*1d}>",
        "<logs-{now+1x}>",
        "<logs-{now+1}>",
        "<logs-{now+99999999999d}>",
        "<logs-{now+2147483647y}>",
        "<logs-{2024.01.01||+1d}>",
        "<logs-{now/d{yyyy'}}>",
        "<>",
        "<{now/d{''}}-\\>",
        "<logs-{now/d{yyyy|}}>",
    ] {
        assert_eq!(r(expr), Err(400), "{expr}");
    }
}

#[test]
fn lists_resolve_item_by_item() {
    let got = resolve_list(b"a,<b-{now/d}>,-<c-{now/M{MM}}>,*", NOW).unwrap();
    assert_eq!(
        got.as_deref(),
        Some(&b"a,b-2024.03.22,-<c-{now/M{MM}}>,*"[..])
    );
    assert_eq!(resolve_list(b"a,b*", NOW).unwrap(), None);
    assert!(resolve_list(b"a,<b-{now/d{'*'}}>", NOW).is_err());
}
