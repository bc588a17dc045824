#!/usr/bin/env bash
# W5, control-plane scale: Debian's ovs-ofctl adds, dumps and deletes N flows (nw_dst=/32, one
# subtable, as OVN's and Faucet's big tables look) on ferrovs and on OVS 3.1 (userspace
# datapath) in the same run, and prints both times and the ratio.
#
# Usage: sudo bench/w5.sh [--flows 100000] [--groups N] [--meters M] [--no-flow-steps]
#        [--only ferrovs|ovs]
#        [--w1] [--json FILE] [--keep-tmp]
# Needs a release build (cargo build --release -p ferrovsd); FERROVS_BIN_DIR overrides where
# ferrovsd is looked for (default target/release, or $CARGO_TARGET_DIR/release).
# Measures, per switch: `add-flows` (one flow_mod per flow, then a barrier), `add-flows
# --bundle` (one OpenFlow 1.4 bundle) into an empty table, `dump-flows` (the count is
# checked), `del-flows` after each add, and `incr`: 100 separate `ovs-ofctl --bundle
# add-flows` calls of 10 flows each into the full table (scripted, incremental changes: each
# call pays connection set-up and a bundle commit against N flows). Every number printed was
# measured; a step that fails prints FAILED and the script exits 3. With --w1, also W1
# forwarding on ferrovs while the N flows are added (bench/w5_w1.py; plain and --bundle).
# --json FILE also writes every number (seconds per step and switch, or "FAILED"; the W1
# lines of w5_w1.py) with the date and load average. Beside each wall time: ovs-ofctl's own
# CPU time (user + system) on each switch; "best", OVS's time over that CPU time on ferrovs,
# the highest wall-time ratio any switch could reach against this client; and the switch
# process's own CPU time for the step (ferrovsd, ovs-vswitchd) with OVS's over ferrovs's.
# --groups N adds group steps after the flow steps, on the same switches: `gadd`, Debian's
# `ovs-ofctl -O OpenFlow13 add-groups` of N one-bucket select groups (one group_mod and a
# barrier each); `gstats`, `dump-group-stats` of them while N flows (nw_dst=/32, flow I
# sending to group I, added as a bundle beforehand) refer to them (every ref_count=1 checked);
# `gmod`, 20 separate `ovs-ofctl -O OpenFlow14 bundle` calls, each modifying 10 of the N
# groups in one bundle; `gdel`, `del-groups` of the N groups, which takes their N flows with
# them (checked); `gbundle`, `--bundle add-groups` of the N into an empty table;
# then, with the groups' N flows and N flows of no group together in table 0 (one subtable):
# `gdel1`, 10 separate `del-groups group_id=X` calls (10 of the N flows go); `gdelb`, one
# `ovs-ofctl -O OpenFlow14 bundle` of min(1000, N/10) group deletes; `gdelmix`, `del-groups` of
# the rest, which leaves the N flows of no group (all checked); then del-flows, untimed.
# --meters M adds meter steps after those, on the same switches: M meters (one `add-meter`
# call each, untimed), flow I of M (nw_dst=13.A.B.C) through meter I, and the N flows of
# no meter (nw_dst=10.A.B.C, as a bundle) in table 0; then `mdel1`, 10 separate `del-meters
# meter=X` calls (10 flows go); `mdel`, `del-meters` of the rest, which leaves the N flows
# of no meter (all checked).
# --no-flow-steps skips the flow steps (add to del_after_bundle, incr): group steps only.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
FLOWS=100000
NGROUPS=0
NMETERS=0
ONLY=""
KEEP_TMP=0
W1=0
FLOW_STEPS=1
JSON_OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --flows) FLOWS=$2; shift 2 ;;
        --groups) NGROUPS=$2; shift 2 ;;
        --meters) NMETERS=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        --keep-tmp) KEEP_TMP=1; shift ;;
        --w1) W1=1; shift ;;
        --no-flow-steps) FLOW_STEPS=0; shift ;;
        --json) JSON_OUT=$2; shift 2 ;;
        -h|--help) sed -n '2,39p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "w5: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ $FLOWS =~ ^[0-9]+$ && $FLOWS -gt 0 && $FLOWS -le 16000000 ]] || { echo "w5: --flows 1..16000000" >&2; exit 2; }
