#!/usr/bin/env bash
# A fuzzing campaign: `fuzz/campaign.sh SECONDS [TARGET...]` runs each target (all of them by
# default) for SECONDS, one after another, and prints a table of what each did:
#
#   target  seconds  executions  exec/s  corpus  cov  crashes
#
# Executions and exec/s are libFuzzer's final statistics (-print_final_stats=1), corpus is the
# number of inputs kept in fuzz/corpus/<target>/ afterwards, cov the coverage points libFuzzer
# reached, crashes the reproducers (crash-, leak-, timeout-, oom-) written to
# fuzz/artifacts/<target>/ during this run. A target that finds a crash stops there and the
# campaign goes on with the next one. Each target's libFuzzer output is kept in
# fuzz/logs/<target>.log. Exits 1 if any target crashed or failed to run.
#
# The build happens first, so SECONDS is fuzzing time. Limits and seeds per target come from
# targets.sh, shared with smoke.sh. An input that runs longer than FUZZ_TIMEOUT seconds
# (default 30) counts as a crash (a hang).
set -euo pipefail

usage() {
    echo "usage: $0 SECONDS [TARGET...]" >&2
    exit 2
}
[ $# -ge 1 ] || usage
secs="$1"
shift
[[ $secs =~ ^[1-9][0-9]*$ ]] || usage

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
# shellcheck source=targets.sh
. ./targets.sh
fuzz_env

all=$(cargo +nightly fuzz list)
if [ $# -gt 0 ]; then
    targets=("$@")
    for t in "${targets[@]}"; do
        grep -qx "$t" <<<"$all" || { echo "$0: no fuzz target '$t'" >&2; exit 2; }
    done
else
    read -r -d '' -a targets <<<"$all" || true
fi

echo "== building ${#targets[@]} target(s)"
for t in "${targets[@]}"; do
    cargo +nightly fuzz build "$t"
done

mkdir -p logs
rows=()
status=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    seeds=()
    seed_dir="$(fuzz_seed_dir "$t")"
    if [ -d "$seed_dir" ]; then seeds=("$seed_dir"); fi
    marker="$(mktemp)"
    log="logs/$t.log"
    echo "== fuzzing $t for ${secs}s (max_len $(fuzz_max_len "$t")), log in fuzz/$log"
    start=$(date +%s)
    rc=0
    cargo +nightly fuzz run "$t" "corpus/$t" "${seeds[@]}" -- \
        -max_total_time="$secs" -max_len="$(fuzz_max_len "$t")" \
        -timeout="${FUZZ_TIMEOUT:-30}" -print_final_stats=1 >"$log" 2>&1 || rc=$?
    elapsed=$(($(date +%s) - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
    cov=$(sed -n 's/.* cov: \([0-9]*\) .*/\1/p' "$log" | tail -n1)
    corpus=$(find "corpus/$t" -type f | wc -l)
    crashes=$(find "artifacts/$t" -type f -newer "$marker" \
        \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
    rm -f "$marker"
    if [ "$crashes" -gt 0 ]; then
        status=1
        echo "   $t: $crashes crash(es), see fuzz/artifacts/$t/ and fuzz/$log"
    elif [ "$rc" -ne 0 ]; then
        status=1
        crashes="error"
        echo "   $t: exited with status $rc without a reproducer, see fuzz/$log"
    fi
    rows+=("$t $elapsed ${execs:--} ${rate:--} $corpus ${cov:--} $crashes")
done

echo
printf '%-18s %8s %12s %8s %7s %6s %8s\n' target seconds executions exec/s corpus cov crashes
for r in "${rows[@]}"; do
    # shellcheck disable=SC2086
    printf '%-18s %8s %12s %8s %7s %6s %8s\n' $r
done
exit "$status"
