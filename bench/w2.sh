#!/usr/bin/env bash
# W2: real kernel I/O over veth (see /work/shared/BENCHMARKS.md and bench/README.md).
#
#   h1 [eth0] --veth-- [p1  SWITCH  p2] --veth-- [eth0] h2      (three network namespaces)
#
# A generator in h1 floods 64-byte UDP frames to h2's MAC on one core (--gen-core); the switch
# runs pinned to the other core (--sw-core). Sent = h1 eth0 tx_packets, delivered = h2 eth0
# rx_packets, both as deltas over the measured window after a warm-up. The switches, one after
# another in the same run, each in a freshly built topology:
#
#   ferrovs-system   ferrovsd, learning module, system (AF_PACKET) ports
#   ferrovs-afxdp    ferrovsd, learning module, afxdp ports, xdp-mode=native
#   ovs-afpacket     OVS userspace datapath (datapath_type=netdev), AF_PACKET ports, NORMAL
#   ovs-afxdp        OVS userspace datapath, type=afxdp options:xdp-mode=native, NORMAL
#   linux-bridge     the kernel bridge
#
# After the table, W1 scaling: ferrovs-bench's in-memory W1 (openflow, l3_4k rules, the 10K-flow
# pcap) on one poll thread (--sw-core) and on two (--gen-core and --sw-core), through the
# daemon's multi-thread datapath; --no-w1 skips it.
#
# Every cell also gives the switch's CPU time per delivered packet: the switch process's
# utime+stime (all threads, /proc/PID/stat) and the switch core's non-idle time (/proc/stat)
# over the window, divided by the packets h2 received. With --rate PPS the generator is
# ferrovs-pktgen offering a fixed PPS (its token bucket), so every switch gets the same load
# and, if all of it is delivered, the CPU time per packet compares the switches' cost.
#
# Usage: sudo bench/w2.sh [--seconds N] [--warmup N] [--only NAME[,NAME...]] [--json FILE]
#                         [--gen trafgen|pktgen|both] [--gen-core C] [--sw-core C]
#                         [--nice N] [--no-build] [--no-install] [--keep-tmp] [--no-w1]
#                         [--rate PPS]
# A switch that cannot be set up or does not forward prints FAILED and the reason, never a
# number. Everything (namespaces, daemons, XDP programs, temp files) goes away on exit, also
# on failure or Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

SECS=10
WARMUP=3
ONLY=""
JSON_OUT=""
GENS="trafgen"
GEN_CORE=0
SW_CORE=1
BUILD=1
INSTALL=1
KEEP_TMP=0
NICE=0
W1SCALE=1
RATE=0
ALL_SWITCHES="ferrovs-system ferrovs-afxdp ovs-afpacket ovs-afxdp linux-bridge"

usage() {
    sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
while (($#)); do
    case $1 in
        --seconds) SECS=$2; shift 2 ;;
        --warmup) WARMUP=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        --json) JSON_OUT=$2; shift 2 ;;
        --gen) case $2 in
                   trafgen) GENS="trafgen" ;; pktgen) GENS="pktgen" ;;
                   both) GENS="trafgen pktgen" ;; *) usage ;;
               esac; shift 2 ;;
        --gen-core) GEN_CORE=$2; shift 2 ;;
        --sw-core) SW_CORE=$2; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --no-install) INSTALL=0; shift ;;
        --keep-tmp) KEEP_TMP=1; shift ;;
        --nice) NICE=$2; shift 2 ;;
        --no-w1) W1SCALE=0; shift ;;
        --rate) RATE=$2; GENS="pktgen"; shift 2 ;;
        -h|--help) usage ;;
        *) echo "w2.sh: unknown argument $1" >&2; usage ;;
    esac
