//! Elasticsearch 7.10's answers to parameter values, worked out by reading its source
//! (`TimeValue`, `ByteSizeValue`, `Booleans`, `RestRequest.paramAsInt`,
//! `RestSearchAction`, `SearchService.checkKeepAliveLimit`, `Strings.splitStringByComma
//! ToArray`): the reference that this crate's table tests, the edge-versus-engine
//! differential test (`tests/it`) and the `params` fuzz target check the readers against.
//!
//! Each row is a value as the parameter's reader receives it (decoded), and what
//! Elasticsearch does with it: reads it (the canonical form this crate writes for it), or
//! refuses it (the start of its reason). [`Es::Deviation`] marks the values Elasticsearch
//! reads and this service refuses on purpose (Unicode digits, hexadecimal doubles).

/// What Elasticsearch 7.10 answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Es {
    /// Read; the canonical form of the value read.
    Reads(&'static str),
    /// Refused with 400; the reason starts with this.
    Refuses(&'static str),
    /// Elasticsearch reads it (as the value given); this service refuses it.
    Deviation(&'static str),
}

/// Time values of parameter `scroll`.
pub const TIME: &[(&str, Es)] = &[
    ("1h", Es::Reads("1h")),
    ("1H", Es::Reads("1h")),
    ("1m", Es::Reads("1m")),
    ("1M", Es::Refuses("failed to parse setting [scroll] with value [1M] as a time value: unit is missing or unrecognized")),
    (" 1m", Es::Reads("1m")),
    ("1m ", Es::Refuses("failed to parse setting [scroll] with value [1m ] as a time value: unit is missing or unrecognized")),
    ("1 h", Es::Reads("1h")),
    ("1 d ", Es::Reads("1d")),
    ("\t1s", Es::Reads("1s")),
    ("1s\u{0}", Es::Reads("1s")),
    ("+1h", Es::Reads("1h")),
    ("-1", Es::Reads("-1")),
    ("-01", Es::Reads("-1")),
    ("-001", Es::Reads("-1")),
    ("-1ms", Es::Reads("-1")),
    ("-1s", Es::Reads("-1s")),
    ("-5m", Es::Reads("-5m")),
    ("0", Es::Reads("0ms")),
    ("000", Es::Reads("0ms")),
    ("0s", Es::Reads("0s")),
    ("-0", Es::Refuses("failed to parse setting [scroll] with value [-0] as a time value: unit is missing or unrecognized")),
    ("1", Es::Refuses("failed to parse setting [scroll] with value [1] as a time value: unit is missing or unrecognized")),
    ("", Es::Refuses("failed to parse setting [scroll] with value [] as a time value: unit is missing or unrecognized")),
    ("-", Es::Refuses("failed to parse setting [scroll] with value [-] as a time value")),
    ("abc", Es::Refuses("failed to parse setting [scroll] with value [abc] as a time value")),
    ("1w", Es::Refuses("failed to parse setting [scroll] with value [1w] as a time value")),
    ("1y", Es::Refuses("failed to parse setting [scroll] with value [1y] as a time value")),
    ("1MS", Es::Reads("1ms")),
    ("10nanos", Es::Reads("10nanos")),
    ("10NANOS", Es::Reads("10nanos")),
    ("10micros", Es::Reads("10micros")),
    ("30s", Es::Reads("30s")),
    ("2d", Es::Reads("2d")),
    ("150000000000000d", Es::Reads("150000000000000d")),
    ("9223372036854775807ms", Es::Reads("9223372036854775807ms")),
    ("-9223372036854775808ms", Es::Reads("-9223372036854775808ms")),
    // past a long: Double.parseDouble reads it, so Elasticsearch calls it fractional
    ("9223372036854775808ms", Es::Refuses("failed to parse [9223372036854775808ms], fractional time values are not supported")),
    ("1.5h", Es::Refuses("failed to parse [1.5h], fractional time values are not supported")),
    ("1e3s", Es::Refuses("failed to parse [1e3s], fractional time values are not supported")),
    ("1dd", Es::Refuses("failed to parse [1dd], fractional time values are not supported")),
    ("1fs", Es::Refuses("failed to parse [1fs], fractional time values are not supported")),
    (".5s", Es::Refuses("failed to parse [.5s], fractional time values are not supported")),
    ("h", Es::Refuses("failed to parse [h]")),
    ("s", Es::Refuses("failed to parse [s]")),
    ("--1s", Es::Refuses("failed to parse [--1s]")),
    ("+-1s", Es::Refuses("failed to parse [+-1s]")),
    ("0x10s", Es::Refuses("failed to parse [0x10s]")),
    ("1_000s", Es::Refuses("failed to parse [1_000s]")),
    ("NaNs", Es::Refuses("failed to parse [NaNs]")),
    ("1 000s", Es::Refuses("failed to parse [1 000s]")),
    ("\u{661}s", Es::Deviation("1s")),
    ("1\u{FF53}", Es::Refuses("failed to parse")),
];

/// Keep-alives of a scroll or point in time against the default `search.max_keep_alive`
/// (24h): `None` passes, `Some` is the reason of the 400.
pub const KEEP_ALIVE: &[(&str, Option<&str>)] = &[
    ("24h", None),
    ("1d", None),
    ("86400000ms", None),
    ("1440m", None),
    ("-1", None),
    ("0", None),
    ("86400001ms", Some("Keep alive for request (1d) is too large. It must be less than (1d). This limit can be set by changing the [search.max_keep_alive] cluster level setting.")),
    ("1441m", Some("Keep alive for request (1d) is too large. It must be less than (1d).")),
    ("25h", Some("Keep alive for request (1d) is too large.")),
    ("36h", Some("Keep alive for request (1.5d) is too large.")),
    ("2d", Some("Keep alive for request (2d) is too large.")),
    ("150000000000000d", Some("Keep alive for request (106751.9d) is too large.")),
    ("9223372036854775807nanos", Some("Keep alive for request (106751.9d) is too large.")),
];

/// Byte sizes of setting `x`.
pub const BYTES: &[(&str, Es)] = &[
    ("1kb", Es::Reads("1kb")),
    ("1k", Es::Reads("1kb")),
    ("1KB", Es::Reads("1kb")),
    ("1 kb", Es::Reads("1kb")),
    ("1b", Es::Reads("1b")),
    ("5mb", Es::Reads("5mb")),
    ("2g", Es::Reads("2gb")),
    ("3tb", Es::Reads("3tb")),
    ("1pb", Es::Reads("1pb")),
    ("0", Es::Reads("0")),
    ("0b", Es::Reads("0")),
    ("-1", Es::Reads("-1")),
    ("-1b", Es::Reads("-1")),
    ("1.5kb", Es::Reads("1536b")),
    ("0.5m", Es::Reads("524288b")),
    ("8388607tb", Es::Reads("8388607tb")),
    ("8388608tb", Es::Refuses("failed to parse setting [x] with value [8388608tb] as a size in bytes")),
    ("-1kb", Es::Refuses("failed to parse setting [x] with value [-1kb] as a size in bytes")),
    ("-2b", Es::Refuses("Values less than -1 bytes are not supported: -2b")),
    ("1", Es::Refuses("failed to parse setting [x] with value [1] as a size in bytes: unit is missing or unrecognized")),
    ("", Es::Refuses("failed to parse setting [x] with value [] as a size in bytes: unit is missing")),
    ("xb", Es::Refuses("For input string: \"x\"")),
    ("1.5b", Es::Refuses("For input string: \"1.5\"")),
    ("xkb", Es::Refuses("failed to parse [xkb]")),
    ("0x1p3kb", Es::Deviation("8192b")),
];

/// Boolean parameters: `Reads("true"|"false")`, or `Reads("")` for a value that leaves
/// the endpoint's default.
pub const BOOLEAN: &[(&str, Es)] = &[
    ("", Es::Reads("true")),
    ("true", Es::Reads("true")),
    ("false", Es::Reads("false")),
    (" ", Es::Reads("")),
    ("\t", Es::Reads("")),
    (
        "TRUE",
        Es::Refuses("Failed to parse value [TRUE] as only [true] or [false] are allowed."),
    ),
    (
        "False",
        Es::Refuses("Failed to parse value [False] as only [true] or [false] are allowed."),
    ),
    (
        " true",
        Es::Refuses("Failed to parse value [ true] as only [true] or [false] are allowed."),
    ),
    (
        "1",
        Es::Refuses("Failed to parse value [1] as only [true] or [false] are allowed."),
    ),
    (
        "yes",
        Es::Refuses("Failed to parse value [yes] as only [true] or [false] are allowed."),
    ),
];

/// `size` of a search's URL: `Reads("")` for "not given" (`-1`).
pub const WINDOW: &[(&str, Es)] = &[
    ("10", Es::Reads("10")),
    ("0", Es::Reads("0")),
    ("+5", Es::Reads("5")),
    ("-1", Es::Reads("")),
    ("2147483647", Es::Reads("2147483647")),
    (
        "2147483648",
        Es::Refuses("Failed to parse int parameter [size] with value [2147483648]"),
    ),
    (
        "-2",
        Es::Refuses("[size] parameter cannot be negative, found [-2]"),
    ),
    (
        "-2147483648",
        Es::Refuses("[size] parameter cannot be negative, found [-2147483648]"),
    ),
    (
        "-2147483649",
        Es::Refuses("Failed to parse int parameter [size] with value [-2147483649]"),
    ),
    (
        " 5",
        Es::Refuses("Failed to parse int parameter [size] with value [ 5]"),
    ),
    (
        "",
        Es::Refuses("Failed to parse int parameter [size] with value []"),
    ),
    (
        "1e3",
        Es::Refuses("Failed to parse int parameter [size] with value [1e3]"),
    ),
    ("\u{661}", Es::Deviation("1")),
];

/// Comma lists: the parts, joined with `|` for the table.
pub const LISTS: &[(&str, &str)] = &[
    ("a,b", "a|b"),
    ("a,,b", "a||b"),
    ("a,", "a"),
    ("a,,", "a"),
    (",a", "|a"),
    (",", ""),
    ("", ""),
    (" a , b", " a | b"),
];
