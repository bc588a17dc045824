#!/usr/bin/env bash
# Runs every cargo-fuzz target for a while: `fuzz/smoke.sh [seconds-per-target]` (default 20).
# Installs cargo-fuzz (from crates.io) and needs the nightly toolchain. Exits non-zero on the
# first target that finds a crash; the reproducer is left in fuzz/artifacts/<target>/.
set -euo pipefail

secs="${1:-20}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "smoke.sh: the nightly toolchain is required (rustup toolchain install nightly)" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

# Keep the fuzz build out of any CARGO_TARGET_DIR meant for the main workspace.
export CARGO_TARGET_DIR="$here/target"

for target in $(cargo +nightly fuzz list); do
    echo "== fuzzing $target for ${secs}s"
    mkdir -p "corpus/$target"
    seeds=()
    seed_dir="seeds/$target"
    # The OpenFlow targets (one per version) share one seed set.
    [[ $target == openflow_of* ]] && seed_dir=seeds/openflow
    if [ -d "$seed_dir" ]; then seeds=("$seed_dir"); fi
    cargo +nightly fuzz run "$target" "corpus/$target" "${seeds[@]}" -- \
        -max_total_time="$secs" -max_len=4096 -print_final_stats=1
done
echo "== all fuzz targets ran clean"
