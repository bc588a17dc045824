#!/usr/bin/env bash
# The os-ken OpenFlow Switch Test Tool (os_ken/tests/switch/tester.py, of13 JSON cases) against
# ferrovs or Open vSwitch, on the same topology and with the same tester code:
#
#   sudo bench/switch-tester.sh --switch ferrovs            # all 991 of13 tests (about an hour)
#   sudo bench/switch-tester.sh --switch ovs                # Debian's OVS, userspace datapath
#   sudo bench/switch-tester.sh --switch ferrovs --cases 'match/17_SCTP|group/'   # a subset
#
# Options:
#   --switch ferrovs|ovs   the switch under test; both the target (dpid 1) and the tester
#                          (dpid 2) are bridges of that switch
#   --cases REGEX          only the of13 case files whose path (e.g. match/17_SCTP_SRC_IPv4.json)
#                          matches the extended regex; default all
#   --ovs-cache on|off     OVS only: `off` sets other_config:flow-limit=0, so ovs-vswitchd
#                          installs no datapath flow and translates every packet afresh (no
#                          stale cached decision after a flow_mod); default on: OVS's defaults
#   --out FILE             JSON result (default bench/out/switch-tester-SWITCH[-nocache]-STAMP.json)
#   --bin DIR              ferrovs binaries (default target/release)
#   --port N               OpenFlow port of the tester app (default 6633)
#   --stall SECS           give up when no test has finished for SECS (default 300)
#
# Everything lives in a private network namespace: veth pairs cable target port i to tester
# port i (i = 1..3), the switch daemons run inside it with a private rundir and database, and
# the tester app listens on 127.0.0.1 there, so nothing system-wide is touched and two runs
# (ferrovs and OVS) can go side by side. All of it is removed on exit, even on failure.
# Prints pass/fail counts and the failures per case file; the JSON holds every test's result.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

SWITCH=ferrovs CASES="" OVS_CACHE=on OUT="" BIN="$ROOT/target/release" PORT=6633 STALL=300
while (($#)); do
    case "$1" in
        --switch) SWITCH=$2; shift 2 ;;
        --cases) CASES=$2; shift 2 ;;
        --ovs-cache) OVS_CACHE=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --bin) BIN=$(realpath "$2"); shift 2 ;;
        --port) PORT=$2; shift 2 ;;
        --stall) STALL=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
done
case "$SWITCH" in ferrovs|ovs) ;; *) echo "--switch must be ferrovs or ovs" >&2; exit 2 ;; esac
case "$OVS_CACHE" in on|off) ;; *) echo "--ovs-cache must be on or off" >&2; exit 2 ;; esac
if [ "$(id -u)" != 0 ]; then
    echo "needs root (network namespace, veth pairs)" >&2
    exit 1
fi

PY="$ROOT/.venv/bin/python"
if [ ! -x "$PY" ]; then
    python3 -m venv "$ROOT/.venv"
fi
"$PY" -c 'import os_ken' 2>/dev/null ||
    "$ROOT/.venv/bin/pip" install -q --disable-pip-version-check -r "$ROOT/tests/requirements.txt"
OF13=$("$PY" -c 'import os, os_ken.tests.switch as s; print(os.path.join(os.path.dirname(s.__file__), "of13"))')

if [ "$SWITCH" = ferrovs ]; then
    for b in ferrovsd ferrovs; do
        [ -x "$BIN/$b" ] || { echo "$BIN/$b missing: cargo build --release -p ferrovsd -p ferrovs" >&2; exit 1; }
    done
else
    for b in ovs-vswitchd ovsdb-server ovsdb-tool ovs-appctl; do
        command -v "$b" >/dev/null || { echo "$b missing (apt-get install openvswitch-switch)" >&2; exit 1; }
    done
fi
command -v ovs-vsctl >/dev/null || { echo "ovs-vsctl missing (openvswitch-common)" >&2; exit 1; }

