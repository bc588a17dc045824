#!/usr/bin/env bash
# Runs every cargo-fuzz target for a while: `fuzz/smoke.sh [seconds-per-target]` (default 20).
# Installs cargo-fuzz (from crates.io) and needs the nightly toolchain. Exits non-zero on the
# first target that finds a crash; the reproducer is left in fuzz/artifacts/<target>/.
# Per-target input limits and seeds come from targets.sh; campaign.sh runs longer and reports.
set -euo pipefail

secs="${1:-20}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
# shellcheck source=targets.sh
. ./targets.sh
fuzz_env

for target in $(cargo +nightly fuzz list); do
    echo "== fuzzing $target for ${secs}s"
    mkdir -p "corpus/$target"
    seeds=()
    seed_dir="$(fuzz_seed_dir "$target")"
    if [ -d "$seed_dir" ]; then seeds=("$seed_dir"); fi
    cargo +nightly fuzz run "$target" "corpus/$target" "${seeds[@]}" -- \
        -max_total_time="$secs" -max_len="$(fuzz_max_len "$target")" -print_final_stats=1
done
echo "== all fuzz targets ran clean"
