#!/bin/sh
# The installed package's command line, `gjc-session demo` then `gjc-session audit` over the agent
# directory it filled, in the consumer project it is started in, with whichever `node` PATH gives:
# sessions, branches, blobs, history, a legacy migration and the audit, beyond what the smoke
# script covers. POSIX sh, like scripts/check-rebuild.sh beside which it runs.
# Prints "check cli demo: passed", or the output and "check cli demo: FAILED: <why>"; exits
# non-zero on failure.
cli=node_modules/gjc-session-store/dist/cli/main.js
dir="$(mktemp -d "${TMPDIR:-/tmp}/gjc-demo.XXXXXX")" || { echo "check cli demo: FAILED: no temp directory"; exit 1; }
log="$dir.log"
if ! node "$cli" --agent-dir "$dir/agent" demo >"$log" 2>&1; then
  why="the demo failed"
elif ! grep -q '^demo finished: everything checked out$' "$log"; then
  why="the demo did not finish"
elif ! node "$cli" --agent-dir "$dir/agent" audit >>"$log" 2>&1; then
  why="the audit of the demo's agent directory did not come out clean"
else
  rm -rf "$dir" "$log"
  echo "check cli demo: passed"
  exit 0
fi
cat "$log"
rm -rf "$dir" "$log"
echo "check cli demo: FAILED: $why"
exit 1
