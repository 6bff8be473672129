#!/bin/sh
# Tenancy benchmark runner: installs what is missing (wrk, taskset), then runs
# loadtest/tenancy_bench.py with the given options (see `loadtest/tenancy_bench.sh --help`):
# the multitenant path against the single-tenant path of one edge, same load, same
# upstream program, interleaved.
set -eu
need=""
command -v wrk >/dev/null 2>&1 || need="$need wrk"
command -v taskset >/dev/null 2>&1 || need="$need util-linux"
command -v python3 >/dev/null 2>&1 || need="$need python3"
if [ -n "$need" ]; then
    echo "tenancy_bench: installing$need"
    apt-get install -y $need >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y $need; }
fi
exec python3 "$(dirname "$0")/tenancy_bench.py" "$@"
