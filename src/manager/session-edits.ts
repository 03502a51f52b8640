/**
 * The manager's edits of the current session: tree moves, labels, tool selections, the title,
 * payload rewrites. Each change becomes one line handed to `persistLine`; the subclass owns
 * the session's life.
 */
import type { AppendedEntry, AppendOptions, BranchSummaryOptions, EntryDraft, FileEntry } from "../session/index.js";
import { SessionDirectories } from "./session-directories.js";
import { isAssistantMessage, type ManagedLine } from "./lines.js";
import { replacePayloads } from "./session-state.js";
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
   * `branch_summary` of the path left. @returns the new entry's id @throws SessionTreeError `unknown_entry`
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

  /** Appends a `label` entry for `targetId` (`undefined` or `""` clears). @returns the new entry's id @throws SessionTreeError `unknown_entry` */
  appendLabelChange(targetId: string, label: string | undefined): string {
    this.checkWritable();
    const entry = this.current().tree.appendLabel(targetId, label);
    this.#recordEntry(entry);
    return entry.id;
  }

  /** Appends a selection change: the MCP entry, then the built-in one, sharing a `mutationCorrelationId`. @returns the new ids */
  applyToolSelection(change: ToolSelectionChange): string[] {
    this.checkWritable();
    return selectionDrafts(change).map((draft) => this.appendDraft(draft).id);
  }

  /**
   * Sets the title (sanitized, see `sanitizeSessionTitle`) through an appended `header_patch`.
   * @returns false when nothing printable is left, or an automatic title would replace a user's
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

  /**
   * Replaces by id the `message` of `message` entries (pruned tool output, say), keeping the
   * leaf; the next persisting step rewrites the file. @throws SessionManagerError `invalid_rewrite`
   */
  applyEntryMessageUpdates(entries: readonly FileEntry[]): void {
    this.checkWritable();
    replacePayloads(this.current(), entries, "message", () => this.now());
  }

  /** {@link applyEntryMessageUpdates} for `custom_message` `content`, `display` and `details`. @throws SessionManagerError `invalid_rewrite` */
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
