#!/usr/bin/env bash
# Builds every cargo-fuzz target of this directory and runs each for a bounded time.
#
#   fuzz/run.sh 60            # every target, 60 seconds each
#   fuzz/run.sh 1800 body     # one target (or several), 30 minutes each
#
# Installs what is missing (cargo-fuzz; the nightly toolchain through rustup). Each target
# keeps its corpus in fuzz/corpus/<target>/ and writes crashing inputs to
# fuzz/artifacts/<target>/. At the end it prints one line per target: runs, corpus entries,
# and the crashing input if there was one. Exit status 1 when any target found something.
set -euo pipefail

usage() {
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
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
    cargo install cargo-fuzz
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

# `cargo fuzz build` takes one target at a time.
for t in "${targets[@]}"; do
    if ! cargo +nightly fuzz build "$t" >"/tmp/fuzz-build-$t.log" 2>&1; then
        tail -n 40 "/tmp/fuzz-build-$t.log" >&2
        echo "fuzz build of $t failed (whole log: /tmp/fuzz-build-$t.log)" >&2
        exit 1
    fi
done

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
status=0
summary=()
for t in "${targets[@]}"; do
    echo "== $t: ${seconds}s"
    mkdir -p "corpus/$t" "artifacts/$t"
    before=$(ls "artifacts/$t" | wc -l)
    set +e
    cargo +nightly fuzz run "$t" -- -max_total_time="$seconds" -print_final_stats=1 \
        >"$logs/$t.log" 2>&1
    rc=$?
    set -e
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$logs/$t.log" | grep -o '[0-9]*$' || true)
    [ -n "$runs" ] || runs=$(grep -oE '^#[0-9]+' "$logs/$t.log" | tail -1 | tr -d '#')
    corpus=$(ls "corpus/$t" | wc -l)
    after=$(ls "artifacts/$t" | wc -l)
    if [ "$rc" -ne 0 ] || [ "$after" -gt "$before" ]; then
        status=1
        crash=$(grep -oE 'Test unit written to \S+' "$logs/$t.log" | tail -1 | cut -d' ' -f5)
        tail -40 "$logs/$t.log"
        summary+=("$t: ${runs:-?} runs in ${seconds}s, corpus $corpus: FOUND ${crash:-a failure (exit $rc)}")
    else
        summary+=("$t: ${runs:-?} runs in ${seconds}s, corpus $corpus: no finding")
    fi
done
echo
printf '%s\n' "${summary[@]}"
exit $status
