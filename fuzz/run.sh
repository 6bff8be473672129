#!/usr/bin/env bash
# Builds every cargo-fuzz target of this directory and runs each for a bounded time.
#
#   fuzz/run.sh 60                    # every target, 60 seconds each
#   nice -n 19 fuzz/run.sh 1800 body  # one target (or several), 30 minutes each, politely
#
# Installs what is missing (the nightly toolchain through rustup; cargo-fuzz). Targets run
# one at a time. Each keeps its corpus in fuzz/corpus/<target>/, writes crashing inputs to
# fuzz/artifacts/<target>/ and its whole log to fuzz/logs/<target>.log (none of them is
# committed). At the end it prints one Markdown table row per target: wall and CPU seconds
# the fuzzer got, runs, runs per CPU second, corpus entries, coverage (libFuzzer's `cov`
# and `ft`), and the crashing input if there was one. Exit status 1 when any target found
# something.
set -euo pipefail

usage() {
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
}

case "${1:-}" in
    -h | --help | "") usage; [ -n "${1:-}" ] && exit 0 || exit 2 ;;
esac
seconds=$1
shift
[[ $seconds =~ ^[0-9]+$ ]] || { echo "seconds must be a number, got \`$seconds\`" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo install --locked cargo-fuzz
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
known=$(cargo +nightly fuzz list)
for t in "${targets[@]}"; do
    grep -qx "$t" <<<"$known" || { echo "no fuzz target \`$t\` (have: $(echo $known))" >&2; exit 2; }
done

mkdir -p logs
# `cargo fuzz build` takes one target at a time.
for t in "${targets[@]}"; do
    if ! cargo +nightly fuzz build "$t" >"logs/build-$t.log" 2>&1; then
        tail -n 40 "logs/build-$t.log" >&2
        echo "fuzz build of $t failed (whole log: fuzz/logs/build-$t.log)" >&2
        exit 1
    fi
done

# The value of libFuzzer's final `stat::<name>:` line in log $1.
final_stat() { grep -oE "stat::$2: *[0-9]+" "$1" | grep -oE '[0-9]+$' | tail -1 || true; }
# The value after `<name>: ` on libFuzzer's last status line of log $1.
status_field() { grep -E '^#[0-9]+' "$1" | tail -1 | grep -oE "$2: [0-9]+" | grep -oE '[0-9]+$' || true; }

status=0
rows=()
for t in "${targets[@]}"; do
    echo "== $t: ${seconds}s (log: fuzz/logs/$t.log)"
    mkdir -p "corpus/$t" "artifacts/$t"
    before=$(ls "artifacts/$t" | wc -l)
    log="logs/$t.log"
    set +e
    # bash's `time` counts the CPU of every process it waited for, the fuzzer included.
    TIMEFORMAT='%R %U %S'
    { time cargo +nightly fuzz run "$t" -- -max_total_time="$seconds" -print_final_stats=1 \
        >"$log" 2>&1; } 2>"logs/$t.time"
    rc=$?
    set -e
    read -r wall user sys <"logs/$t.time"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.0f", u + s }')
    wall=$(awk -v w="$wall" 'BEGIN { printf "%.0f", w }')
    runs=$(final_stat "$log" number_of_executed_units)
    [ -n "$runs" ] || runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    per_cpu=$(awk -v r="${runs:-0}" -v c="$cpu" 'BEGIN { printf "%.0f", (c > 0 ? r / c : 0) }')
    corpus=$(ls "corpus/$t" | wc -l)
    cov="$(status_field "$log" cov)/$(status_field "$log" ft)"
    after=$(ls "artifacts/$t" | wc -l)
    if [ "$rc" -ne 0 ] || [ "$after" -gt "$before" ]; then
        status=1
        crash=$(grep -oE 'Test unit written to \S+' "$log" | tail -1 | cut -d' ' -f5)
        tail -40 "$log"
        found="FOUND ${crash:-a failure (exit $rc)}"
    else
        found="no finding"
    fi
    rows+=("| $t | $wall | $cpu | ${runs:-?} | $per_cpu | $corpus | $cov | $found |")
done
echo
echo "| target | wall s | CPU s | runs | runs/CPU s | corpus | cov/ft | result |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit $status
