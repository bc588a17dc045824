#!/usr/bin/env bash
# A first look at ferrovs forwarding real traffic: builds the switch, starts it with a private
# rundir, makes two network namespaces (h1 10.99.0.1, h2 10.99.0.2) cabled by veth pairs to an
# OpenFlow bridge, pings and runs iperf3 across it, prints what it did at each step, and removes
# everything on the way out. Run as root: `sudo ./scripts/demo.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
    echo "demo.sh: run as root (namespaces, veth): sudo $0" >&2
    exit 1
fi
# shellcheck source=scripts/env.sh
. scripts/env.sh
ensure_packages
ensure_rust
say() { printf '\n--> %s\n' "$*"; }

say "building (release)"
cargo build --release -p ferrovsd -p ferrovs
BIN=${CARGO_TARGET_DIR:-target}/release
TAG=$$
RUNDIR=$(mktemp -d /tmp/ferrovs-demo.XXXXXX)
H1=fvd${TAG}a; H2=fvd${TAG}b
P1=fvd${TAG}p1; P2=fvd${TAG}p2
DPID=
cleanup() {
    set +e
    [ -n "$DPID" ] && "$BIN/ferrovs" --rundir "$RUNDIR" exit >/dev/null 2>&1
    [ -n "$DPID" ] && wait "$DPID" 2>/dev/null
    ip link del "$P1" 2>/dev/null; ip link del "$P2" 2>/dev/null
    ip netns del "$H1" 2>/dev/null; ip netns del "$H2" 2>/dev/null
    rm -rf "$RUNDIR"
}
trap cleanup EXIT

say "starting ferrovsd --rundir $RUNDIR (log: $RUNDIR/ferrovsd.log)"
"$BIN/ferrovsd" --rundir "$RUNDIR" >"$RUNDIR/ferrovsd.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do [ -S "$RUNDIR/ferrovsd.ctl" ] && break; sleep 0.1; done
F=("$BIN/ferrovs" --rundir "$RUNDIR")

say "two hosts: namespaces $H1 (10.99.0.1) and $H2 (10.99.0.2), each cabled by a veth pair"
i=1
for pair in "$H1:$P1" "$H2:$P2"; do
    ns=${pair%%:*}; port=${pair#*:}
    ip netns add "$ns"
    ip link add "$port" type veth peer name eth0 netns "$ns"
    ip -n "$ns" addr add "10.99.0.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    ip link set "$port" up
    i=$((i + 1))
done

say "ferrovs add-br br$TAG; add-port (AF_PACKET ports on the switch ends of the veths)"
"${F[@]}" add-br "br$TAG"
"${F[@]}" add-port "br$TAG" "$P1"
"${F[@]}" add-port "br$TAG" "$P2"
"${F[@]}" show
"${F[@]}" dump-flows "br$TAG"

say "ping from $H1 to 10.99.0.2"
ip netns exec "$H1" ping -c 3 -W 2 10.99.0.2

say "iperf3 (TCP, 3 s) from $H1 to $H2"
ip netns exec "$H2" iperf3 -s -1 -B 10.99.0.2 >/dev/null 2>&1 &
SRV=$!
sleep 0.5
ip netns exec "$H1" iperf3 -c 10.99.0.2 -t 3
wait "$SRV" || true

say "what the switch saw"
"${F[@]}" dump-ports "br$TAG"
"${F[@]}" dpctl/dump-flows "br$TAG"
say "demo done: ping and iperf3 crossed ferrovs; cleaning up"
