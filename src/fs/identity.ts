/** Native directory identity: the same value for every path that reaches one directory. */
import path from "node:path";

import { native } from "../native/index.js";
import { requireArgument, unwrap } from "./errors.js";

/** The identity of an existing directory: `dev` and `ino` as decimal strings (Windows: volume serial, file id) and its canonical path. */
export interface DirectoryIdentity {
  readonly platform: string;
  readonly canonicalPath: string;
  readonly dev: string;
  readonly ino: string;
}

/**
 * Identity of the directory `dirPath` leads to (links followed).
 * @throws SecureFsError `not_found`, `not_directory`, `not_utf8`, `network_unsupported`, `identity_unavailable`, `io_error`
 */
export function directoryIdentity(dirPath: string): DirectoryIdentity {
  requireArgument(typeof dirPath === "string" && dirPath.length > 0, "directoryIdentity", String(dirPath));
  const absolute = path.resolve(dirPath);
  return unwrap(native.directoryIdentity(absolute), "directoryIdentity", absolute);
}

/** Whether `name` is one safe entry name on `platform` (default: this one); others get `invalid_name` before any syscall. */
export function isValidEntryName(name: string, platform: NodeJS.Platform = process.platform): boolean {
  return typeof name === "string" && native.isValidName(name, platform === "win32" ? "windows" : "posix");
}
