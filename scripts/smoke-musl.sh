#!/usr/bin/env bash
# The smoke script (test/package/smoke.mjs, with history) run from a packed tarball by a musl
# JavaScript runtime, so a musl prebuild is loaded by a process whose libc is musl:
#   smoke-musl.sh <x64|arm64> <cache dir> <bun dir> <tarball>
# The runtime is Bun's musl binary for that architecture from the npm registry (<bun dir>),
# started by Debian's musl: on x64 the installed one (/lib/ld-musl-x86_64.so.1, package musl),
# which the binary names as its interpreter; on arm64 the loader of Debian's musl for arm64,
# downloaded once into <cache dir> (apt-get download, this machine's sources, lists of its
# own), run under qemu-user. Bun's C++ runtime comes from Debian too, built for glibc (the
# machine's own, or the arm64 cross one): musl's loader takes it once the few glibc-only names
# it needs are supplied (scripts/musl-runtime/glibc-compat.c, built here for musl). The addon's
# own imports resolve in musl alone: the smoke script checks the process maps musl and no glibc,
# and loaded the musl prebuild and its SQLite extension and nothing else.
# The tarball is installed into a consumer project of this run's own by this machine's npm with
# install scripts off (a build/ appearing fails the run). Then, with the musl runtime as `node`,
# the package's command line runs its demo and an audit (scripts/check-demo.sh), and `npm
# rebuild` runs the install script with no compiler on PATH, which must compile nothing
# (scripts/check-rebuild.sh). Prints the output of each, then "smoke-musl: <where>"; exits
# non-zero when anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
# shellcheck source=scripts/need-tool.sh
. scripts/need-tool.sh
# shellcheck source=scripts/toolchain.sh
. scripts/toolchain.sh
# shellcheck source=scripts/consumer.sh
. scripts/consumer.sh

arch="$1" cache="$2" bun_dir="$3" tarball="$4"
fail() {
  echo "smoke-musl: FAILED: $*" >&2
  exit 1
}
trap 'echo "smoke-musl: FAILED: line $LINENO exited $?" >&2' ERR
[ "$(uname -m)" = x86_64 ] || fail "runs on x86_64 only"
bun="$(cd "$bun_dir/bin" && pwd)/bun"
[ -x "$bun" ] || fail "no bun under $bun_dir"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The runtime's library folder: the C++ runtime and the compatibility library, under the name
# of glibc's loader (libstdc++ for x64 needs that file; arm64's is preloaded by the same name).
libs="$work/lib"
mkdir "$libs"

