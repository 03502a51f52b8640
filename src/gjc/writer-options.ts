/**
 * What GJC's callers may hand `FileSessionStorage.openWriter` beyond a path: a close adapter
 * (the descriptor's close, with a way to say "not closed yet, try again") and a managed
 * security context, an authority object that binds a writer to one session directory as it was
 * when the context was made.
 */
import fs from "node:fs";
import path from "node:path";

import { StorageError, type WriterOpenOptions } from "../storage/index.js";
import { pathError } from "../storage/errors.js";

/**
 * Thrown by a {@link SessionStorageWriterCloseAdapter} that failed before it closed the
 * descriptor. The writer then keeps the descriptor and its lock, its close state is
 * `close_failed_retryable`, and a later `close()` calls the adapter again. Anything else an
 * adapter throws counts as a dispatched close: `close_unknown`, never retried.
 */
export class SessionStorageWriterRetryableCloseError extends StorageError {
  declare readonly code: "close_not_dispatched";

  constructor(message = "the writer's close failed before its descriptor was closed", options: { cause?: unknown } = {}) {
    super("close_not_dispatched", message, options);
  }
}

/** Closes a writer's descriptor in place of `fs.closeSync`; see {@link SessionStorageWriterRetryableCloseError}. */
export interface SessionStorageWriterCloseAdapter {
  close(fd: number): void;
}

/**
 * An authority binding writers to one managed session directory, made only by
 * {@link createManagedSessionSecurityContext}. The directory's identity is recorded when it is
 * made: a writer opened with it refuses a file outside that directory, or the directory once
 * something else stands at its path (and, as every writer's, its sync fails once its file's name
 * names another).
 */
export interface ManagedSessionSecurityContext {
  readonly kind: "managed";
  readonly agentDir: string;
  /** The profile's agent directory (the agent directory unless given). */
  readonly profileAgentDir: string;
  readonly sessionsRoot: string;
  readonly sessionDir: string;
  /** GJC's own directory authorities, carried for GJC code that reads them back; this store's checks are its own. */
  readonly rootAuthority?: unknown;
  readonly retainedAuthority?: unknown;
}

/** The options of the `/gjc` `FileSessionStorage.openWriter`. */
export interface SessionStorageWriterOpenOptions extends WriterOpenOptions {
  /** Closes the descriptor (GJC's form of {@link WriterOpenOptions.closeDescriptor}). */
  closeAdapter?: SessionStorageWriterCloseAdapter;
  /** Binds the writer to one managed session directory. */
  securityContext?: ManagedSessionSecurityContext;
}

interface DirectoryIdentity {
  dev: bigint;
  ino: bigint;
}

const issued = new WeakMap<ManagedSessionSecurityContext, DirectoryIdentity>();

/**
 * Makes the authority for the managed session directory `sessionDir` below `sessionsRoot`,
 * recording which directory stands there now.
 * @throws StorageError `outside_root` (the session directory is not `sessionsRoot` or below it),
 *   `symlink_refused`, `not_directory`, `not_found` (nothing there)
 */
export function createManagedSessionSecurityContext(input: {
  agentDir: string;
  profileAgentDir?: string;
  sessionsRoot: string;
  sessionDir: string;
  rootAuthority?: unknown;
  retainedAuthority?: unknown;
}): ManagedSessionSecurityContext {
  const sessionsRoot = path.resolve(input.sessionsRoot);
  const sessionDir = path.resolve(input.sessionDir);
  const below = path.relative(sessionsRoot, sessionDir);
  if (below.startsWith("..") || path.isAbsolute(below)) throw pathError("outside_root", sessionDir);
  const context: ManagedSessionSecurityContext = Object.freeze({
    ...input,
    kind: "managed" as const,
    agentDir: path.resolve(input.agentDir),
    profileAgentDir: path.resolve(input.profileAgentDir ?? input.agentDir),
    sessionsRoot,
    sessionDir,
  });
  issued.set(context, directoryIdentity(sessionDir));
  return context;
}

/**
 * The engine's writer options for GJC's `options` on `target`, after checking a security
 * context: made by {@link createManagedSessionSecurityContext}, `target` directly in its session
 * directory, and that directory still the one recorded.
 * @throws StorageError `invalid_argument` (a context not made here), `outside_root`,
 *   `unsafe_entry` (detail `identity_changed`), and what reading the directory throws
 */
export function engineWriterOptions(target: string, options: SessionStorageWriterOpenOptions): WriterOpenOptions {
  const context = options.securityContext;
  if (context !== undefined) {
    const recorded = issued.get(context);
    if (recorded === undefined) throw new StorageError("invalid_argument", "the security context was not made by createManagedSessionSecurityContext");
    const absolute = path.resolve(target);
    if (path.dirname(absolute) !== context.sessionDir) throw pathError("outside_root", absolute);
    const current = directoryIdentity(context.sessionDir);
    if (current.dev !== recorded.dev || current.ino !== recorded.ino) {
      throw new StorageError("unsafe_entry", `another directory stands at ${context.sessionDir} since the security context was made`, {
        path: context.sessionDir,
        detail: "identity_changed",
      });
    }
  }
  const adapter = options.closeAdapter;
  const closeDescriptor = adapter === undefined ? options.closeDescriptor : (fd: number) => adapter.close(fd);
  return closeDescriptor === undefined ? {} : { closeDescriptor };
}

/** The identity of the real directory at `dir` (no link followed). */
function directoryIdentity(dir: string): DirectoryIdentity {
  let stat: fs.BigIntStats;
  try {
    stat = fs.lstatSync(dir, { bigint: true });
  } catch (error) {
    throw new StorageError((error as NodeJS.ErrnoException).code === "ENOENT" ? "not_found" : "read_failed", `cannot read ${dir}`, { path: dir, cause: error });
  }
  if (stat.isSymbolicLink()) throw pathError("symlink_refused", dir);
  if (!stat.isDirectory()) throw pathError("not_directory", dir);
  return { dev: stat.dev, ino: stat.ino };
}