[[ $NGROUPS =~ ^[0-9]+$ && $NGROUPS -le 1000000 ]] || { echo "w5: --groups 0..1000000" >&2; exit 2; }
[[ $NMETERS =~ ^[0-9]+$ && $NMETERS -le 200000 ]] || { echo "w5: --meters 0..200000" >&2; exit 2; }
case "$ONLY" in ""|ferrovs|ovs) ;; *) echo "w5: --only ferrovs|ovs" >&2; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "w5: run as root" >&2; exit 1; }
for t in ovs-ofctl ovs-vsctl ovsdb-tool ovsdb-server ovs-vswitchd; do
    command -v "$t" >/dev/null || { echo "w5: $t missing (apt-get install openvswitch-switch)" >&2; exit 1; }
done
BIN=${FERROVS_BIN_DIR:-${CARGO_TARGET_DIR:-$REPO/target}/release}
if [ "$ONLY" != ovs ] && [ ! -x "$BIN/ferrovsd" ]; then
    echo "w5: $BIN/ferrovsd missing: cargo build --release -p ferrovsd" >&2
    exit 1
fi

WORK=$(mktemp -d /tmp/w5.XXXXXX)
FPID=""
cleanup() {
    set +e
    [ -n "$FPID" ] && kill "$FPID" 2>/dev/null && wait "$FPID" 2>/dev/null
    # exit --cleanup: ovs-vswitchd deletes its datapath and with it the persistent taps of
    # the netdev datapath (ovs-netdev, br0) in the root namespace; a plain kill leaves them,
    # and the next run's br0 internal port then cannot be made.
    # It answers before it has finished: give it 5 s to be gone before it is killed.
    if [ -S "$WORK/ovs/vswitchd.ctl" ] && [ -f "$WORK/ovs/vswitchd.pid" ]; then
        local vpid; vpid=$(cat "$WORK/ovs/vswitchd.pid")
        ovs-appctl -t "$WORK/ovs/vswitchd.ctl" --timeout=10 exit --cleanup >/dev/null 2>&1
        for _ in $(seq 50); do [ -d "/proc/$vpid" ] || break; sleep 0.1; done
    fi
    for d in vswitchd ovsdb-server; do
        [ -f "$WORK/ovs/$d.pid" ] && kill "$(cat "$WORK/ovs/$d.pid")" 2>/dev/null
    done
    sleep 0.2
    if [ "$KEEP_TMP" -eq 1 ]; then echo "w5: kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# N distinct /32 destinations: 10.A.B.C.
python3 - "$FLOWS" > "$WORK/flows.txt" <<'EOF'
import sys
n = int(sys.argv[1])
out = sys.stdout
for i in range(n):
    out.write("priority=100,ip,nw_dst=10.%d.%d.%d,actions=output:1\n"
              % ((i >> 16) & 255, (i >> 8) & 255, i & 255))
EOF

# N one-bucket select groups, N flows sending to them (flow I to group I), and 20 files of
# 10 modifications spread over the groups.
if [ "$NGROUPS" -gt 0 ]; then
    python3 - "$NGROUPS" "$WORK" <<'EOF'
import sys
n, work = int(sys.argv[1]), sys.argv[2]
with open(f"{work}/groups.txt", "w") as f:
    for i in range(1, n + 1):
        f.write("group_id=%d,type=select,bucket=output:1\n" % i)
with open(f"{work}/gflows.txt", "w") as f:
    for i in range(1, n + 1):
        f.write("priority=100,ip,nw_dst=10.%d.%d.%d,actions=group:%d\n"
                % ((i >> 16) & 255, (i >> 8) & 255, i & 255, i))
for b in range(20):
    with open(f"{work}/gmod{b}.txt", "w") as f:
        for k in range(10):
            i = 1 + (b * 10 + k) * n // 200
            f.write("group modify group_id=%d,type=select,bucket=output:2\n" % i)
# N flows beside the groups' in the same table and subtable (nw_dst=12.A.B.C), the ids of
# the 10 groups deleted one by one and of the batch deleted in one bundle.
with open(f"{work}/oflows.txt", "w") as f:
    for i in range(1, n + 1):
        f.write("priority=100,ip,nw_dst=12.%d.%d.%d,actions=output:1\n"
                % ((i >> 16) & 255, (i >> 8) & 255, i & 255))
single = [1 + k * n // 10 for k in range(10)] if n >= 10 else [1]
with open(f"{work}/gdel1.txt", "w") as f:
    f.write(" ".join(str(i) for i in sorted(set(single))) + "\n")
taken = set(single)
batch = []
nb = max(1, min(1000, n // 10))
for k in range(nb):
    i = 1 + (k * n // nb + n // (2 * nb)) % n
    if i not in taken:
        taken.add(i)
        batch.append(i)
with open(f"{work}/gdelb.txt", "w") as f:
    for i in batch:
        f.write("group delete group_id=%d\n" % i)
EOF
fi
gdel1() { # TARGET: del-groups of each group in gdel1.txt, one call each
    local i
    for i in $(cat "$WORK/gdel1.txt"); do
        ovs-ofctl -O OpenFlow13 del-groups "$1" "group_id=$i" || return 1
    done
}
gmod() { # TARGET
    local b
    for b in $(seq 0 19); do
        ovs-ofctl -O OpenFlow14 bundle "$1" "$WORK/gmod$b.txt" || return 1
    done
}

# 100 small files of 10 flows each, on another subtable (nw_src=/32).
mkdir -p "$WORK/incr"
python3 - "$WORK/incr" <<'EOF'
import sys
for b in range(100):
    with open(f"{sys.argv[1]}/{b}.txt", "w") as f:
        for i in range(10):
            f.write("priority=200,ip,nw_src=11.0.%d.%d,actions=drop\n" % (b, i))
EOF
incr() { # TARGET
    local b
    for b in $(seq 0 99); do
        ovs-ofctl -O OpenFlow14 --bundle add-flows "$1" "$WORK/incr/$b.txt" || return 1
    done
}

# M flows through meters (flow I through meter I), and the 10 meters deleted one by one.
if [ "$NMETERS" -gt 0 ]; then
python3 - "$NMETERS" "$WORK" <<'EOF'
import sys
n, work = int(sys.argv[1]), sys.argv[2]
with open(f"{work}/mflows.txt", "w") as f:
    for i in range(1, n + 1):
        f.write("priority=100,ip,nw_dst=13.%d.%d.%d,actions=meter:%d,output:1\n"
                % ((i >> 16) & 255, (i >> 8) & 255, i & 255, i))
with open(f"{work}/mdel1.txt", "w") as f:
    f.write(" ".join(str(1 + (k * n) // 10) for k in range(min(10, n))) + "\n")
EOF
fi
mdel1() { # TARGET: del-meters of each meter in mdel1.txt, one call each
    local i
    for i in $(cat "$WORK/mdel1.txt"); do
        ovs-ofctl -O OpenFlow13 del-meters "$1" "meter=$i" || return 1
    done
}

export WORK
export -f incr gmod gdel1 mdel1
now() { date +%s.%N; }
# The switch process's CPU time so far (user + system), in clock ticks.
SPID=""
ticks() { awk '{ print $14 + $15 }' "/proc/$SPID/stat"; }
declare -A RES CPU SW
FAILED=0
# timed NAME SWITCH cmd...: runs cmd, stores seconds in RES[SWITCH.NAME].
timed() {
    local name=$1 sw=$2; shift 2
    local t0 t1
    local s0 s1
    s0=$(ticks)
    t0=$(now)
    # The client's own CPU time (user + system, its children included) is the floor of the
    # step's wall time whatever the switch does: printed beside the wall time.
    if /usr/bin/time -f '%U %S' -o "$WORK/$sw.$name.cpu" "$@" > "$WORK/$sw.$name.out" 2>&1; then
        t1=$(now)
        s1=$(ticks)
        RES[$sw.$name]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
        CPU[$sw.$name]=$(awk '{ printf "%.3f", $1 + $2 }' "$WORK/$sw.$name.cpu")
        SW[$sw.$name]=$(awk -v a="$s0" -v b="$s1" -v hz="$(getconf CLK_TCK)" \
            'BEGIN { printf "%.2f", (b - a) / hz }')
    else
        RES[$sw.$name]=FAILED; FAILED=1
        echo "w5: $sw $name failed:" >&2; tail -5 "$WORK/$sw.$name.out" >&2
    fi
}
count_flows() { # target: number of flows in table 0
    ovs-ofctl -O OpenFlow14 dump-flows "$1" | grep -c 'nw_dst=' || true
}
run_steps() { # SWITCH TARGET
    local sw=$1 tgt=$2 n
    timed add "$sw" ovs-ofctl -O OpenFlow14 add-flows "$tgt" "$WORK/flows.txt"
    timed dump "$sw" ovs-ofctl -O OpenFlow14 dump-flows "$tgt"
    n=$(grep -c 'nw_dst=' "$WORK/$sw.dump.out" || true)
    [ "$n" = "$FLOWS" ] || { echo "w5: $sw dump shows $n flows, want $FLOWS" >&2; RES[$sw.dump]=FAILED; FAILED=1; }
    timed del "$sw" ovs-ofctl -O OpenFlow14 del-flows "$tgt"
    n=$(count_flows "$tgt")
    [ "$n" = 0 ] || { echo "w5: $sw still has $n flows after del-flows" >&2; RES[$sw.del]=FAILED; FAILED=1; }
    timed bundle "$sw" ovs-ofctl -O OpenFlow14 --bundle add-flows "$tgt" "$WORK/flows.txt"
    n=$(count_flows "$tgt")
    [ "$n" = "$FLOWS" ] || { echo "w5: $sw has $n flows after the bundle, want $FLOWS" >&2; RES[$sw.bundle]=FAILED; FAILED=1; }
    timed incr "$sw" bash -c 'incr "$1"' incr "$tgt"
    n=$(ovs-ofctl -O OpenFlow14 dump-flows "$tgt" | grep -c 'nw_src=' || true)
    [ "$n" = 1000 ] || { echo "w5: $sw has $n incremental flows, want 1000" >&2; RES[$sw.incr]=FAILED; FAILED=1; }
    timed del_after_bundle "$sw" ovs-ofctl -O OpenFlow14 del-flows "$tgt"
}
count_groups() { # target: number of groups
    ovs-ofctl -O OpenFlow13 dump-groups "$1" | grep -c 'group_id=' || true
}
group_steps() { # SWITCH TARGET
    local sw=$1 tgt=$2 n
    [ "$NGROUPS" -gt 0 ] || return 0
    ovs-ofctl -O OpenFlow13 del-flows "$tgt"
    timed gadd "$sw" ovs-ofctl -O OpenFlow13 add-groups "$tgt" "$WORK/groups.txt"
    n=$(count_groups "$tgt")
    [ "$n" = "$NGROUPS" ] || { echo "w5: $sw has $n groups after add-groups, want $NGROUPS" >&2; RES[$sw.gadd]=FAILED; FAILED=1; }
    ovs-ofctl -O OpenFlow14 --bundle add-flows "$tgt" "$WORK/gflows.txt"
    timed gstats "$sw" ovs-ofctl -O OpenFlow13 dump-group-stats "$tgt"
    n=$(grep -c 'ref_count=1,' "$WORK/$sw.gstats.out" || true)
    [ "$n" = "$NGROUPS" ] || { echo "w5: $sw group stats show $n groups with ref_count=1, want $NGROUPS" >&2; RES[$sw.gstats]=FAILED; FAILED=1; }
    timed gmod "$sw" bash -c 'gmod "$1"' gmod "$tgt"
    n=$(ovs-ofctl -O OpenFlow13 dump-groups "$tgt" | grep -c 'actions=output:2' || true)
    [ "$n" = 200 ] || { echo "w5: $sw has $n modified groups, want 200" >&2; RES[$sw.gmod]=FAILED; FAILED=1; }
    timed gdel "$sw" ovs-ofctl -O OpenFlow13 del-groups "$tgt"
    n=$(count_flows "$tgt")
    [ "$n" = 0 ] || { echo "w5: $sw still has $n flows after del-groups" >&2; RES[$sw.gdel]=FAILED; FAILED=1; }
    timed gbundle "$sw" ovs-ofctl -O OpenFlow14 --bundle add-groups "$tgt" "$WORK/groups.txt"
    n=$(count_groups "$tgt")
    [ "$n" = "$NGROUPS" ] || { echo "w5: $sw has $n groups after the bundle, want $NGROUPS" >&2; RES[$sw.gbundle]=FAILED; FAILED=1; }
    # The groups' N flows share table 0 (and its subtable) with N flows of no group.
    ovs-ofctl -O OpenFlow14 --bundle add-flows "$tgt" "$WORK/gflows.txt"
    ovs-ofctl -O OpenFlow14 --bundle add-flows "$tgt" "$WORK/oflows.txt"
    local want=$((2 * NGROUPS)) k
    timed gdel1 "$sw" bash -c 'gdel1 "$1"' gdel1 "$tgt"
    k=$(wc -w < "$WORK/gdel1.txt"); want=$((want - k))
    n=$(count_flows "$tgt")
    [ "$n" = "$want" ] || { echo "w5: $sw has $n flows after $k del-groups, want $want" >&2; RES[$sw.gdel1]=FAILED; FAILED=1; }
    timed gdelb "$sw" ovs-ofctl -O OpenFlow14 bundle "$tgt" "$WORK/gdelb.txt"
    k=$(wc -l < "$WORK/gdelb.txt"); want=$((want - k))
    n=$(count_flows "$tgt")
    [ "$n" = "$want" ] || { echo "w5: $sw has $n flows after a bundle of $k group deletes, want $want" >&2; RES[$sw.gdelb]=FAILED; FAILED=1; }
    timed gdelmix "$sw" ovs-ofctl -O OpenFlow13 del-groups "$tgt"
    n=$(count_flows "$tgt")
    [ "$n" = "$NGROUPS" ] || { echo "w5: $sw has $n flows after del-groups, want the $NGROUPS of no group" >&2; RES[$sw.gdelmix]=FAILED; FAILED=1; }
    n=$(count_groups "$tgt")
    [ "$n" = 0 ] || { echo "w5: $sw has $n groups after del-groups" >&2; RES[$sw.gdelmix]=FAILED; FAILED=1; }
    ovs-ofctl -O OpenFlow13 del-flows "$tgt"
}
meter_steps() { # SWITCH TARGET
    local sw=$1 tgt=$2 n i k
    [ "$NMETERS" -gt 0 ] || return 0
    ovs-ofctl -O OpenFlow13 del-flows "$tgt"
    for i in $(seq 1 "$NMETERS"); do
        ovs-ofctl -O OpenFlow13 add-meter "$tgt" "meter=$i,kbps,band=type=drop,rate=1000"
    done
    ovs-ofctl -O OpenFlow14 --bundle add-flows "$tgt" "$WORK/mflows.txt"
    ovs-ofctl -O OpenFlow14 --bundle add-flows "$tgt" "$WORK/flows.txt"
    local want=$((NMETERS + FLOWS))
    n=$(count_flows "$tgt")
    [ "$n" = "$want" ] || { echo "w5: $sw has $n flows with the meters', want $want" >&2; RES[$sw.mdel1]=FAILED; FAILED=1; }
    timed mdel1 "$sw" bash -c 'mdel1 "$1"' mdel1 "$tgt"
    k=$(wc -w < "$WORK/mdel1.txt"); want=$((want - k))
    n=$(count_flows "$tgt")
    [ "$n" = "$want" ] || { echo "w5: $sw has $n flows after $k del-meters, want $want" >&2; RES[$sw.mdel1]=FAILED; FAILED=1; }
    timed mdel "$sw" ovs-ofctl -O OpenFlow13 del-meters "$tgt"
    n=$(count_flows "$tgt")
    [ "$n" = "$FLOWS" ] || { echo "w5: $sw has $n flows after del-meters, want the $FLOWS of no meter" >&2; RES[$sw.mdel]=FAILED; FAILED=1; }
    n=$(ovs-ofctl -O OpenFlow13 dump-meters "$tgt" | grep -c 'meter=' || true)
    [ "$n" = 0 ] || { echo "w5: $sw has $n meters after del-meters" >&2; RES[$sw.mdel]=FAILED; FAILED=1; }
    ovs-ofctl -O OpenFlow13 del-flows "$tgt"
}

if [ "$ONLY" != ovs ]; then
    mkdir -p "$WORK/ferrovs"
    "$BIN/ferrovsd" --rundir "$WORK/ferrovs" > "$WORK/ferrovs/log" 2>&1 &
    FPID=$!
    SPID=$FPID
    for _ in $(seq 100); do [ -S "$WORK/ferrovs/ferrovsd.ctl" ] && break; sleep 0.1; done
    ovs-vsctl --db="unix:$WORK/ferrovs/db.sock" add-br br0 -- set bridge br0 protocols=OpenFlow10,OpenFlow13,OpenFlow14
    for _ in $(seq 100); do [ -S "$WORK/ferrovs/br0.mgmt" ] && break; sleep 0.1; done
    echo "w5: ferrovs, $FLOWS flows" >&2
    [ "$FLOW_STEPS" -eq 0 ] || run_steps ferrovs "unix:$WORK/ferrovs/br0.mgmt"
    group_steps ferrovs "unix:$WORK/ferrovs/br0.mgmt"
    meter_steps ferrovs "unix:$WORK/ferrovs/br0.mgmt"
    kill "$FPID"; wait "$FPID" 2>/dev/null || true; FPID=""
fi

if [ "$ONLY" != ferrovs ]; then
    O=$WORK/ovs; mkdir -p "$O"
    ovsdb-tool create "$O/conf.db" /usr/share/openvswitch/vswitch.ovsschema
    ovsdb-server "$O/conf.db" --remote="punix:$O/db.sock" --pidfile="$O/ovsdb-server.pid" \
        --unixctl="$O/ovsdb-server.ctl" --detach --log-file="$O/ovsdb-server.log"
    ovs-vsctl --db="unix:$O/db.sock" --no-wait init
    OVS_RUNDIR=$O ovs-vswitchd "unix:$O/db.sock" --pidfile="$O/vswitchd.pid" \
        --unixctl="$O/vswitchd.ctl" --detach --log-file="$O/vswitchd.log" --disable-system
    OVS_RUNDIR=$O ovs-vsctl --db="unix:$O/db.sock" add-br br0 -- set bridge br0 datapath_type=netdev \
        protocols=OpenFlow10,OpenFlow13,OpenFlow14
    for _ in $(seq 100); do [ -S "$O/br0.mgmt" ] && break; sleep 0.1; done
    echo "w5: OVS $(ovs-vswitchd --version | head -1 | awk '{print $NF}'), $FLOWS flows" >&2
    SPID=$(cat "$O/vswitchd.pid")
    [ "$FLOW_STEPS" -eq 0 ] || run_steps ovs "unix:$O/br0.mgmt"
    group_steps ovs "unix:$O/br0.mgmt"
    meter_steps ovs "unix:$O/br0.mgmt"
fi

printf '\nW5: %d flows (nw_dst=/32), seconds (flows/s), ovs-ofctl -O OpenFlow14\n' "$FLOWS"
[ "$NGROUPS" -gt 0 ] && printf 'g* steps: %d one-bucket select groups, seconds (groups/s)\n' "$NGROUPS"
[ "$NMETERS" -gt 0 ] && printf 'm* steps: %d meters, each used by one flow, beside the %d flows\n' "$NMETERS" "$FLOWS"
printf '%-18s %20s %20s %8s %16s %8s %16s %8s\n' step ferrovs "OVS 3.1" "OVS/fv" \
    "client CPU f/O" "best" "switch CPU f/O" "O/f CPU"
STEPS="add bundle dump del del_after_bundle incr"
[ "$FLOW_STEPS" -eq 1 ] || STEPS=""
[ "$NGROUPS" -gt 0 ] && STEPS="$STEPS gadd gbundle gstats gmod gdel gdel1 gdelb gdelmix"
[ "$NMETERS" -gt 0 ] && STEPS="$STEPS mdel1 mdel"
for s in $STEPS; do
    f=${RES[ferrovs.$s]:--}; o=${RES[ovs.$s]:--}
    # Rates for the steps that add or dump N flows or groups.
    cell() { local n=$FLOWS
        [[ $s == g* ]] && n=$NGROUPS
        if [[ $1 =~ ^[0-9.]+$ ]] && [[ $s =~ ^(add|bundle|dump|gadd|gbundle|gstats)$ ]]; then
            printf '%s (%s/s)' "$1" "$(awk -v n="$n" -v t="$1" 'BEGIN { printf "%.0f", n / t }')"
        else printf '%s' "$1"; fi; }
    ratio=-
    if [[ $f =~ ^[0-9.]+$ && $o =~ ^[0-9.]+$ ]]; then
        ratio=$(awk -v o="$o" -v f="$f" 'BEGIN { printf "%.2fx", o / (f + 0.0005) }')
    fi
    # best: OVS's wall time over the client's own CPU time on ferrovs, the ratio a switch
    # answering in no time at all would reach with this client.
    fc=${CPU[ferrovs.$s]:--}; oc=${CPU[ovs.$s]:--}; best=-
    if [[ $fc =~ ^[0-9.]+$ && $o =~ ^[0-9.]+$ ]]; then
        best=$(awk -v o="$o" -v c="$fc" 'BEGIN { printf "%.2fx", o / (c + 0.0005) }')
    fi
    fs=${SW[ferrovs.$s]:--}; os=${SW[ovs.$s]:--}; cratio=-
    if [[ $fs =~ ^[0-9.]+$ && $os =~ ^[0-9.]+$ ]] && awk -v f="$fs" 'BEGIN { exit !(f > 0) }'; then
        cratio=$(awk -v o="$os" -v f="$fs" 'BEGIN { printf "%.2fx", o / f }')
    fi
    printf '%-18s %20s %20s %8s %16s %8s %16s %8s\n' "$s" "$(cell "$f")" "$(cell "$o")" "$ratio" \
        "$fc/$oc" "$best" "$fs/$os" "$cratio"
done
if [ "$W1" -eq 1 ] && [ "$ONLY" != ovs ]; then
    [ -x "$BIN/ferrovs-bench" ] || { echo "w5: $BIN/ferrovs-bench missing: cargo build --release -p ferrovs-bench" >&2; exit 1; }
    "$BIN/ferrovs-bench" gen-w1 --flows 1000 --out "$WORK/w1.pcap" >/dev/null
    printf '\nW1 (1K flows, pcap -> null, one poll thread) while %d flows are added:\n' "$FLOWS"
    printf '%-8s %8s %10s %10s %10s %10s %8s\n' mode add_s base_Mpps during min after during%
    for m in plain bundle; do
        if line=$(python3 "$SCRIPT_DIR/w5_w1.py" "$BIN" "$WORK/w1.pcap" "$FLOWS" "$m"); then
            echo "$line" >> "$WORK/w1.jsonl"
            python3 -c 'import json,sys; r=json.loads(sys.argv[1]); f = lambda v, s="%10.2f": (s % v) if v is not None else "%10s" % "-"; print("%-8s %8.2f %10.2f %s %s %10.2f %8s" % (r["mode"], r["add_s"], r["baseline_mpps"], f(r["during_mpps"]), f(r["during_min_mpps"]), r["after_mpps"], "-" if r["during_pct"] is None else "%.1f%%" % r["during_pct"]))' "$line"
        else
            echo "$m FAILED"; FAILED=1
            echo "{\"mode\": \"$m\", \"status\": \"FAILED\"}" >> "$WORK/w1.jsonl"
        fi
    done
fi
if [ -n "$JSON_OUT" ]; then
    for k in "${!RES[@]}"; do
        printf '%s %s %s %s\n' "$k" "${RES[$k]}" "${CPU[$k]:-FAILED}" "${SW[$k]:-FAILED}"
    done > "$WORK/res.txt"
    [ -f "$WORK/w1.jsonl" ] || : > "$WORK/w1.jsonl"
    python3 - "$WORK/res.txt" "$WORK/w1.jsonl" "$FLOWS" "$JSON_OUT" "$ONLY" "$NGROUPS" "$NMETERS" \
        "$(ovs-vswitchd --version | head -1 | awk '{print $NF}')" <<'EOF'
import json, os, sys, time
res, w1, flows, out, only, groups, meters, ovs = sys.argv[1:9]
steps = {}
for line in open(res):
    key, val, cpu, swcpu = line.split()
    sw, step = key.split(".", 1)
    steps.setdefault(step, {})[sw] = val if val == "FAILED" else float(val)
    steps[step][sw + "_client_cpu"] = cpu if cpu == "FAILED" else float(cpu)
    steps[step][sw + "_switch_cpu"] = swcpu if swcpu == "FAILED" else float(swcpu)
doc = {"benchmark": "W5", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "flows": int(flows),
       "groups": int(groups), "meters": int(meters), "only": only or None, "ovs_version": ovs, "load": list(os.getloadavg()),
       "steps": steps, "w1_during_add": [json.loads(l) for l in open(w1) if l.strip()]}
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
EOF
fi
[ "$FAILED" -eq 0 ] || exit 3
