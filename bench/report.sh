#!/usr/bin/env bash
# The benchmark report: runs W1-W8 against their peers with the bench scripts (each with its
# --json option), one after another, then bench/report.py turns the JSON files into
# report.md with PNG plots of every ratio table, the machine facts, the load average and the
# command behind each number. W4 has no script yet and is listed as not measured.
#
# Usage: sudo bench/report.sh [--out DIR] [--only W1,W2,...] [--quick] [--no-build]
#                             [--w2-rate PPS]
#        bench/report.sh --from DIR [--out DIR] [--only ...]   # report from JSON already there
#
#   --out DIR      where the JSON files, report.md and the PNGs go
#                  (default bench/out/report-YYYYmmdd-HHMMSS; with --from, DIR itself)
#   --only LIST    a subset of W1..W8 (default all)
#   --quick        short windows (W1 1 s, peers 2 s, W2/W3/W6 3 s after 1 s, W5 10K flows):
#                  checks the runners, not for numbers
#   --no-build     use the release binaries already in $FERROVS_BIN_DIR (default
#                  $CARGO_TARGET_DIR/release, or target/release)
#   --w2-rate PPS  the fixed offered load of W2's CPU-per-packet run (default 100000)
#
# Exit status: 0; 3 when a requested benchmark failed (its script exited non-zero, a cell
# FAILED, or it left no JSON), after writing the report of what was measured; 1 or 2 on a
# setup or usage error.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

OUT=""
FROM=""
ONLY=""
QUICK=0
BUILD=1
W2_RATE=100000
usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while (($#)); do
    case $1 in
        --out) OUT=$2; shift 2 ;;
        --from) FROM=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --no-build) BUILD=0; shift ;;
        --w2-rate) W2_RATE=$2; shift 2 ;;
        -h|--help) usage ;;
        *) echo "report.sh: unknown argument $1" >&2; usage ;;
    esac
