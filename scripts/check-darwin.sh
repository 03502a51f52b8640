#!/usr/bin/env bash
# Compiles every macOS source of the addon (binding.gyp's mac list) against the macOS SDK
# headers the pinned zig ships (scripts/toolchain.sh), with -Wall -Wextra -Werror, and links
# each to a .node for x86_64 and arm64 at binding.gyp's MACOSX_DEPLOYMENT_TARGET, as node-gyp
# would on a Mac (Node-API resolved by the host process at load). Then checks what a Mac's
# loader would see: the module entry point exported, none of our own symbols exported, and the
# deployment target recorded in the binary. Nothing is run: no Mac is at hand, so no macOS
# binary ships, and macOS compiles at install (README "Developing").
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/toolchain.sh
. scripts/toolchain.sh
# shellcheck source=scripts/need-tool.sh
. scripts/need-tool.sh

need_tool llvm-nm llvm && need_tool llvm-objdump llvm || exit 1
zig="$(zig_path)" || { echo "check-darwin: FAILED: no compiler" >&2; exit 1; }

mapfile -t sources < <(node scripts/gyp-sources.cjs mac sources)
mapfile -t defines < <(node scripts/gyp-sources.cjs mac defines)
grep -q '^native/core/darwin/' < <(printf '%s\n' "${sources[@]}") \
  || { echo "check-darwin: binding.gyp lists no native/core/darwin sources for mac" >&2; exit 1; }
min_macos="$(node -e '
  const gyp = JSON.parse(require("fs").readFileSync("binding.gyp", "utf8"));
  const mac = gyp.targets[0].conditions.find(([when]) => when === "OS==\x27mac\x27");
  process.stdout.write(mac[1].xcode_settings.MACOSX_DEPLOYMENT_TARGET);')"
napi_include="$(node -p "require('node-addon-api').include_dir")"
node_include="$(node -p "require('path').resolve(process.execPath, '../../include/node')")"

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
status=0
for arch in x86_64 aarch64; do
  addon="$out/gjc_session_store-$arch.node"
  if ! "$zig" c++ -target "$arch-macos.$min_macos" -std=c++17 -O2 -Wall -Wextra -Werror -fvisibility=hidden -fno-exceptions \
      "${defines[@]/#/-D}" -I "$node_include" -I "$napi_include" \
      -shared -Wl,-undefined,dynamic_lookup -o "$addon" "${sources[@]}"; then
    echo "check-darwin: FAILED: $arch does not compile and link" >&2
    status=1
    continue
  fi
  exported="$(llvm-nm -g --defined-only "$addon" | awk '{ print $3 }')"
  grep -qx '_napi_register_module_v1' <<<"$exported" || { echo "check-darwin: FAILED: $arch exports no napi_register_module_v1" >&2; status=1; }
  ours="$(grep -E '^__ZN(K)?3gjc' <<<"$exported" || true)"
  [ -z "$ours" ] || { echo "check-darwin: FAILED: $arch exports hidden symbols: $(head -n 3 <<<"$ours" | tr '\n' ' ')" >&2; status=1; }
  minos="$(llvm-objdump --macho --private-headers "$addon" | awk '$1 == "minos" { print $2; exit }')"
  [ "$minos" = "$min_macos" ] || { echo "check-darwin: FAILED: $arch records minos ${minos:-none}, not $min_macos" >&2; status=1; }
done
[ "$status" -eq 0 ] || { echo "check-darwin: macOS build check FAILED" >&2; exit 1; }
echo "check-darwin: ${#sources[@]} mac sources compile and link for x86_64 and arm64 (macOS $min_macos on), warning-free"
