# Sourced by scripts/*.sh and fuzz/smoke.sh: installs what building and testing ferrovs needs,
# on a fresh Debian machine or an existing one, and puts it on PATH (also under sudo, whose
# PATH has no ~/.cargo/bin). Each function is idempotent and cheap when everything is there.

# Every Debian package a script or test uses, as command:package (the command, or for a
# package without one a file it installs, is how we tell whether it is installed). Add to
# this list, not to individual scripts.
FERROVS_PACKAGES=(
    cc:build-essential
    pkg-config:pkg-config
    curl:curl
    git:git
    python3:python3
    ovs-appctl:openvswitch-common
    ovs-vswitchd:openvswitch-switch
    ovs-pki:openvswitch-pki
    ovs-testcontroller:openvswitch-testcontroller
    iperf3:iperf3
    tcpdump:tcpdump
    ping:iputils-ping
    ip:iproute2
    ethtool:ethtool
    trafgen:netsniff-ng
    dpdk-testpmd:dpdk-dev
    /usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk:openvswitch-switch-dpdk
    qemu-system-x86_64:qemu-system-x86
    busybox:busybox-static
    tmux:tmux
    nfcapd:nfdump
    sfcapd:nfdump-sflow
    ovn-northd:ovn-central
    ovn-controller:ovn-host
    nft:nftables
    /usr/lib/python3/dist-packages/pyftpdlib/__init__.py:python3-pyftpdlib
)

ensure_packages() {
    local need=() pair cmd pkg
    for pair in "${FERROVS_PACKAGES[@]}"; do
        cmd=${pair%%:*}; pkg=${pair#*:}
        command -v "$cmd" >/dev/null 2>&1 || [ -e "$cmd" ] || need+=("$pkg")
    done
    # python3 -m venv needs ensurepip, which Debian ships separately.
    python3 -c 'import ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
    if ((${#need[@]})); then
        echo "installing: ${need[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
            "${need[@]}" >/dev/null
    fi
}

# rustup's stable toolchain (with rustfmt and clippy) for the build, nightly for cargo fuzz.
ensure_rust() {
    local home
    for home in "${CARGO_HOME:-}" "$HOME/.cargo" /root/.cargo "${SUDO_USER:+$(getent passwd "$SUDO_USER" | cut -d: -f6)/.cargo}"; do
        if [ -n "$home" ] && [ -x "$home/bin/cargo" ]; then
            case ":$PATH:" in *":$home/bin:"*) ;; *) export PATH="$home/bin:$PATH" ;; esac
            break
        fi
    done
    if ! command -v rustup >/dev/null 2>&1; then
        echo "installing rustup (stable toolchain)"
        curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
    rustup component add rustfmt clippy >/dev/null 2>&1 || true
    command -v cargo-fmt >/dev/null && command -v cargo-clippy >/dev/null || {
        echo "rustfmt/clippy missing from the stable toolchain" >&2; return 1; }
    if ! cargo +nightly --version >/dev/null 2>&1; then
        echo "installing the nightly toolchain (cargo fuzz)"
        rustup toolchain install nightly --profile minimal
    fi
    cargo --version
}

# cargo-deb, for scripts/package.sh and its test.
ensure_cargo_deb() {
    command -v cargo-deb >/dev/null 2>&1 && return 0
    echo "installing cargo-deb"
    cargo install --locked -q cargo-deb
}

ensure_venv() {
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv .venv
    fi
    .venv/bin/pip install -q --disable-pip-version-check -r tests/requirements.txt
}
