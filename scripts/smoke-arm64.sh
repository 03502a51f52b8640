#!/usr/bin/env bash
# The smoke script (test/package/smoke.mjs) run from a packed tarball by the arm64 Node from the
# npm registry under qemu-user, on Debian's arm64 glibc (the cross libraries of package
# libc6-arm64-cross, which g++-aarch64-linux-gnu brings), so the linux-arm64 glibc prebuild is the
# one loaded:
#   smoke-arm64.sh <node dir> <tarball>
# Node 20 (the oldest the package supports) has no node:sqlite and the tarball no better-sqlite3,
# so neither the history check nor the command line's demo, which needs it, runs here. The
# tarball is installed into a consumer project of this run's own by this machine's npm with
# install scripts off; then, with the arm64 Node as `node`, `npm rebuild` with no compiler on
# PATH must compile nothing (scripts/check-rebuild.sh). Prints the output of each, then
# "smoke-arm64: <where>"; exits non-zero when anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
# shellcheck source=scripts/need-tool.sh
. scripts/need-tool.sh
# shellcheck source=scripts/consumer.sh
. scripts/consumer.sh

node_dir="$1" tarball="$2"
fail() {
  echo "smoke-arm64: FAILED: $*" >&2
  exit 1
}
trap 'echo "smoke-arm64: FAILED: line $LINENO exited $?" >&2' ERR
need_tool qemu-aarch64 qemu-user && need_tool aarch64-linux-gnu-g++ g++-aarch64-linux-gnu \
  || fail "qemu-user or the arm64 libraries are not installed (.ci/run installs them)"
node="$(cd "$node_dir/bin" && pwd)/node"
[ -x "$node" ] || fail "no node under $node_dir"
sysroot=/usr/aarch64-linux-gnu/lib

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# qemu's -L sysroot would also redirect every absolute path the store opens, "/" included, so
# glibc's loader is run as the program and given the library folder itself.
bin="$work/bin"
consumer_path "$bin" "$node" "$(command -v qemu-aarch64)" "$sysroot/ld-linux-aarch64.so.1" --library-path "$sysroot" \
  || fail "making the PATH"
mkdir "$work/home" "$work/tmp"
in_arm64() {
  env -i PATH="$bin" HOME="$work/home" TMPDIR="$work/tmp" \
    npm_config_cache="$work/npm-cache" npm_config_update_notifier=false "$@"
}
consumer="$work/consumer"
consumer_project "$consumer" "$tarball" || fail "installing the tarball"

status=0
(cd "$consumer" && in_arm64 node smoke.mjs --expect-libc glibc) || status=$?
(cd "$consumer" && in_arm64 sh "$repo/scripts/check-rebuild.sh") || status=$?

echo "smoke-arm64: node $(in_arm64 node --version) on Debian's arm64 glibc $(dpkg-query -W -f '${Version}' libc6-arm64-cross 2>/dev/null || echo '?') (qemu)"
exit "$status"