done
[[ $SECS =~ ^[0-9]+$ && $SECS -gt 0 ]] || { echo "w2.sh: --seconds must be a positive integer" >&2; exit 2; }
[[ $WARMUP =~ ^[0-9]+$ ]] || { echo "w2.sh: --warmup must be an integer" >&2; exit 2; }
[[ $RATE =~ ^[0-9]+$ ]] || { echo "w2.sh: --rate must be packets per second (an integer)" >&2; exit 2; }
[[ $NICE =~ ^-?[0-9]+$ && $NICE -ge -20 && $NICE -le 19 ]] || { echo "w2.sh: --nice must be -20..19" >&2; exit 2; }
# Generator and switch run under `nice -n $NICE`: a negative value keeps other work on the
# machine (builds) from taking their cores as easily.
PIN_GEN=(nice -n "$NICE" taskset -c)
PIN_SW=(nice -n "$NICE" taskset -c)
SWITCHES=$ALL_SWITCHES
if [[ -n $ONLY ]]; then
    SWITCHES=""
    for s in ${ONLY//,/ }; do
        [[ " $ALL_SWITCHES " == *" $s "* ]] || { echo "w2.sh: unknown switch '$s' (known: $ALL_SWITCHES)" >&2; exit 2; }
        SWITCHES+="$s "
    done
fi
[[ $(id -u) == 0 ]] || { echo "w2.sh: needs root (namespaces, veth, XDP)" >&2; exit 1; }

log() { echo "w2: $*" >&2; }

# ---- prerequisites --------------------------------------------------------------------------
need_pkgs=()
command -v trafgen >/dev/null || need_pkgs+=(netsniff-ng)
if [[ " $SWITCHES " == *" ovs-"* ]]; then
    command -v ovs-vswitchd >/dev/null && command -v ovsdb-server >/dev/null || need_pkgs+=(openvswitch-switch)
fi
command -v taskset >/dev/null || need_pkgs+=(util-linux)
command -v python3 >/dev/null || need_pkgs+=(python3)
if ((${#need_pkgs[@]})); then
    if ((INSTALL)); then
        log "installing ${need_pkgs[*]}"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
    else
        echo "w2.sh: missing ${need_pkgs[*]} (and --no-install)" >&2; exit 1
    fi
fi
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=${FERROVS_BIN_DIR:-$CARGO_TARGET_DIR/release}
if ((BUILD)); then
    pkgs=(-p ferrovsd -p ferrovs)
    [[ " $GENS " == *" pktgen "* ]] && pkgs+=(-p ferrovs-pktgen)
    ((W1SCALE)) && pkgs+=(-p ferrovs-bench)
    log "building ${pkgs[*]} (release)"
    cargo build --release -q "${pkgs[@]}"
fi
for b in ferrovsd ferrovs; do
    [[ " $SWITCHES " != *" ferrovs-"* || -x $BIN/$b ]] || { echo "w2.sh: $BIN/$b missing" >&2; exit 1; }
done
[[ " $GENS " != *" pktgen "* || -x $BIN/ferrovs-pktgen ]] || { echo "w2.sh: $BIN/ferrovs-pktgen missing" >&2; exit 1; }

# ---- state and clean-up ---------------------------------------------------------------------
P="w2$$"                       # every namespace is $P-h1, $P-h2, $P-sw
H1=$P-h1; H2=$P-h2; SW=$P-sw
TMP=$(mktemp -d /tmp/w2.XXXXXX)
RESULTS=$TMP/results.jsonl
: > "$RESULTS"
GEN_PID=""
FV_PID=""
SW_PID=""                      # the switch process whose CPU time is reported, if any
OVS_DIR=""

stop_gen() {
    if [[ -n $GEN_PID ]]; then
        # SIGTERM, not SIGINT: a background job of a script starts with SIGINT ignored, and
        # trafgen leaves an ignored signal ignored. timeout passes SIGTERM on.
        kill -TERM "$GEN_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$GEN_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$GEN_PID" 2>/dev/null || true
        wait "$GEN_PID" 2>/dev/null || true
        GEN_PID=""
    fi
}

stop_ferrovs() {
    if [[ -n $FV_PID ]]; then
        "$BIN/ferrovs" --rundir "$TMP/fv" --timeout 5 exit >/dev/null 2>&1 || kill -TERM "$FV_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$FV_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$FV_PID" 2>/dev/null || true
        wait "$FV_PID" 2>/dev/null || true
        FV_PID=""
    fi
}

stop_ovs() {
    if [[ -n $OVS_DIR ]]; then
        local d=$OVS_DIR
        for pair in "ovs-vswitchd:exit --cleanup" "ovsdb-server:exit"; do
            local name=${pair%%:*} cmd=${pair#*:} pid=""
            [[ -f $d/$name.pid ]] && pid=$(cat "$d/$name.pid" 2>/dev/null || true)
            # shellcheck disable=SC2086
            timeout 10 ovs-appctl -t "$d/$name.ctl" $cmd >/dev/null 2>&1 || true
            if [[ -n $pid ]]; then
                for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
                kill -KILL "$pid" 2>/dev/null || true
            fi
        done
        OVS_DIR=""
    fi
}

teardown() {
    for ns in "$H1" "$H2" "$SW"; do ip netns del "$ns" 2>/dev/null || true; done
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_gen
    stop_ferrovs
    stop_ovs
    teardown
    if ((KEEP_TMP)); then log "kept $TMP"; else rm -rf "$TMP"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- topology -------------------------------------------------------------------------------
in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
# A sleep that a signal interrupts at once (bash runs traps only between commands, and a
# foreground sleep is one long command).
nap() { sleep "$1" & wait $! || true; }

setup_topology() {
    teardown
    ip netns add "$H1"; ip netns add "$H2"; ip netns add "$SW"
    ip -n "$SW" link add p1 type veth peer name eth0 netns "$H1"
    ip -n "$SW" link add p2 type veth peer name eth0 netns "$H2"
    local i=1
    for h in "$H1" "$H2"; do
        in_ns "$h" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
        ip -n "$h" link set lo up
        ip -n "$h" addr add 10.10.0.$i/24 dev eth0
        ip -n "$h" link set eth0 up
        i=$((i + 1))
    done
    in_ns "$SW" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip -n "$SW" link set lo up
    ip -n "$SW" link set p1 up
    ip -n "$SW" link set p2 up
    H2_MAC=$(in_ns "$H2" cat /sys/class/net/eth0/address)
    H1_MAC=$(in_ns "$H1" cat /sys/class/net/eth0/address)
}

# ---- switches: start_<name> configures and returns 0, or prints a reason and returns 1 ------
FAIL_REASON=""
fail() { FAIL_REASON=$*; return 1; }

start_ferrovs() {
    local kind=$1
    rm -rf "$TMP/fv"; mkdir -p "$TMP/fv"
    # Started with ip netns exec directly (not through a shell function), so that $! is the
    # daemon itself: ip, nice and taskset exec, they do not fork.
    ip netns exec "$SW" "${PIN_SW[@]}" "$SW_CORE" "$BIN/ferrovsd" --rundir "$TMP/fv" >"$TMP/ferrovsd.log" 2>&1 &
    FV_PID=$!
    SW_PID=$FV_PID
    local F=("$BIN/ferrovs" --rundir "$TMP/fv" --timeout 5)
    for _ in $(seq 100); do "${F[@]}" version >/dev/null 2>&1 && break; sleep 0.1; done
    "${F[@]}" version >/dev/null 2>&1 || fail "ferrovsd did not start: $(tail -n 3 "$TMP/ferrovsd.log" | tr '\n' ' ')" || return 1
    local out
    out=$("${F[@]}" add-br br0 module=learning 2>&1) || fail "add-br: $out" || return 1
    for p in p1 p2; do
        if [[ $kind == afxdp ]]; then
            out=$("${F[@]}" add-port br0 $p type=afxdp xdp-mode=native 2>&1) || fail "add-port $p type=afxdp xdp-mode=native: $out" || return 1
        else
            out=$("${F[@]}" add-port br0 $p 2>&1) || fail "add-port $p: $out" || return 1
        fi
    done
}

OVS_SCHEMA=/usr/share/openvswitch/vswitch.ovsschema
start_ovs() {
    local kind=$1 d=$TMP/ovs-$1
    rm -rf "$d"; mkdir -p "$d"
    OVS_DIR=$d
    [[ -f $OVS_SCHEMA ]] || fail "no $OVS_SCHEMA" || return 1
    ovsdb-tool create "$d/conf.db" "$OVS_SCHEMA" >/dev/null 2>&1 || fail "ovsdb-tool create failed" || return 1
    export OVS_RUNDIR=$d OVS_LOGDIR=$d OVS_DBDIR=$d
    in_ns "$SW" "${PIN_SW[@]}" "$SW_CORE" ovsdb-server "$d/conf.db" --remote="punix:$d/db.sock" \
        --pidfile="$d/ovsdb-server.pid" --unixctl="$d/ovsdb-server.ctl" \
        --log-file="$d/ovsdb-server.log" --detach --no-chdir -vconsole:off 2>>"$d/stderr.log" \
        || fail "ovsdb-server did not start" || return 1
    local V=(ovs-vsctl --db="unix:$d/db.sock" --timeout=20)
    "${V[@]}" --no-wait init || fail "ovs-vsctl init failed" || return 1
    "${V[@]}" --no-wait set Open_vSwitch . other_config:pmd-cpu-mask="$(printf '0x%x' $((1 << SW_CORE)))"
    in_ns "$SW" "${PIN_SW[@]}" "$SW_CORE" ovs-vswitchd "unix:$d/db.sock" \
        --pidfile="$d/ovs-vswitchd.pid" --unixctl="$d/ovs-vswitchd.ctl" \
        --log-file="$d/ovs-vswitchd.log" --detach --no-chdir -vconsole:off 2>>"$d/stderr.log" \
        || fail "ovs-vswitchd did not start: $(tail -n 3 "$d/ovs-vswitchd.log" 2>/dev/null | tr '\n' ' ')" || return 1
    SW_PID=$(cat "$d/ovs-vswitchd.pid" 2>/dev/null || true)
    "${V[@]}" add-br br0 -- set bridge br0 datapath_type=netdev || fail "add-br br0 (netdev) failed" || return 1
    if [[ $kind == afxdp ]]; then
        local types
        types=$("${V[@]}" get Open_vSwitch . iface_types)
        [[ $types == *afxdp* ]] || fail "this ovs-vswitchd has no afxdp interface type (iface_types: $types)" || return 1
        for p in p1 p2; do
            "${V[@]}" add-port br0 $p -- set interface $p type=afxdp options:xdp-mode=native >/dev/null 2>&1 || true
        done
    else
        for p in p1 p2; do "${V[@]}" add-port br0 $p >/dev/null 2>&1 || true; done
    fi
    sleep 1
    for p in p1 p2; do
        local ofport err
        ofport=$("${V[@]}" get interface $p ofport 2>/dev/null || echo -1)
        err=$("${V[@]}" get interface $p error 2>/dev/null || echo "?")
        [[ $ofport =~ ^[0-9]+$ && $ofport -gt 0 ]] || fail "OVS could not add $p ($kind): $err" || return 1
    done
    # A new bridge without a controller is in standalone mode: its one flow is actions=NORMAL.
}

start_bridge() {
    ip -n "$SW" link add br0 type bridge || fail "cannot create a Linux bridge" || return 1
    ip -n "$SW" link set p1 master br0
    ip -n "$SW" link set p2 master br0
    ip -n "$SW" link set br0 up
}

start_switch() {
    SW_PID=""
    case $1 in
        ferrovs-system) start_ferrovs system ;;
        ferrovs-afxdp) start_ferrovs afxdp ;;
        ovs-afpacket) start_ovs afpacket ;;
        ovs-afxdp) start_ovs afxdp ;;
        linux-bridge) start_bridge ;;
    esac
}

stop_switch() {
    stop_ferrovs
    stop_ovs
}

# ---- generators -----------------------------------------------------------------------------
# The trafgen frame: 60 bytes (64 with FCS), h1 -> h2 MACs, 10.10.0.1:1024 -> 10.10.0.2:9,
# IPv4 and UDP checksums precomputed.
write_trafgen_cfg() {
    python3 - "$H1_MAC" "$H2_MAC" > "$TMP/w2.trafgen" <<'PY'
import sys, struct
src = bytes.fromhex(sys.argv[1].replace(":", "")); dst = bytes.fromhex(sys.argv[2].replace(":", ""))
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
sip, dip = bytes([10, 10, 0, 1]), bytes([10, 10, 0, 2])
payload = bytes(range(18))
udp_len = 8 + len(payload)
ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 0, 0x4000, 64, 17, 0, sip, dip))
ip[10:12] = struct.pack("!H", csum(bytes(ip)))
udp = bytearray(struct.pack("!HHHH", 1024, 9, udp_len, 0) + payload)
c = csum(sip + dip + struct.pack("!BBH", 0, 17, udp_len) + bytes(udp)) or 0xffff
udp[6:8] = struct.pack("!H", c)
frame = dst + src + b"\x08\x00" + bytes(ip) + bytes(udp)
assert len(frame) == 60
print("{ " + ", ".join("0x%02x" % b for b in frame) + " }")
PY
}

