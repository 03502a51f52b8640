#!/usr/bin/env bash
# Builds prebuilds/ for the package (run by `prepack`, so every `npm pack` / `npm publish`
# ships them): src/native/binding.cjs loads prebuilds/<platform>-<arch>/ before it would
# compile, so an install on these platforms needs no compiler and no install script.
#   linux-x64, linux-arm64   gjc-session-store.glibc.node + gjc_pinned_vfs.glibc.so, for glibc 2.17 on
#                            gjc-session-store.musl.node  + gjc_pinned_vfs.musl.so, for musl
#   win32-x64                the mingw-w64 build of scripts/build-win32.sh
# Every Linux build comes from one compiler, zig (scripts/toolchain.sh), against its copy of
# the target libc's headers and link stubs, with libc++ linked in: nothing newer than the
# target's libc is needed where it runs. Each is stripped at link time and then checked (see
# check_linux_build). The builds run in a scratch copy of the sources, so build/ (the addon the
# tests use) is left as it was. Node-API builds: one file serves every Node from 20 on, and Bun.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
# shellcheck source=scripts/toolchain.sh
. scripts/toolchain.sh

# The oldest glibc the Linux builds load on: CentOS/RHEL 7, Amazon Linux 2 and later.
GLIBC_TARGET=2.17

# node-gyp cannot download headers here; the running Node's own are the Node-API headers.
if [ -z "${npm_config_nodedir:-}" ]; then
  npm_config_nodedir="$(node -p "require('path').resolve(process.execPath, '../..')")"
fi
export npm_config_nodedir
[ -f "$npm_config_nodedir/include/node/node_api.h" ] || { echo "prebuild: FAILED: no Node headers under $npm_config_nodedir" >&2; exit 1; }

zig="$(zig_path)" || { echo "prebuild: FAILED: no compiler for the Linux builds" >&2; exit 1; }
MUSL_LIBC=/lib/ld-musl-x86_64.so.1
[ -e "$MUSL_LIBC" ] || { echo "prebuild: FAILED: no $MUSL_LIBC to check the musl builds against (Debian package musl; .ci/run installs it)" >&2; exit 1; }
# node-gyp's make runs this many compilers at once.
JOBS="$(nproc)"
export JOBS

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp -r binding.gyp package.json native "$stage/"
ln -s "$repo/node_modules" "$stage/node_modules"

# check_linux_build <file> <libc>: fails unless every symbol the file needs from outside is
# one the target libc has. A reference the linker could not version (the libc stubs it linked
# against lack the name) would be looked up in whatever libc runs it, and fail there if absent;
# so on glibc the only unversioned ones allowed are Node-API's, resolved in the host process,
# and the weak references native/core/linux/os_linux.cc tests for null before calling.
WEAK_ALLOWED=" renameat2 getrandom __gmon_start__ "
check_linux_build() {
  local file="$1" libc="$2" bad="" symbols
  symbols="$(readelf --dyn-syms -W "$file" | awk '$7 == "UND" && $8 != "" { print $5, $8 }')"
  while read -r bind name; do
    [ -n "$name" ] || continue
    case "$name" in napi_* | node_api_*) continue ;; esac
    local bare="${name%%@*}"
    if [ "$bind" = WEAK ]; then
      [[ "$WEAK_ALLOWED" == *" $bare "* ]] || bad+=" $name(weak)"
    elif [ "$libc" = glibc ] && [ "$bare" = "$name" ]; then
      bad+=" $name(unversioned)"
    fi
  done <<<"$symbols"
  if [ "$libc" = glibc ]; then
    local newest
    newest="$(grep -o '@GLIBC_[0-9.]*' <<<"$symbols" | sed 's/@GLIBC_//' | sort -uV | tail -n 1)"
    if [ -n "$newest" ] && [ "$(printf '%s\n%s\n' "$newest" "$GLIBC_TARGET" | sort -V | tail -n 1)" != "$GLIBC_TARGET" ]; then
      bad+=" GLIBC_$newest(above $GLIBC_TARGET)"
    fi
  fi
  # Only the C library itself: no libstdc++ (or any library a target may not have) to find.
  local needed
  needed="$(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
    grep -vE '^(libc\.so(\.6)?|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|ld-linux-(x86-64|aarch64)\.so\.[12])$' || true)"
  [ -z "$needed" ] || bad+=" needs:$(tr '\n' ' ' <<<"$needed")"
  # musl versions nothing: each needed name is looked up in Debian's musl, an old one (1.2.3).
  if [ "$libc" = musl ] && [ "$(readelf -h "$file" | sed -n 's/.*Machine: *//p')" = "Advanced Micro Devices X86-64" ]; then
    local missing
    missing="$(awk '$1 == "GLOBAL" { print $2 }' <<<"$symbols" | grep -vE '^(napi_|node_api_)' | sort -u |
      comm -23 - <(nm -D --defined-only "$MUSL_LIBC" | awk '{ print $3 }' | sort -u))"
    [ -z "$missing" ] || bad+=" not-in-musl:$(tr '\n' ' ' <<<"$missing")"
  fi
  if readelf -S -W "$file" | grep -qE '\.(symtab|debug_info) '; then bad+=" not-stripped"; fi
  if [ -n "$bad" ]; then
    echo "prebuild: FAILED: $file cannot be trusted to load on every $libc target:$bad" >&2
    return 1
  fi
}

# linux_build <arch> <libc>: prebuilds/linux-<arch>/gjc-session-store.<libc>.node and the SQLite
# extension beside it, renamed per libc (prebuildify copies it under its build name).
linux_build() {
  local arch="$1" libc="$2" triple
  case "$arch-$libc" in
    x64-glibc) triple="x86_64-linux-gnu.$GLIBC_TARGET" ;;
    arm64-glibc) triple="aarch64-linux-gnu.$GLIBC_TARGET" ;;
    x64-musl) triple="x86_64-linux-musl" ;;
    arm64-musl) triple="aarch64-linux-musl" ;;
  esac
  local cc="$zig cc -target $triple" cxx="$zig c++ -target $triple"
  local log="$stage/prebuildify-$arch-$libc.log"
  # -s strips at link time: one step for every target, no per-architecture strip tool.
  (cd "$stage" && rm -rf build && env CC="$cc" CXX="$cxx" LINK="$cxx -s" AR="$zig ar" \
    npx --no-install prebuildify --napi --tag-libc --libc "$libc" --arch "$arch" --out "$repo") \
    >"$log" 2>&1 || { cat "$log" >&2; echo "prebuild: FAILED: linux-$arch ($libc)" >&2; exit 1; }
  local dir="prebuilds/linux-$arch"
  [ -f "$dir/gjc_pinned_vfs.so" ] && mv "$dir/gjc_pinned_vfs.so" "$dir/gjc_pinned_vfs.$libc.so"
  for built in "gjc-session-store.$libc.node" "gjc_pinned_vfs.$libc.so"; do
    [ -f "$dir/$built" ] || { echo "prebuild: FAILED: $dir/$built was not produced" >&2; exit 1; }
    check_linux_build "$dir/$built" "$libc" || exit 1
  done
  echo "prebuild: wrote $dir ($libc)"
}

rm -rf prebuilds
for arch in x64 arm64; do
  for libc in glibc musl; do
    linux_build "$arch" "$libc"
  done
done
BUILD_WIN32_DIR="$stage/build-win32" bash scripts/build-win32.sh >"$stage/build-win32.log" 2>&1 \
  || { cat "$stage/build-win32.log" >&2; echo "prebuild: FAILED: win32-x64" >&2; exit 1; }
echo "prebuild: wrote prebuilds/win32-x64"
