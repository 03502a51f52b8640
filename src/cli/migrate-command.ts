/**
 * `gjc-session migrate`: copies a workspace's legacy sessions into its v2 scope (sources kept), with a progress bar on a
 * terminal; `--all` every workspace's below the agent directory. A workspace that no longer exists is migrated only when
 * named with `--cwd` (into the scope of the path it had); `--all` names each such workspace once.
 */
import path from "node:path";

import {
  listLegacySessionFiles,
  listSessionCandidates,
  openCandidateForWrite,
  resolveManagedScope,
  workspaceIdentity,
  type CandidateListing,
  type ManagedScope,
  type MigrationProgress,
  type SessionCandidate,
} from "../index.js";
import type { CliContext } from "./context.js";
import { CliError } from "./errors.js";
import { plural, table, terminalLine } from "./output.js";

/** One migrated (or, in a dry run, migratable) session. */
interface MigrateOutcome {
  readonly source: string;
  readonly destination?: string;
  readonly error?: string;
}

const BAR_WIDTH = 24;

/** A one-line progress bar redrawn in place on a terminal. */
function progressLine(label: string, progress: MigrationProgress): string {
  const total = Math.max(progress.bytesTotal, 1);
  const fraction = progress.phase === "done" ? 1 : Math.min(progress.bytesDone / total, 1);
  const filled = Math.round(fraction * BAR_WIDTH);
  const percent = String(Math.round(fraction * 100)).padStart(3);
  return `${label} [${"#".repeat(filled)}${"-".repeat(BAR_WIDTH - filled)}] ${percent}%  ${progress.filesDone}/${progress.filesTotal} files  ${progress.phase}`;
}

/** Resolves the scope of `cwd` (for writing unless `dryRun`; `former`: of a workspace that may no longer exist), or throws the scope's code. */
export function scopeFor(ctx: CliContext, cwd: string, mode: "read" | "write" | "sources", former = false): ManagedScope {
  const resolution = resolveManagedScope({ cwd: path.resolve(cwd), agentDir: ctx.agentDir, mode, former });
  if (resolution.kind === "error") throw new CliError("scope_unavailable", `${resolution.code}: ${resolution.message}`);
  return resolution.scope;
}

/** The workspace's candidate listing and its legacy sessions not migrated yet, or the scope's code. */
export async function legacyCandidates(scope: ManagedScope): Promise<{ listing: CandidateListing; candidates: SessionCandidate[] }> {
  const listing = await listSessionCandidates(scope);
  if (listing.kind === "error") throw new CliError("scope_unavailable", `${listing.code}: ${listing.message}`);
  return { listing, candidates: listing.candidates.filter((c) => c.migrationState === "legacy_unmigrated") };
}

/** Migrates every legacy candidate of `scope`, drawing progress on a terminal. */
export async function migrateAll(ctx: CliContext, scope: ManagedScope, candidates: readonly SessionCandidate[]): Promise<MigrateOutcome[]> {
  const outcomes: MigrateOutcome[] = [];
  for (const [i, candidate] of candidates.entries()) {
    const label = `(${i + 1}/${candidates.length}) ${path.basename(candidate.path)}`;
    const draw = (progress: MigrationProgress): void => {
      if (ctx.interactive) process.stderr.write(`\r\u001b[2K${terminalLine(progressLine(label, progress))}`);
    };
    const result = await openCandidateForWrite(scope, candidate, { onProgress: draw });
    if (ctx.interactive) process.stderr.write("\n");
    if (result.kind === "error") outcomes.push({ source: candidate.path, error: `${result.code}: ${result.message}` });
    else outcomes.push({ source: candidate.path, destination: result.path });
  }
  return outcomes;
}

