#!/usr/bin/env bash
# The smoke script (test/package/smoke.mjs, with history) run from a packed tarball by a musl
# JavaScript runtime, so the linux-x64 musl prebuild is loaded by a process whose libc is musl:
#   smoke-musl.sh <bun dir> <tarball>
# The runtime is Bun's musl binary (@oven/bun-linux-x64-musl from the npm registry, <bun dir>),
# started by Debian's musl loader (/lib/ld-musl-x86_64.so.1, package musl). Its C++ runtime
# comes from Debian too, built for glibc: musl's loader takes it once the few glibc-only names
# it needs are supplied (scripts/musl-runtime/glibc-compat.c, built here for musl). The addon's
# own imports resolve in musl alone: the smoke script checks the process maps musl and no glibc,
# and loaded the musl prebuild and its SQLite extension and nothing else.
# The tarball is installed into a consumer project of this run's own by this machine's npm with
# install scripts off (a build/ appearing fails the run). Then `npm rebuild` runs the package's
# install script with the musl runtime as `node` and no compiler on PATH, and must compile
# nothing (scripts/check-rebuild.sh). Prints the smoke script's and the rebuild's output, then
# "smoke-musl: <where>"; exits non-zero when anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
# shellcheck source=scripts/toolchain.sh
. scripts/toolchain.sh

bun_dir="$1" tarball="$2"
MUSL_LOADER=/lib/ld-musl-x86_64.so.1
fail() {
  echo "smoke-musl: FAILED: $*" >&2
  exit 1
}
[ "$(uname -m)" = x86_64 ] || fail "runs on x86_64 only"
[ -e "$MUSL_LOADER" ] || fail "no $MUSL_LOADER (Debian package musl; .ci/run installs it)"
bun="$bun_dir/bin/bun"
[ -x "$bun" ] || fail "no bun under $bun_dir"
readelf -l "$bun" | grep -qF "interpreter: $MUSL_LOADER]" || fail "$bun is not started by $MUSL_LOADER"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The runtime's library folder: Debian's libstdc++ and libgcc_s, and the compatibility library
# under the name libstdc++ needs it by.
libs="$work/lib"
mkdir "$libs"
for lib in libstdc++.so.6 libgcc_s.so.1; do
  found="$(ldconfig -p | awk -v lib="$lib" '$1 == lib && /x86-64/ { print $NF; exit }')"
  [ -n "$found" ] || fail "no $lib on this machine (Debian packages libstdc++6, libgcc-s1)"
  cp -L "$found" "$libs/$lib"
done
zig="$(zig_path)" || fail "no compiler for the compatibility library"
"$zig" cc -target x86_64-linux-musl -shared -fPIC -O2 -Wall -Wextra -Werror -s \
  -Wl,-soname,ld-linux-x86-64.so.2 -o "$libs/ld-linux-x86-64.so.2" scripts/musl-runtime/glibc-compat.c \
  || fail "building scripts/musl-runtime/glibc-compat.c"

# A PATH with the musl runtime as `node` (Bun runs as Node under that name), npm through it, and
# the few tools scripts/check-rebuild.sh uses: no compiler, make or Python.
bin="$work/bin"
mkdir "$bin"
ln -s "$(cd "$bun_dir/bin" && pwd)/bun" "$bin/node"
for tool in sh grep cat rm; do ln -s "$(command -v "$tool")" "$bin/$tool"; done
npm_cli="$(cd "$(dirname "$(readlink -f "$(command -v npm)")")/.." && pwd)/bin/npm-cli.js"
[ -f "$npm_cli" ] || fail "no npm-cli.js beside this machine's npm"
printf '#!/bin/sh\nexec node %q "$@"\n' "$npm_cli" >"$bin/npm"
chmod +x "$bin/npm"
in_musl() {
  env -i PATH="$bin" HOME="$work/home" TMPDIR="$work/tmp" LD_LIBRARY_PATH="$libs" \
    npm_config_cache="$work/npm-cache" npm_config_update_notifier=false "$@"
}
mkdir "$work/home" "$work/tmp"

consumer="$work/consumer"
mkdir "$consumer"
echo '{ "name": "consumer", "private": true, "type": "module" }' >"$consumer/package.json"
cp test/package/smoke.mjs "$consumer/"
(cd "$consumer" && npm install --ignore-scripts --no-audit --no-fund --prefer-offline --silent "$tarball") \
  || fail "npm install of $tarball"
installed="$consumer/node_modules/gjc-session-store"
[ ! -e "$installed/build" ] || fail "the install compiled a build/"

status=0
(cd "$consumer" && in_musl node smoke.mjs --history --expect-libc musl) || status=$?

(cd "$consumer" && in_musl sh "$repo/scripts/check-rebuild.sh") || status=$?

echo "smoke-musl: bun $(in_musl node -p 'Bun.version') on musl (Debian's musl $(dpkg-query -W -f '${Version}' musl 2>/dev/null || echo '?'))"
exit "$status"
