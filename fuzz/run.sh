#!/bin/sh
# Runs every cargo-fuzz target for a bounded time (default 60 s each), failing on the first
# crash. Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
#   fuzz/run.sh [seconds] [target...]
set -eu
cd "$(dirname "$0")"
secs="${1:-60}"
[ $# -gt 0 ] && shift
targets="${*:-request_head response_head body tenancy}"
for t in $targets; do
    echo "fuzz: $t for ${secs}s"
    cargo +nightly fuzz run "$t" -- -max_total_time="$secs" -rss_limit_mb=2048
done
