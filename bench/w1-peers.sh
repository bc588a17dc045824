#!/usr/bin/env bash
# W1 peers: measure DPDK testpmd (io forwarding floor) and OVS-DPDK 3.1 on the W1 workload
# (pcap replayed from memory -> null sink, one forwarding core), so ferrovs's W1 numbers can be
# set beside them in the same run.  See /work/shared/BENCHMARKS.md, section W1, and
# bench/README.md.
#
# Usage: bench/w1-peers.sh [--flows "1 1000 10000 100000"] [--seconds 10] [--warmup 3]
#                          [--pcap-dir DIR] [--only testpmd|ovs] [--json FILE] [--workload w1|w8|w8new]
#                          [--no-huge] [--no-install] [--keep-hugepages] [--keep-tmp]
#                          [--main-core 0] [--fwd-core 1] [--rt] [--repeat N]
# --workload w8: the W8 input (each flow a connection, both directions; `gen-w8`) through the
# connection-tracking rules of bench/w8.sh (rule set ct_est) instead of W1's two rule sets;
# --workload w8new: W8's new-connection input (a SYN and an RST per connection; `gen-w8new`)
# through the same rules (ct_new) and through their SNAT variant (ct_snat).
# Runs as root.  Never prints a number that was not measured: a failed cell reads FAILED.
# Exit status: 0 all cells measured, 3 some cell FAILED (table and JSON are written anyway),
# 1 setup error (nothing measured).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)

FLOWS="1 1000 10000 100000"
SECONDS_MEASURE=10
WARMUP=3
PCAP_DIR=""
ONLY=""
JSON_OUT=""
FORCE_NO_HUGE=0
NO_INSTALL=0
KEEP_HUGEPAGES=0
KEEP_TMP=0
RT=0
REPEAT=1
MAIN_CORE=0
FWD_CORE=1
WORKLOAD=w1
HUGEPAGES_WANT=1024       # 2 MiB pages: 2 GiB
HUGEPAGES_NEED=640        # free pages below which we fall back to --no-huge
OVS_SOCKET_MEM=1024       # MiB (OVS's shared mempool holds 256K mbufs, and the whole pcap)
NOHUGE_MEM=2048           # MiB of ordinary memory per DPDK process in --no-huge mode

OVS_VSWITCHD_DPDK=/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk
OVS_NETNS="w1peers-$$"   # ovs-vswitchd runs in this namespace (see ovs_start)
OVS_SCHEMA=/usr/share/openvswitch/vswitch.ovsschema

usage() {
    sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit "${1:-2}"
}

log() { printf '[w1-peers %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
        --flows) FLOWS=$2; shift 2 ;;
        --seconds) SECONDS_MEASURE=$2; shift 2 ;;
        --warmup) WARMUP=$2; shift 2 ;;
        --pcap-dir) PCAP_DIR=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        --json) JSON_OUT=$2; shift 2 ;;
        --no-huge) FORCE_NO_HUGE=1; shift ;;
        --no-install) NO_INSTALL=1; shift ;;
        --keep-hugepages) KEEP_HUGEPAGES=1; shift ;;
        --keep-tmp) KEEP_TMP=1; shift ;;
        --rt) RT=1; shift ;;
        --repeat) REPEAT=$2; shift 2 ;;
        --main-core) MAIN_CORE=$2; shift 2 ;;
        --fwd-core) FWD_CORE=$2; shift 2 ;;
        --workload) WORKLOAD=$2; shift 2 ;;
        -h|--help) usage 0 ;;
        *) log "unknown option: $1"; usage 2 ;;
    esac
done

case "$ONLY" in ""|testpmd|ovs) ;; *) die "--only must be testpmd or ovs" ;; esac
case "$WORKLOAD" in w1|w8|w8new) ;; *) die "--workload must be w1, w8 or w8new" ;; esac
for f in $FLOWS; do [[ $f =~ ^[0-9]+$ && $f -gt 0 ]] || die "--flows: '$f' is not a positive integer"; done
[[ $SECONDS_MEASURE =~ ^[0-9]+$ && $SECONDS_MEASURE -gt 0 ]] || die "--seconds must be a positive integer"
[[ $WARMUP =~ ^[0-9]+$ ]] || die "--warmup must be a non-negative integer"
[[ $REPEAT =~ ^[0-9]+$ && $REPEAT -gt 0 ]] || die "--repeat must be a positive integer"
[[ $MAIN_CORE =~ ^[0-9]+$ && $FWD_CORE =~ ^[0-9]+$ && $MAIN_CORE != "$FWD_CORE" ]] \
    || die "--main-core and --fwd-core must be two different core numbers"
