#!/usr/bin/env bash
# W8 through the whole pipeline, one core, in memory (pcap replay -> null):
#  (a) established connections through `ct(table=1)` and `ct_state=+trk+est`, at 1, 1K and
#      100K connections (`ferrovs-bench gen-w8`: each connection's datagram and its reply, so
#      after the first round every connection is established);
#  (b) new connections with commit (`ferrovs-bench gen-w8new`: per connection a SYN, which
#      the `+trk+new` rule commits, and an RST, `+trk+est`; on every round of the replay the
#      SYN finds its connection closed both ways and opens it again), the rules of (a);
#  (c) the same with SNAT (`ct(table=1,nat)`, then `ct(commit,nat(src=...))`).
# With --peers, OVS-DPDK 3.1's userspace conntrack runs the same rules on the same pcaps in
# the same session (bench/w1-peers.sh --workload w8 and w8new), and the tables show the
# ratios. A new connection costs two packets (its SYN and its RST): new connections per
# second are half the packet rate of (b) and (c).
#
#   bench/w8.sh [--seconds S] [--conns "1 1000 100000"] [--new-conns "100000"]
#               [--cases "est new"] [--peers] [--json FILE] [--no-build]
#   bench/w8.sh --smoke               # short run that checks the runner (every packet delivered)
#   bench/w8.sh --print-rules [snat]  # the OpenFlow rules, as ovs-ofctl add-flows takes them
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER=5
CONNS="1 1000 100000"
NEW_CONNS="100000"
CASES="est new"
PEERS=0
SMOKE=0
JSON_OUT=""
BUILD=1
while (($#)); do
    case $1 in
        --seconds) SECONDS_PER=$2; shift 2 ;;
        --conns) CONNS=$2; shift 2 ;;
        --new-conns) NEW_CONNS=$2; shift 2 ;;
        --cases) CASES=$2; shift 2 ;;
        --peers) PEERS=1; shift ;;
        --json) JSON_OUT=$2; shift 2 ;;
        --smoke) SMOKE=1; SECONDS_PER=0.5; CONNS="1 1000"; NEW_CONNS="1000"; shift ;;
        --no-build) BUILD=0; shift ;;
        --print-rules)
            if [ "${2:-}" = snat ]; then
                cat <<'EOF'
table=0,priority=10,ip,ct_state=-trk,actions=ct(table=1,nat)
table=1,priority=10,ip,ct_state=+trk+new,actions=ct(commit,nat(src=10.255.0.1-10.255.0.255:1024-65535)),output:2
table=1,priority=10,ip,ct_state=+trk+est,actions=output:2
table=1,priority=1,actions=drop
EOF
            else
                cat <<'EOF'
table=0,priority=10,ip,ct_state=-trk,actions=ct(table=1)
table=1,priority=10,ip,ct_state=+trk+new,actions=ct(commit),output:2
table=1,priority=10,ip,ct_state=+trk+est,actions=output:2
table=1,priority=1,actions=drop
EOF
            fi
            exit 0 ;;
        *) echo "usage: $0 [--seconds S] [--conns LIST] [--new-conns LIST] [--cases \"est new\"] [--peers] [--json FILE] [--smoke] [--no-build] [--print-rules [snat]]" >&2
           exit 2 ;;
    esac
done
OUT=bench/out
mkdir -p "$OUT"
RULES=$(realpath -m "$OUT/w8-ct_est.flows")
"$0" --print-rules > "$RULES"
SNAT_RULES=$(realpath -m "$OUT/w8-ct_snat.flows")
"$0" --print-rules snat > "$SNAT_RULES"
has_case() { [[ " $CASES " == *" $1 "* ]]; }
BIN_DIR=${FERROVS_BIN_DIR:-${CARGO_TARGET_DIR:-target}/release}
if ((BUILD)); then cargo build --release -q -p ferrovs-bench; fi
B=$(realpath -m "$BIN_DIR/ferrovs-bench")
[ -x "$B" ] || { echo "w8.sh: $B missing (cargo build --release -p ferrovs-bench)" >&2; exit 1; }
STARTED=$(date -u +%FT%TZ)
CORE=$(( $(nproc) - 1 ))
PIN=(taskset -c "$CORE")
command -v taskset >/dev/null || PIN=()

# One ferrovs cell: case, connections, pcap, rules.
fv_cell() {
    local line
    line=$("${PIN[@]}" "$B" w1 --module openflow --rules "@$4" --pcap "$3" \
        --seconds "$SECONDS_PER" --json)
    echo "{\"case\": \"$1\", \"conns\": $2, \"r\": $line}" >> "$OUT/w8-ferrovs.jsonl"
}
: > "$OUT/w8-ferrovs.jsonl"
rm -f "$OUT/w8-peers.json" "$OUT/w8new-peers.json"
if has_case est; then
    for c in $CONNS; do
        [ -f "$OUT/w8-$c.pcap" ] || "$B" gen-w8 --flows "$c" --out "$OUT/w8-$c.pcap"
        fv_cell est "$c" "$OUT/w8-$c.pcap" "$RULES"
    done
