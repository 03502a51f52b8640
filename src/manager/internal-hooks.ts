/**
 * The internal hooks of the session manager: for a peer-shaped facade (`gjc-session-store/pi`)
 * their shape only, `synchronousSwitches()` in `session-manager.ts` handing out the object
 * (the manager class is a type parameter, so this module does not import the module that
 * implements it); and the one switch a benchmark flips to measure a mechanism against the
 * same path without it. Nothing here is exported from a package entry.
 */
import type {
  AppendedEntry,
  AppendOptions,
  BranchSummaryOptions,
  EntryDraft,
  SessionTree,
} from "../session/index.js";
import type { SessionStorage } from "../storage/index.js";
import type { SessionDestinationInput } from "./destination.js";
import type { NewSessionOptions, OpenSessionOptions, SessionManagerOptions } from "./options.js";

/**
 * Synchronous forms of `open`, `newSession` and `setSessionFile` on the same load path and
 * state builders, and the few reach-ins a peer-shaped facade needs, for a facade whose callers
 * do not await (pi's runtime uses these results at once). Internal: not exported from the
 * main entry.
 */
export interface SynchronousSwitches<SessionManager> {
  open(filePath: string, destination?: SessionDestinationInput, storage?: SessionStorage, options?: OpenSessionOptions): SessionManager;
  newSession(manager: SessionManager, options?: NewSessionOptions): string | undefined;
  setSessionFile(manager: SessionManager, sessionFile: string): void;
  /** Appends `draft` (an entry in a peer's shape) through the manager's one append path. */
  append<D extends EntryDraft>(manager: SessionManager, draft: D, options?: AppendOptions): AppendedEntry<D>;
  /** The live tree of the session the manager is on now: for reading, never for changing. */
  tree(manager: SessionManager): SessionTree;
  /** See `StateWriter.enableWriteThrough`: first writes done before the append returns. */
  writeThrough(manager: SessionManager): void;
  /** `branchWithSummary` with every option of the tree's (pi's `fromHook` among them). */
  branchWithSummary(manager: SessionManager, branchFromId: string | null, summary: string, options: BranchSummaryOptions): string;
  /**
   * `forkFrom`, synchronously, with the peer's choices: the header's `parentSession`
   * (default the source's id) and whether the copy is written at once, before returning,
   * even without an assistant message (with write-through on for the manager's later files).
   */
  forkFrom(sourcePath: string, cwd: string, destination: SessionDestinationInput, options: SessionManagerOptions, fork: ForkChoices): SessionManager;
  /**
   * Closes the manager before returning, releasing its current file's writer lock, so that
   * another manager of this process can take the file over. Only when nothing is queued (every
   * line already reached the kernel); later calls other than reads throw `closed`.
   * @returns false, changing nothing, while queued work is still running
   */
  releaseNow(manager: SessionManager): boolean;
  /**
   * Writes a fresh session's header now when the manager replaced a file that existed (blank,
   * or moved aside for a broken header), as pi does when it opens such a file; a session
   * that loaded, or a path that did not exist, is left to the deferred rule.
   */
  writeReplacedNow(manager: SessionManager): void;
}

/** The peer-dependent choices of a fork (see {@link SynchronousSwitches.forkFrom}). */
export interface ForkChoices {
  parentSession?: string;
  writeAtOnce?: boolean;
}

/**
 * Whether sessions opened from now on keep their line index up as they append (default on).
 * Only `bench/line-index.bench.mjs` (and the switch's own test) turns it off, to time the same
 * append path, storage and directory with and without the upkeep; the bench loads the
 * unbundled `dist/manager/` modules so that it flips the copy the manager reads. Off, the
 * index is still read and brought up to date on open, and a later open finds the lines
 * appended meanwhile past what it covers.
 */
export const lineIndexUpkeep = { enabled: true };