start_gen() {
    local gen=$1
    # $! must be a process that forwards our signal to the generator: ip, nice and taskset exec, and
    # timeout passes SIGTERM on (and stops the generator by itself should we die).
    local limit=$((WARMUP + SECS + 60))
    case $gen in
        trafgen)
            ip netns exec "$H1" timeout -s TERM "$limit" "${PIN_GEN[@]}" "$GEN_CORE" \
                trafgen --dev eth0 --conf "$TMP/w2.trafgen" --cpus 1 \
                --no-sock-mem --notouch-irq --no-cpu-stats >"$TMP/gen.log" 2>&1 &
            ;;
        pktgen)
            ip netns exec "$H1" timeout -s TERM "$limit" "${PIN_GEN[@]}" "$GEN_CORE" \
                "$BIN/ferrovs-pktgen" tx -i eth0 -t system --dst-mac "$H2_MAC" \
                --src-ip 10.10.0.1 --dst-ip 10.10.0.2 --sport 1024 --dport 9 --size 64 \
                --duration 0 --rate "$RATE" -q >"$TMP/gen.log" 2>&1 &
            ;;
    esac
    GEN_PID=$!
}

# "<seconds> <counter>" for eth0 in namespace $1, the time taken inside the namespace right
# before the read.
snap() { in_ns "$1" sh -c 'echo "$(date +%s.%N) $(cat /sys/class/net/eth0/statistics/'"$2"')"'; }

