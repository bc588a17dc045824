#!/usr/bin/env bash
# The whole ferrovs test suite: installs what it needs, then runs formatting and lint checks,
# unit and property tests, the integration tests in network namespaces (root), fuzz smoke
# runs, and a W1 benchmark smoke run (not a timing assertion: it checks the runner works and
# every packet it received was delivered). Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export CARGO_TERM_COLOR=never
step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

step "system packages"
need=()
for pair in ovs-appctl:openvswitch-common iperf3:iperf3 tcpdump:tcpdump ping:iputils-ping \
            ip:iproute2 ethtool:ethtool; do
    cmd=${pair%%:*}; pkg=${pair#*:}
    command -v "$cmd" >/dev/null 2>&1 || need+=("$pkg")
done
if ((${#need[@]})); then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

step "python venv"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install -q --disable-pip-version-check -r tests/requirements.txt

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test"
cargo test --workspace 2>&1 | tee /tmp/ferrovs-cargo-test.log
grep -q "test result: ok" /tmp/ferrovs-cargo-test.log

step "release build"
cargo build --release --workspace

step "integration tests"
if [ "$(id -u)" != 0 ]; then
    echo "integration tests need root (network namespaces, TAP devices)" >&2
    exit 1
fi
FERROVS_BIN_DIR="${CARGO_TARGET_DIR:-$ROOT/target}/release" .venv/bin/python -m pytest -v -p no:cacheprovider \
    tests/integration

step "fuzz smoke"
if [ -x fuzz/smoke.sh ]; then
    fuzz/smoke.sh "${FUZZ_SECONDS:-20}"
else
    echo "no fuzz targets yet"
fi

step "W1 benchmark smoke run"
bench/w1.sh --smoke

step "all tests passed"
