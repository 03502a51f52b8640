/**
 * The directory names the legacy layout may have used for a workspace. Its encoding maps `/`, `\` and `:` to `-`,
 * so workspaces can share a name (`/a/b-c`, `/a-b/c`): a name says where to look, a file's header whose it is.
 */
import os from "node:os";

import { relativeBelow } from "./agent-root.js";
import type { ManagedScope } from "./resolve.js";

/** At most this many extra `-`-prefixed directories are examined per scan. */
export const MAX_DISCOVERED_LEGACY_DIRECTORIES = 256;

/** Name of the internal protocol directory inside a scope (never a legacy directory). */
export const INTERNAL_DIRECTORY = ".gjc-managed-session-internal";

function encode(text: string): string {
  return text.replace(/[/\\:]/g, "-");
}

/** Places the legacy layout looked up a workspace relative to. */
export interface LegacyAnchors {
  /** Home directory; default `os.homedir()`. */
  readonly home?: string;
  /** Temp directory; default `os.tmpdir()`. */
  readonly tmp?: string;
  /** Canonical home (realpath), when known; tried before the lexical one. */
  readonly canonicalHome?: string;
  /** Canonical temp directory, when known. */
  readonly canonicalTmp?: string;
}

/** Every legacy directory name of the scope's cwd spellings, once each: absolute encodings, then home-, then temp-relative. */
export function legacyDirectoryNames(scope: Pick<ManagedScope, "canonicalCwd" | "legacyLexicalCwd">, anchors: LegacyAnchors = {}): string[] {
  const names = new Set<string>();
  const cwds = [scope.canonicalCwd, scope.legacyLexicalCwd];
  for (const cwd of cwds) names.add(`--${encode(cwd.replace(/^[/\\]/, ""))}--`);
  forEachRelative(cwds, [anchors.canonicalHome, anchors.home ?? os.homedir()], (rel, base) => {
    const r = encode(rel);
    names.add(rel === "" ? "-" : `-${r}`);
    names.add(rel === "" ? "----" : `---${r}--`);
    names.add(rel === "" ? `--${encode(base)}--` : `--${encode(base)}-${r}--`);
  });
  forEachRelative(cwds, [anchors.canonicalTmp, anchors.tmp ?? os.tmpdir()], (rel) => {
    const r = encode(rel);
    names.add(rel === "" ? "-tmp" : `-tmp-${r}`);
    names.add(rel === "" ? "---tmp--" : `---tmp-${r}--`);
  });
  return [...names];
}

/** For each cwd, `add` with its path relative to the first base (canonical first) it lies under. */
function forEachRelative(cwds: readonly string[], bases: readonly (string | undefined)[], add: (rel: string, base: string) => void): void {
  const usable = bases.filter((b): b is string => typeof b === "string" && b.length > 0);
  for (const cwd of cwds) {
    for (const base of usable) {
      const rel = relativeBelow(base, cwd);
      if (rel === undefined) continue;
      add(rel, base);
      break;
    }
  }
}

/** The extra directories a scan looks at: `-`-prefixed names in `entries` but not `known` (nor v2 or internal), sorted, at most {@link MAX_DISCOVERED_LEGACY_DIRECTORIES}. */
export function discoveredLegacyDirectories(entries: readonly string[], known: readonly string[]): string[] {
  const skip = new Set(known);
  return entries
    .filter((name) => name.startsWith("-") && !name.startsWith("v2-") && name !== INTERNAL_DIRECTORY && !skip.has(name))
    .sort()
    .slice(0, MAX_DISCOVERED_LEGACY_DIRECTORIES);
}
