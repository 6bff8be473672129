#!/bin/sh
# Load test runner: installs what is missing (Debian's nginx and wrk, openssl, taskset),
# then runs loadtest/run.py with the given options (see `loadtest/run.sh --help`).
set -eu
need=""
command -v nginx >/dev/null 2>&1 || need="$need nginx"
command -v wrk >/dev/null 2>&1 || need="$need wrk"
command -v openssl >/dev/null 2>&1 || need="$need openssl"
command -v taskset >/dev/null 2>&1 || need="$need util-linux"
command -v python3 >/dev/null 2>&1 || need="$need python3"
if [ -n "$need" ]; then
    echo "loadtest: installing$need"
    apt-get install -y $need >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y $need; }
fi
# nginx's packaged service is not ours to run: the runner starts its own nginx.
exec python3 "$(dirname "$0")/run.py" "$@"
