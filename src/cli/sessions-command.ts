/** `list`, `show` and `context`: sessions of the managed store, read-only. */
import path from "node:path";

import {
  AgentRoot,
  buildSessionContext,
  canonicalizeTrustedPath,
  isScopeDirectoryName,
  listAll,
  listSessions,
  ManagedSessionStorage,
  SESSIONS_DIRECTORY,
  SessionManager,
  type SessionInfo,
  type SessionListing,
  type SkippedSession,
} from "../index.js";
import type { CliContext } from "./context.js";
import { CliError } from "./errors.js";
import { legacyCandidates, scopeFor, unmigratedLiveSessions } from "./migrate-command.js";
import { errorCode, oneLine, plural, shortTime, table } from "./output.js";
import { describeMessage, renderTree } from "./render.js";

/** The sessions root of the context's agent dir, with trusted ancestors canonicalised. */
function sessionsRootOf(ctx: CliContext): string {
  return path.join(canonicalizeTrustedPath(ctx.agentDir), SESSIONS_DIRECTORY);
}

/** `use` of a managed storage over the sessions root, opened from the held agent dir (no link, nobody else's); `fallback` when nothing was stored. */
async function withStorage<T>(ctx: CliContext, fallback: T, use: (storage: ManagedSessionStorage) => Promise<T>): Promise<T> {
  let agent: AgentRoot | undefined;
  try {
    agent = AgentRoot.openIfExists(ctx.agentDir);
  } catch (error) {
    // The code audit gives the same agent directory, with the storage code that refused it.
    throw new CliError("agent_dir_unusable", `cannot open ${ctx.agentDir}: ${errorCode(error)}`, { cause: error });
  }
  if (agent === undefined) return fallback;
  let dir;
  try {
    dir = agent.openDirIfExists(SESSIONS_DIRECTORY);
  } finally {
    agent.close();
  }
  if (dir === undefined) return fallback;
  const storage = new ManagedSessionStorage(dir);
  try {
    return await use(storage);
  } finally {
    storage.close();
  }
}

/** Codes of an agent directory that is the user's own but not owner-only (an older tool's 0755 one). */
const LOOSE_AGENT_DIR: ReadonlySet<string> = new Set(["mode_mismatch", "acl_present", "acl_malformed"]);

/**
 * `list()`; when the agent directory is the user's own but not owner-only, nothing managed is read through it and the
 * refusal stands, but a person is first told how many legacy sessions (read by their own rules) `migrate --all` would copy,
 * which also makes the directory owner-only.
 */
async function managedOrRefused(ctx: CliContext, json: boolean, list: () => Promise<SessionListing>): Promise<SessionListing> {
  try {
    return await list();
  } catch (error) {
    const cause = error instanceof CliError && error.code === "agent_dir_unusable" ? errorCode(error.cause) : undefined;
    if (!json && cause !== undefined && LOOSE_AGENT_DIR.has(cause)) {
      const unmigrated = await unmigratedLiveSessions(ctx);
      if (unmigrated > 0)
        ctx.out(
          ctx.style.yellow(
            `${plural(unmigrated, "legacy session")} not migrated yet: \`gjc-session migrate --all\` copies them into their scopes and makes ${ctx.agentDir} owner-only`,
          ),
        );
    }
    throw error;
  }
}

/** Lists the sessions of one workspace (its managed scope), or of every scope with `all`. */
export async function runList(ctx: CliContext, options: { readonly all?: boolean; readonly cwd?: string; readonly json?: boolean }): Promise<number> {
  const empty: SessionListing = { sessions: [], skipped: [] };
  let listing: SessionListing;
  let legacy: string[] = [];
  const root = sessionsRootOf(ctx);
  if (options.all === true) {
    listing = await managedOrRefused(ctx, options.json === true, () => everySession(ctx));
    // Legacy sources with no v2 copy yet (a migrated one keeps its id in the scope).
    const migrated = new Set(listing.sessions.filter((s) => layoutOf(root, s.path) === "v2").map((s) => s.id));
    legacy = listing.sessions.filter((s) => layoutOf(root, s.path) === "legacy" && !migrated.has(s.id)).map((s) => s.path);
  } else {
    const scope = scopeFor(ctx, options.cwd ?? process.cwd(), "read");
    listing = scope.exists ? await withStorage(ctx, empty, (storage) => listSessions(scope.directoryPath, { storage })) : empty;
    legacy = (await legacyCandidates(scope)).candidates.map((c) => c.path);
  }
  if (options.json === true) {
    const sessions = listing.sessions.map((s) => ({ ...publicInfo(s), layout: layoutOf(root, s.path) }));
    ctx.json({ sessions, skipped: listing.skipped, legacyUnmigrated: legacy });
    return 0;
  }
  for (const line of formatListing(listing, options.all === true, root, ctx)) ctx.out(line);
  if (options.all === true) {
    // Legacy folders are summed up here, not listed as refused on every run.
    const unmigrated = await unmigratedLiveSessions(ctx);
    if (unmigrated > 0)
      ctx.out(ctx.style.yellow(`${plural(unmigrated, "legacy session")} not migrated yet: \`gjc-session migrate --all\` copies them into their scopes`));
  }
  if (legacy.length > 0 && options.all !== true) {
    const cwdOption = options.cwd === undefined ? "" : ` --cwd ${options.cwd}`;
    ctx.out(
      ctx.style.yellow(`${plural(legacy.length, "legacy session")} of this workspace not migrated yet: \`gjc-session migrate${cwdOption}\` copies them here`),
    );
  }
  return 0;
}

