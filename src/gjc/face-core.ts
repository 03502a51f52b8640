/**
 * The state every `/gjc` manager holds: the engine manager of the session it is on (swapped at a
 * committed transition), where its sessions go, its cwd transitions, and whether it is in a
 * read-only resume. The calls whose GJC and engine signatures agree are the engine's own.
 */
import { SessionManager as Engine, synchronousSwitches } from "../manager/session-manager.js";
import type { SessionDestination, SessionDestinationInput, SessionMemoryMode } from "../manager/destination.js";
import { canonicalizeTrustedPath } from "../scope/index.js";
import { copyValue, type AgentMessage, type FileEntry, type SessionContext } from "../session/index.js";
import type { SessionStorage } from "../storage/index.js";
import { linkContextIdentity } from "./context.js";
import { CwdTransitions } from "./cwd-ownership.js";
import { associateSessionMessageEntryId, getSessionMessageEntryId } from "./messages.js";
import { carriesReplayMetadata, dropReplayMetadata } from "./replay-metadata.js";
import { asPersisted, persistedDetails } from "./entry-payloads.js";
import { SessionAppendPersistenceError, type SessionAppendPersistenceFailurePhase } from "./errors.js";
import { SessionManagerError } from "../manager/errors.js";

/** The engine's internal hooks, for the face's modules. */
export const hooks = synchronousSwitches();

/** Where a face's sessions go: the destination it was made with, and whether that is a managed scope. */
export interface FaceDestination {
  managed: boolean;
  /** the managed scopes' agent directory, when the caller named one */
  agentDir: string | undefined;
  /** the token to hand back to a factory (made on first use for the managed scope of the cwd) */
  token: SessionDestination | undefined;
  /** the storage the caller gave, if any: a session kept elsewhere than in files is checked through it, not the filesystem */
  storage?: SessionStorage | undefined;
}

/** The agent directory each managed token of the face was made under. */
const managedAgentDirs = new WeakMap<SessionDestination, string | undefined>();

/** Records the agent directory a managed token was made under, for the factories it is handed to later. */
export function rememberManagedAgentDir(token: SessionDestination, agentDir: string | undefined): void {
  managedAgentDirs.set(token, agentDir);
}

/** The agent directory a managed token was made under, when the face made it. */
export function managedAgentDirOf(token: SessionDestination): string | undefined {
  return managedAgentDirs.get(token);
}

/**
 * GJC's `--session-dir` as the engine gets it: a relative one taken against the process cwd now, and links among its
 * existing ancestors resolved once, as GJC does, so the manager reports (and later reaches) the real directory. A link at
 * the directory itself is kept, for the storage to refuse.
 */
export function explicitInput(destination: SessionDestinationInput): SessionDestinationInput {
  return typeof destination === "string" && destination.length > 0 ? canonicalizeTrustedPath(destination) : destination;
}

/** The face's destination for a factory's `input`: managed (the cwd's scope, or a managed token) or an explicit directory. */
export function destinationOf(input: SessionDestinationInput, agentDir: string | undefined, storage: SessionStorage | undefined): FaceDestination {
  if (input === undefined) return { managed: true, agentDir, token: undefined, storage };
  if (typeof input === "string") return { managed: false, agentDir, token: undefined, storage };
  return { managed: input.kind === "managed", agentDir: managedAgentDirs.get(input) ?? agentDir, token: input, storage };
}

/** The calls whose GJC and engine signatures agree and that only read: forwarded as they are. */
const READS = [
  "getSessionId",
  "getSessionFile",
  "getSessionDir",
  "getCwd",
  "getSessionName",
  "getHeader",
  "getChildren",
  "getTree",
  "getLeafId",
  "getLabel",
  "getUsageStatistics",
  "getToolSelection",
  "getLoadReport",
  "isPersisted",
  "getDroppedInertPatchCount",
] as const satisfies readonly (keyof Engine)[];

