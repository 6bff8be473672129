//! The endpoints the service does not expose (spec 1.4): one table, matched on the loose
//! view of the path ([`NormPath::loose`]: decoded until stable, `%2F` splits, dots resolved)
//! and case-insensitively, so that no encoding or case variant slips through. Matching only
//! ever errs towards blocking: a document id that happens to be `_snapshot` is refused too.
//!
//! Must not touch: reads/updates (see `classify`), modes, I/O.

use std::borrow::Cow;

use super::path::NormPath;
use crate::config::ClusterClass;
use crate::proto::Method;

/// Where a blocked token may appear.
#[derive(Debug, Clone, Copy)]
enum At {
    /// Any segment.
    Anywhere,
    /// Any segment after a first segment equal to this one.
    Under(&'static str),
    /// The segment right after a segment equal to this one.
    After(&'static str),
}

/// Which requests a rule applies to.
#[derive(Debug, Clone, Copy)]
enum When {
    Always,
    /// Any method but GET and HEAD.
    Writes,
    /// Multitenant clusters only.
    Multitenant,
}

/// One blocked endpoint: the token, where it must appear, when, and the endpoint name
/// reported in the 501 body.
#[derive(Debug, Clone, Copy)]
struct Rule {
    token: &'static str,
    at: At,
    when: When,
    name: &'static str,
}

const fn rule(token: &'static str, at: At, when: When, name: &'static str) -> Rule {
    Rule {
        token,
        at,
        when,
        name,
    }
}

use At::*;
use When::*;

/// The blocked list (spec 1.4). DELETE of everything is handled by [`delete_all`].
const RULES: &[Rule] = &[
    // node shutdown / restart
    rule("_shutdown", Anywhere, Always, "_shutdown"),
    rule("_restart", Anywhere, Always, "_restart"),
    // hot threads (with and without underscore, old and new paths)
    rule("_hot_threads", Anywhere, Always, "_nodes/hot_threads"),
    rule("hot_threads", Under("_nodes"), Always, "_nodes/hot_threads"),
    rule("hotthreads", Under("_nodes"), Always, "_nodes/hot_threads"),
    rule(
        "hot_threads",
        Under("_cluster"),
        Always,
        "_nodes/hot_threads",
    ),
    rule(
        "hotthreads",
        Under("_cluster"),
        Always,
        "_nodes/hot_threads",
    ),
    // other node- and cluster-level tools
    rule(
        "reload_secure_settings",
        Under("_nodes"),
        Always,
        "_nodes/reload_secure_settings",
    ),
    rule("settings", After("_cluster"), Writes, "_cluster/settings"),
    rule("reroute", After("_cluster"), Always, "_cluster/reroute"),
    rule(
        "voting_config_exclusions",
        After("_cluster"),
        Always,
        "_cluster/voting_config_exclusions",
    ),
    // snapshots
    rule("_snapshot", Anywhere, Always, "_snapshot"),
    // scripts and templates (stored and inline mustache)
    rule("_scripts", Anywhere, Always, "_scripts"),
    rule("_script", Anywhere, Always, "_scripts"),
    rule("_render", Anywhere, Always, "_render"),
    rule("template", After("_search"), Always, "_search/template"),
    rule("template", After("_msearch"), Always, "_msearch/template"),
    // warmers
    rule("_warmer", Anywhere, Always, "_warmer"),
    rule("_warmers", Anywhere, Always, "_warmer"),
    // multitenant only: tasks (and rethrottling a job's task) are shared upstream state.
    // `_reindex` and the by-query jobs run within the tenant (their bodies are read:
    // `source.remote` of a reindex is refused on every class).
    rule("_tasks", Anywhere, Multitenant, "_tasks"),
    rule("_rethrottle", Anywhere, Multitenant, "_rethrottle"),
];

/// The blocked endpoint this request names, if any (the name goes into the 501 body).
pub fn blocked(method: Method, loose: &NormPath, class: ClusterClass) -> Option<Cow<'static, str>> {
    let is_read = matches!(method, Method::Get | Method::Head);
    for r in RULES {
        let applies = match r.when {
            Always => true,
            Writes => !is_read,
            Multitenant => class == ClusterClass::Multitenant,
        };
        if applies && matches_at(loose, r) {
            return Some(Cow::Borrowed(r.name));
        }
    }
    if method == Method::Delete {
        return delete_all(loose);
    }
    None
}

fn matches_at(p: &NormPath, r: &Rule) -> bool {
    let tok = r.token.as_bytes();
    let n = p.len();
    match r.at {
        Anywhere => p.segments().any(|s| s.eq_ignore_ascii_case(tok)),
        Under(first) => {
            n > 1
                && p.seg(0).eq_ignore_ascii_case(first.as_bytes())
                && p.segments().skip(1).any(|s| s.eq_ignore_ascii_case(tok))
        }
        After(prev) => (1..n).any(|i| {
            p.seg(i - 1).eq_ignore_ascii_case(prev.as_bytes()) && p.seg(i).eq_ignore_ascii_case(tok)
        }),
    }
}

/// `DELETE /` (all indices on old versions) and `DELETE /<expr>` where the expression has a
/// wildcard or `_all` in any of its comma-separated parts.
fn delete_all(p: &NormPath) -> Option<Cow<'static, str>> {
    if p.is_empty() {
        return Some(Cow::Borrowed("DELETE /"));
    }
    if p.len() != 1 {
        return None;
    }
    let expr = p.seg(0);
    let wild = expr.contains(&b'*')
        || expr
            .split(|&b| b == b',')
            .any(|e| e.eq_ignore_ascii_case(b"_all") || e.eq_ignore_ascii_case(b"-_all"));
    wild.then(|| {
        let shown = &expr[..expr.len().min(100)];
        Cow::Owned(format!("DELETE /{}", String::from_utf8_lossy(shown)))
    })
}