/** The sessions of every scope. */
function everySession(ctx: CliContext): Promise<SessionListing> {
  return withStorage(ctx, { sessions: [], skipped: [] }, (storage) => listAll(storage.root, { storage }));
}

// `allMessagesText` exists for search; printing it would repeat every message.
function publicInfo(info: SessionInfo): Omit<SessionInfo, "allMessagesText"> {
  const { allMessagesText: _unused, ...rest } = info;
  return rest;
}

/** Whether `dir` is an older tool's folder in the sessions root (not a managed scope directory). */
function isLegacyFolder(sessionsRoot: string, dir: string): boolean {
  return path.dirname(dir) === sessionsRoot && !isScopeDirectoryName(path.basename(dir));
}

/** Where a listed session lives (a migrated copy and its retained source share an id: this tells them apart). */
function layoutOf(sessionsRoot: string, file: string): "v2" | "legacy" {
  return isLegacyFolder(sessionsRoot, path.dirname(file)) ? "legacy" : "v2";
}

function reasonOf(skipped: SkippedSession): string {
  return skipped.detail === undefined ? skipped.code : `${skipped.code} (${skipped.detail})`;
}

/** One line for a skipped file or folder: its code and detail, and for a legacy folder what to do. */
function skippedLine(root: string, skipped: SkippedSession): string {
  // pi writes its folders 0755 and its files 0644: readable, but not owner-only.
  const hint = isLegacyFolder(root, skipped.path) ? "; a legacy folder (not owner-only): `gjc-session migrate --cwd <its workspace>` copies its sessions" : "";
  return `skipped ${skipped.path}: ${reasonOf(skipped)}${hint}`;
}

function formatListing(listing: SessionListing, all: boolean, root: string, ctx: CliContext): string[] {
  const { style } = ctx;
  if (listing.sessions.length === 0 && listing.skipped.length === 0) return [style.dim("no sessions")];
  const header = ["MODIFIED", "ID", "MSGS", ...(all ? ["LAYOUT", "CWD"] : []), "TITLE"].map((h) => style.bold(h));
  const ids = uniquePrefixes(listing.sessions.map((s) => s.id));
  const rows = listing.sessions.map((s) => [
    shortTime(s.modified),
    ids.get(s.id) as string,
    `${s.messageCount}${s.messageCountIsEstimate ? "+" : ""}`,
    ...(all ? [layoutOf(root, s.path), s.cwd === "" ? "-" : s.cwd] : []),
    oneLine(s.displayName, 60),
  ]);
  const lines = listing.sessions.length === 0 ? [style.dim("no sessions")] : table([header, ...rows]);
  // With --all a legacy folder (pi makes them 0755) is refused by the owner-only listing: the sessions it holds are summed up after the table.
  const shown = all ? listing.skipped.filter((s) => !isLegacyFolder(root, s.path) && !isLegacyFolder(root, path.dirname(s.path))) : listing.skipped;
  for (const skipped of shown) lines.push(style.yellow(skippedLine(root, skipped)));
  return lines;
}

/** The shortest prefix (at least `min` characters) of each id that no other id starts with; equal ids keep the whole id. */
export function uniquePrefixes(ids: readonly string[], min = 8): Map<string, string> {
  const sorted = [...new Set(ids)].sort();
  const common = (a: string | undefined, b: string | undefined): number => {
    if (a === undefined || b === undefined) return 0;
    let n = 0;
    while (n < a.length && a[n] === b[n]) n++;
    return n;
  };
  const out = new Map<string, string>();
  sorted.forEach((id, i) => {
    const needed = Math.max(common(id, sorted[i - 1]), common(id, sorted[i + 1])) + 1;
    out.set(id, id.slice(0, Math.max(min, needed)));
  });
  return out;
}

/**
 * A session file from a reference: a path (with a separator, or ending in `.jsonl`), else an id or unique id prefix
 * looked up across every scope. @throws CliError `session_not_found`, `ambiguous_session`
 */
