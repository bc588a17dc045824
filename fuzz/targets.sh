# Per-target fuzzing settings, sourced by smoke.sh and campaign.sh (from the fuzz/ directory).
#
# fuzz_max_len TARGET   the -max_len for TARGET: 65,536 wherever one input can be that long
#                       (OpenFlow messages up to 65,535 bytes, OVSDB and unixctl JSON, database
#                       logs and schemas, pcap files, GSO super-frames), smaller where the
#                       product bounds the input (single frames of MAX_FRAME bytes, one flow
#                       line), so that the fuzzer does not waste time on bytes nothing reads.
# fuzz_seed_dir TARGET  the directory of hand-written seeds for TARGET (may not exist).
# fuzz_env              exports what every run needs (nightly check, cargo-fuzz, target dir).

fuzz_max_len() {
    case "$1" in
        flow_extract) echo 4096 ;;   # one frame; packet::MAX_FRAME is 2,048
        ofctl_text) echo 16384 ;;    # one flow, group or meter line
        memif_msg) echo 4096 ;;      # a handshake: 32 control records of 128 bytes
        memif_ring) echo 8192 ;;     # a ring header and up to 256 descriptors
        vhost_vring) echo 8192 ;;    # a descriptor table and available ring of up to 256 slots
        vhost_vring_packed) echo 4200 ;; # a packed ring of up to 256 descriptors
        ct_execute) echo 8192 ;;     # a few frames, each at most MAX_FRAME
        ftp_ctl) echo 512 ;;         # one segment's payload; the helper reads 127 bytes
        sampled_key) echo 512 ;;     # a sample keeps at most 256 bytes of a frame
        tunnel_decap) echo 4096 ;;   # one outer frame; packet::MAX_FRAME is 2,048
        *) echo 65536 ;;
    esac
}

fuzz_seed_dir() {
    case "$1" in
        # One seed set for the OpenFlow decoder targets (one target per protocol version).
        openflow_of*) echo seeds/openflow ;;
        *) echo "seeds/$1" ;;
    esac
}

fuzz_env() {
    if ! cargo +nightly --version >/dev/null 2>&1; then
        echo "the nightly toolchain is required (rustup toolchain install nightly)" >&2
        return 2
    fi
    if ! cargo fuzz --version >/dev/null 2>&1; then
        cargo install cargo-fuzz --locked
    fi
    # Keep the fuzz build out of any CARGO_TARGET_DIR meant for the main workspace.
    CARGO_TARGET_DIR="$(pwd)/target"
    export CARGO_TARGET_DIR
}
