#!/usr/bin/env bash
# W7: tunnel encapsulation and decapsulation on one core, in memory (see
# /work/shared/BENCHMARKS.md and bench/README.md). W1's pcap -> br-int -> VXLAN (or Geneve)
# port -> underlay bridge br-phy -> null, and the encapsulated pcap -> br-phy -> tunnel port
# -> br-int -> null, at 1, 1K and 10K inner flows; ferrovs (`ferrovs-bench w7`) and OVS-DPDK
# 3.1 (native tunnelling, net_pcap/net_null ports, one PMD) on the same core, one after the
# other, each in a network namespace of its own where br-phy's internal port holds the
# underlay address. Before timing, each switch must show that it really encapsulates or
# decapsulates (details in bench/w7_run.py).
#
# Usage: bench/w7.sh [--seconds N] [--warmup N] [--flows "1 1000 10000"] [--proto vxlan|geneve]
#                    [--dirs encap,decap] [--only ferrovs,ovs] [--core C] [--main-core C]
#                    [--pcap-dir DIR] [--json FILE] [--no-huge] [--keep-tmp] [--no-build]
#        bench/w7.sh --smoke [--json FILE]   # 1 s windows, 1 and 1,000 flows: checks the runner
# Runs as root. Exit status 0, or 3 if some cell FAILED (the table and JSON are written anyway).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=1
ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) BUILD=0 ;;
        --smoke) ARGS+=(--seconds 1 --warmup 1 --flows "1 1000") ;;
        --no-huge|--keep-tmp) ARGS+=("$1") ;;
        --seconds|--warmup|--flows|--proto|--dirs|--only|--core|--main-core|--pcap-dir|--json)
            ARGS+=("$1" "$2"); shift ;;
        -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "w7.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" = 0 ] || { echo "w7.sh: run as root (network namespaces, TAP devices, DPDK)" >&2; exit 2; }
BINS=${FERROVS_BIN_DIR:-${CARGO_TARGET_DIR:-target}/release}
if [ "$BUILD" = 1 ]; then cargo build --release -q -p ferrovs-bench; fi
[ -x "$BINS/ferrovs-bench" ] || { echo "w7.sh: $BINS/ferrovs-bench missing" >&2; exit 1; }
exec python3 bench/w7_run.py --bins "$BINS" "${ARGS[@]}"
