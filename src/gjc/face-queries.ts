/**
 * The `/gjc` manager's reads beyond the engine's: history and model-role queries, GJC's fidelity,
 * canonical and export reads (the same as the plain ones here: this store never moves held content
 * out), and memory accounting that reports what the manager really holds.
 */
import fs from "node:fs";

import { SessionManagerError } from "../manager/errors.js";
import type { SessionMemoryMode } from "../manager/destination.js";
import { SessionTreeError, type FileEntry } from "../session/index.js";
import { hooks } from "./face-core.js";
import { FaceStaged } from "./face-staged.js";
import { heldEntryBytes, heldImageBytes, memoryStats, NOTHING_EVICTED, type EvictCompactedContentResult, type SessionMemoryStats } from "./memory-stats.js";

const MEMORY_MODES: readonly SessionMemoryMode[] = ["off", "shadow", "enabled", "auto"];

/** Base of the `/gjc` manager holding its queries and memory accounting. */
export abstract class FaceQueries extends FaceStaged {
  #heldBytes: { revision: number; bytes: number } | undefined;

  /** Whether the session holds any entry besides its header. */
  hasHistoryEntries(): boolean {
    return hooks.tree(this.engine).getEntries().length > 0;
  }

  /** The role of the nearest `model_change` on the path to the leaf (`"default"` when it names none); `undefined` when there is none. */
  getLastModelChangeRole(): string | undefined {
    const tree = hooks.tree(this.engine);
    const path = tree.getLeafId() === null ? [] : tree.getPath();
    for (let at = path.length - 1; at >= 0; at -= 1) {
      const entry = path[at] as { type?: string; role?: unknown };
      if (entry.type === "model_change") return typeof entry.role === "string" ? entry.role : "default";
    }
    return undefined;
  }

  /** A copy of entry `id`, or `undefined`. Equal to `getEntry`: this store never moves held content out (see `evictCompactedContent`). */
  getEntryForFidelity(id: string): FileEntry | undefined {
    return this.getEntry(id);
  }

  /** Copies of root..`fromId` (default: the leaf), as `getBranch`; `[]` for an unknown id. */
  getActivePathEntriesCanonical(fromId?: string): FileEntry[] {
    return this.getBranch(fromId);
  }

  /** Calls `visitor` with a copy of every entry, in file order, as `getEntries` gives them. */
  visitEntriesForExport(visitor: (entry: FileEntry) => void): void {
    for (const entry of this.getEntries()) visitor(entry);
  }

  /**
   * GJC moves compacted history into its blob store to bound memory; this store keeps the session it holds, so nothing moves
   * and the counts are zero (the app then owes no rewrite). Payloads GJC itself evicted were put back when the file was
   * loaded. @throws SessionTreeError `unknown_entry` for an unknown first kept entry, or a compaction id that names no
   * compaction (GJC's messages)
   */
  evictCompactedContent(firstKeptEntryId: string, compactionEntryId: string): EvictCompactedContentResult {
    const tree = hooks.tree(this.engine);
    if (tree.getEntry(firstKeptEntryId) === undefined) throw new SessionTreeError("unknown_entry", `Entry ${firstKeptEntryId} not found`);
    if (tree.getEntry(compactionEntryId)?.type !== "compaction") {
      throw new SessionTreeError("unknown_entry", `Compaction entry ${compactionEntryId} not found`);
    }
    return { ...NOTHING_EVICTED };
  }

  /** What the manager holds: no sidecar or cold runtime, and the held entries' size as the resident bytes. */
  getSessionMemoryStats(): SessionMemoryStats {
    const revision = this.revisionSnapshot().entry;
    if (this.#heldBytes?.revision !== revision) this.#heldBytes = { revision, bytes: heldEntryBytes(hooks.tree(this.engine).getEntries()) };
    return memoryStats(this.#heldBytes.bytes);
  }

  /** Records GJC's memory mode setting; the store keeps the parsed session whatever it is. @throws SessionManagerError `invalid_options` for an unknown mode */
  setSessionMemoryMode(mode: SessionMemoryMode): void {
    if (!MEMORY_MODES.includes(mode)) throw new SessionManagerError("invalid_options", `unknown sessionMemoryMode: ${String(mode)}`);
    this.memoryMode = mode;
  }

  /** The memory mode last set (default `"shadow"`). */
  getSessionMemoryMode(): SessionMemoryMode {
    return this.memoryMode;
  }

  /** The decoded bytes of the distinct images the held entries carry. */
  getResidentImageBytes(): number {
    return heldImageBytes(hooks.tree(this.engine).getEntries());
  }

  /** The session file's size now; 0 in memory, before it exists, or when it cannot be stat'ed. */
  getTranscriptFileBytes(): number {
    const file = this.engine.getSessionFile();
    if (!this.engine.isPersisted() || file === undefined) return 0;
    try {
      return fs.lstatSync(file).size;
    } catch {
      return 0;
    }
  }
}
