#!/usr/bin/env bash
# Builds prebuilds/ for the package (run by `prepack`, so every `npm pack` / `npm publish`
# ships them): node-gyp-build loads prebuilds/<platform>-<arch>/ before it would compile, so
# an install on these platforms needs no compiler and no install script.
#   linux-x64 (glibc)   the addon and gjc_pinned_vfs.so (prebuildify copies the .so beside it)
#   linux-arm64 (glibc) the same, cross-compiled with Debian's g++-aarch64-linux-gnu
#   win32-x64           the mingw-w64 build of scripts/build-win32.sh
# The Linux builds run in a scratch copy of the sources, so build/ (the addon the tests use)
# is left as it was. Node-API builds: one file serves every Node from 20 on, and Bun.
# PREBUILD_SKIP_ARM64=1 leaves linux-arm64 out (for a machine without the cross compiler).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
# shellcheck source=scripts/need-tool.sh
. scripts/need-tool.sh

# node-gyp cannot download headers here; the running Node's own are the Node-API headers.
if [ -z "${npm_config_nodedir:-}" ]; then
  npm_config_nodedir="$(node -p "require('path').resolve(process.execPath, '../..')")"
fi
export npm_config_nodedir
[ -f "$npm_config_nodedir/include/node/node_api.h" ] || { echo "prebuild: FAILED: no Node headers under $npm_config_nodedir" >&2; exit 1; }

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp -r binding.gyp package.json native "$stage/"
ln -s "$repo/node_modules" "$stage/node_modules"

rm -rf prebuilds
# prebuildify's own name for the build: <name>.glibc.node, no ABI tag (Node-API).
linux_build() {
  local arch="$1"
  shift
  (cd "$stage" && rm -rf build && env "$@" npx --no-install prebuildify --napi --strip --tag-libc --arch "$arch" --out "$repo") \
    >"$stage/prebuildify-$arch.log" 2>&1 || { cat "$stage/prebuildify-$arch.log" >&2; echo "prebuild: FAILED: linux-$arch" >&2; exit 1; }
  for built in "gjc-session-store.glibc.node" "gjc_pinned_vfs.so"; do
    [ -f "prebuilds/linux-$arch/$built" ] || { echo "prebuild: FAILED: prebuilds/linux-$arch/$built was not produced" >&2; exit 1; }
  done
  echo "prebuild: wrote prebuilds/linux-$arch"
}

linux_build x64
if [ "${PREBUILD_SKIP_ARM64:-}" = 1 ]; then
  echo "prebuild: linux-arm64 SKIPPED (PREBUILD_SKIP_ARM64=1)"
else
  need_tool aarch64-linux-gnu-g++ g++-aarch64-linux-gnu || { echo "prebuild: FAILED: no aarch64 cross compiler (set PREBUILD_SKIP_ARM64=1 to leave linux-arm64 out)" >&2; exit 1; }
  linux_build arm64 CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++ LINK=aarch64-linux-gnu-g++ \
    PREBUILD_STRIP_BIN=aarch64-linux-gnu-strip
fi
BUILD_WIN32_DIR="$stage/build-win32" bash scripts/build-win32.sh >"$stage/build-win32.log" 2>&1 \
  || { cat "$stage/build-win32.log" >&2; echo "prebuild: FAILED: win32-x64" >&2; exit 1; }
echo "prebuild: wrote prebuilds/win32-x64"
