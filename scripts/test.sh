#!/usr/bin/env bash
# The whole ferrovs test suite: installs what it needs (Debian packages, the Rust toolchains,
# cargo-fuzz, the Python venv), then runs formatting and lint checks, unit and property tests
# (with the root-only kernel tests, which a plain `cargo test` leaves out as #[ignore]d), the
# integration tests in network namespaces against real peers, fuzz smoke runs (beside the
# integration tests), and a W1 benchmark smoke run (not a timing assertion: it checks the
# runner works and every packet it received was delivered). A missing peer fails the run;
# nothing is skipped. Exits non-zero on the first failure. Run as root: `sudo ./scripts/test.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export CARGO_TERM_COLOR=never
step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

if [ "$(id -u)" != 0 ]; then
    echo "test.sh: run as root (network namespaces, veth, TAP, AF_XDP): sudo $0" >&2
    exit 1
fi

# shellcheck source=scripts/env.sh
. scripts/env.sh

# CI builds once from a clean clone: incremental caches and full debug info would only take disk
# (a run once ended in "No space left on device"); line tables keep the locations of panics.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
disk() { df -h "$ROOT" | tail -n 1; }

step "free disk space at the start: $(disk)"

step "system packages"
ensure_packages

step "rust toolchains"
ensure_rust

step "python venv"
ensure_venv

step "cargo fmt --check"
cargo fmt --all -- --check
# The fuzz targets are a workspace of their own (excluded from the main one).
cargo fmt --manifest-path fuzz/Cargo.toml -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "vocabulary: docs/vocabulary.md names every public type of the core crates"
python3 scripts/vocabulary.py --check

step "cargo test (with the root-only tests)"
# `packet_rates` are benchmarks kept as ignored tests (see their comments), not checks.
cargo test --workspace -- --include-ignored --skip packet_rates 2>&1 | tee /tmp/ferrovs-cargo-test.log
grep -q "test result: ok" /tmp/ferrovs-cargo-test.log

step "release build"
cargo build --release --workspace

step "fuzz build"
# The fuzz targets (address sanitizer, nightly) are built here, on both cores; their smoke runs
# then go on beside the integration tests, which mostly wait on daemons and peers: one core
# fuzzing at low priority keeps the suite under 40 minutes on 2 cores.
(cd fuzz && . ./targets.sh && fuzz_env && cargo +nightly fuzz build)
fuzz_log=$(mktemp /tmp/ferrovs-fuzz-smoke.XXXXXX)
# Its own process group (setsid), so that an early exit stops the fuzzer and its children.
# 10 s per target: a smoke run; fuzz/campaign.sh is the long run.
setsid nice -n 10 fuzz/smoke.sh "${FUZZ_SECONDS:-10}" > "$fuzz_log" 2>&1 &
fuzz_pid=$!
trap 'kill -- -"$fuzz_pid" 2>/dev/null || true' EXIT

step "integration tests (the fuzz smoke runs beside them)"
# `--durations`: the slowest tests, named in the log, so that the suite's time can be watched.
FERROVS_BIN_DIR="${CARGO_TARGET_DIR:-$ROOT/target}/release" .venv/bin/python -m pytest -v -p no:cacheprovider \
    --durations=25 tests/integration

step "fuzz smoke (its output)"
fuzz_rc=0
wait "$fuzz_pid" || fuzz_rc=$?
trap - EXIT
cat "$fuzz_log"
rm -f "$fuzz_log"
if [ "$fuzz_rc" != 0 ]; then
    echo "fuzz smoke failed (exit $fuzz_rc); see its output above" >&2
    exit 1
fi

step "W1 benchmark smoke run"
bench/w1.sh --smoke

step "all tests passed (free disk space at the end: $(disk))"