case "$arch" in
  x64)
    triple=x86_64-linux-musl glibc_loader=ld-linux-x86-64.so.2
    loader=/lib/ld-musl-x86_64.so.1
    [ -e "$loader" ] || fail "no $loader (Debian package musl; .ci/run installs it)"
    for lib in libstdc++.so.6 libgcc_s.so.1; do
      # awk reads to the end: leaving early would end ldconfig by SIGPIPE, a failure to pipefail.
      found="$(ldconfig -p | awk -v lib="$lib" '$1 == lib && /x86-64/ && !found { print $NF; found = 1 }')"
      [ -n "$found" ] || fail "no $lib on this machine (Debian packages libstdc++6, libgcc-s1)"
      cp -L "$found" "$libs/$lib"
    done
    musl_version="$(dpkg-query -W -f '${Version}' musl)"
    # The kernel starts the binary by its interpreter, as anywhere musl is the system's libc.
    run=() lib_path="$libs" ;;
  arm64)
    triple=aarch64-linux-musl glibc_loader=ld-linux-aarch64.so.1
    need_tool qemu-aarch64 qemu-user && need_tool aarch64-linux-gnu-g++ g++-aarch64-linux-gnu \
      || fail "qemu-user or the arm64 C++ runtime is not installed (.ci/run installs them)"
    for lib in libstdc++.so.6 libgcc_s.so.1; do
      [ -e "/usr/aarch64-linux-gnu/lib/$lib" ] || fail "no /usr/aarch64-linux-gnu/lib/$lib (Debian package libstdc++6-arm64-cross)"
      cp -L "/usr/aarch64-linux-gnu/lib/$lib" "$libs/$lib"
    done
    musl_root="$cache/musl-arm64"
    (
      flock 9
      [ -e "$musl_root/lib/ld-musl-aarch64.so.1" ] && exit 0
      apt_dir="$(mktemp -d)"
      mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
      apt_arm64=(-q -o APT::Architecture=arm64 -o APT::Architectures=arm64 -o "Dir::State::Lists=$apt_dir/lists"
        -o "Dir::Cache=$apt_dir/cache" -o Dir::State::status=/dev/null)
      if (cd "$apt_dir" && apt-get "${apt_arm64[@]}" update && apt-get "${apt_arm64[@]}" download musl) >"$apt_dir/log" 2>&1; then
        rm -rf "$musl_root.tmp" && dpkg-deb -x "$apt_dir"/musl_*_arm64.deb "$musl_root.tmp" &&
          dpkg-deb -f "$apt_dir"/musl_*_arm64.deb Version >"$musl_root.tmp/VERSION" &&
          rm -rf "$musl_root" && mv "$musl_root.tmp" "$musl_root"
        rm -rf "$apt_dir"
      else
        tail -n 20 "$apt_dir/log" >&2
        rm -rf "$apt_dir"
        exit 1
      fi
    ) 9>"$cache/musl-arm64.lock" || fail "apt-get download of Debian's musl for arm64"
    # A copy under its own name, so the process maps it by the name musl's loader has.
    loader="$libs/ld-musl-aarch64.so.1"
    cp -L "$musl_root/lib/ld-musl-aarch64.so.1" "$loader"
    # qemu's -L sysroot would also redirect every absolute path the store opens, so the loader
    # is run as the program and given the library folder itself.
    run=("$(command -v qemu-aarch64)" "$loader" --library-path "$libs" --preload "$libs/$glibc_loader") lib_path=""
    musl_version="$(cat "$musl_root/VERSION")" ;;
  *) fail "no musl runtime for $arch" ;;
esac
readelf -l "$bun" | grep -F "interpreter: /lib/ld-musl-${triple%%-*}.so.1]" >/dev/null || fail "$bun is not a musl binary for $arch"
zig="$(zig_path)" || fail "no compiler for the compatibility library"
"$zig" cc -target "$triple" -shared -fPIC -O2 -Wall -Wextra -Werror -s \
  -Wl,-soname,"$glibc_loader" -o "$libs/$glibc_loader" scripts/musl-runtime/glibc-compat.c \
  || fail "building scripts/musl-runtime/glibc-compat.c for $arch"

# Only the musl runtime as `node` and npm on it: no compiler.
bin="$work/bin"
consumer_path "$bin" "$bun" "${run[@]}" || fail "making the PATH"
mkdir "$work/home" "$work/tmp"
in_musl() {
  env -i PATH="$bin" HOME="$work/home" TMPDIR="$work/tmp" LD_LIBRARY_PATH="$lib_path" \
    npm_config_cache="$work/npm-cache" npm_config_update_notifier=false "$@"
}
consumer="$work/consumer"
consumer_project "$consumer" "$tarball" || fail "installing the tarball"

status=0
(cd "$consumer" && in_musl node smoke.mjs --history --expect-libc musl) || status=$?
(cd "$consumer" && in_musl sh "$repo/scripts/check-demo.sh") || status=$?
(cd "$consumer" && in_musl sh "$repo/scripts/check-rebuild.sh") || status=$?

echo "smoke-musl: bun $(in_musl node -p 'Bun.version') on Debian's musl $musl_version, linux-$arch$([ "$arch" = x64 ] || echo ' (qemu)')"
exit "$status"