fi
if has_case new; then
    for c in $NEW_CONNS; do
        [ -f "$OUT/w8new-$c.pcap" ] || "$B" gen-w8new --flows "$c" --out "$OUT/w8new-$c.pcap"
        fv_cell new "$c" "$OUT/w8new-$c.pcap" "$RULES"
        fv_cell snat "$c" "$OUT/w8new-$c.pcap" "$SNAT_RULES"
    done
fi

if ((PEERS)); then
    SECS_INT=${SECONDS_PER%.*}
    [ "${SECS_INT:-0}" -gt 0 ] 2>/dev/null || SECS_INT=1
    if has_case est; then
        FERROVS_BENCH=$B bench/w1-peers.sh --workload w8 --only ovs --flows "$CONNS" \
            --seconds "$SECS_INT" --json "$OUT/w8-peers.json" --pcap-dir "$OUT" || \
            echo "w1-peers.sh --workload w8 failed; printing what was measured" >&2
    fi
    if has_case new; then
        FERROVS_BENCH=$B bench/w1-peers.sh --workload w8new --only ovs --flows "$NEW_CONNS" \
            --seconds "$SECS_INT" --json "$OUT/w8new-peers.json" --pcap-dir "$OUT" || \
            echo "w1-peers.sh --workload w8new failed; printing what was measured" >&2
    fi
fi

python3 - "$OUT" "$SMOKE" "$JSON_OUT" "$STARTED" "$SECONDS_PER" "$CORE" "$PEERS" <<'PY'
import json, os, sys
out, smoke, json_out, peers_run = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[7] == "1"
fv = {}
for line in open(os.path.join(out, "w8-ferrovs.jsonl")):
    r = json.loads(line)
    fv.setdefault(r["case"], {})[str(r["conns"])] = r["r"]
meta = {"benchmark": "W8", "started": sys.argv[4], "seconds": float(sys.argv[5]),
        "core": int(sys.argv[6]), "smoke": smoke, "load": list(os.getloadavg())}
if smoke:
    for case, byc in fv.items():
        for c, r in byc.items():
            print("smoke: %-4s conns=%-6s packets=%d delivered=%d"
                  % (case, c, r["packets"], r["delivered"]))
    if json_out:
        json.dump(dict(meta, ferrovs=fv, peers={}), open(json_out, "w"), indent=2)
    # Every packet leaves on port 2 (new ones committed, established ones and the RSTs of
    # (b) and (c) as +est): the smoke checks that the tracked pipeline (ct, recirculation,
    # commit, NAT) forwards every packet.
    bad = ["%s/%s" % (case, c) for case, byc in fv.items() for c, r in byc.items()
           if r["packets"] == 0 or r["delivered"] < r["packets"] * 0.99]
    if bad:
        print("W8 smoke FAILED: packets lost at %s" % bad, file=sys.stderr)
        sys.exit(1)
    sys.exit(0)
peers = {}
for name in ("w8-peers.json", "w8new-peers.json"):
    path = os.path.join(out, name)
    if peers_run and os.path.exists(path):
        for c, cols in json.load(open(path)).get("results", {}).items():
            peers.setdefault(c, {}).update(cols)
def cell(d):
    if not d:
        return "-"
    if d.get("status", "ok") != "ok":
        return "FAILED"
    return "%.2f (%.0f)" % (d["mpps"], d.get("cycles_per_packet") or 0)
def ok(p):
    return bool(p) and p.get("status") == "ok" and bool(p.get("mpps"))
def ratio(d, p):
    # By cycles per packet: each switch's cost on its core, whatever share of the core the
    # scheduler gave it (on a shared machine the Mpps move with that share).
    if not ok(p):
        return "-"
    dc, pc = d.get("cycles_per_packet"), p.get("cycles_per_packet")
    return "%.2fx" % (pc / dc) if dc and pc else "-"
titles = {
    "est": ("W8 (a), established connections through ct(table=1)", "ovs_ct_est"),
    "new": ("W8 (b), new connections, ct(commit); a SYN and an RST each", "ovs_ct_new"),
    "snat": ("W8 (c), new connections, ct(commit,nat(src=...)); a SYN and an RST each",
             "ovs_ct_snat"),
}
for case in ("est", "new", "snat"):
    if case not in fv:
        continue
    title, col = titles[case]
    hdr = ["connections", "ferrovs", "OVS-DPDK", "ratio by cycles", "ratio by Mpps"]
    if case != "est":
        hdr.append("new conn/s ferrovs, OVS-DPDK")
    print()
    print(title + "; one core, Mpps (cycles/packet)")
    print("| " + " | ".join(hdr) + " |")
    print("|" + "|".join("---" for _ in hdr) + "|")
    for c, d in fv[case].items():
        p = peers.get(c, {}).get(col)
        row = [format(int(c), ","), cell(d), cell(p), ratio(d, p),
               "%.2fx" % (d["mpps"] / p["mpps"]) if ok(p) else "-"]
        if case != "est":
            row.append("%.0fK, %s" % (d["mpps"] * 500, "%.0fK" % (p["mpps"] * 500) if ok(p) else "-"))
        print("| " + " | ".join(row) + " |")
if json_out:
    json.dump(dict(meta, ferrovs=fv, peers=peers), open(json_out, "w"), indent=2)
PY