label=$SWITCH
[ "$SWITCH" = ovs ] && [ "$OVS_CACHE" = off ] && label=ovs-nocache
stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p "$ROOT/bench/out"
OUT=${OUT:-$ROOT/bench/out/switch-tester-$label-$stamp.json}
LOG=${OUT%.json}.log

TAG="$$"
NS="fvst$TAG"
WORK=$(mktemp -d /tmp/ferrovs-switch-tester.XXXXXX)
PIDS=()

cleanup() {
    set +e
    # What we started, and anything else still running in our private namespace.
    local all=("${PIDS[@]}")
    all+=($(ip netns pids "$NS" 2>/dev/null))
    for p in "${all[@]}"; do
        kill "$p" 2>/dev/null
    done
    for p in "${all[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null
    done
    ip netns del "$NS" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# (Background jobs use `ip netns exec` directly: it execs the command, so $! is its pid.)
in_ns() { ip netns exec "$NS" "$@"; }

# The cases: all of of13, or a tree of links to the files whose relative path matches.
if [ -n "$CASES" ]; then
    n=0
    while IFS= read -r rel; do
        mkdir -p "$WORK/cases/$(dirname "$rel")"
        ln -s "$OF13/$rel" "$WORK/cases/$rel"
        n=$((n + 1))
    done < <(cd "$OF13" && find . -name '*.json' | sed 's|^\./||' | sort | grep -E -- "$CASES" || true)
    ((n)) || { echo "no of13 case file matches '$CASES'" >&2; exit 2; }
    CASE_DIR="$WORK/cases"
else
    CASE_DIR="$OF13"
fi

# The cabling: target port i <-> tester port i, inside the namespace.
ip netns add "$NS"
in_ns ip link set lo up
for i in 1 2 3; do
    in_ns ip link add "fvt${TAG}a$i" type veth peer name "fvt${TAG}b$i"
    for side in a b; do
        # No IPv6 (and so no router solicitation or MLD report) from the cables themselves.
        dev="fvt${TAG}$side$i"
        in_ns sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1" || true
        in_ns ip link set "$dev" mtu 9000
        in_ns ethtool -K "$dev" tx off rx off >/dev/null 2>&1 || true
        in_ns ip link set "$dev" up
    done
done

RUN="$WORK/run"
mkdir -p "$RUN"
DB="unix:$RUN/db.sock"

if [ "$SWITCH" = ferrovs ]; then
    ip netns exec "$NS" "$BIN/ferrovsd" --rundir "$RUN" >"$RUN/ferrovsd.log" 2>&1 &
    PIDS+=($!)
    DAEMON_LOG="$RUN/ferrovsd.log"
    DATAPATH_TYPE=()
else
    export OVS_RUNDIR="$RUN" OVS_LOGDIR="$RUN" OVS_DBDIR="$RUN" OVS_SYSCONFDIR="$RUN"
    ovsdb-tool create "$RUN/conf.db" /usr/share/openvswitch/vswitch.ovsschema
    ip netns exec "$NS" ovsdb-server "$RUN/conf.db" --remote="punix:$RUN/db.sock" \
        --unixctl="$RUN/ovsdb-server.ctl" --pidfile="$RUN/ovsdb-server.pid" \
        --log-file="$RUN/ovsdb-server.log" >/dev/null 2>&1 &
    PIDS+=($!)
    for _ in $(seq 100); do [ -S "$RUN/db.sock" ] && break; sleep 0.1; done
    ovs-vsctl --db="$DB" --no-wait init
    ip netns exec "$NS" ovs-vswitchd "$DB" --unixctl="$RUN/ovs-vswitchd.ctl" \
        --pidfile="$RUN/ovs-vswitchd.pid" --log-file="$RUN/ovs-vswitchd.log" >/dev/null 2>&1 &
    PIDS+=($!)
    DAEMON_LOG="$RUN/ovs-vswitchd.log"
    DATAPATH_TYPE=(datapath_type=netdev other-config:disable-in-band=true)
fi
for _ in $(seq 100); do [ -S "$RUN/db.sock" ] && break; sleep 0.1; done
[ -S "$RUN/db.sock" ] || { echo "the $SWITCH database did not come up" >&2; cat "$DAEMON_LOG" >&2; exit 1; }

# Two bridges: target (dpid 1) on the a-side ports, tester (dpid 2) on the b-side ports.
# The three cables form a loop, so the bridges get their ports only once their flow tables
# are empty (a bridge created without a controller starts with priority=0,actions=NORMAL in
# ferrovs) and their controller is set: until the tester connects, nothing is forwarded.
vsctl=(ovs-vsctl --db="$DB" --timeout=30)
for br in target:1 tester:2; do
    IFS=: read -r name dpid <<<"$br"
    "${vsctl[@]}" -- add-br "$name" -- set Bridge "$name" "${DATAPATH_TYPE[@]}" \
        "other-config:datapath-id=$(printf %016x "$dpid")" protocols=OpenFlow13 fail_mode=secure \
        -- set-controller "$name" "tcp:127.0.0.1:$PORT"
    if [ "$SWITCH" = ferrovs ]; then
        "$BIN/ferrovs" --rundir "$RUN" del-flows "$name"
    else
        ovs-ofctl -O OpenFlow13 del-flows "$name"
    fi
done
for br in target:a tester:b; do
    IFS=: read -r name side <<<"$br"
    args=()
    for i in 1 2 3; do
        args+=(-- add-port "$name" "fvt${TAG}$side$i" -- set Interface "fvt${TAG}$side$i" "ofport_request=$i")
    done
    "${vsctl[@]}" "${args[@]}"
done
if [ "$SWITCH" = ovs ] && [ "$OVS_CACHE" = off ]; then
    "${vsctl[@]}" set Open_vSwitch . other_config:flow-limit=0
fi

echo "switch-tester: $label, cases $CASE_DIR, log $LOG" >&2
ip netns exec "$NS" "$PY" "$ROOT/bench/switch_tester_run.py" --dir "$CASE_DIR" --port "$PORT" --out "$OUT" \
    --label "$label" >"$LOG" 2>&1 &
TESTER=$!
PIDS+=("$TESTER")

# The tester waits forever for a switch that went away; give up when nothing progresses.
last=$(date +%s)
size=0
while kill -0 "$TESTER" 2>/dev/null; do
    sleep 5
    s=$(stat -c %s "$OUT" 2>/dev/null || echo 0)
    now=$(date +%s)
    if [ "$s" != "$size" ]; then
        size=$s last=$now
    elif ((now - last > STALL)); then
        echo "switch-tester: no test finished for ${STALL}s; stopping" >&2
        kill "$TESTER"
        break
    fi
done
wait "$TESTER" 2>/dev/null || true
cp "$DAEMON_LOG" "${OUT%.json}.daemon.log" 2>/dev/null || true

[ -s "$OUT" ] || { echo "no result written; see $LOG" >&2; exit 1; }
"$PY" - "$OUT" <<'EOF'
import collections, json, sys
doc = json.load(open(sys.argv[1]))
tests = doc["tests"]
fails = [t for t in tests if t["result"] != "OK"]
by_file = collections.OrderedDict()
for t in fails:
    by_file.setdefault(t["file"], []).append(t)
totals = collections.Counter(t["file"] for t in tests)
print(f"{doc['switch']}: {doc['pass']} pass / {doc['fail']} fail of {len(tests)} tests "
      f"({doc['elapsed_s'] / 60:.0f} min)")
cats = collections.Counter(t["file"].split(":")[0] for t in fails)
print("failures by category: " + ", ".join(f"{c} {n}" for c, n in sorted(cats.items())))
for f, ts in by_file.items():
    print(f"  {f}: {len(ts)}/{totals[f]} failed")
    for t in ts:
        print(f"      {t['test']}\n          {t['detail'][:300]}")
print(f"results: {sys.argv[1]}")
EOF
