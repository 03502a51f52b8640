/**
 * The editing half of the session manager: tree moves, labels, tool selections, the title and
 * in-memory payload rewrites. Every change becomes one line of the current session's state,
 * handed to `persistLine`; the subclass owns the session's life (which session is current,
 * whether it persists, when it closes).
 */
import type {
  AppendedEntry,
  AppendOptions,
  BranchSummaryOptions,
  EntryDraft,
  FileEntry,
} from "../session/index.js";
import type { ManagedLine } from "./lines.js";
import { SessionDirectories } from "./session-directories.js";
import { isAssistantMessage, replacePayloads } from "./session-state.js";
import { selectionDrafts, type ToolSelectionChange } from "./selection.js";
import type { PersistableLine } from "./state-writes.js";
import { sanitizeSessionTitle, titleMayReplace, type TitleSource } from "./title.js";

/** Base of the session manager holding its changes to the current session. */
export abstract class SessionEdits extends SessionDirectories {
  /** @throws SessionManagerError `closed` */
  protected abstract checkOpen(): void;
  /** @throws SessionManagerError `closed`, `read_only`; a latched persistence failure */
  protected abstract checkWritable(): void;
  /** Persists a line just added to the current session's memory, or defers it. */
  protected abstract persistLine(line: PersistableLine): void;
  /** The manager's clock (`options.now`). */
  protected abstract now(): Date;

  // ---- tree moves ------------------------------------------------------------------------

  /** Moves the leaf to `entryId`; nothing is written. @throws SessionTreeError `unknown_entry` */
  branch(entryId: string): void {
    this.checkOpen();
    this.current().tree.branch(entryId);
  }

  /** Clears the leaf: the next append starts a new root. */
  resetLeaf(): void {
    this.checkOpen();
    this.current().tree.resetLeaf();
  }

  /**
   * Moves the leaf to `branchFromId` (`null`: before the first entry) and appends a
   * `branch_summary` of the path that was left.
   * @returns the new entry's id
   * @throws SessionTreeError `unknown_entry`
   */
  branchWithSummary(branchFromId: string | null, summary: string, details?: unknown, fromExtension?: boolean): string {
    return this.branchWithOptions(branchFromId, summary, {
      ...(details === undefined ? {} : { details }),
      ...(fromExtension === undefined ? {} : { fromExtension }),
    });
  }

  /** {@link branchWithSummary} with every option of the tree's. */
  protected branchWithOptions(branchFromId: string | null, summary: string, options: BranchSummaryOptions): string {
    this.checkWritable();
    const entry = this.current().tree.branchWithSummary(branchFromId, summary, options);
    this.#recordEntry(entry);
    return entry.id;
  }

  /**
   * Appends a `label` entry for `targetId` (`undefined` or `""` clears).
   * @returns the new entry's id
   * @throws SessionTreeError `unknown_entry`
   */
  appendLabelChange(targetId: string, label: string | undefined): string {
    this.checkWritable();
    const entry = this.current().tree.appendLabel(targetId, label);
    this.#recordEntry(entry);
    return entry.id;
  }

  /**
   * A combined selection activation: the MCP entry first, the discovered built-in entry
   * second, sharing one `mutationCorrelationId` when both are present.
   * @returns the new entries' ids
   */
  applyToolSelection(change: ToolSelectionChange): string[] {
    this.checkWritable();
    return selectionDrafts(change).map((draft) => this.appendDraft(draft).id);
  }

  // ---- header ----------------------------------------------------------------------------

  /**
   * Sets the session title through an appended `header_patch`. The name is sanitized
   * (control characters to spaces, whitespace collapsed, trimmed, at most 1000 characters).
   * @returns false when nothing printable is left, or when an automatic title would replace
   *   a user's
   */
  async setSessionName(name: string, source: TitleSource = "auto"): Promise<boolean> {
    this.checkWritable();
    const title = sanitizeSessionTitle(name);
    const state = this.current();
    if (title.length === 0 || !titleMayReplace(state.header.titleSource, source)) return false;
    state.header = { ...state.header, title, titleSource: source };
    const line: Extract<ManagedLine, { kind: "patch" }> = {
      kind: "patch",
      record: { type: "header_patch", patch: { title, titleSource: source } },
      state: "applied",
    };
    state.lines.push(line);
    this.persistLine(line);
    return true;
  }

  // ---- rewrites in memory ----

  /**
   * Replaces the `message` payload of existing `message` entries, by id (for example pruned
   * tool output). The file is rewritten by the next persisting step ({@link rewriteEntries},
   * an append, or `close`). Invalid lines and unknown records survive (see `lines.ts`); the
   * leaf stays where it was.
   * @throws SessionManagerError `invalid_rewrite` for an update that is not a `message` entry
   *   of this session
   */
  applyEntryMessageUpdates(entries: readonly FileEntry[]): void {
    this.checkWritable();
    replacePayloads(this.current(), entries, "message", () => this.now());
  }

  /**
   * {@link applyEntryMessageUpdates} for `custom_message` entries: their `content`, `display`
   * and `details` are replaced by id.
   * @throws SessionManagerError `invalid_rewrite` for an update that is not a
   *   `custom_message` entry of this session, or with malformed content
   */
  applyCustomMessageEntryUpdates(entries: readonly FileEntry[]): void {
    this.checkWritable();
    replacePayloads(this.current(), entries, "custom_message", () => this.now());
  }

  /** {@inheritDoc EntryAppender.appendDraft} */
  protected appendDraft<D extends EntryDraft>(draft: D, options?: AppendOptions): AppendedEntry<D> {
    this.checkWritable();
    const entry = this.current().tree.append(draft, options);
    this.#recordEntry(entry);
    return entry;
  }

  #recordEntry(entry: FileEntry): void {
    const line: Extract<ManagedLine, { kind: "entry" }> = { kind: "entry", entry };
    const state = this.current();
    state.lines.push(line);
    state.usage.add(entry);
    if (!state.hasAssistant && isAssistantMessage(entry)) state.hasAssistant = true;
    this.persistLine(line);
  }
}