async function locateSession(ctx: CliContext, ref: string): Promise<string> {
  if (ref.includes("/") || ref.includes(path.sep) || ref.endsWith(".jsonl")) return path.resolve(ref);
  const root = sessionsRootOf(ctx);
  const listing = await everySession(ctx);
  const exact = listing.sessions.filter((s) => s.id === ref);
  const found = exact.length > 0 ? exact : listing.sessions.filter((s) => s.id.startsWith(ref));
  if (found.length === 0) throw notFoundOrRefused(ref, root, listing.skipped);
  // A migrated copy shares its id with the legacy source it came from: the v2 copy is the live one.
  const inScopes = found.filter((s) => isScopeDirectoryName(path.basename(path.dirname(s.path))));
  const matches = inScopes.length > 0 ? inScopes : found;
  if (new Set(matches.map((s) => s.id)).size > 1 || matches.length > 1) {
    throw new CliError("ambiguous_session", `${matches.length} sessions match ${ref}: ${matches.map((s) => s.path).join(", ")}`);
  }
  return (matches[0] as SessionInfo).path;
}

/** For a reference nothing listed matches: the refusal of a skipped file named for the id (`<timestamp>_<id>.jsonl`), else `session_not_found`. */
function notFoundOrRefused(ref: string, root: string, skipped: readonly SkippedSession[]): CliError {
  const refused = skipped.find((s) =>
    (
      path
        .basename(s.path)
        .replace(/\.jsonl$/, "")
        .split("_")
        .pop() ?? ""
    ).startsWith(ref),
  );
  if (refused === undefined) return new CliError("session_not_found", `no session with id ${ref} in ${root}`);
  const repair = refused.code === "unsafe_entry" ? "; `gjc-session audit --fix` repairs the mode of a file you own with one link" : "";
  return new CliError(refused.code, `session ${ref} is refused: ${refused.path}: ${reasonOf(refused)}${repair}`);
}

/** Runs `use` on the session `ref` names, opened read-only (through managed storage when it lives in the agent dir), before the storage closes. */
async function withSession(ctx: CliContext, ref: string, use: (session: SessionManager, file: string) => void): Promise<number> {
  const file = await locateSession(ctx, ref);
  const inside = !path.relative(sessionsRootOf(ctx), file).startsWith("..");
  const extras = { agentDir: canonicalizeTrustedPath(ctx.agentDir), readOnly: true, terminalId: null };
  // Entries off the leaf's path are read when first asked for, through the storage: it stays open until `use` is done.
  const read = async (storage: ManagedSessionStorage | undefined): Promise<true> => {
    const session = await SessionManager.open(file, undefined, storage, undefined, undefined, extras);
    try {
      // A read-only open of an empty file gives a fresh session with a new id: there is nothing to show.
      if (!session.getLoadReport().loaded) throw new CliError("empty", `${file} holds no session: the file is empty`);
      use(session, file);
    } finally {
      await session.close();
    }
    return true;
  };
  if (!(inside && (await withStorage(ctx, false, read)))) await read(undefined);
  return 0;
}

/** Prints a session's tree with labels and the leaf marked. */
export async function runShow(ctx: CliContext, ref: string, options: { readonly json?: boolean } = {}): Promise<number> {
  return withSession(ctx, ref, (session, file) => {
    const header = session.getHeader();
    if (options.json === true) {
      ctx.json({ sessionId: header.id, file, header, leafId: session.getLeafId(), entries: session.getEntries() });
      return;
    }
    const { style } = ctx;
    ctx.out(`${style.bold("Session")} ${header.id}`);
    ctx.out(style.dim(`  file ${file}`));
    ctx.out(style.dim(`  cwd  ${header.cwd ?? "-"}  ·  ${session.getEntries().length} entries  ·  version ${header.version ?? 1}`));
    ctx.out();
    for (const line of renderTree(session.getTree(), session.getLeafId(), style)) ctx.out(line);
  });
}

/** Prints what the model would see continuing from the leaf (or `--leaf`). */
export async function runContext(ctx: CliContext, ref: string, options: { readonly leaf?: string; readonly json?: boolean }): Promise<number> {
  return withSession(ctx, ref, (session) => {
    if (options.leaf !== undefined && session.getEntry(options.leaf) === undefined) {
      throw new CliError("unknown_entry", `no entry ${options.leaf} in the session`);
    }
    const leaf = options.leaf ?? session.getLeafId();
    const context = buildSessionContext(session.getEntries(), leaf);
    if (options.json === true) {
      ctx.json({ sessionId: session.getSessionId(), leafId: leaf, context });
      return;
    }
    const { style } = ctx;
    ctx.out(`${style.bold("Context")} of ${session.getSessionId()} at ${leaf ?? "(reset)"}`);
    const models = Object.entries(context.models).map(([role, model]) => `${role}=${model}`);
    ctx.out(style.dim(`  models ${models.join(", ") || "-"}  ·  thinking ${context.thinkingLevel}  ·  mode ${context.mode}`));
    ctx.out();
    const rows = context.messages.map((message, i) => {
      const { role, text } = describeMessage(message);
      return [style.dim(String(i + 1)), style.cyan(role), oneLine(text, 90)];
    });
    for (const line of table(rows)) ctx.out(line);
    if (rows.length === 0) ctx.out(style.dim("no messages"));
  });
}