/** The calls whose signatures agree and that change the session: forwarded, and the first ends a read-only resume. */
const WRITES = [
  "appendThinkingLevelChange",
  "appendServiceTierChange",
  "appendModelChange",
  "clearModelRole",
  "appendConfiguredModelChain",
  "appendSessionInit",
  "appendCompaction",
  "appendBranchSummary",
  "appendContextClearEntry",
  "appendMCPToolSelection",
  "appendDiscoveredBuiltinToolSelection",
  "appendTtsrInjection",
  "appendLabelChange",
  "applyToolSelection",
  "setSessionName",
  "applyEntryMessageUpdates",
  "applyCustomMessageEntryUpdates",
  "rewriteEntries",
  "branch",
  "resetLeaf",
  "branchWithSummary",
  "newSession",
  "createBranchedSession",
] as const satisfies readonly (keyof Engine)[];

type Forwarded = (typeof READS)[number] | (typeof WRITES)[number];

/** A latched persistence failure as GJC's append error; anything else is rethrown as it is. */
function appendFailure(phase: SessionAppendPersistenceFailurePhase, entryId: string | undefined, error: unknown): unknown {
  const persistence = error instanceof SessionManagerError && error.code === "persistence_failed";
  return persistence ? new SessionAppendPersistenceError(phase, entryId, error) : error;
}

/**
 * `entries` (copies the caller owns), each `message` entry's message linked to its id (copies are new objects, so each copy
 * is linked) and, unless `live` holds its id, without OpenAI Responses replay metadata (see `replay-metadata.ts`).
 */
function linked(entries: FileEntry[], live: ReadonlySet<string>): FileEntry[] {
  for (const entry of entries) {
    const record = entry as { type?: unknown; id?: unknown; message?: unknown };
    if (record.type === "message" && typeof record.id === "string" && typeof record.message === "object" && record.message !== null) {
      associateSessionMessageEntryId(record.message, record.id);
      if (!live.has(record.id)) dropReplayMetadata(record.message);
    }
  }
  return entries;
}

/** GJC's cache keys: counters that only grow, each when its part of the session changes; all of them on a switch. */
export interface RevisionSnapshot {
  /** an entry added or replaced */
  entry: number;
  /** the leaf moved */
  leaf: number;
  /** the title or the cwd changed */
  headerExport: number;
  /** a label changed */
  label: number;
  /** a payload was updated in place */
  replayMetadata: number;
}

type Revision = keyof RevisionSnapshot;

const APPEND: readonly Revision[] = ["entry", "leaf"];
const ALL: readonly Revision[] = ["entry", "leaf", "headerExport", "label", "replayMetadata"];

/** Which revisions each forwarded change moves (an append moves the leaf too). */
const REVISIONS: Partial<Record<(typeof WRITES)[number], readonly Revision[]>> = {
  appendLabelChange: ["entry", "leaf", "label"],
  setSessionName: ["headerExport"],
  applyEntryMessageUpdates: ["entry", "replayMetadata"],
  applyCustomMessageEntryUpdates: ["entry", "replayMetadata"],
  rewriteEntries: [],
  branch: ["leaf"],
  resetLeaf: ["leaf"],
  newSession: ALL,
  createBranchedSession: ALL,
};

/** The forwarded calls, with the engine's signatures and documentation. */
export interface FaceCore extends Pick<Engine, Forwarded> {}

/** See the module comment. */
export abstract class FaceCore {
  #engine: Engine;
  readonly #destination: FaceDestination;
  readonly #transitions = new CwdTransitions();
  /** Opened by a strict open and not changed since: nothing is written (no owed rewrite either) until it is. */
  #readOnlyResume = false;
  #memoryMode: SessionMemoryMode;
  /** Closes of engine managers this face switched away from; `flush()` and `close()` wait for them. */
  readonly #retiring: Promise<unknown>[] = [];
  readonly #revisions: RevisionSnapshot = { entry: 0, leaf: 0, headerExport: 0, label: 0, replayMetadata: 0 };
  /** Ids of the assistant messages with replay metadata this face appended: a live connection's, kept as they are. */
  readonly #liveReplay = new Set<string>();

