#!/usr/bin/env bash
# Builds ferrovs and runs the daemon in the foreground with its embedded defaults (no external
# database or service). Control it from another shell with target/release/ferrovs, or with
# `ovs-appctl -t $FERROVS_RUNDIR/ferrovsd.ctl`. Extra arguments go to ferrovsd. Run as root:
# `sudo ./scripts/run.sh` (ports need CAP_NET_ADMIN/CAP_NET_RAW). scripts/demo.sh shows it
# forwarding between two namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
    echo "run.sh: run as root (the switch opens network devices): sudo $0" >&2
    exit 1
fi
# shellcheck source=scripts/env.sh
. scripts/env.sh
ensure_packages
ensure_rust
echo "building ferrovsd and ferrovs (release; a few minutes the first time)" >&2
cargo build --release -p ferrovsd -p ferrovs
export FERROVS_RUNDIR=${FERROVS_RUNDIR:-/run/ferrovs}
BIN=${CARGO_TARGET_DIR:-target}/release
echo "ferrovsd: rundir $FERROVS_RUNDIR; from another shell: $BIN/ferrovs --rundir $FERROVS_RUNDIR add-br br0" >&2
exec "$BIN/ferrovsd" --rundir "$FERROVS_RUNDIR" "$@"
