/** Path checks of every storage: each path a caller passes becomes names below the root before anything touches a disk. */

import { randomBytes } from "node:crypto";
import path from "node:path";

import { StorageError } from "./errors.js";

/** Name of the sessions root below an agent directory (the layout managed storage recognises). */
export const SESSIONS_DIRECTORY = "sessions";

/** An absolute path split into the names below a storage root (outermost first, none for the root). */
interface RootedPath {
  absolute: string;
  names: string[];
}

function isAbsolutePath(value: unknown): value is string {
  return typeof value === "string" && value.length > 0 && !value.includes("\0") && path.isAbsolute(value);
}

/** `root` as a storage root (no trailing separator); `invalid_path` when relative or holding NUL. */
export function normalizeRoot(root: string): string {
  if (!isAbsolutePath(root)) throw new StorageError("invalid_path", `a storage root must be an absolute path: ${String(root)}`);
  return path.resolve(root);
}

/**
 * Splits `target` into names below `root`, `.` and `..` resolved lexically (sound only because
 * every storage refuses links below its root). `invalid_path` (relative, empty, NUL), `outside_root`.
 */
export function splitBelowRoot(root: string, target: string): RootedPath {
  if (!isAbsolutePath(target)) {
    throw new StorageError("invalid_path", `storage paths must be absolute: ${String(target)}`, { path: String(target) });
  }
  const absolute = path.resolve(target);
  if (absolute === root) return { absolute, names: [] };
  const relative = path.relative(root, absolute);
  if (relative.length === 0 || relative === ".." || relative.startsWith(".." + path.sep) || path.isAbsolute(relative)) {
    throw new StorageError("outside_root", `${absolute} is not below the storage root ${root}`, { path: absolute });
  }
  return { absolute, names: relative.split(path.sep) };
}

/** {@link splitBelowRoot} for a file, with its name and parent names; `invalid_path` for the root. */
export function splitFilePath(root: string, target: string): RootedPath & { name: string; parents: string[] } {
  const rooted = splitBelowRoot(root, target);
  const name = rooted.names[rooted.names.length - 1];
  if (name === undefined) {
    throw new StorageError("invalid_path", `the storage root is not a file: ${rooted.absolute}`, { path: rooted.absolute });
  }
  return { ...rooted, name, parents: rooted.names.slice(0, -1) };
}

/** A fresh hidden temporary name next to `name`, ending in `.tmp` so no listing takes it for data. */
export function temporaryName(name: string): string {
  return `.${name}.${randomBytes(8).toString("hex")}.tmp`;
}

/** One plain entry name (no separator, NUL, `.` or `..`), so a batch name cannot reach another directory. */
export function isPlainEntryName(name: string): boolean {
  if (typeof name !== "string" || name.length === 0 || name === "." || name === "..") return false;
  return !name.includes("/") && !name.includes(path.sep) && !name.includes("\0");
}