# ---- one measurement -----------------------------------------------------------------------
# Utime + stime of the switch process, in clock ticks ('-' when the switch is the kernel).
proc_ticks() {
    if [[ -n $SW_PID && -r /proc/$SW_PID/stat ]]; then
        awk '{print $14 + $15}' "/proc/$SW_PID/stat"
    else
        echo -
    fi
}
# The switch core's line of /proc/stat: user nice system idle iowait irq softirq steal.
core_ticks() { awk -v c="cpu$SW_CORE" '$1 == c {print $2, $3, $4, $5, $6, $7, $8, $9}' /proc/stat; }

record() { # switch gen status sent delivered h1_tx_dropped reason [sw_cpu core_busy core_softirq sw_ns core_ns]
    python3 - "$RATE" "$@" >> "$RESULTS" <<'PY'
import json, sys
rate = int(sys.argv[1])
sw, gen, status, sent, deliv, drop, reason = sys.argv[2:9]
r = {"switch": sw, "generator": gen, "status": status,
     "offered_pps": rate if gen == "pktgen" and rate else None}
if status == "ok":
    r.update(sent_mpps=float(sent), delivered_mpps=float(deliv), h1_tx_dropped_mpps=float(drop))
    swcpu, busy, soft, swns, corens = (float(v) for v in sys.argv[9:14])
    r.update(switch_process_cpu_pct=None if swcpu < 0 else swcpu,
             switch_core_busy_pct=busy, switch_core_softirq_pct=soft,
             switch_cpu_ns_per_pkt=None if swns < 0 else swns,
             switch_core_busy_ns_per_pkt=None if corens < 0 else corens)
else:
    r["reason"] = reason
print(json.dumps(r))
PY
}