[ "$(id -u)" -eq 0 ] || die "must run as root (hugepages, DPDK)"
if [ -n "$JSON_OUT" ]; then
    case "$JSON_OUT" in /*) ;; *) JSON_OUT="$PWD/$JSON_OUT" ;; esac
fi
if [ -n "$PCAP_DIR" ]; then
    mkdir -p "$PCAP_DIR"
    PCAP_DIR=$(cd "$PCAP_DIR" && pwd)
fi

want_testpmd() { [ -z "$ONLY" ] || [ "$ONLY" = testpmd ]; }
want_ovs() { [ -z "$ONLY" ] || [ "$ONLY" = ovs ]; }

# ---------------------------------------------------------------------------------------------
# State for cleanup
WORK=$(mktemp -d /tmp/w1-peers.XXXXXX)
RESULTS="$WORK/results.tsv"
: > "$RESULTS"
TP_PID=""
OVS_DIR="$WORK/ovs"
HUGEPAGES_ORIG=""
HUGEPAGES_SYSFS=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
MOUNTED_HUGETLBFS=0

pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

# Wait up to $2 tenths of a second for pid $1 to go away.
wait_gone() {
    local pid=$1 n=${2:-50}
    while pid_alive "$pid" && [ "$n" -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
    ! pid_alive "$pid"
}

stop_daemon() { # name pidfile ctl
    local name=$1 pidfile=$2 ctl=$3 pid=""
    [ -f "$pidfile" ] && pid=$(cat "$pidfile" 2>/dev/null || true)
    pid_alive "$pid" || return 0
    # ovs-vswitchd exits with --cleanup: it deletes its datapath and the persistent taps of
    # the netdev datapath (ovs-netdev, br0) it made in its namespace.
    local how=()
    [ "$name" = ovs-vswitchd ] && how=(--cleanup)
    ovs-appctl -t "$ctl" --timeout=10 exit "${how[@]}" >/dev/null 2>&1 || true
    if ! wait_gone "$pid" 100; then
        log "$name ($pid) did not exit; sending SIGTERM"
        kill "$pid" 2>/dev/null || true
        if ! wait_gone "$pid" 50; then kill -9 "$pid" 2>/dev/null || true; fi
    fi
}

cleanup() {
    local rc=$?
    set +e
    exec 7>&-
    if pid_alive "$TP_PID"; then
        kill "$TP_PID" 2>/dev/null
        wait_gone "$TP_PID" 50 || kill -9 "$TP_PID" 2>/dev/null
    fi
    stop_daemon ovs-vswitchd "$OVS_DIR/run/ovs-vswitchd.pid" "$OVS_DIR/run/ovs-vswitchd.ctl"
    stop_daemon ovsdb-server "$OVS_DIR/run/ovsdb-server.pid" "$OVS_DIR/run/ovsdb-server.ctl"
    ip netns del "$OVS_NETNS" 2>/dev/null
    # DPDK's runtime directories for our two file prefixes (empty with --in-memory)
    rm -rf "/var/run/dpdk/w1peers-tp-$$" "/var/run/dpdk/w1peers-ovs-$$"
    if [ -n "$HUGEPAGES_ORIG" ] && [ "$KEEP_HUGEPAGES" -eq 0 ]; then
        echo "$HUGEPAGES_ORIG" > "$HUGEPAGES_SYSFS" 2>/dev/null
    fi
    if [ "$MOUNTED_HUGETLBFS" -eq 1 ] && [ "$KEEP_HUGEPAGES" -eq 0 ]; then
        umount /dev/hugepages 2>/dev/null
    fi
    if [ "$KEEP_TMP" -eq 1 ] || [ "$rc" -ne 0 ] || grep -q 'status=failed' "$RESULTS" 2>/dev/null; then
        log "logs kept in $WORK"
    else
        rm -rf "$WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

# One result line: flows column status key=value... (no tabs or newlines inside values)
record() {
    local flows=$1 col=$2; shift 2
    local line="$flows"$'\t'"$col" kv
    for kv in "$@"; do line+=$'\t'"$(printf '%s' "$kv" | tr '\t\n' '  ')"; done
    printf '%s\n' "$line" >> "$RESULTS"
}

loadavg() { cut -d' ' -f1 /proc/loadavg; }
now_ns() { date +%s%N; }

# TID of the first thread of process $1 whose name matches the ERE $2 (empty if none).
find_thread() {
    local t
    for t in /proc/"$1"/task/*; do
        if grep -qE "$2" "$t/comm" 2>/dev/null; then basename "$t"; return 0; fi
    done
    return 0
}
# Nanoseconds thread $1 has spent on a CPU (from /proc/<tid>/schedstat); empty if unknown.
thread_oncpu_ns() { [ -n "${1:-}" ] && cut -d' ' -f1 "/proc/$1/schedstat" 2>/dev/null || true; }
# Share of the wall interval the forwarding thread actually ran: on-CPU delta / wall delta.
cpu_share() { # oncpu0 oncpu1 wall0_ns wall1_ns
    [ -n "$1" ] && [ -n "$2" ] || return 0
    awk -v a="$1" -v b="$2" -v c="$3" -v d="$4" 'BEGIN { if (d > c) printf "%.3f", (b - a) / (d - c) }'
}
# --rt: run the forwarding thread SCHED_FIFO (priority 1), so other processes cannot take its
# core.  The kernel's RT throttling (sched_rt_runtime_us of sched_rt_period_us, 950000 of
# 1000000 by default) still idles it for 50 ms of every second, which keeps the machine alive
# but caps the thread at ~95% of its core.  (nice -20 was tried instead: it still lost up to
# 18% of the core to the builds running beside it.)
rt_thread() { # tid
    [ "$RT" -eq 1 ] && [ -n "${1:-}" ] || return 0
    chrt -f -p 1 "$1" >/dev/null 2>&1 || log "WARNING: chrt -f -p 1 $1 failed; this thread runs without --rt"
}
RT_CAP=1
if [ "$RT" -eq 1 ]; then
    RT_CAP=$(awk -v r="$(cat /proc/sys/kernel/sched_rt_runtime_us 2>/dev/null || echo -1)" \
        -v p="$(cat /proc/sys/kernel/sched_rt_period_us 2>/dev/null || echo 1)" \
        'BEGIN { if (r < 0 || p <= 0) print 1; else printf "%.3f", r / p }')
fi

# ---------------------------------------------------------------------------------------------
# 1. Packages
install_packages() {
    local pkgs=()
    if want_testpmd; then
        command -v dpdk-testpmd >/dev/null 2>&1 || pkgs+=(dpdk dpdk-dev)
    fi
    if want_ovs; then
        [ -x "$OVS_VSWITCHD_DPDK" ] || pkgs+=(openvswitch-switch-dpdk)
        command -v ovsdb-server >/dev/null 2>&1 || pkgs+=(openvswitch-switch)
        command -v ovs-vsctl >/dev/null 2>&1 || pkgs+=(openvswitch-common)
    fi
    command -v python3 >/dev/null 2>&1 || pkgs+=(python3)
    # The null PMD (tx sink) is a plugin in its own package; find its ABI from the EAL library.
    if ! ls /usr/lib/*/dpdk/pmds-*/librte_net_null.so* >/dev/null 2>&1; then
        local abi
        abi=$(ls /usr/lib/*/librte_eal.so.* 2>/dev/null | sed -n 's/.*librte_eal\.so\.\([0-9]*\)$/\1/p' | head -1)
        pkgs+=("librte-net-null${abi:-23}")
    fi
    if [ ${#pkgs[@]} -eq 0 ]; then return 0; fi
    [ "$NO_INSTALL" -eq 0 ] || die "missing packages and --no-install given: ${pkgs[*]}"
    log "installing: ${pkgs[*]}"
    apt-get update -qq >"$WORK/apt.log" 2>&1 || { tail -20 "$WORK/apt.log" >&2; die "apt-get update failed"; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}" \
        >>"$WORK/apt.log" 2>&1 || { tail -20 "$WORK/apt.log" >&2; die "apt-get install failed"; }
}
install_packages
if want_testpmd; then command -v dpdk-testpmd >/dev/null || die "dpdk-testpmd not found after install"; fi
if want_ovs; then
    [ -x "$OVS_VSWITCHD_DPDK" ] || die "$OVS_VSWITCHD_DPDK not found after install"
    # We always run the DPDK build by its own path, so the system's ovs-vswitchd alternative is
    # left as it is (update-alternatives --set ovs-vswitchd $OVS_VSWITCHD_DPDK would switch it).
    ovs_ver_out=$("$OVS_VSWITCHD_DPDK" --version 2>/dev/null || true)
    grep -q '^DPDK' <<<"$ovs_ver_out" || die "$OVS_VSWITCHD_DPDK is not a DPDK build"
fi
ls /usr/lib/*/dpdk/pmds-*/librte_net_pcap.so* >/dev/null 2>&1 || die "DPDK pcap PMD (librte_net_pcap) missing"
ls /usr/lib/*/dpdk/pmds-*/librte_net_null.so* >/dev/null 2>&1 || die "DPDK null PMD (librte_net_null) missing"

OVS_VERSION=$( ("$OVS_VSWITCHD_DPDK" --version 2>/dev/null || true) | sed -n 's/.*(Open vSwitch) //p' | head -1)
DPDK_VERSION=$(dpkg-query -W -f='${Version}' dpdk 2>/dev/null || true)

# ---------------------------------------------------------------------------------------------
# 2. Hugepages
MEM_MODE=hugepages
MEM_NOTE=""
setup_hugepages() {
    if [ "$FORCE_NO_HUGE" -eq 1 ]; then
        MEM_MODE=no-huge; MEM_NOTE="--no-huge requested"; return
    fi
    if [ ! -w "$HUGEPAGES_SYSFS" ]; then
        MEM_MODE=no-huge; MEM_NOTE="$HUGEPAGES_SYSFS not writable"; return
    fi
    local cur free
    cur=$(cat "$HUGEPAGES_SYSFS")
    free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
    if [ "$free" -lt "$HUGEPAGES_NEED" ]; then
        HUGEPAGES_ORIG=$cur
        echo $((cur + HUGEPAGES_WANT - free)) > "$HUGEPAGES_SYSFS" 2>/dev/null || true
        free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
        [ "$(cat "$HUGEPAGES_SYSFS")" != "$HUGEPAGES_ORIG" ] || HUGEPAGES_ORIG=""
    fi
    if [ "$free" -lt "$HUGEPAGES_NEED" ]; then
        MEM_MODE=no-huge
        MEM_NOTE="only $free free 2 MiB hugepages after asking the kernel for $HUGEPAGES_WANT (need $HUGEPAGES_NEED)"
        return
    fi
    if ! awk '$3 == "hugetlbfs" {found=1} END {exit !found}' /proc/mounts; then
        mkdir -p /dev/hugepages
        if mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null; then
            MOUNTED_HUGETLBFS=1
        else
            MEM_MODE=no-huge; MEM_NOTE="could not mount hugetlbfs at /dev/hugepages"; return
        fi
    fi
    MEM_NOTE="$free free 2 MiB hugepages"
}
setup_hugepages
if [ "$MEM_MODE" = no-huge ]; then
    log "WARNING: running DPDK WITHOUT hugepages (--no-huge -m $NOHUGE_MEM): $MEM_NOTE."
    log "WARNING: expect lower numbers than with hugepages (TLB misses); the output is marked no-huge."
else
    log "memory: $MEM_NOTE"
fi

# ---------------------------------------------------------------------------------------------
# Inputs: pcaps and rule files
[ -n "$PCAP_DIR" ] || PCAP_DIR="$WORK/pcaps"
mkdir -p "$PCAP_DIR"
pcap_for() { echo "$PCAP_DIR/$WORKLOAD-$1.pcap"; }
BENCH_BIN=${FERROVS_BENCH:-$REPO/target/release/ferrovs-bench}
for f in $FLOWS; do
    p=$(pcap_for "$f")
    if [ -s "$p" ]; then continue; fi
    if [ ! -x "$BENCH_BIN" ]; then
        command -v cargo >/dev/null || die "no $p and no $BENCH_BIN (and no cargo to build it)"
        log "building ferrovs-bench (pcap generator)"
        (cd "$REPO" && cargo build --release -q -p ferrovs-bench) || die "cargo build -p ferrovs-bench failed"
    fi
    log "generating $p"
    "$BENCH_BIN" "gen-$WORKLOAD" --flows "$f" --out "$p" || die "ferrovs-bench gen-$WORKLOAD --flows $f failed"
done

# The rule sets OVS-DPDK runs, by name (a cell's column is ovs_NAME).
declare -A RULEFILE=()
if [ "$WORKLOAD" = w8 ]; then
    RULESETS="ct_est"
    RULEFILE[ct_est]="$WORK/ct_est.flows"
    "$SCRIPT_DIR/w8.sh" --print-rules > "${RULEFILE[ct_est]}" || die "bench/w8.sh --print-rules failed"
elif [ "$WORKLOAD" = w8new ]; then
    RULESETS="ct_new ct_snat"
    RULEFILE[ct_new]="$WORK/ct_new.flows"
    RULEFILE[ct_snat]="$WORK/ct_snat.flows"
    "$SCRIPT_DIR/w8.sh" --print-rules > "${RULEFILE[ct_new]}" || die "bench/w8.sh --print-rules failed"
    "$SCRIPT_DIR/w8.sh" --print-rules snat > "${RULEFILE[ct_snat]}" \
        || die "bench/w8.sh --print-rules snat failed"
else
    RULESETS="simple l3_4k"
    RULEFILE[simple]="$WORK/simple.flows"
    RULEFILE[l3_4k]="$WORK/l3_4k.flows"
    echo "in_port=1,actions=output:2" > "${RULEFILE[simple]}"
    {
        for x in $(seq 0 15); do
            for y in $(seq 0 255); do
                echo "priority=100,ip,in_port=1,nw_dst=10.0.$x.$y,actions=output:2"
            done
        done
        echo "priority=1,in_port=1,actions=output:2"
    } > "${RULEFILE[l3_4k]}"
fi

# --in-memory keeps DPDK from leaving files behind; it cannot go with --no-huge (which
# implies --legacy-mem), where --no-shconf does that job instead.
if [ "$MEM_MODE" = no-huge ]; then
    EAL_MEM=(--no-huge -m "$NOHUGE_MEM" --no-shconf)
else
    EAL_MEM=(--in-memory)
fi

# ---------------------------------------------------------------------------------------------
# 3. testpmd floor: io forwarding pcap (infinite rx, copies into fresh mbufs) -> null
# Driven through its interactive prompt on a FIFO, so each step waits for the previous one.
# In a subshell: if testpmd died, SIGPIPE ends only the subshell.
tp_send() { ( printf '%s\n' "$1" >&7 ) 2>/dev/null || true; }
tp_wait_prompts() { # log n timeout_tenths: wait until the log shows >= n prompts
    local logf=$1 n=$2 t=$3 c
    while [ "$t" -gt 0 ]; do
        c=$(grep -o 'testpmd> ' "$logf" 2>/dev/null | wc -l || true)
        [ "$c" -ge "$n" ] && return 0
        pid_alive "$TP_PID" || return 1
        sleep 0.1; t=$((t - 1))
    done
    return 1
}

# The first error lines of a testpmd log, on one line.
tp_errors() {
    { grep -iE 'error|fail|cannot|couldn|invalid' "$1" 2>/dev/null || true; } \
        | grep -vE '(RX|TX)-errors' | head -3 | tr '\n' ' '
}

run_testpmd() {
    local flows=$1 pcap logf fifo load
    pcap=$(pcap_for "$flows")
    logf="$WORK/testpmd-$flows.log"
    fifo="$WORK/testpmd.fifo"
    rm -f "$fifo"; mkfifo "$fifo"
    load=$(loadavg)
    log "testpmd io: $flows flows ($(basename "$pcap")), ${WARMUP}s warm-up + $REPEAT x ${SECONDS_MEASURE}s"
    dpdk-testpmd -l "$MAIN_CORE,$FWD_CORE" --main-lcore "$MAIN_CORE" \
        --file-prefix "w1peers-tp-$$" --no-pci "${EAL_MEM[@]}" \
        --vdev "net_pcap0,rx_pcap=$pcap,infinite_rx=1" --vdev "net_null1,no-rx=1" \
        -- -i --forward-mode=io --nb-cores=1 --record-core-cycles \
        <"$fifo" >"$logf" 2>&1 &
    TP_PID=$!
    exec 7>"$fifo"
    local reason="" n=1 tid="" w c0 w0 c1 w1 shares=()
    if ! tp_wait_prompts "$logf" $n 600; then
        reason="testpmd did not reach its prompt: $(tp_errors "$logf")"
    elif grep -qE 'probe failed|failed to initialize' "$logf"; then
        reason="testpmd could not create its ports: $(tp_errors "$logf")"
        tp_send quit
    else
        # Warm up, then restart forwarding so the forward stats (cycles/packet) cover only the
        # measured windows.  Each 'show port stats' prints Rx/Tx-pps over the time since the
        # previous one (testpmd's own clock); the first one after the restart is the baseline.
        tp_send start; n=$((n + 1)); tp_wait_prompts "$logf" $n 100 || true
        tid=$(find_thread "$TP_PID" '^(rte|lcore)-worker')
        rt_thread "$tid"
        sleep "$WARMUP"
        tp_send stop; n=$((n + 1)); tp_wait_prompts "$logf" $n 100 || true
        tp_send start; n=$((n + 1)); tp_wait_prompts "$logf" $n 100 || true
        tp_send "show port stats all"; n=$((n + 1)); tp_wait_prompts "$logf" $n 100 || true
        c0=$(thread_oncpu_ns "$tid"); w0=$(now_ns)
        for w in $(seq 1 "$REPEAT"); do
            sleep "$SECONDS_MEASURE"
            tp_send "show port stats all"; n=$((n + 1)); tp_wait_prompts "$logf" $n 100 || true
            c1=$(thread_oncpu_ns "$tid"); w1=$(now_ns)
            shares+=("$(cpu_share "$c0" "$c1" "$w0" "$w1")")
            c0=$c1; w0=$w1
        done
        tp_send stop; n=$((n + 1)); tp_wait_prompts "$logf" $n 200 || true
        tp_send quit
    fi
    exec 7>&-
    if ! wait_gone "$TP_PID" 300; then
        kill "$TP_PID" 2>/dev/null || true
        wait_gone "$TP_PID" 50 || kill -9 "$TP_PID" 2>/dev/null || true
        [ -n "$reason" ] || reason="testpmd did not exit after quit"
    fi
    wait "$TP_PID" 2>/dev/null || true
    TP_PID=""
    rm -f "$fifo"
    if [ -n "$reason" ]; then
        record "$flows" testpmd_io status=failed "reason=$reason"
        log "testpmd $flows flows FAILED: $reason"
        return 0
    fi
    # Per 'show port stats all': Rx-pps of port 0 (pcap) and Tx-pps of port 1 (null sink);
    # the last 'CPU cycles/packet=' line (forward stats over all measured windows).
    local -a rxs=() txs=()
    local cpp shows
    mapfile -t rxs < <(awk '/NIC statistics for port/ { for (i = 1; i <= NF; i++) if ($i == "port") port = $(i + 1) }
        /Rx-pps:/ && port == "0" { print $2 }' "$logf")
    mapfile -t txs < <(awk '/NIC statistics for port/ { for (i = 1; i <= NF; i++) if ($i == "port") port = $(i + 1) }
        /Tx-pps:/ && port == "1" { print $2 }' "$logf")
    cpp=$(awk '/CPU cycles\/packet=/ { s = $0; sub(/.*cycles\/packet=/, "", s); split(s, a, " "); c = a[1] }
        END { print c }' "$logf")
    shows=${#txs[@]}
    if [ "$shows" -ne $((REPEAT + 1)) ] || [ "${#rxs[@]}" -ne "$shows" ]; then
        reason="expected $((REPEAT + 1)) port stats reports from testpmd, got $shows: $(tp_errors "$logf")"
        record "$flows" testpmd_io status=failed "reason=$reason"
        log "testpmd $flows flows FAILED: $reason"
        return 0
    fi
    local i tx rx mpps share
    for w in $(seq 1 "$REPEAT"); do
        tx=${txs[$w]} rx=${rxs[$w]} share=${shares[$((w - 1))]:-}
        if ! [[ $tx =~ ^[0-9]+$ ]] || [ "$tx" -eq 0 ]; then
            record "$flows" testpmd_io status=failed "window=$w" "reason=testpmd reported Tx-pps '$tx'"
            log "testpmd $flows flows FAILED: Tx-pps '$tx'"
            continue
        fi
        mpps=$(awk -v t="$tx" 'BEGIN { printf "%.3f", t / 1e6 }')
        record "$flows" testpmd_io status=ok "window=$w" "mpps=$mpps" "rx_pps=$rx" "tx_pps=$tx" \
            "cycles_per_packet=${cpp:-}" "cpu_share=$share" "loadavg=$load"
        log "testpmd $flows flows: $mpps Mpps, ${cpp:-?} cycles/packet, forwarding thread on CPU ${share:-?} of the time"
    done
}

# ---------------------------------------------------------------------------------------------
# 4. OVS-DPDK: private ovsdb-server + ovs-vswitchd under $WORK/ovs
VSCTL=(ovs-vsctl --db="unix:$OVS_DIR/run/db.sock" --timeout=60)
appctl() { ovs-appctl -t "$OVS_DIR/run/ovs-vswitchd.ctl" --timeout=60 "$@"; }
ofctl() { ovs-ofctl "$@"; }
OVS_FAIL=""

ovs_start() {
    mkdir -p "$OVS_DIR"/{run,db,log,etc}
    export OVS_RUNDIR="$OVS_DIR/run" OVS_DBDIR="$OVS_DIR/db" OVS_LOGDIR="$OVS_DIR/log" \
        OVS_SYSCONFDIR="$OVS_DIR/etc"
    ovsdb-tool create "$OVS_DIR/db/conf.db" "$OVS_SCHEMA" || return 1
    ovsdb-server "$OVS_DIR/db/conf.db" --remote="punix:$OVS_DIR/run/db.sock" \
        --pidfile="$OVS_DIR/run/ovsdb-server.pid" --unixctl="$OVS_DIR/run/ovsdb-server.ctl" \
        --log-file="$OVS_DIR/log/ovsdb-server.log" --detach || return 1
    "${VSCTL[@]}" --no-wait init || return 1
    local extra="--file-prefix=w1peers-ovs-$$ --no-pci"
    local cfg=(other_config:dpdk-init=true
        "other_config:dpdk-lcore-mask=$(printf '0x%x' $((1 << MAIN_CORE)))"
        "other_config:pmd-cpu-mask=$(printf '0x%x' $((1 << FWD_CORE)))")
    if [ "$MEM_MODE" = no-huge ]; then
        # --legacy-mem also stops OVS from adding --in-memory, which --no-huge refuses.
        extra+=" --no-huge --legacy-mem -m $NOHUGE_MEM"
    else
        cfg+=("other_config:dpdk-socket-mem=$OVS_SOCKET_MEM")
    fi
    cfg+=("other_config:dpdk-extra=\"$extra\"")
    "${VSCTL[@]}" --no-wait set Open_vSwitch . "${cfg[@]}" || return 1
    # In a network namespace of its own: the userspace datapath makes an `ovs-netdev` tap,
    # and another OVS on the machine (a test's, the system's) holding that name in the root
    # namespace would keep ours from opening its datapath. The ports are files and DPDK
    # vdevs; the control sockets are unix sockets, reachable from any namespace.
    ip netns add "$OVS_NETNS" || return 1
    ip netns exec "$OVS_NETNS" "$OVS_VSWITCHD_DPDK" "unix:$OVS_DIR/run/db.sock" \
        --pidfile="$OVS_DIR/run/ovs-vswitchd.pid" --unixctl="$OVS_DIR/run/ovs-vswitchd.ctl" \
        --log-file="$OVS_DIR/log/ovs-vswitchd.log" --detach || return 1
    local t=600
    while [ "$("${VSCTL[@]}" get Open_vSwitch . dpdk_initialized 2>/dev/null)" != true ]; do
        t=$((t - 1)); [ "$t" -gt 0 ] || return 1; sleep 0.1
    done
    "${VSCTL[@]}" add-br br0 -- set bridge br0 datapath_type=netdev \
        protocols=OpenFlow10,OpenFlow13 || return 1
    "${VSCTL[@]}" add-port br0 p1 -- set Interface p1 type=dpdk \
        options:dpdk-devargs=net_null1,no-rx=1 ofport_request=2 || return 1
}

# Attach port p0 (ofport 1) replaying a pcap; wait until the PMD polls it.
ovs_set_pcap() {
    local pcap=$1 t=300 err
    "${VSCTL[@]}" --if-exists del-port br0 p0 >/dev/null 2>&1 || { echo "ovs-vsctl del-port p0 failed"; return 1; }
    if "${VSCTL[@]}" add-port br0 p0 -- set Interface p0 type=dpdk \
        "options:dpdk-devargs=\"net_pcap0,rx_pcap=$pcap,infinite_rx=1\"" ofport_request=1; then :; else
        echo "ovs-vsctl add-port p0 failed"; return 1
    fi
    while :; do
        err=$("${VSCTL[@]}" get Interface p0 error 2>/dev/null || true)
        if [ -n "$err" ] && [ "$err" != "[]" ]; then echo "port p0: $err"; return 1; fi
        if [ "$("${VSCTL[@]}" get Interface p0 ofport 2>/dev/null)" = 1 ] \
            && appctl dpif-netdev/pmd-rxq-show 2>/dev/null | grep -q 'port: p0 ' \
            && "${VSCTL[@]}" get Interface p0 options:dpdk-devargs 2>/dev/null | grep -qF "$pcap"; then
            return 0
        fi
        t=$((t - 1)); [ "$t" -gt 0 ] || { echo "port p0 did not come up in 30 s"; return 1; }
        sleep 0.1
    done
}

# tx packets of ofport 2 (the null sink), from the netdev's own counters
ovs_tx_p2() {
    { ofctl dump-ports br0 2 2>/dev/null || true; } | sed -n 's/.*tx pkts=\([0-9]*\).*/\1/p' | head -1
}

run_ovs_one() {
    local flows=$1 rules=$2 rulefile=$3 load reason=""
    load=$(loadavg)
    log "OVS-DPDK $rules: $flows flows, ${WARMUP}s warm-up + $REPEAT x ${SECONDS_MEASURE}s"
    # Every cell starts the same way: no traffic (rx port detached), the rule set loaded, the
    # datapath flow cache empty, then the pcap port attached.  Loading 4K rules while 100K
    # flows run makes OVS revalidate for tens of seconds, hence the detach.
    "${VSCTL[@]}" --if-exists del-port br0 p0 >/dev/null 2>&1 || reason="ovs-vsctl del-port p0 failed"
    # OpenFlow 1.3: W8's multi-table conntrack rules need it (1.0 has no table ids).
    if [ -z "$reason" ] && ! ofctl -O OpenFlow13 replace-flows br0 "$rulefile" 2>"$WORK/ofctl.err"; then
        reason="ovs-ofctl replace-flows: $(head -2 "$WORK/ofctl.err" | tr '\n' ' ')"
    fi
    local nrules
    nrules=$(ofctl -O OpenFlow13 dump-aggregate br0 2>/dev/null | sed -n 's/.*flow_count=\([0-9]*\).*/\1/p')
    if [ -z "$reason" ] && [ "${nrules:-0}" -ne "$(wc -l < "$rulefile")" ]; then
        reason="bridge holds ${nrules:-?} rules, expected $(wc -l < "$rulefile")"
    fi
    # Empty the datapath flow cache through the upcall layer (dpctl/del-flows would leave
    # stale ukeys behind and make every later upcall fail to install).
    [ -n "$reason" ] || appctl revalidator/purge >/dev/null 2>&1 || reason="revalidator/purge failed"
    local msg
    if [ -z "$reason" ] && ! msg=$(ovs_set_pcap "$(pcap_for "$flows")"); then reason=$msg; fi
    if [ -n "$reason" ]; then
        record "$flows" "ovs_$rules" status=failed "reason=$reason"
        log "OVS $rules $flows flows FAILED: $reason"; return 0
    fi
    local vpid tid w
    vpid=$(cat "$OVS_DIR/run/ovs-vswitchd.pid" 2>/dev/null || true)
    tid=$(find_thread "$vpid" '^pmd-c')
    rt_thread "$tid"
    sleep "$WARMUP"
    for w in $(seq 1 "$REPEAT"); do ovs_window "$flows" "$rules" "$tid" "$w" "$load"; done
}

# One measured window of $SECONDS_MEASURE seconds: clear the PMD stats, wait, read them.
ovs_window() {
    local flows=$1 rules=$2 tid=$3 win=$4 load=$5 reason=""
    local t0 t1 tx0 tx1 c0 c1 w0 w1 out
    appctl dpif-netdev/pmd-stats-clear >/dev/null 2>&1 || reason="pmd-stats-clear failed"
    tx0=$(ovs_tx_p2)
    c0=$(thread_oncpu_ns "$tid")
    t0=$(date +%s.%N); w0=$(now_ns)
    sleep "$SECONDS_MEASURE"
    t1=$(date +%s.%N); w1=$(now_ns)
    c1=$(thread_oncpu_ns "$tid")
    if [ -z "$reason" ]; then
        out=$(appctl dpif-netdev/pmd-stats-show 2>&1) || reason="pmd-stats-show failed: $out"
    fi
    tx1=$(ovs_tx_p2)
    printf '%s\n' "${out:-}" > "$WORK/pmd-stats-$rules-$flows-$win.txt"
    if [ -n "$reason" ]; then
        record "$flows" "ovs_$rules" status=failed "window=$win" "reason=$reason"
        log "OVS $rules $flows flows FAILED: $reason"; return 0
    fi
    # Only the PMD thread's section (not the main thread's).
    local parsed
    parsed=$(printf '%s\n' "$out" | awk '
        /^pmd thread/ { inpmd = 1; npmd++; next }
        /^main thread/ { inpmd = 0; next }
        !inpmd { next }
        function num(s) { sub(/^[^:]*:[ \t]*/, "", s); split(s, a, " "); return a[1] }
        /packets received:/ { v["packets"] = num($0) }
        /emc hits:/ { v["emc_hits"] = num($0) }
        /smc hits:/ { v["smc_hits"] = num($0) }
        /simple match hits:/ { v["simple_match_hits"] = num($0) }
        /phwol hits:/ { v["phwol_hits"] = num($0) }
        /mfex opt hits:/ { v["mfex_opt_hits"] = num($0) }
        /megaflow hits:/ { v["megaflow_hits"] = num($0) }
        /avg. subtable lookups per megaflow hit:/ { v["avg_subtable_lookups"] = num($0) }
        /miss with success upcall:/ { v["upcalls_ok"] = num($0) }
        /miss with failed upcall:/ { v["upcalls_failed"] = num($0) }
        /idle cycles:/ { v["idle_cycles"] = num($0) }
        /^  processing cycles:/ { v["processing_cycles"] = num($0) }
        /avg cycles per packet:/ { v["cycles_per_packet"] = num($0) }
        /avg processing cycles per packet:/ { v["processing_cycles_per_packet"] = num($0) }
        END { printf "npmd %d\n", npmd; for (k in v) printf "%s %s\n", k, v[k] }')
    local -A st=()
    local k v
    while read -r k v; do [ -n "$k" ] && st[$k]=$v; done <<<"$parsed"
    local npmd=${st[npmd]:-0} packets=${st[packets]:-} cpp=${st[cycles_per_packet]:-}
    if [ "$npmd" -ne 1 ]; then
        reason="expected one PMD thread in pmd-stats-show, found $npmd"
    elif [ -z "$packets" ] || [ "$packets" -eq 0 ]; then
        reason="PMD received no packets in the interval"
    fi
    if [ -n "$reason" ]; then
        record "$flows" "ovs_$rules" status=failed "window=$win" "reason=$reason"
        log "OVS $rules $flows flows FAILED: $reason"; return 0
    fi
    local dt mpps tx_mpps="" share
    dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
    mpps=$(awk -v p="$packets" -v d="$dt" 'BEGIN { printf "%.3f", p / d / 1e6 }')
    if [ -n "$tx0" ] && [ -n "$tx1" ]; then
        tx_mpps=$(awk -v a="$tx0" -v b="$tx1" -v d="$dt" 'BEGIN { printf "%.3f", (b - a) / d / 1e6 }')
    fi
    share=$(cpu_share "$c0" "$c1" "$w0" "$w1")
    local fields=(status=ok "window=$win" "mpps=$mpps" "interval_s=$dt" "tx_mpps=$tx_mpps"
        "cpu_share=$share" "loadavg=$load")
    for k in "${!st[@]}"; do [ "$k" = npmd ] || fields+=("$k=${st[$k]}"); done
    record "$flows" "ovs_$rules" "${fields[@]}"
    log "OVS $rules $flows flows: $mpps Mpps (sink got ${tx_mpps:-?} Mpps), ${cpp:-?} cycles/packet, PMD on CPU ${share:-?} of the time"
}

run_ovs() {
    local f msg
    log "starting private ovsdb-server + ovs-vswitchd ($OVS_VERSION, DPDK) in $OVS_DIR"
    if ! ovs_start >"$WORK/ovs-start.log" 2>&1; then
        msg="OVS-DPDK did not start: $(tail -3 "$WORK/ovs-start.log" | tr '\n' ' ') $(grep -E '\|(ERR|EMER)\|' "$OVS_DIR/log/ovs-vswitchd.log" 2>/dev/null | tail -2 | tr '\n' ' ')"
        log "FAILED: $msg"
        for f in $FLOWS; do
            for r in $RULESETS; do record "$f" "ovs_$r" status=failed "reason=$msg"; done
        done
        return 0
    fi
    for f in $FLOWS; do
        for r in $RULESETS; do run_ovs_one "$f" "$r" "${RULEFILE[$r]}"; done
    done
    stop_daemon ovs-vswitchd "$OVS_DIR/run/ovs-vswitchd.pid" "$OVS_DIR/run/ovs-vswitchd.ctl"
    stop_daemon ovsdb-server "$OVS_DIR/run/ovsdb-server.pid" "$OVS_DIR/run/ovsdb-server.ctl"
}

# ---------------------------------------------------------------------------------------------
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
T_START=$(date +%s)
if want_testpmd; then
    for f in $FLOWS; do run_testpmd "$f"; done
fi
if want_ovs; then run_ovs; fi
T_END=$(date +%s)

# ---------------------------------------------------------------------------------------------
# 5. Output: table on stdout, optional JSON
export W1_RESULTS="$RESULTS" W1_JSON="$JSON_OUT" W1_STARTED="$STARTED" \
    W1_DURATION=$((T_END - T_START)) W1_SECONDS="$SECONDS_MEASURE" W1_WARMUP="$WARMUP" \
    W1_MEM_MODE="$MEM_MODE" W1_MEM_NOTE="$MEM_NOTE" W1_FLOWS="$FLOWS" W1_ONLY="$ONLY" \
    W1_OVS_VERSION="$OVS_VERSION" W1_DPDK_VERSION="$DPDK_VERSION" W1_HOST="$(hostname)" \
    W1_CPU="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" \
    W1_CORES="main=$MAIN_CORE fwd=$FWD_CORE" W1_RT="$RT" W1_RT_CAP="$RT_CAP" W1_REPEAT="$REPEAT" \
    W1_WORKLOAD="$WORKLOAD" W1_RULESETS="$RULESETS"
python3 - <<'PY'
import json, os

def conv(v):
    for t in (int, float):
        try:
            return t(v)
        except ValueError:
            pass
    return v

# One line per measured window (or per failure); a cell reports its median window.
windows = {}
for line in open(os.environ["W1_RESULTS"]):
    parts = line.rstrip("\n").split("\t")
    if len(parts) < 3:
        continue
    d = {}
    for kv in parts[2:]:
        k, _, v = kv.partition("=")
        if v != "":
            d[k] = conv(v)
    windows.setdefault(parts[0], {}).setdefault(parts[1], []).append(d)

res = {}
for f, bycol in windows.items():
    for col, ws in bycol.items():
        ok = sorted((w for w in ws if w.get("status") == "ok"), key=lambda w: w["mpps"])
        if ok:
            # median_low: always one window that was really measured, never an average
            cell = dict(ok[(len(ok) - 1) // 2])
            cell.pop("window", None)
        else:
            cell = {"status": "failed",
                    "reason": "; ".join(sorted({w.get("reason", "?") for w in ws}))}
        if len(ws) > 1 or "window" in ws[0]:
            cell["windows"] = ws
        res.setdefault(f, {})[col] = cell

flows = os.environ["W1_FLOWS"].split()
only = os.environ["W1_ONLY"]
cols = []
if only in ("", "testpmd"):
    cols.append(("testpmd_io", "testpmd io"))
if only in ("", "ovs"):
    cols += [("ovs_" + r, "OVS-DPDK " + r) for r in os.environ["W1_RULESETS"].split()]

def cell(d):
    if d is None:
        return "not run"
    if d.get("status") != "ok":
        return "FAILED"
    cpp = d.get("cycles_per_packet")
    s = "%.1f" % d["mpps"]
    if cpp is not None:
        s += " (%.0f)" % cpp
    share = d.get("cpu_share")
    if isinstance(share, float) and share < SHARE_OK:
        s += " *%.0f%%" % (100 * share)
    return s

RT = os.environ["W1_RT"] == "1"
RT_CAP = float(os.environ["W1_RT_CAP"])
# A forwarding thread below this share of its core gets a '*N%' mark (with --rt, the
# kernel's RT throttling alone holds it at RT_CAP).
SHARE_OK = (RT_CAP - 0.02) if RT else 0.95

mem = os.environ["W1_MEM_MODE"]
print()
print("%s peers, %s, host %s (%s), cores %s%s" % (os.environ["W1_WORKLOAD"].upper(),
      os.environ["W1_STARTED"], os.environ["W1_HOST"],
      os.environ["W1_CPU"], os.environ["W1_CORES"],
      ", forwarding thread SCHED_FIFO (--rt; RT throttling caps it at %.0f%% of its core)"
      % (100 * RT_CAP) if RT else ""))
repeat = int(os.environ["W1_REPEAT"])
print("OVS %s, DPDK %s, memory: %s (%s); per cell %s%s s measured after %s s warm-up%s"
      % (os.environ["W1_OVS_VERSION"] or "-", os.environ["W1_DPDK_VERSION"] or "-", mem,
         os.environ["W1_MEM_NOTE"], "%d x " % repeat if repeat > 1 else "",
         os.environ["W1_SECONDS"], os.environ["W1_WARMUP"],
         ", median window shown" if repeat > 1 else ""))
print("Mpps, cycles/packet in brackets (testpmd: --record-core-cycles; OVS: pmd-stats-show"
      " 'avg cycles per packet')")
print()
w = [8] + [max(len(h), 16) for _, h in cols]
hdr = ["flows"] + [h for _, h in cols]
print("| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(hdr)) + " |")
print("|" + "|".join("-" * (x + 2) for x in w) + "|")
for f in flows:
    row = [format(int(f), ",")] + [cell(res.get(f, {}).get(c)) for c, _ in cols]
    print("| " + " | ".join(v.ljust(w[i]) for i, v in enumerate(row)) + " |")

ovs_cols = [c for c, _ in cols if c.startswith("ovs_")]
if ovs_cols:
    print()
    print("OVS-DPDK PMD detail (share of received packets; upcalls in the measured interval)")
    print("| flows    | rules  | simple match | emc hits | megaflow hits | subtables/hit | upcalls | sink Mpps |")
    print("|----------|--------|--------------|----------|---------------|---------------|---------|-----------|")
    for f in flows:
        for c in ovs_cols:
            d = res.get(f, {}).get(c)
            if not d or d.get("status") != "ok":
                continue
            p = d.get("packets") or 0
            pct = lambda k: "%.1f%%" % (100.0 * d.get(k, 0) / p) if p else "-"
            print("| %-8s | %-6s | %-12s | %-8s | %-13s | %-13s | %-7s | %-9s |" % (
                format(int(f), ","), c[4:], pct("simple_match_hits"), pct("emc_hits"),
                pct("megaflow_hits"),
                d.get("avg_subtable_lookups", "-"),
                d.get("upcalls_ok", 0) + d.get("upcalls_failed", 0),
                "%.2f" % d["tx_mpps"] if "tx_mpps" in d else "-"))

contended = [1 for f in flows for c, _ in cols for d in [res.get(f, {}).get(c)]
             if d and isinstance(d.get("cpu_share"), float) and d["cpu_share"] < SHARE_OK]
if contended:
    print()
    print("* N%%: the forwarding thread ran only N%% of the measured interval (other processes took"
          " its core); that cell's rate is depressed by about as much. Re-run on a quieter machine%s."
          % ("" if RT else " or with --rt"))
failed = [(f, c, d.get("reason", "?")) for f in flows for c, _ in cols
          for d in [res.get(f, {}).get(c)] if d and d.get("status") != "ok"]
if failed:
    print()
    for f, c, r in failed:
        print("FAILED %s flows=%s: %s" % (c, f, r))
if mem != "hugepages":
    print()
    print("NOTE: DPDK ran without hugepages (%s); numbers are not comparable with hugepage runs."
          % os.environ["W1_MEM_NOTE"])
print()
print("run took %s s" % os.environ["W1_DURATION"])

out = os.environ.get("W1_JSON")
if out:
    doc = {
        "benchmark": os.environ["W1_WORKLOAD"].upper(),
        "kind": "peers",
        "started": os.environ["W1_STARTED"],
        "duration_s": int(os.environ["W1_DURATION"]),
        "host": os.environ["W1_HOST"],
        "cpu": os.environ["W1_CPU"],
        "cores": os.environ["W1_CORES"],
        "rt": RT,
        "rt_cap": RT_CAP,
        "seconds": int(os.environ["W1_SECONDS"]),
        "warmup_s": int(os.environ["W1_WARMUP"]),
        "repeat": repeat,
        "memory": mem,
        "memory_note": os.environ["W1_MEM_NOTE"],
        "versions": {"ovs": os.environ["W1_OVS_VERSION"], "dpdk": os.environ["W1_DPDK_VERSION"]},
        "columns": [c for c, _ in cols],
        "units": {"mpps": "million packets per second",
                  "cycles_per_packet": "TSC cycles per packet on the forwarding core",
                  "cpu_share": "fraction of the measured interval the forwarding thread was on a CPU"},
        "results": {f: {c: res.get(f, {}).get(c, {"status": "not run"}) for c, _ in cols}
                    for f in flows},
    }
    with open(out, "w") as fh:
        json.dump(doc, fh, indent=2)
        fh.write("\n")
    print("JSON written to %s" % out)
PY
if grep -q 'status=failed' "$RESULTS"; then exit 3; fi
