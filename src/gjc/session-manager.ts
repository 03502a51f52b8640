/**
 * GJC 0.15's `SessionManager` as its app drives it, over the main entry's manager (the engine): one
 * persistence path, one loader. The face holds the engine manager of the session it is on and
 * swaps it at each committed transition; a successor is prepared as a second engine manager the
 * app cannot see until the synchronous commit, so a discard or a killed process leaves no file.
 * The calls whose signatures agree are the engine's own; the rest are GJC's, built on the engine.
 */
import path from "node:path";

import { SessionManager as Engine, synchronousSwitches } from "../manager/session-manager.js";
import type { SessionDestination, SessionDestinationInput, MigrationPolicy, SessionMemoryMode } from "../manager/destination.js";
import type { SessionCloseReport, SessionManagerOptions } from "../manager/options.js";
import type { ListOptions } from "../manager/session-directories.js";
import type { SessionInfo } from "../manager/session-info.js";
import type { SessionStorage } from "../storage/index.js";
import { assertCwdIdentity, claimOwnership, CwdTransitions, isOwner, openDirectoryNoFollow, releaseOwnership, type DirectoryIdentity } from "./cwd-ownership.js";

const hooks = synchronousSwitches();

/** Where a face's sessions go: the destination it was made with, and whether that is a managed scope. */
export interface FaceDestination {
  managed: boolean;
  /** the managed scopes' agent directory, when the caller named one */
  agentDir: string | undefined;
  /** the token to hand back to a factory (made on first use for the managed scope of the cwd) */
  token: SessionDestination | undefined;
}

/** The calls whose GJC and engine signatures agree and that only read: forwarded as they are. */
const READS = [
  "getSessionId", "getSessionFile", "getSessionDir", "getCwd", "getSessionName", "getHeader", "getEntries", "getEntry",
  "getLeafEntry", "getChildren", "getBranch", "getTree", "getLeafId", "getLabel", "getUsageStatistics",
  "buildSessionContext", "getToolSelection", "getLoadReport", "isPersisted", "getDroppedInertPatchCount", "flush",
] as const satisfies readonly (keyof Engine)[];

/** The calls whose signatures agree and that change the session: forwarded, and the first ends a read-only resume. */
const WRITES = [
  "appendMessage", "appendThinkingLevelChange", "appendServiceTierChange", "appendModeChange", "appendModelChange",
  "clearModelRole", "appendConfiguredModelChain", "appendSessionInit", "appendBranchSummary", "appendCustomEntry",
  "appendContextClearEntry", "appendCustomMessageEntry", "appendMCPToolSelection", "appendDiscoveredBuiltinToolSelection",
  "appendTtsrInjection", "appendLabelChange", "applyToolSelection", "setSessionName", "applyEntryMessageUpdates",
  "applyCustomMessageEntryUpdates", "rewriteEntries", "branch", "resetLeaf", "branchWithSummary",
] as const satisfies readonly (keyof Engine)[];

type Forwarded = (typeof READS)[number] | (typeof WRITES)[number];

/** The forwarded calls, with the engine's signatures and documentation. */
export interface SessionManager extends Pick<Engine, Forwarded> {}

/** The engine manager a face is on; for the face's own modules. */
const engines = new WeakMap<SessionManager, () => Engine>();

/** The engine manager `face` is on now. */
export function engineOf(face: SessionManager): Engine {
  return engines.get(face)!();
}

/** See the module comment. */
export class SessionManager {
  #engine: Engine;
  readonly #destination: FaceDestination;
  readonly #transitions = new CwdTransitions();
  /** Opened by a strict open and not changed since: nothing is written (no owed rewrite either) until it is. */
  #readOnlyResume = false;
  #memoryMode: SessionMemoryMode;
  /** Closes of engine managers this face switched away from; `flush()` and `close()` wait for them. */
  readonly #retiring: Promise<unknown>[] = [];

