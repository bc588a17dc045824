#!/usr/bin/env bash
# Builds ferrovs and runs the daemon in the foreground with its embedded defaults (no external
# database or service). Control it from another shell with target/release/ferrovs, or with
# `ovs-appctl -t $FERROVS_RUNDIR/ferrovsd.ctl`. Extra arguments go to ferrovsd.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p ferrovsd -p ferrovs
export FERROVS_RUNDIR=${FERROVS_RUNDIR:-/run/ferrovs}
echo "ferrovsd: rundir $FERROVS_RUNDIR; try: target/release/ferrovs --rundir $FERROVS_RUNDIR add-br br0" >&2
exec target/release/ferrovsd --rundir "$FERROVS_RUNDIR" "$@"
