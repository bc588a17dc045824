#!/usr/bin/env bash
# Builds the Debian package target/debian/ferrovs_VERSION_ARCH.deb (or under
# $CARGO_TARGET_DIR): release binaries, the systemd unit (packaging/ferrovs.service),
# /etc/default/ferrovs, man pages ferrovsd(8) and ferrovs(1), and bash/zsh/fish completions,
# all generated from the binaries' own option parsers. Installs cargo-deb if missing.
#   scripts/package.sh [--no-build]    # --no-build: package the release binaries already built
# Prints the path of the .deb on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
. scripts/env.sh
ensure_rust >/dev/null
ensure_cargo_deb
BUILD=1
[ "${1:-}" = --no-build ] && BUILD=0
TARGET=${CARGO_TARGET_DIR:-$(pwd)/target}
if ((BUILD)); then
    cargo build --release -p ferrovsd -p ferrovs
fi
for b in ferrovsd ferrovs; do
    [ -x "$TARGET/release/$b" ] || { echo "package.sh: $TARGET/release/$b missing (run without --no-build)" >&2; exit 1; }
done
GEN=packaging/generated
rm -rf "$GEN"; mkdir -p "$GEN"
"$TARGET/release/ferrovsd" --man | gzip -9n > "$GEN/ferrovsd.8.gz"
"$TARGET/release/ferrovs" man | gzip -9n > "$GEN/ferrovs.1.gz"
"$TARGET/release/ferrovs" completions bash > "$GEN/ferrovs.bash"
"$TARGET/release/ferrovs" completions zsh > "$GEN/_ferrovs"
"$TARGET/release/ferrovs" completions fish > "$GEN/ferrovs.fish"
# The binaries were built above (or by the caller): cargo-deb only packs.
cargo deb -p ferrovsd --no-build -q 2>&1 | tail -n 1
