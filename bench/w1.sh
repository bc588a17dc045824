#!/usr/bin/env bash
# W1: the datapath on one core, in memory (pcap replay -> null), for ferrovs's `patch` and
# `learning` modules and the (caching) `openflow` module with the `simple` and `l3_4k` rule
# sets, at 1, 1K, 10K and 100K flows; with --peers, also testpmd's io floor and OVS-DPDK run
# in the same session (bench/w1-peers.sh), and the ratios.
#
#   bench/w1.sh [--seconds S] [--flows "1 1000 10000 100000"] [--peers] [--json FILE] [--no-build]
#   bench/w1.sh --smoke        # short run that only checks the runner works (CI)
# --no-build uses the ferrovs-bench already in $FERROVS_BIN_DIR (default
# $CARGO_TARGET_DIR/release, or target/release). --json also works with --smoke.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER=5
FLOWS="1 1000 10000 100000"
PEERS=0
SMOKE=0
JSON_OUT=""
BUILD=1
while (($#)); do
    case $1 in
        --seconds) SECONDS_PER=$2; shift 2 ;;
        --flows) FLOWS=$2; shift 2 ;;
        --peers) PEERS=1; shift ;;
        --json) JSON_OUT=$2; shift 2 ;;
        --smoke) SMOKE=1; SECONDS_PER=0.5; FLOWS="1 1000"; shift ;;
        --no-build) BUILD=0; shift ;;
        *) echo "usage: $0 [--seconds S] [--flows LIST] [--peers] [--json FILE] [--smoke] [--no-build]" >&2; exit 2 ;;
    esac
done
OUT=bench/out
mkdir -p "$OUT"
BIN_DIR=${FERROVS_BIN_DIR:-${CARGO_TARGET_DIR:-target}/release}
if ((BUILD)); then cargo build --release -q -p ferrovs-bench; fi
B=$(realpath -m "$BIN_DIR/ferrovs-bench")
[ -x "$B" ] || { echo "w1.sh: $B missing (cargo build --release -p ferrovs-bench)" >&2; exit 1; }
STARTED=$(date -u +%FT%TZ)
# Pin to the last core so the measurement does not share a core with the shell.
CORE=$(( $(nproc) - 1 ))
PIN=(taskset -c "$CORE")
command -v taskset >/dev/null || PIN=()

: > "$OUT/ferrovs.jsonl"
for f in $FLOWS; do
    [ -f "$OUT/w1-$f.pcap" ] || $B gen-w1 --flows "$f" --out "$OUT/w1-$f.pcap"
    for m in patch learning openflow:simple openflow:l3_4k; do
        mod=${m%%:*}
        rules=simple
        [[ $m == *:* ]] && rules=${m#*:}
        line=$("${PIN[@]}" $B w1 --module "$mod" --rules "$rules" --pcap "$OUT/w1-$f.pcap" \
            --seconds "$SECONDS_PER" --json)
        echo "{\"flows\": $f, \"name\": \"$m\", \"r\": $line}" >> "$OUT/ferrovs.jsonl"
    done
done

if ((PEERS)); then
    FERROVS_BENCH=$B bench/w1-peers.sh --flows "$FLOWS" --json "$OUT/peers.json" --pcap-dir "$OUT" || \
        echo "w1-peers.sh failed; printing ferrovs alone" >&2
fi

python3 - "$OUT" "$SMOKE" "$JSON_OUT" "$STARTED" "$SECONDS_PER" "$CORE" <<'PY'
import json, os, sys
out, smoke, json_out = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
rows = [json.loads(l) for l in open(os.path.join(out, "ferrovs.jsonl"))]
fv = {}
for r in rows:
    fv.setdefault(str(r["flows"]), {})[r.get("name", r["r"]["module"])] = r["r"]
meta = {"benchmark": "W1", "started": sys.argv[4], "seconds": float(sys.argv[5]),
        "core": int(sys.argv[6]), "smoke": smoke, "load": list(os.getloadavg())}
if smoke and json_out:
    json.dump(dict(meta, ferrovs=fv, peers={}), open(json_out, "w"), indent=2)
if smoke:
    # Every packet is delivered, except that the openflow module may have a few upcalls in
    # flight when the window closes.
    bad = [r for r in rows if r["r"]["packets"] == 0
           or r["r"]["delivered"] > r["r"]["packets"]
           or r["r"]["delivered"] < r["r"]["packets"] * 0.99]
    for r in rows:
        print("smoke: %-8s flows=%-6s packets=%d delivered=%d" % (
            r.get("name", r["r"]["module"]), r["flows"], r["r"]["packets"], r["r"]["delivered"]))
    if bad:
        print("W1 smoke FAILED: packets lost or none forwarded", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)
peers = {}
pj = os.path.join(out, "peers.json")
if os.path.exists(pj) and os.path.getmtime(pj) >= min(os.path.getmtime(os.path.join(out, "ferrovs.jsonl")) - 3600, 1e18):
    peers = json.load(open(pj)).get("results", {})
def cell(d):
    if not d:
        return "-"
    if d.get("status", "ok") != "ok":
        return "FAILED"
    return "%.1f (%.0f)" % (d["mpps"], d.get("cycles_per_packet") or 0)
hdr = ["flows", "ferrovs patch", "ferrovs learning", "ferrovs OF simple", "ferrovs OF l3_4k"]
if peers:
    hdr += ["testpmd io", "OVS-DPDK simple", "OVS-DPDK l3_4k", "patch/testpmd",
            "learning/OVS simple", "OF l3_4k/OVS l3_4k"]
print()
print("W1, one core, Mpps (cycles/packet)")
print("| " + " | ".join(hdr) + " |")
print("|" + "|".join("---" for _ in hdr) + "|")
for f, d in fv.items():
    row = [format(int(f), ","), cell(d.get("patch")), cell(d.get("learning")),
           cell(d.get("openflow:simple")), cell(d.get("openflow:l3_4k"))]
    if peers:
        p = peers.get(f, {})
        tp, os_, ol = p.get("testpmd_io"), p.get("ovs_simple"), p.get("ovs_l3_4k")
        row += [cell(tp), cell(os_), cell(ol)]
        ok = lambda x: x and x.get("status") == "ok" and x.get("mpps")
        row.append("%.2fx" % (d["patch"]["mpps"] / tp["mpps"]) if ok(tp) else "-")
        row.append("%.2fx" % (d["learning"]["mpps"] / os_["mpps"]) if ok(os_) else "-")
        row.append("%.2fx" % (d["openflow:l3_4k"]["mpps"] / ol["mpps"]) if ok(ol) and d.get("openflow:l3_4k") else "-")
    print("| " + " | ".join(row) + " |")
if json_out:
    json.dump(dict(meta, ferrovs=fv, peers=peers), open(json_out, "w"), indent=2)
PY