/** The legacy sessions below the agent directory by the workspace their headers name (`""`: none), workspaces sorted. */
export function legacyWorkspaces(ctx: CliContext): Map<string, string[]> {
  const byCwd = new Map<string, string[]>();
  for (const file of listLegacySessionFiles(ctx.agentDir)) {
    const cwd = file.cwd === undefined ? "" : path.resolve(file.cwd);
    byCwd.set(cwd, [...(byCwd.get(cwd) ?? []), file.path]);
  }
  return new Map([...byCwd].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Whether `cwd` names no directory now (its workspace was deleted or moved). */
export function isGone(cwd: string): boolean {
  const found = workspaceIdentity(cwd);
  return found.kind === "error" && found.code === "cwd_missing";
}

/** How many legacy sessions of workspaces that still exist are not migrated yet (a deleted workspace's are `migrate --all`'s to name). */
export async function unmigratedLiveSessions(ctx: CliContext): Promise<number> {
  let count = 0;
  for (const cwd of legacyWorkspaces(ctx).keys()) {
    if (cwd === "" || isGone(cwd)) continue;
    try {
      count += (await legacyCandidates(scopeFor(ctx, cwd, "sources"))).candidates.length;
    } catch (error) {
      // A workspace whose scope cannot be resolved is `migrate --all`'s to report.
      if (!(error instanceof CliError)) throw error;
    }
  }
  return count;
}

/** Migrates (or with `dryRun` lists) the legacy sessions of `scope`, printing each outcome; `false` when any failed. */
async function migrateScope(ctx: CliContext, scope: ManagedScope, dryRun: boolean): Promise<boolean> {
  const { listing, candidates } = await legacyCandidates(scope);
  const { style } = ctx;
  // Managed storage keeps its chain owner-only: what preparing the scope tightened is said, never done silently.
  for (const dir of scope.repaired) ctx.out(style.yellow(`made ${dir} owner-only (mode 0700): managed storage keeps its directories private`));
  // What cannot be migrated (a header without a cwd, an unreadable folder) is named with its code; a file naming a
  // workspace that no longer exists is another workspace's (`--all` names those once).
  for (const passed of [...listing.invalid.filter((p) => p.code !== "cwd_missing"), ...listing.scanErrors]) {
    const why = passed.code === "invalid_header" ? " (a header without a session id or cwd names no workspace)" : "";
    ctx.out(style.yellow(`not migrated ${passed.path}: ${passed.code}${why}`));
  }
  if (candidates.length === 0) {
    ctx.out(style.dim(`no legacy sessions to migrate for ${scope.canonicalCwd}`));
    return true;
  }
  if (dryRun) {
    ctx.out(`${style.bold("Would migrate")} ${plural(candidates.length, "legacy session")} into ${scope.directoryPath}:`);
    for (const c of candidates) ctx.out(`  ${c.path}`);
    return true;
  }
  const outcomes = await migrateAll(ctx, scope, candidates);
  const rows = outcomes.map((o) =>
    o.error === undefined ? [style.green("migrated"), o.source, `→ ${o.destination}`] : [style.red("failed"), o.source, o.error],
  );
  for (const line of table(rows)) ctx.out(line);
  return outcomes.every((o) => o.error === undefined);
}

/**
 * The `migrate` command; exit status 1 when any session could not be migrated. A `--cwd` that no longer exists but that
 * legacy sessions name is migrated into the scope of the path it had.
 */
export async function runMigrate(ctx: CliContext, options: { readonly dryRun?: boolean; readonly cwd?: string; readonly all?: boolean }): Promise<number> {
  const dryRun = options.dryRun === true;
  // A dry run only reads the legacy sources, by their own rules (an older tool's agent directory may still be 0755).
  const mode = dryRun ? "sources" : "write";
  if (options.all !== true) {
    const cwd = path.resolve(options.cwd ?? process.cwd());
    const former = options.cwd !== undefined && isGone(cwd) && legacyWorkspaces(ctx).has(cwd);
    return (await migrateScope(ctx, scopeFor(ctx, cwd, mode, former), dryRun)) ? 0 : 1;
  }
  const workspaces = legacyWorkspaces(ctx);
  if (workspaces.size === 0) {
    ctx.out(ctx.style.dim(`no legacy sessions in ${ctx.agentDir}`));
    return 0;
  }
  let ok = true;
  const gone: [string, number][] = [];
  for (const [cwd, files] of workspaces) {
    if (cwd === "") {
      for (const file of files) ctx.out(ctx.style.yellow(`not migrated ${file}: invalid_header (a header without a session id or cwd names no workspace)`));
      continue;
    }
    if (isGone(cwd)) {
      // Those already migrated by an explicit --cwd are settled.
      const left = (await legacyCandidates(scopeFor(ctx, cwd, "sources", true))).candidates.length;
      if (left > 0) gone.push([cwd, left]);
      continue;
    }
    ctx.out(ctx.style.bold(cwd));
    try {
      ok = (await migrateScope(ctx, scopeFor(ctx, cwd, mode), dryRun)) && ok;
    } catch (error) {
      if (!(error instanceof CliError)) throw error;
      ctx.out(ctx.style.red(`failed ${cwd}: ${error.message}`));
      ok = false;
    }
  }
  // Said once, here: a deleted workspace's sessions stay where they are until named with --cwd.
  for (const [cwd, count] of gone) {
    ctx.out(
      ctx.style.yellow(
        `${plural(count, "legacy session")} of ${cwd}, which no longer exists, left where they are: \`gjc-session migrate --cwd ${cwd}\` migrates them into the scope of that path`,
      ),
    );
  }
  return ok ? 0 : 1;
}