# Returns 2 (recording nothing) when the generator died, so the caller can try once more:
# trafgen exits when the kernel answers EAGAIN while it flushes its ring.
GEN_DIED=""
measure() {
    local sw=$1 gen=$2
    start_gen "$gen"
    nap "$WARMUP"
    if ! kill -0 "$GEN_PID" 2>/dev/null; then
        GEN_DIED="generator exited during the warm-up: $(tail -n 2 "$TMP/gen.log" | tr '\n' ' ')"
        GEN_PID=""
        return 2
    fi
    # Each counter is read with its own timestamp, so the spawn time of one read does not
    # skew the other's rate.
    local a0 b0 c0 a1 b1 c1 p0 p1 k0 k1
    a0=$(snap "$H1" tx_packets); c0=$(snap "$H1" tx_dropped); b0=$(snap "$H2" rx_packets)
    p0=$(proc_ticks); k0=$(core_ticks)
    nap "$SECS"
    a1=$(snap "$H1" tx_packets); c1=$(snap "$H1" tx_dropped); b1=$(snap "$H2" rx_packets)
    p1=$(proc_ticks); k1=$(core_ticks)
    local alive=1
    kill -0 "$GEN_PID" 2>/dev/null || alive=0
    stop_gen
    if ((!alive)); then
        GEN_DIED="generator died during the window: $(tail -n 2 "$TMP/gen.log" | tr '\n' ' ')"
        return 2
    fi
    local rates
    rates=$(python3 -c "
import sys
def rate(a, b):
    (t0, n0), (t1, n1) = a.split(), b.split()
    return (int(n1) - int(n0)) / (float(t1) - float(t0)) / 1e6
def cpu(p0, p1, k0, k1):  # switch process ticks over the switch core's ticks, in %
    if p0 == '-' or p1 == '-':
        return -1.0
    tot = sum(int(v) for v in k1.split()) - sum(int(v) for v in k0.split())
    return 100 * (int(p1) - int(p0)) / (tot or 1)
def busy(k0, k1):  # share of the switch core not idle, and in softirq, in %
    d = [int(j) - int(i) for i, j in zip(k0.split(), k1.split())]
    tot = sum(d) or 1
    return 100 * (tot - d[3] - d[4]) / tot, 100 * d[6] / tot
import os
TICK_NS = 1e9 / os.sysconf('SC_CLK_TCK')
def delivered(b0, b1):
    return int(b1.split()[1]) - int(b0.split()[1])
def per_pkt(ticks, n):  # ns of CPU per delivered packet, -1 when not known
    return -1.0 if ticks is None or n <= 0 else ticks * TICK_NS / n
a = sys.argv
n = delivered(a[3], a[4])
sw_ticks = None if a[7] == '-' or a[8] == '-' else int(a[8]) - int(a[7])
d = [int(j) - int(i) for i, j in zip(a[9].split(), a[10].split())]
core_ticks = sum(d) - d[3] - d[4]
print(*('%.4f' % rate(a[i], a[i + 1]) for i in (1, 3, 5)),
      '%.1f %.1f %.1f' % ((cpu(a[7], a[8], a[9], a[10]),) + busy(a[9], a[10])),
      '%.1f %.1f' % (per_pkt(sw_ticks, n), per_pkt(core_ticks, n)))
" "$a0" "$a1" "$b0" "$b1" "$c0" "$c1" "$p0" "$p1" "$k0" "$k1")
    read -r sent deliv drop swcpu corebusy coresoft swns corens <<<"$rates"
    if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$sent"; then
        record "$sw" "$gen" ok "$sent" "$deliv" "$drop" "" "$swcpu" "$corebusy" "$coresoft" "$swns" "$corens"
        log "$sw / $gen: sent $sent Mpps, delivered $deliv Mpps; switch process ${swcpu}% of a core (${swns} ns/pkt), switch core busy ${corebusy}% (${corens} ns/pkt, softirq ${coresoft}%)"
    else
        record "$sw" "$gen" FAILED 0 0 0 "the generator sent nothing"
    fi
}

run_switch() {
    local sw=$1
    log "=== $sw"
    setup_topology
    write_trafgen_cfg
    FAIL_REASON=""
    if ! start_switch "$sw"; then
        for g in $GENS; do record "$sw" "$g" FAILED 0 0 0 "${FAIL_REASON:-setup failed}"; done
        log "$sw: FAILED: $FAIL_REASON"
        stop_switch; teardown
        return
    fi
    # Both hosts speak once through the switch, so it learns their MACs and the flood below is
    # unicast to h2's port. A switch that cannot carry a ping is not measured.
    local ok=0
    for _ in 1 2 3 4 5; do
        if in_ns "$H2" ping -c 1 -W 1 -q 10.10.0.1 >/dev/null 2>&1; then ok=1; break; fi
    done
    if ((!ok)); then
        for g in $GENS; do record "$sw" "$g" FAILED 0 0 0 "h2 cannot ping h1 through the switch"; done
        log "$sw: FAILED: no ping through the switch"
        stop_switch; teardown
        return
    fi
    for g in $GENS; do
        local try
        for try in 1 2; do
            measure "$sw" "$g" && break
            log "$sw / $g: $GEN_DIED (attempt $try)"
            ((try == 2)) && record "$sw" "$g" FAILED 0 0 0 "$GEN_DIED (twice)"
            in_ns "$H2" ping -c 1 -W 1 -q 10.10.0.1 >/dev/null 2>&1 || true
        done
        # Re-teach the MACs between generators (cheap, and keeps the flood unicast).
        in_ns "$H2" ping -c 1 -W 1 -q 10.10.0.1 >/dev/null 2>&1 || true
    done
    stop_switch
    teardown
}

START=$(date +%s)
log "$(date -u +%FT%TZ), kernel $(uname -r), $(nproc) cores; generator core $GEN_CORE, switch core $SW_CORE, nice $NICE; ${WARMUP}s warm-up + ${SECS}s per cell"
for sw in $SWITCHES; do run_switch "$sw"; done
ELAPSED=$(( $(date +%s) - START ))

python3 - "$RESULTS" "$JSON_OUT" "$SECS" "$WARMUP" "$ELAPSED" "$GEN_CORE" "$SW_CORE" "$NICE" "$RATE" <<'PY'
import json, os, sys, time, platform
res_file, json_out, secs, warm, elapsed, gcore, score, nice, rate = sys.argv[1:10]
rows = [json.loads(l) for l in open(res_file) if l.strip()]
gens = []
for r in rows:
    if r["generator"] not in gens:
        gens.append(r["generator"])
def cell(sw, gen):
    for r in rows:
        if r["switch"] == sw and r["generator"] == gen:
            return r
    return None
switches = []
for r in rows:
    if r["switch"] not in switches:
        switches.append(r["switch"])
print()
print("W2  %s  (%ss per cell after %ss warm-up, nice %s; Mpps: sent = h1 eth0 tx, delivered = h2 eth0 rx;"
      % (time.strftime("%Y-%m-%d %H:%M:%S %Z"), secs, warm, nice))
print("    sw cpu = the switch process's share of its core, core busy = the switch core's non-idle share)")
for g in gens:
    print()
    print("generator: %s%s" % (g, ", offered %s pps" % rate if g == "pktgen" and int(rate) else ""))
    print("| %-15s | %8s | %9s | %6s | %8s | %9s | %10s | %11s |" % (
        "switch", "sent", "delivered", "ratio", "sw cpu", "core busy", "sw ns/pkt", "core ns/pkt"))
    print("|%s|%s|%s|%s|%s|%s|%s|%s|" % ("-" * 17, "-" * 10, "-" * 11, "-" * 8, "-" * 10, "-" * 11, "-" * 12, "-" * 13))
    for sw in switches:
        r = cell(sw, g)
        if r is None:
            continue
        if r["status"] == "ok":
            ratio = r["delivered_mpps"] / r["sent_mpps"] if r["sent_mpps"] else 0.0
            cpu = r.get("switch_process_cpu_pct")
            ns = r.get("switch_cpu_ns_per_pkt")
            cns = r.get("switch_core_busy_ns_per_pkt")
            print("| %-15s | %8.3f | %9.3f | %5.0f%% | %8s | %8.0f%% | %10s | %11s |" % (
                sw, r["sent_mpps"], r["delivered_mpps"], 100 * ratio,
                "-" if cpu is None else "%.0f%%" % cpu, r["switch_core_busy_pct"],
                "-" if ns is None else "%.0f" % ns, "-" if cns is None else "%.0f" % cns))
        else:
            print("| %-15s | FAILED: %s" % (sw, r.get("reason", "")))
ratios = {}
for g in gens:
    a, b = cell("ferrovs-afxdp", g), cell("ovs-afxdp", g)
    if a and b and a["status"] == "ok" and b["status"] == "ok" and b["delivered_mpps"] > 0:
        ratios[g] = a["delivered_mpps"] / b["delivered_mpps"]
        print("\n%s: ferrovs afxdp / OVS afxdp delivered = %.2fx (goal >= 1.5x)" % (g, ratios[g]))
    elif a or b:
        print("\n%s: ferrovs afxdp / OVS afxdp: not available (one of them FAILED)" % g)
print("\nW2 took %s s" % elapsed)
if json_out:
    doc = {
        "benchmark": "W2",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "kernel": platform.release(),
        "seconds": int(secs), "warmup": int(warm), "elapsed_s": int(elapsed),
        "gen_core": int(gcore), "sw_core": int(score), "nice": int(nice),
        "rate_pps": int(rate) or None, "load": list(os.getloadavg()),
        "results": rows,
        "ferrovs_afxdp_over_ovs_afxdp": ratios,
    }
    with open(json_out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
PY

# ---- W1 scaling: one poll thread vs two -------------------------------------------------------
if ((W1SCALE)); then
    B=$BIN/ferrovs-bench
    mkdir -p bench/out
    [ -f bench/out/w1-10000.pcap ] || "$B" gen-w1 --flows 10000 --out bench/out/w1-10000.pcap
    w1() { "$B" w1 --module openflow --rules l3_4k --pcap bench/out/w1-10000.pcap \
        --seconds "$SECS" --cores "$1" --json; }
    one=$(w1 "$SW_CORE")
    two=$(w1 "$GEN_CORE,$SW_CORE")
    python3 - "$one" "$two" "$JSON_OUT" "$GEN_CORE" "$SW_CORE" <<'PY'
import json, sys
one, two, out, g, s = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
print()
print("W1 scaling (openflow, l3_4k, 10K flows, in memory):")
print("| poll threads | cores | Mpps  |")
print("|--------------|-------|-------|")
print("| 1            | %-5s | %5.2f |" % (s, one["mpps"]))
print("| 2            | %-5s | %5.2f |" % (g + "," + s, two["mpps"]))
print("2 threads / 1 thread = %.2fx (goal >= 1.8x)" % (two["mpps"] / one["mpps"]))
if out:
    doc = json.load(open(out))
    doc["w1_scaling"] = {"one_thread": one, "two_threads": two,
                         "ratio": two["mpps"] / one["mpps"]}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
PY
fi
