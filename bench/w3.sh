#!/usr/bin/env bash
# W3: shared-memory virtual ports (memif), one switch core (see /work/shared/BENCHMARKS.md and
# bench/README.md). dpdk-testpmd (64 B, a closed io loop) as memif client on two interfaces on
# one core; the switch as memif server on the other, forwarding 1 <-> 2; delivered Mpps = what
# testpmd receives back. Configurations: ferrovs patch, ferrovs openflow with the l3_4k rules,
# OVS-DPDK 3.1 with the same memif sockets and rule sets (ovs-patch, ovs-l3_4k; installs
# openvswitch-switch-dpdk if missing, sets up 2 MiB hugepages for the run), the
# testpmd-to-testpmd floor, and with --pktgen ferrovs patch driven by ferrovs-pktgen (details
# in bench/w3_run.py). Prints delivered Mpps, the switch core's busy share and the derived
# capacity. Exit status 3 when a configuration FAILED.
#
# Usage: sudo bench/w3.sh [--seconds N] [--warmup N] [--gen-core C] [--sw-core C]
#                         [--only NAME[,NAME...]] [--json FILE] [--pktgen] [--no-build]
#                         [--gen-queues Q] [--smoke] [--nice N]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=1
ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) BUILD=0 ;;
        --pktgen|--smoke) ARGS+=("$1") ;;
        --seconds|--warmup|--gen-core|--sw-core|--only|--json|--gen-queues|--nice) ARGS+=("$1" "$2"); shift ;;
        *) echo "w3.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" = 0 ] || { echo "w3.sh: run as root" >&2; exit 2; }
command -v dpdk-testpmd >/dev/null || { echo "w3.sh: dpdk-testpmd missing (apt-get install dpdk-dev)" >&2; exit 2; }
BINS=${FERROVS_BIN_DIR:-${CARGO_TARGET_DIR:-target}/release}
if [ "$BUILD" = 1 ]; then cargo build --release -q -p ferrovsd -p ferrovs -p ferrovs-pktgen; fi
exec python3 bench/w3_run.py --bins "$BINS" "${ARGS[@]}"
