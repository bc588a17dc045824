#!/usr/bin/env bash
# W8 (a) through the whole pipeline: established connections through `ct(table=1)` and
# `ct_state=+trk+est`, one core, in memory (pcap replay -> null), at 1, 1K and 100K
# connections; with --peers, OVS-DPDK 3.1's userspace conntrack on the same input and rules
# in the same session (bench/w1-peers.sh --workload w8), and the ratios.
#
# The input (`ferrovs-bench gen-w8`) holds each connection's datagram and its reply, so
# after the first round every connection is established; the rule set is printed by
# --print-rules. The tracker alone (no pipeline: W8 (b) and (c), new connections with and
# without SNAT) is `ferrovs-bench-w8` (docs/benchmarks.md).
#
#   bench/w8.sh [--seconds S] [--conns "1 1000 100000"] [--peers] [--json FILE] [--no-build]
#   bench/w8.sh --smoke         # short run that checks the runner (every packet delivered)
#   bench/w8.sh --print-rules   # the OpenFlow rules, as ovs-ofctl add-flows takes them
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER=5
CONNS="1 1000 100000"
PEERS=0
SMOKE=0
JSON_OUT=""
BUILD=1
while (($#)); do
    case $1 in
        --seconds) SECONDS_PER=$2; shift 2 ;;
        --conns) CONNS=$2; shift 2 ;;
        --peers) PEERS=1; shift ;;
        --json) JSON_OUT=$2; shift 2 ;;
        --smoke) SMOKE=1; SECONDS_PER=0.5; CONNS="1 1000"; shift ;;
        --no-build) BUILD=0; shift ;;
        --print-rules)
            cat <<'EOF'
table=0,priority=10,ip,ct_state=-trk,actions=ct(table=1)
table=1,priority=10,ip,ct_state=+trk+new,actions=ct(commit),output:2
table=1,priority=10,ip,ct_state=+trk+est,actions=output:2
table=1,priority=1,actions=drop
EOF
            exit 0 ;;
        *) echo "usage: $0 [--seconds S] [--conns LIST] [--peers] [--json FILE] [--smoke] [--no-build] [--print-rules]" >&2
           exit 2 ;;
    esac
done
OUT=bench/out
mkdir -p "$OUT"
RULES=$(realpath -m "$OUT/w8-ct_est.flows")
"$0" --print-rules > "$RULES"
BIN_DIR=${FERROVS_BIN_DIR:-${CARGO_TARGET_DIR:-target}/release}
if ((BUILD)); then cargo build --release -q -p ferrovs-bench; fi
B=$(realpath -m "$BIN_DIR/ferrovs-bench")
[ -x "$B" ] || { echo "w8.sh: $B missing (cargo build --release -p ferrovs-bench)" >&2; exit 1; }
STARTED=$(date -u +%FT%TZ)
CORE=$(( $(nproc) - 1 ))
PIN=(taskset -c "$CORE")
command -v taskset >/dev/null || PIN=()

: > "$OUT/w8-ferrovs.jsonl"
for c in $CONNS; do
    [ -f "$OUT/w8-$c.pcap" ] || $B gen-w8 --flows "$c" --out "$OUT/w8-$c.pcap"
    line=$("${PIN[@]}" $B w1 --module openflow --rules "@$RULES" --pcap "$OUT/w8-$c.pcap" \
        --seconds "$SECONDS_PER" --json)
    echo "{\"conns\": $c, \"r\": $line}" >> "$OUT/w8-ferrovs.jsonl"
done

if ((PEERS)); then
    FERROVS_BENCH=$B bench/w1-peers.sh --workload w8 --only ovs --flows "$CONNS" --seconds "${SECONDS_PER%.*}" \
        --json "$OUT/w8-peers.json" --pcap-dir "$OUT" || \
        echo "w1-peers.sh --workload w8 failed; printing ferrovs alone" >&2
fi

python3 - "$OUT" "$SMOKE" "$JSON_OUT" "$STARTED" "$SECONDS_PER" "$CORE" "$PEERS" <<'PY'
import json, os, sys
out, smoke, json_out, peers_run = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[7] == "1"
rows = [json.loads(l) for l in open(os.path.join(out, "w8-ferrovs.jsonl"))]
fv = {str(r["conns"]): r["r"] for r in rows}
meta = {"benchmark": "W8", "started": sys.argv[4], "seconds": float(sys.argv[5]),
        "core": int(sys.argv[6]), "smoke": smoke, "load": list(os.getloadavg())}
if smoke:
    for c, r in fv.items():
        print("smoke: conns=%-6s packets=%d delivered=%d" % (c, r["packets"], r["delivered"]))
    if json_out:
        json.dump(dict(meta, ferrovs=fv, peers={}), open(json_out, "w"), indent=2)
    # New and established packets both leave on port 2: the smoke checks that the tracked
    # pipeline (ct, recirculation, commit) forwards every packet.
    bad = [c for c, r in fv.items() if r["packets"] == 0 or r["delivered"] < r["packets"] * 0.99]
    if bad:
        print("W8 smoke FAILED: packets lost at conns %s" % bad, file=sys.stderr)
        sys.exit(1)
    sys.exit(0)
peers = {}
if peers_run and os.path.exists(os.path.join(out, "w8-peers.json")):
    peers = json.load(open(os.path.join(out, "w8-peers.json"))).get("results", {})
def cell(d):
    if not d:
        return "-"
    if d.get("status", "ok") != "ok":
        return "FAILED"
    return "%.2f (%.0f)" % (d["mpps"], d.get("cycles_per_packet") or 0)
hdr = ["connections", "ferrovs ct est", "OVS-DPDK ct est", "ratio"]
print()
print("W8 (a), established connections through ct(table=1), one core, Mpps (cycles/packet)")
print("| " + " | ".join(hdr) + " |")
print("|" + "|".join("---" for _ in hdr) + "|")
for c, d in fv.items():
    p = peers.get(c, {}).get("ovs_ct_est")
    ok = p and p.get("status") == "ok" and p.get("mpps")
    print("| " + " | ".join([format(int(c), ","), cell(d), cell(p),
                             "%.2fx" % (d["mpps"] / p["mpps"]) if ok else "-"]) + " |")
if json_out:
    json.dump(dict(meta, ferrovs=fv, peers=peers), open(json_out, "w"), indent=2)
PY
