/**
 * Legacy-layout sessions not yet migrated. A legacy session file (`sessions/<name>/*.jsonl`
 * where `<name>` is not a `v2-` scope) counts as migrated when some scope holds a committed
 * receipt for exactly that file version (same device, inode and size), and as settled when a
 * tombstone retired it. Everything else is reported as `legacy_unmigrated`.
 */
import type { SecureFile } from "../fs/index.js";
import { RECEIPTS_DIRECTORY, TOMBSTONES_DIRECTORY } from "../migration/index.js";
import { INTERNAL_DIRECTORY, isScopeDirectoryName } from "../scope/index.js";
import type { FindingCollector } from "./collector.js";

// Records are small JSON documents; a larger file is not one and is ignored.
const RECORD_MAX_BYTES = 1024 * 1024;

type Version = { dev: string; ino: string; size: number };
const key = (v: Version): string => `${v.dev}:${v.ino}:${v.size}`;

/** Collects legacy session files and protocol records during the walk. */
export class LegacyTracker {
  readonly #legacy: { rel: string; version: Version }[] = [];
  readonly #settled = new Set<string>();

  /** True for a directory directly under `sessions/` that holds legacy-layout sessions. */
  static isLegacyDirectory(name: string): boolean {
    return !name.startsWith(".") && !isScopeDirectoryName(name);
  }

  /** Looks at a file that passed the owner-only open; `segments` is its path below the agent dir. */
  file(file: SecureFile, rel: string, segments: readonly string[]): void {
    const [top, dir, third, fourth] = segments;
    if (top !== "sessions" || dir === undefined) return;
    if (segments.length === 3 && LegacyTracker.isLegacyDirectory(dir) && rel.endsWith(".jsonl")) {
      const st = file.stat();
      this.#legacy.push({ rel, version: { dev: st.dev, ino: st.ino, size: st.size } });
    } else if (segments.length === 5 && isScopeDirectoryName(dir) && third === INTERNAL_DIRECTORY) {
      if (fourth === RECEIPTS_DIRECTORY) this.#receipt(file);
      else if (fourth === TOMBSTONES_DIRECTORY) this.#tombstone(file);
    }
  }

  /** Reports every legacy session no receipt or tombstone accounts for. */
  finish(collector: FindingCollector): void {
    for (const { rel, version } of this.#legacy) {
      if (this.#settled.has(key(version))) continue;
      collector.add(rel, "file", "legacy_unmigrated", "a legacy-layout session that has not been migrated into a v2 scope");
    }
  }

  #receipt(file: SecureFile): void {
    const record = readRecord(file);
    const source = field(record, "source");
    if (field(record, "state") !== "committed") return;
    const identity = field(source, "identity");
    if (isVersion(identity)) this.#settled.add(key(identity));
  }

  #tombstone(file: SecureFile): void {
    const targets = field(readRecord(file), "targets");
    if (!Array.isArray(targets)) return;
    for (const target of targets) {
      const identity = field(target, "identity");
      if (isVersion(identity)) this.#settled.add(key(identity));
    }
  }
}

function readRecord(file: SecureFile): unknown {
  if (file.stat().size > RECORD_MAX_BYTES) return undefined;
  try {
    return JSON.parse(file.readAll({ maxBytes: RECORD_MAX_BYTES }).toString("utf8"));
  } catch {
    return undefined; // not a record: it settles nothing
  }
}

function field(value: unknown, name: string): unknown {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}

function isVersion(value: unknown): value is Version {
  return typeof field(value, "dev") === "string" && typeof field(value, "ino") === "string" && typeof field(value, "size") === "number";
}