done
[[ $W2_RATE =~ ^[0-9]+$ && $W2_RATE -gt 0 ]] || { echo "report.sh: --w2-rate must be a positive integer" >&2; exit 2; }
ALL="W1 W2 W3 W4 W5 W6 W7 W8"
WANT=$ALL
if [[ -n $ONLY ]]; then
    WANT=""
    for b in ${ONLY//,/ }; do
        b=${b^^}
        [[ " $ALL " == *" $b "* ]] || { echo "report.sh: unknown benchmark '$b' (known: $ALL)" >&2; exit 2; }
        WANT+="$b "
    done
fi
want() { [[ " $WANT " == *" $1 "* ]]; }

PY=python3
[[ -x $REPO/.venv/bin/python ]] && PY=$REPO/.venv/bin/python
"$PY" -c 'import matplotlib' 2>/dev/null || {
    echo "report.sh: $PY has no matplotlib (.venv/bin/pip install -r tests/requirements.txt)" >&2
    exit 1
}
ONLY_ARG=()
[[ -n $ONLY ]] && ONLY_ARG=(--only "$ONLY")

if [[ -n $FROM ]]; then
    exec "$PY" bench/report.py --from "$FROM" --out "${OUT:-$FROM}" "${ONLY_ARG[@]}"
fi

[[ $(id -u) == 0 ]] || { echo "report.sh: run as root (namespaces, XDP, DPDK)" >&2; exit 1; }
if pgrep -f 'ci/run' >/dev/null; then
    echo "report.sh: warning: a CI run is going on; its load will be in every number (see the load section)" >&2
fi
OUT=${OUT:-bench/out/report-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
BIN=${FERROVS_BIN_DIR:-$CARGO_TARGET_DIR/release}
if ((BUILD)); then
    echo "report.sh: building ferrovsd, ferrovs, ferrovs-bench, ferrovs-pktgen (release)" >&2
    cargo build --release -p ferrovsd -p ferrovs -p ferrovs-bench -p ferrovs-pktgen || exit 1
fi
for b in ferrovsd ferrovs ferrovs-bench ferrovs-pktgen; do
    [[ -x $BIN/$b ]] || { echo "report.sh: $BIN/$b missing (cargo build --release -p $b)" >&2; exit 1; }
done
BIN=$(cd "$BIN" && pwd)
export FERROVS_BIN_DIR=$BIN FERROVS_BENCH=$BIN/ferrovs-bench

"$PY" bench/report.py facts > "$OUT/facts.json"
: > "$OUT/runs.jsonl"
: > "$OUT/load.tsv"
( while :; do
      echo "$(date +%s) $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.tsv"
      sleep 5
  done ) &
SAMPLER=$!
trap 'kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null' EXIT

FAILED=0
# run BENCH NAME JSON CMD...: runs one script with its output in $OUT/NAME.log and records
# the command, exit status, time and load average before and after in runs.jsonl.
run() {
    local bench=$1 name=$2 json=$3; shift 3
    local t0 l0 rc t1 l1
    echo "report.sh: === $bench: $*" >&2
    t0=$(date +%s); l0=$(cut -d' ' -f1-3 /proc/loadavg)
    "$@" > "$OUT/$name.log" 2>&1
    rc=$?
    t1=$(date +%s); l1=$(cut -d' ' -f1-3 /proc/loadavg)
    ((rc == 0)) || { FAILED=1; echo "report.sh: $name exited $rc (log: $OUT/$name.log)" >&2; }
    tail -n 25 "$OUT/$name.log" >&2
    "$PY" - "$bench" "$name" "$json" "$rc" "$t0" "$t1" "$l0" "$l1" "FERROVS_BIN_DIR=$BIN $*" \
        >> "$OUT/runs.jsonl" <<'EOF'
import json, sys, time
bench, name, js, rc, t0, t1, l0, l1, cmd = sys.argv[1:10]
print(json.dumps({"bench": bench, "name": name, "json": js, "rc": int(rc), "cmd": cmd,
                  "start_epoch": int(t0), "elapsed_s": int(t1) - int(t0),
                  "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(t0))),
                  "load_before": [float(x) for x in l0.split()],
                  "load_after": [float(x) for x in l1.split()]}))
EOF
}

if ((QUICK)); then
    W1_ARGS=(--seconds 1); PEER_ARGS=(--seconds 2 --warmup 1)
    WIN_ARGS=(--seconds 3 --warmup 1); W5_ARGS=(--flows 10000)
else
    W1_ARGS=(); PEER_ARGS=(); WIN_ARGS=(); W5_ARGS=(--flows 100000)
fi
if want W1; then
    run W1 w1 w1.json bench/w1.sh --no-build --json "$OUT/w1.json" "${W1_ARGS[@]}"
    run W1 w1-peers w1-peers.json bench/w1-peers.sh --pcap-dir bench/out --json "$OUT/w1-peers.json" "${PEER_ARGS[@]}"
fi
if want W2; then
    run W2 w2 w2.json bench/w2.sh --no-build --json "$OUT/w2.json" "${WIN_ARGS[@]}"
    run W2 w2-fixed w2-fixed.json bench/w2.sh --no-build --no-w1 --rate "$W2_RATE" \
        --only ferrovs-system,ferrovs-afxdp,ovs-afpacket,ovs-afxdp --json "$OUT/w2-fixed.json" "${WIN_ARGS[@]}"
fi
want W3 && run W3 w3 w3.json bench/w3.sh --no-build --json "$OUT/w3.json" "${WIN_ARGS[@]}"
want W5 && run W5 w5 w5.json bench/w5.sh --w1 --json "$OUT/w5.json" "${W5_ARGS[@]}"
if want W6; then
    run W6 w6 w6.json bench/w6.sh --no-build --json "$OUT/w6.json" "${WIN_ARGS[@]}"
    run W6 w6-1518 w6-1518.json bench/w6.sh --no-build --size 1518 --json "$OUT/w6-1518.json" "${WIN_ARGS[@]}"
fi
want W7 && run W7 w7 w7.json bench/w7.sh --no-build --json "$OUT/w7.json" "${WIN_ARGS[@]}"
want W8 && run W8 w8 w8.json bench/w8.sh --no-build --peers --json "$OUT/w8.json" "${W1_ARGS[@]}"

"$PY" - "$OUT" "$QUICK" $WANT <<'EOF'
import json, sys
out, quick, want = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
runs = [json.loads(l) for l in open(out + "/runs.jsonl") if l.strip()]
json.dump({"requested": want, "quick": quick, "runs": runs}, open(out + "/runs.json", "w"),
          indent=1)
EOF
"$PY" bench/report.py --from "$OUT" --out "$OUT" "${ONLY_ARG[@]}"
rc=$?
echo "report.sh: report in $OUT/report.md" >&2
if ((rc != 0 || FAILED)); then exit 3; fi
