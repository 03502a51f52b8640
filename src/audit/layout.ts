/**
 * What `fix` may touch: only a directory recognised as an agent directory, and in it only the store's own layout. A slip
 * (`--agent-dir ~`, `.`, a wrong `GJC_CODING_AGENT_DIR`, `/` as root) must not tighten a whole tree's permissions.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { SecureDir, SecureFsError } from "../fs/index.js";
import { HISTORY_DB_NAME } from "../history/index.js";
import { TERMINAL_SESSIONS_DIR } from "../manager/index.js";
import { isLegacyFolderName } from "../migration/index.js";
import { isScopeDirectoryName, SESSIONS_DIRECTORY } from "../scope/index.js";
import { AuditError } from "./errors.js";

const BLOBS_DIRECTORY = "blobs";
/** Our own names (sidecars, temporaries, the undo file of a fix) start with this. */
const OWN_PREFIX = ".gjc-";
/** The top-level names of the layout, besides `.gjc-*`: everything below the directories is the store's. */
const LAYOUT_NAMES: ReadonlySet<string> = new Set([
  SESSIONS_DIRECTORY,
  BLOBS_DIRECTORY,
  TERMINAL_SESSIONS_DIR,
  HISTORY_DB_NAME,
  `${HISTORY_DB_NAME}-wal`,
  `${HISTORY_DB_NAME}-shm`,
  `${HISTORY_DB_NAME}-journal`,
]);
/** Names that make a tree a home directory (shell start-up files, keys, desktop folders): never an agent directory. */
const HOME_MARKERS: ReadonlySet<string> = new Set([
  ".bashrc",
  ".bash_profile",
  ".bash_history",
  ".profile",
  ".zshrc",
  ".zprofile",
  ".ssh",
  ".gnupg",
  ".config",
  ".local",
  ".cache",
  "Desktop",
  "Documents",
  "Downloads",
]);
// How many found names an error lists.
const NAMES_SHOWN = 6;

/**
 * Whether `rel` (a path below the agent dir, `.` the dir itself) lies in the store's layout. The legacy folders of
 * `sessions/` and all below them are not: they belong to the tool that wrote them (pi's `--<cwd>--` folders), which
 * migration only reads, so `fix` never changes their modes.
 */
export function inLayout(rel: string): boolean {
  const top = rel.split("/")[0] as string;
  return (rel === "." || LAYOUT_NAMES.has(top) || top.startsWith(OWN_PREFIX)) && !isLegacySource(rel);
}

/** Whether `rel` is a legacy folder of `sessions/` or lies below one: read by the legacy-source rules (0755 and 0644 pass). */
export function isLegacySource(rel: string): boolean {
  const [top, folder] = rel.split("/");
  return top === SESSIONS_DIRECTORY && folder !== undefined && isLegacyFolderName(folder);
}

/** A workspace folder's name as pi and GJC make them: the workspace path with separators as dashes, between `--`. */
function isWorkspaceFolderName(name: string): boolean {
  return name.length > 4 && name.startsWith("--") && name.endsWith("--");
}

function realpathOr(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return p;
  }
}

function listed(names: readonly string[]): string {
  if (names.length === 0) return "it is empty";
  const shown = names.slice(0, NAMES_SHOWN).join(", ");
  return `found ${shown}${names.length > NAMES_SHOWN ? ` and ${names.length - NAMES_SHOWN} more` : ""}`;
}

/**
 * Checks that `absolute` is an agent directory before `fix` changes anything in it: not the filesystem root, not the
 * home directory, nothing home-like (shell start-up files, `.ssh`, desktop folders), and holding the layout: a
 * `history.db`, our own `.gjc-*` names, or a `sessions/` that is empty or holds scope directories, legacy folders or
 * our sidecars. A directory that cannot be opened as the effective user's own is left to the audit, which repairs
 * nothing it cannot open.
 *
 * @throws AuditError `not_agent_dir`, naming what was found
 */
export function assertAgentDirForFix(absolute: string): void {
  const real = realpathOr(absolute);
  const refuse = (what: string): never => {
    throw new AuditError("not_agent_dir", `refusing to repair ${absolute}: ${what}; --fix acts only on an agent directory (sessions/, history.db)`);
  };
  if (path.parse(real).root === real) refuse("it is the filesystem root");
  if (real === realpathOr(os.homedir())) refuse("it is your home directory");
  let root: SecureDir;
  try {
    root = SecureDir.openRoot(absolute, { owned: true });
  } catch (error) {
    if (error instanceof SecureFsError) return;
    throw error;
  }
  try {
    const entries = root.list().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const names = entries.map((e) => (e.type === "directory" ? `${e.name}/` : e.name));
    const homeLike = entries.filter((e) => HOME_MARKERS.has(e.name)).map((e) => e.name);
    if (homeLike.length > 0) refuse(`it looks like a home directory (${listed(homeLike)})`);
    const isCwd = real === realpathOr(process.cwd());
    const recognised = entries.some(
      (e) =>
        (e.name === HISTORY_DB_NAME && e.type === "file") ||
        e.name.startsWith(OWN_PREFIX) ||
        (e.name === SESSIONS_DIRECTORY && e.type === "directory" && holdsSessionsLayout(root)),
    );
    if (!recognised) refuse(`${isCwd ? "the current directory is not an agent directory" : "not an agent directory"} (${listed(names)})`);
  } finally {
    root.close();
  }
}

/** Whether `sessions/` is empty or holds a scope directory, a legacy folder or one of our names. */
function holdsSessionsLayout(root: SecureDir): boolean {
  let sessions: SecureDir;
  try {
    sessions = root.openDir(SESSIONS_DIRECTORY, { owned: true });
  } catch (error) {
    if (error instanceof SecureFsError) return false;
    throw error;
  }
  try {
    const entries = sessions.list();
    return (
      entries.length === 0 ||
      entries.some((e) => (e.type === "directory" && (isScopeDirectoryName(e.name) || isWorkspaceFolderName(e.name))) || e.name.startsWith(OWN_PREFIX))
    );
  } finally {
    sessions.close();
  }
}
