#!/usr/bin/env bash
# W6: VM ports (vhost-user), one switch core (see /work/shared/BENCHMARKS.md and
# bench/README.md). dpdk-testpmd with two net_virtio_user ports (the VM side, a closed io loop
# of 64 B or 1518 B frames) on one core; the switch with two dpdkvhostuser ports on the other,
# forwarding 1 <-> 2; delivered Mpps = what testpmd receives back. Configurations: ferrovs
# patch, ferrovs openflow with the l3_4k rules, OVS-DPDK 3.1 with dpdkvhostuser ports and the
# same rule sets (ovs-patch, ovs-l3_4k; installs openvswitch-switch-dpdk if missing, sets up
# 2 MiB hugepages for the run), and the DPDK vhost library floor (testpmd's net_vhost
# io-forwarding on the switch core); details in bench/w6_run.py. Exit status 3 when a
# configuration FAILED.
#
# Usage: sudo bench/w6.sh [--seconds N] [--warmup N] [--gen-core C] [--sw-core C]
#                         [--size 64|1518] [--only NAME[,NAME...]] [--json FILE] [--no-build]
#                         [--smoke] [--nice N] [--packed]
#                         [--no-huge]
# --packed: the guest's virtio ports use packed virtqueues (packed_vq=1) with every backend.
# The guest's (testpmd's) memory is on 2 MiB hugepages, set up for the run like OVS-DPDK's;
# --no-huge (or the kernel refusing the pages, then the run says why): a plain memfd instead.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=1
ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) BUILD=0 ;;
        --smoke|--packed|--no-huge) ARGS+=("$1") ;;
        --seconds|--warmup|--gen-core|--sw-core|--size|--only|--json|--nice) ARGS+=("$1" "$2"); shift ;;
        *) echo "w6.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" = 0 ] || { echo "w6.sh: run as root" >&2; exit 2; }
command -v dpdk-testpmd >/dev/null || { echo "w6.sh: dpdk-testpmd missing (apt-get install dpdk-dev)" >&2; exit 2; }
BINS=${FERROVS_BIN_DIR:-${CARGO_TARGET_DIR:-target}/release}
if [ "$BUILD" = 1 ]; then cargo build --release -q -p ferrovsd -p ferrovs; fi
exec python3 bench/w6_run.py --bins "$BINS" "${ARGS[@]}"
