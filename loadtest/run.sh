#!/bin/sh
# Load test runner: installs what is missing (Debian's nginx and wrk, openssl, taskset;
# with --target-url only wrk), then runs loadtest/run.py with the given options (see
# `loadtest/run.sh --help`). Its exit status is run.py's: 1 when a request failed.
# Against a cluster URL (--target-url) only wrk and python3 are needed.
set -eu
target=""
for a in "$@"; do
    case "$a" in --target-url|--target-url=*) target=1 ;; esac
done
need=""
command -v wrk >/dev/null 2>&1 || need="$need wrk"
command -v python3 >/dev/null 2>&1 || need="$need python3"
if [ -z "$target" ]; then
    command -v nginx >/dev/null 2>&1 || need="$need nginx"
    command -v openssl >/dev/null 2>&1 || need="$need openssl"
    command -v taskset >/dev/null 2>&1 || need="$need util-linux"
fi
if [ -n "$need" ]; then
    echo "loadtest: installing$need"
    apt-get install -y $need >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y $need; }
fi
# Installing Debian's nginx may start its packaged service (port 80): this script started
# it, so it stops it; the runner starts its own nginx on 127.0.0.1 only.
case "$need" in
*nginx*)
    if [ -s /run/nginx.pid ] && kill -0 "$(cat /run/nginx.pid)" 2>/dev/null; then
        nginx -s quit 2>/dev/null || true
    fi
    ;;
esac
exec python3 "$(dirname "$0")/run.py" "$@"
