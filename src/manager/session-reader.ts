/** The manager's accessors; every entry handed out is a copy, so a caller cannot change what is persisted. */
import {
  buildContextOnPath,
  copyValue,
  isUnknownEntry,
  MAX_ENTRY_DEPTH,
  SessionFormatError,
  UNKNOWN_ENTRY,
  type FileEntry,
  type SessionContext,
  type SessionHeader,
  type SessionTreeNode,
  type UsageStatistics,
} from "../session/index.js";
import { EntryAppender } from "./appender.js";
import type { SessionLoadReport } from "./load-report.js";
import type { ToolSelectionState } from "./selection.js";
import type { SessionState } from "./session-state.js";
import type { TitleSource } from "./title.js";

/**
 * A deep copy (`undefined` stays `undefined`). A record read past the nesting bound cannot be copied on
 * every runtime: asking for it is a typed error, never the clone's RangeError.
 * @throws SessionFormatError `nesting_too_deep`
 */
function clone<T extends FileEntry | undefined>(value: T): T {
  if (value !== undefined && isUnknownEntry(value) && value[UNKNOWN_ENTRY] === "nesting_too_deep") {
    throw new SessionFormatError("nesting_too_deep", `entry ${String(value.id)} nests deeper than ${MAX_ENTRY_DEPTH} levels: kept in the file, not handed out`);
  }
  return copyValue(value);
}

/** Base of the session manager holding its accessors. */
export abstract class SessionReader extends EntryAppender {
  /** The session the manager is on now. */
  protected abstract current(): SessionState;

  /** The session id. */
  getSessionId(): string {
    return this.current().header.id;
  }

  /** The session's working directory (the header's `cwd`). */
  getCwd(): string {
    return this.current().header.cwd ?? "";
  }

  /** The session title (header patches applied), if one was set. */
  getSessionName(): string | undefined {
    return this.current().header.title;
  }

  /** Who set the title: `"user"`, `"auto"`, or `undefined` when unknown or untitled. */
  get titleSource(): TitleSource | undefined {
    return this.current().header.titleSource;
  }

  /** The effective header (migrated, header patches applied); the live record, not a copy. */
  getHeader(): SessionHeader {
    return this.current().header;
  }

  /** Copies of every non-header entry, in file order. */
  getEntries(): FileEntry[] {
    return this.current().tree.getEntries().map(clone);
  }

  /** A copy of the entry with `id`. */
  getEntry(id: string): FileEntry | undefined {
    return clone(this.current().tree.getEntry(id));
  }

  /** A copy of the current leaf entry; `undefined` after {@link resetLeaf} or in an empty session. */
  getLeafEntry(): FileEntry | undefined {
    return clone(this.current().tree.getLeafEntry());
  }

  /** Copies of the direct children of `parentId`, in file order. */
  getChildren(parentId: string): FileEntry[] {
    const { tree } = this.current();
    // An entry whose id a later one holds is no node of the tree.
    return tree
      .getEntries()
      .filter((entry) => entry.parentId === parentId && typeof entry.id === "string" && tree.getEntry(entry.id) === entry)
      .map(clone);
  }

  /** Copies of the entries from the root to `fromId` (default: the leaf); an unknown id or `null` leaf gives `[]`. */
  getBranch(fromId?: string): FileEntry[] {
    const { tree } = this.current();
    const leaf = fromId ?? tree.getLeafId();
    if (leaf === null || tree.getEntry(leaf) === undefined) return [];
    return tree.getPath(leaf).map(clone);
  }

  /** The session tree, children in file order, each node with its resolved label and a copy of its entry. */
  getTree(): SessionTreeNode[] {
    const roots = this.current().tree.getTree();
    // The nodes are built per call; their entries are the session's own until copied. No recursion: a linear session is as deep as it is long.
    const pending = [...roots];
    for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
      node.entry = clone(node.entry);
      for (const child of node.children) pending.push(child);
    }
    return roots;
  }

  /** The current leaf id; `null` after {@link resetLeaf}. */
  getLeafId(): string | null {
    return this.current().tree.getLeafId();
  }

  /** The resolved label of an entry. */
  getLabel(id: string): string | undefined {
    return this.current().tree.getLabel(id);
  }

  /** Token and cost totals over every entry, all branches (assistant `usage`, `task` results' `details.usage`; bad counts left out); a copy. */
  getUsageStatistics(): UsageStatistics {
    return this.current().usage.totals();
  }

  /** What the model sees at the current leaf; reads only the entries it is made of. */
  buildSessionContext(): SessionContext {
    return buildContextOnPath(this.current().tree.pathView());
  }

  /** The discovery selection state at the current leaf, rebuilt from entries (nothing appended). */
  getToolSelection(): ToolSelectionState {
    const context = this.buildSessionContext();
    return {
      mcp: context.hasPersistedMCPToolSelection ? context.selectedMCPToolNames : undefined,
      discoveredBuiltin: context.selectedDiscoveredBuiltinToolNames,
    };
  }

  /** What opening the file found (moved-aside file, invalid lines, migration, unresolved blobs). */
  getLoadReport(): SessionLoadReport {
    return this.current().report;
  }
}