  protected constructor(engine: Engine, destination: FaceDestination, memoryMode: SessionMemoryMode = "shadow") {
    this.#engine = engine;
    this.#destination = destination;
    this.#memoryMode = memoryMode;
    // GJC's appends are on disk when they return; so is the first write here.
    hooks.adopt(engine);
  }

  static {
    for (const [names, writes] of [
      [READS, false],
      [WRITES, true],
    ] as const) {
      for (const name of names) {
        const method = Engine.prototype[name] as (...args: unknown[]) => unknown;
        // A computed method name keeps `name` on the function, as stack traces show it.
        const forward = {
          [name](this: FaceCore, ...args: unknown[]) {
            const revisions = REVISIONS[name as (typeof WRITES)[number]] ?? APPEND;
            if (name.startsWith("append")) return this.#persistedAppend(() => method.apply(this.#engine, args) as string, revisions);
            const result = method.apply(this.#engine, args);
            if (writes) this.#changed(revisions);
            return result;
          },
        }[name];
        Object.defineProperty(FaceCore.prototype, name, { value: forward, writable: true, configurable: true });
      }
    }
  }

  /** Appends a `message` entry holding `message`, which is linked to the new entry (GJC's message identity). @returns the new entry's id */
  appendMessage(message: AgentMessage): string {
    return this.#persistedAppend(() => {
      const id = this.#engine.appendMessage(message);
      associateSessionMessageEntryId(message, id);
      if (carriesReplayMetadata(message)) this.#liveReplay.add(id);
      return id;
    });
  }

  /** Appends a `mode_change` (for example `"plan"`) with optional data, kept in the shape its line has. @returns the new entry's id */
  appendModeChange(mode: string, data?: Record<string, unknown>): string {
    return this.#persistedAppend(() => this.#engine.appendModeChange(mode, asPersisted(data)));
  }

  /** Appends a `custom` entry (extension state, never sent to the model), kept in the shape its line has. @returns the new entry's id */
  appendCustomEntry(customType: string, data?: unknown): string {
    return this.#persistedAppend(() => this.#engine.appendCustomEntry(customType, asPersisted(data)));
  }

  /**
   * Appends a `custom_message` (extension text that reaches the model); `details` lose GJC's in-flight bookkeeping fields
   * and are kept in the shape their line has (see `entry-payloads.ts`). @returns the new entry's id
   */
  appendCustomMessageEntry<T = unknown>(
    customType: string,
    content: Parameters<Engine["appendCustomMessageEntry"]>[1],
    display: boolean,
    details?: T,
    attribution?: Parameters<Engine["appendCustomMessageEntry"]>[4],
    observationId?: string,
  ): string {
    return this.#persistedAppend(() =>
      this.#engine.appendCustomMessageEntry(customType, content, display, persistedDetails(details), attribution, observationId),
    );
  }

  /**
   * Runs one append and reports its persistence as GJC does: a failure latched before it refuses it (`prior_failure`, no
   * entry made); a failure of its own line is thrown with the new entry's id (`current_append`).
   * @throws SessionAppendPersistenceError
   */
  #persistedAppend(append: () => string, revisions: readonly Revision[] = APPEND): string {
    try {
      hooks.checkPersisted(this.#engine);
    } catch (error) {
      throw appendFailure("prior_failure", undefined, error);
    }
    const id = append();
    // The entry is in the session now, written or not: caches keyed by the revisions must see it either way.
    this.#changed(revisions);
    try {
      hooks.checkPersisted(this.#engine);
    } catch (error) {
      throw appendFailure("current_append", id, error);
    }
    return id;
  }

  /** A change of the session: a read-only resume ends, and `revisions` move. */
  #changed(revisions: readonly Revision[]): void {
    this.#readOnlyResume = false;
    this.bumpRevisions(revisions);
  }

  /**
   * The context at the leaf, as the engine's, its messages linked to their entries (observation ids namespaced by the session
   * id). A deep copy on every call: GJC's app edits the messages it sends, and the engine's context shares the live
   * entries. Only the strings are shared, which no caller can edit.
   */
  buildSessionContext(): SessionContext {
    const context = copyValue(this.#engine.buildSessionContext());
    const tree = hooks.tree(this.#engine);
    linkContextIdentity(context, tree.pathView(), this.#engine.getSessionId());
    for (const message of context.messages) {
      if (!carriesReplayMetadata(message)) continue;
      const id = getSessionMessageEntryId(message);
      if (id === undefined || !this.#liveReplay.has(id)) dropReplayMetadata(message);
    }
    return context;
  }

  /** Copies of every entry, in file order, each copied message linked to its entry. */
  getEntries(): FileEntry[] {
    return linked(this.#engine.getEntries(), this.#liveReplay);
  }

  /** A copy of entry `id`, its message linked to it; `undefined` when unknown. */
  getEntry(id: string): FileEntry | undefined {
    const entry = this.#engine.getEntry(id);
    return entry === undefined ? undefined : linked([entry], this.#liveReplay)[0];
  }

  /** The leaf (a copy), its message linked to it. */
  getLeafEntry(): FileEntry | undefined {
    const entry = this.#engine.getLeafEntry();
    return entry === undefined ? undefined : linked([entry], this.#liveReplay)[0];
  }

  /** Copies of root..`fromId` (default: the leaf), each copied message linked to its entry; `[]` for an unknown id. */
  getBranch(fromId?: string): FileEntry[] {
    return linked(this.#engine.getBranch(fromId), this.#liveReplay);
  }

  /** Who set the title (`undefined` when untitled). */
  get titleSource(): Engine["titleSource"] {
    return this.#engine.titleSource;
  }

  /** The five revision counters now (a copy). */
  revisionSnapshot(): RevisionSnapshot {
    return { ...this.#revisions };
  }

  /** Moves the given revisions (default: all of them, as a switch does). */
  protected bumpRevisions(which: readonly Revision[] = ALL): void {
    for (const revision of which) this.#revisions[revision] += 1;
  }

  /** The engine manager this face is on now. */
  protected get engine(): Engine {
    return this.#engine;
  }

  /** Where this face's sessions go. */
  protected get destination(): FaceDestination {
    return this.#destination;
  }

  /** This face's cwd transitions and leases. */
  protected get transitions(): CwdTransitions {
    return this.#transitions;
  }

  /** The resident-memory mode last set (GJC's settings value). */
  protected get memoryMode(): SessionMemoryMode {
    return this.#memoryMode;
  }

  protected set memoryMode(mode: SessionMemoryMode) {
    this.#memoryMode = mode;
  }

  /** Whether the session is in read-only resume: opened strictly and unchanged since. */
  protected get readOnlyResume(): boolean {
    return this.#readOnlyResume;
  }

  protected set readOnlyResume(value: boolean) {
    this.#readOnlyResume = value;
  }

  /**
   * Puts the face on `engine`; the one it was on finishes in the background (a session in memory is
   * left open: it holds nothing, and a rollback may come back to it). @returns the previous one
   */
  protected swapEngine(engine: Engine): Engine {
    const previous = this.#engine;
    if (previous === engine) return previous;
    if (previous.isPersisted()) {
      const closing = this.#readOnlyResume ? hooks.closeAsRead(previous) : previous.close();
      this.#retiring.push(closing.catch(() => undefined));
    }
    this.#engine = engine;
    hooks.adopt(engine);
    this.#readOnlyResume = false;
    this.bumpRevisions();
    return previous;
  }

  /** Waits for the engine managers this face left. */
  protected async retired(): Promise<void> {
    await Promise.all(this.#retiring);
  }
}
