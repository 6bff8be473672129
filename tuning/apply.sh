#!/bin/sh
# Applies tuning/sysctl.conf to the running kernel (root) and prints the limits the current
# shell would give `searchgate serve`. Nothing is made permanent: copy sysctl.conf to
# /etc/sysctl.d/ and limits.conf to /etc/security/limits.d/ for that.
set -eu
here=$(dirname "$0")
if [ "$(id -u)" != 0 ]; then
    echo "apply.sh: run as root to change kernel settings" >&2
    exit 1
fi
grep -v '^#' "$here/sysctl.conf" | grep '=' | while IFS='=' read -r key value; do
    key=$(echo "$key" | tr -d ' ')
    value=$(echo "$value" | sed 's/^ *//')
    before=$(sysctl -n "$key" 2>/dev/null | tr '\t' ' ' || echo '?')
    if sysctl -q -w "$key=$value" >/dev/null 2>&1; then
        echo "$key: $before -> $value"
    else
        echo "$key: cannot set (kept $before)"
    fi
done
echo "this shell: nofile $(ulimit -n), memlock $(ulimit -l)"
