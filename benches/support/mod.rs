//! Shared by the benches: a registry of many clusters on one plan.
#![allow(dead_code)]

use std::time::Instant;

use searchgate::config::Config;
use searchgate::registry::Snapshot;
use searchgate::tenancy::TenancyKey;

/// A validated config of `n` clusters on one plan, each with its own host and username.
pub fn config(n: usize) -> Config {
    let mut text = String::from(
        "[edge]\ndomain = \"search.example\"\nhttp = \"127.0.0.1:9200\"\n\
         [[plans]]\nname = \"p\"\nconcurrency = 4\nqueue_size = 20\nqueue_timeout = \"5s\"\n\
         shards = 10\ndisk = \"1gb\"\nmemory = \"256mb\"\nmax_bulk_actions = 10000\n",
    );
    for i in 0..n {
        text.push_str(&format!(
            "[[clusters]]\nid = \"c{i}\"\nhostname = \"c{i}-x7f3\"\nregion = \"us-east-1\"\n\
             class = \"single-tenant\"\nplan = \"p\"\nusername = \"user{i}\"\n\
             password = \"pass{i}x0123456789\"\nupstream = [\"127.0.0.1:9201\"]\n"
        ));
    }
    Config::parse(&text, "bench").expect("the bench config is valid")
}

/// A snapshot of `n` clusters, all ready (their upstreams answered, as at run time).
pub fn snapshot(n: usize) -> Snapshot {
    let key = TenancyKey::from_bytes([7; 32]);
    let snap = Snapshot::build(&config(n), None, 1, Instant::now(), &key).expect("snapshot");
    for c in snap.clusters() {
        c.state.set_ready(true);
    }
    snap
}
