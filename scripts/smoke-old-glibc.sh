#!/usr/bin/env bash
# The smoke script (test/package/smoke.mjs, with history) run from a packed tarball in an older
# userland than this machine's, where only the glibc prebuild can serve:
#   smoke-old-glibc.sh <cache dir> <node dir> <tarball>
# The userland is Debian 11 (glibc 2.31), a minbase root made once with debootstrap (from
# Debian's archive) and kept in <cache dir>. The tarball is installed into it with install
# scripts off by this machine's npm, so nothing is compiled (a build/ appearing fails the run),
# and <node dir>'s Node (from the npm registry) runs the smoke script inside a chroot, in a
# private mount namespace with its own /proc and /dev, checking it loaded the glibc prebuild;
# then the command line's demo and audit (scripts/check-demo.sh), and `npm rebuild`, with no
# compiler in the root, must compile nothing (scripts/check-rebuild.sh). Needs root. Prints the
# output of each, then "smoke-old-glibc: <where>"; exits non-zero when anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/need-tool.sh
. scripts/need-tool.sh
# shellcheck source=scripts/consumer.sh
. scripts/consumer.sh

cache="$1" node_dir="$2" tarball="$3"
root="$cache/debian-bullseye"
[ "$(id -u)" = 0 ] || { echo "smoke-old-glibc: FAILED: a chroot needs root" >&2; exit 1; }
need_tool debootstrap debootstrap && need_tool unshare util-linux || exit 1
[ -x "$node_dir/bin/node" ] || { echo "smoke-old-glibc: FAILED: no node under $node_dir" >&2; exit 1; }

# One root serves every run on this machine: it is made once, under a lock, and each run works in
# directories of its own inside it, so runs side by side never remove each other's files.
exec 9>"$cache/debian-bullseye.lock"
flock 9
if [ ! -x "$root/bin/sh" ]; then
  rm -rf "$root.tmp"
  debootstrap --variant=minbase bullseye "$root.tmp" >"$cache/debootstrap.log" 2>&1 \
    || { tail -n 20 "$cache/debootstrap.log" >&2; echo "smoke-old-glibc: FAILED: debootstrap bullseye" >&2; exit 1; }
  mv "$root.tmp" "$root"
fi
flock -u 9

run="run-$$"
node_in="/opt/$run/node" consumer="/$run-consumer"
trap 'rm -rf "$root/opt/$run" "$root$consumer"' EXIT
mkdir -p "$root$node_in" "$root/opt/$run/bin" "$root/opt/$run/tmp"
cp -r "$node_dir/." "$root$node_in/"
# npm is JavaScript: this machine's runs inside on that Node, for the rebuild.
npm_dir="$(cd "$(dirname "$(readlink -f "$(command -v npm)")")/.." && pwd)"
cp -r "$npm_dir" "$root/opt/$run/npm"
printf '#!/bin/sh\nexec node /opt/%s/npm/bin/npm-cli.js "$@"\n' "$run" >"$root/opt/$run/bin/npm"
chmod +x "$root/opt/$run/bin/npm"
consumer_project "$root$consumer" "$tarball" || { echo "smoke-old-glibc: FAILED: installing the tarball" >&2; exit 1; }
cp scripts/check-demo.sh scripts/check-rebuild.sh "$root$consumer/"

# Inside: the smoke script, checking it loaded the glibc prebuild, the command line's demo, then
# the rebuild with the root's PATH, which has no compiler (minbase installs none).
status=0
unshare --mount --propagation private -- sh -c '
  mount -t proc proc "$1/proc" && mount --rbind /dev "$1/dev" &&
  exec chroot "$1" /usr/bin/env -i HOME=/root TMPDIR="$4/tmp" npm_config_cache="$4/npm-cache" \
    npm_config_update_notifier=false PATH="$3/bin:$4/bin:/usr/bin:/bin" \
    /bin/sh -c "cd $2 && node smoke.mjs --history --expect-libc glibc; s=\$?; sh check-demo.sh || s=1; sh check-rebuild.sh || s=1; exit \$s"' \
  sh "$root" "$consumer" "$node_in" "/opt/$run" || status=$?
echo "smoke-old-glibc: debian 11 (glibc $(chroot "$root" /usr/bin/ldd --version | head -n 1 | sed 's/.* //')) node $("$node_dir/bin/node" --version)"
exit "$status"