  private constructor(engine: Engine, destination: FaceDestination, memoryMode: SessionMemoryMode = "shadow") {
    this.#engine = engine;
    this.#destination = destination;
    this.#memoryMode = memoryMode;
    engines.set(this, () => this.#engine);
  }

  static {
    for (const [names, writes] of [[READS, false], [WRITES, true]] as const) {
      for (const name of names) {
        const method = Engine.prototype[name] as (...args: unknown[]) => unknown;
        // A computed method name keeps `name` on the function, as stack traces show it.
        const forward = {
          [name](this: SessionManager, ...args: unknown[]) {
            const result = method.apply(this.#engine, args);
            if (writes) this.#readOnlyResume = false;
            return result;
          },
        }[name];
        Object.defineProperty(SessionManager.prototype, name, { value: forward, writable: true, configurable: true });
      }
    }
  }

  // ---- creation and opening -------------------------------------------------------------------

  /** A new session for `cwd` in `destination` (default: the managed scope of `cwd`), written from the first assistant message. */
  static create(cwd: string, destination?: SessionDestinationInput, storage?: SessionStorage, options: SessionManagerOptions = {}): SessionManager {
    const input = explicitInput(destination);
    return new SessionManager(Engine.create(cwd, input, storage, options), destinationOf(input, options.agentDir));
  }

  /** A session that never persists. */
  static inMemory(cwd: string = process.cwd(), storage?: SessionStorage, options: Pick<SessionManagerOptions, "classifyTool" | "now" | "toolNames"> = {}): SessionManager {
    return new SessionManager(Engine.inMemory(cwd, storage, options), { managed: false, agentDir: undefined, token: undefined });
  }

  /** Opens the session file `filePath` (default destination: its directory); see the engine's `open`. */
  static async open(
    filePath: string,
    destination?: SessionDestinationInput,
    storage?: SessionStorage,
    migrationPolicy?: MigrationPolicy,
    sessionMemoryMode?: SessionMemoryMode,
    options: SessionManagerOptions = {},
  ): Promise<SessionManager> {
    const input = explicitInput(destination) ?? (typeof filePath === "string" && filePath.length > 0 ? path.dirname(path.resolve(filePath)) : undefined);
    const engine = await Engine.open(filePath, input, storage, migrationPolicy, sessionMemoryMode, options);
    return new SessionManager(engine, destinationOf(input, options.agentDir), sessionMemoryMode);
  }

  /** Resumes the newest session of `destination` (the engine's order: this terminal's breadcrumb, then the newest one no other writer holds), else a new one. */
  static async continueRecent(
    cwd: string,
    destination?: SessionDestinationInput,
    storage?: SessionStorage,
    migrationPolicy?: MigrationPolicy,
    sessionMemoryMode?: SessionMemoryMode,
    options: SessionManagerOptions = {},
  ): Promise<SessionManager> {
    const input = explicitInput(destination);
    const engine = await Engine.continueRecent(cwd, input, storage, migrationPolicy, sessionMemoryMode, options);
    return new SessionManager(engine, destinationOf(input, options.agentDir), sessionMemoryMode);
  }

  /** A new session for `cwd` copying every line of `sourcePath`, parented to its id, with its title. */
  static async forkFrom(
    sourcePath: string,
    cwd: string,
    destination?: SessionDestinationInput,
    storage?: SessionStorage,
    migrationPolicy?: MigrationPolicy,
    sessionMemoryMode?: SessionMemoryMode,
    options: SessionManagerOptions = {},
  ): Promise<SessionManager> {
    const input = explicitInput(destination);
    const engine = await Engine.forkFrom(sourcePath, cwd, input, storage, migrationPolicy, sessionMemoryMode, options);
    return new SessionManager(engine, destinationOf(input, options.agentDir), sessionMemoryMode);
  }

  /** Wraps an engine manager made by the face's own modules (strict opens, staged sessions). @internal */
  static fromEngine(engine: Engine, destination: FaceDestination, memoryMode?: SessionMemoryMode): SessionManager {
    return new SessionManager(engine, destination, memoryMode);
  }

  // ---- destinations and listings -------------------------------------------------------------

  /** A trusted token for the managed scope of `cwd` (prepared now). */
  static managedDestination(cwd: string, agentDir?: string, storage?: SessionStorage): SessionDestination {
    const token = Engine.managedDestination(cwd, agentDir, storage);
    managedAgentDirs.set(token, agentDir);
    return token;
  }

  /** A trusted token for the session directory `directory`; a relative one is taken against the process cwd now (GJC keeps it as given). */
  static explicitDestination(directory: string): SessionDestination {
    return Engine.explicitDestination(typeof directory === "string" && directory.length > 0 ? path.resolve(directory) : directory);
  }

  /** The managed scope directory of `cwd`, prepared for writing. */
  static getDefaultSessionDir(cwd: string, agentDir?: string, storage?: SessionStorage): string {
    return Engine.getDefaultSessionDir(cwd, agentDir, storage);
  }

  /** The managed scope directory of `cwd`, resolved without creating anything. */
  static getDefaultSessionDirReadOnly(cwd: string, agentDir?: string): string {
    return Engine.getDefaultSessionDirReadOnly(cwd, agentDir);
  }

  /** The sessions of `sessionDir` (default: the managed scope of `cwd`), newest first; never writes. */
  static async list(cwd: string, sessionDir?: string, storage?: SessionStorage, options: ListOptions = {}): Promise<SessionInfo[]> {
    return Engine.list(cwd, sessionDir === undefined ? undefined : path.resolve(sessionDir), storage, options);
  }

  /** The sessions of every managed scope, newest first; never writes. */
  static async listAll(storage?: SessionStorage, managedAgentDir?: string, options: ListOptions = {}): Promise<SessionInfo[]> {
    return Engine.listAll(storage, managedAgentDir, options);
  }

  /** Whether this manager's sessions go to a managed scope (not an explicit directory, not memory). */
  isManagedDestination(): boolean {
    return this.#destination.managed;
  }

  /** This manager's destination, to hand back to `forkFrom` or `open`; `undefined` in memory. */
  getDestinationForFork(): SessionDestination | undefined {
    const destination = this.#destination;
    if (destination.token === undefined && this.#engine.isPersisted()) {
      destination.token = destination.managed
        ? SessionManager.managedDestination(this.#engine.getCwd(), destination.agentDir)
        : SessionManager.explicitDestination(this.#engine.getSessionDir());
    }
    return destination.token;
  }

  /** The destination record, for the face's own modules. @internal */
  get destination(): Readonly<FaceDestination> {
    return this.#destination;
  }

  // ---- process-cwd ownership and cwd transitions ------------------------------------------------

  /** Records `manager` as the owner of the process cwd unless another live manager is. @returns whether `manager` owns it now */
  static claimProcessCwdOwnership(manager: SessionManager): boolean {
    return claimOwnership(manager);
  }

  /** Whether `manager` owns the process cwd. */
  static isProcessCwdOwner(manager: SessionManager): boolean {
    return isOwner(manager);
  }

  /** Gives the process-cwd claim up if `manager` holds it. */
  static releaseProcessCwdOwnership(manager: SessionManager): void {
    releaseOwnership(manager);
  }

  /** @throws GjcFaceError `cwd_identity_changed` unless the process cwd is the directory `expectedIdentity` names */
  static async assertProcessCwdIdentity(expectedIdentity: DirectoryIdentity): Promise<void> {
    await assertCwdIdentity(expectedIdentity);
  }

  /** Opens `dir` read-only as a directory, refusing a final symlink (not on Windows). */
  static async openNoFollowDirectory(dir: string): ReturnType<typeof openDirectoryNoFollow> {
    return openDirectoryNoFollow(dir);
  }

  /** Runs `fn` as this manager's only cwd writer, after earlier transitions and the read leases granted before it. */
  async runExclusiveCwdTransition<T>(fn: () => Promise<T>): Promise<T> {
    return this.#transitions.exclusive(fn);
  }

  /** Runs `fn` under a shared read lease: no cwd transition of this manager commits meanwhile. */
  async runWithCwdReadLease<T>(fn: () => Promise<T>): Promise<T> {
    return this.#transitions.withReadLease(fn);
  }

  /** Settles once every transition queued so far has; never rejects. */
  async joinCwdTransition(): Promise<void> {
    await this.#transitions.join();
  }

  /** How many moves have committed (0 at first). */
  getCwdGeneration(): number {
    return this.#transitions.generation;
  }

  // ---- memory mode ------------------------------------------------------------------------------

  /** The resident-memory mode last set (GJC's settings value); the store keeps the parsed session in memory whatever it is. */
  getSessionMemoryMode(): SessionMemoryMode {
    return this.#memoryMode;
  }

  // ---- the face's state, for its own modules ------------------------------------------------------

  /** Whether the session is in read-only resume (see {@link markReadOnlyResume}). @internal */
  get readOnlyResume(): boolean {
    return this.#readOnlyResume;
  }

  /** Marks a strictly opened, unchanged session: `ensureOnDisk()` and `close()` write nothing until a change. @internal */
  markReadOnlyResume(value: boolean): void {
    this.#readOnlyResume = value;
  }

  /** Puts the face on `engine`, the one it was on finishing in the background. @internal */
  swapEngine(engine: Engine): Engine {
    const previous = this.#engine;
    if (previous === engine) return previous;
    const closing = this.#readOnlyResume ? hooks.closeAsRead(previous) : previous.close();
    this.#engine = engine;
    this.#readOnlyResume = false;
    this.#retiring.push(closing.catch(() => undefined));
    return previous;
  }

  /** Waits for the engine managers this face left. @internal */
  async retired(): Promise<void> {
    await Promise.all(this.#retiring);
  }
}

/** The agent directory each managed token of the face was made under. */
const managedAgentDirs = new WeakMap<SessionDestination, string | undefined>();

/** GJC's `--session-dir` is passed as given: a relative one is taken against the process cwd now. */
function explicitInput(destination: SessionDestinationInput): SessionDestinationInput {
  return typeof destination === "string" && destination.length > 0 ? path.resolve(destination) : destination;
}

function destinationOf(input: SessionDestinationInput, agentDir: string | undefined): FaceDestination {
  if (input === undefined) return { managed: true, agentDir, token: undefined };
  if (typeof input === "string") return { managed: false, agentDir, token: undefined };
  return { managed: input.kind === "managed", agentDir: managedAgentDirs.get(input) ?? agentDir, token: input };
}
