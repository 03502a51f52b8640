/** Read-only audit of the v2 scopes under a sessions root: does each hold a canonical binding whose identity hashes to its name? */
import path from "node:path";

import { SecureDir, SecureFsError, unlessMissing } from "../fs/index.js";
import type { AgentRoot } from "./agent-root.js";
import { decodeBinding, readBindingFile, type ScopeBinding } from "./binding.js";
import { isScopeDirectoryName, scopeDigest, SCOPE_DIRECTORY_PREFIX } from "./identity.js";

/** Verdict on one scope directory. */
export type ScopeDirectoryState =
  /** Canonical binding, and its identity hashes to the directory name. */
  | "valid"
  /** No binding file (a scope made but never bound, or its binding removed). */
  | "binding_missing"
  /** A binding that is not canonical bytes of the binding shape, or not a safe 0600 file. */
  | "binding_invalid"
  /** A canonical binding whose identity does not hash to this directory's name. */
  | "digest_mismatch"
  /** The directory itself fails the owner-only checks (link, mode, owner, ACL). */
  | "unsafe_directory";

/** One inspected scope directory. */
export interface ScopeDirectoryReport {
  readonly name: string;
  readonly path: string;
  readonly state: ScopeDirectoryState;
  /** The decoded binding, when it is canonical. */
  readonly binding?: ScopeBinding;
  /** The fs-layer code behind `binding_invalid` / `unsafe_directory`. */
  readonly cause?: string;
}

/**
 * Inspects every `v2-<digest>` entry of the sessions root, sorted: held ({@link AgentRoot.openDir}) or a path
 * opened once by descriptor (never followed; a looser one of the user's passes; missing: none). Never writes.
 * @throws SecureFsError when the root cannot be opened safely (a link, another owner, ...)
 */
export function inspectScopeDirectories(sessionsRoot: string | SecureDir): ScopeDirectoryReport[] {
  const root = typeof sessionsRoot === "string" ? unlessMissing(() => SecureDir.openRoot(sessionsRoot, { owned: true })) : sessionsRoot;
  if (root === undefined) return [];
  try {
    const names = root.list().map((entry) => entry.name);
    return names
      .filter(isScopeDirectoryName)
      .sort()
      .map((name) => inspectOne(root, name));
  } finally {
    if (root !== sessionsRoot) root.close();
  }
}

function inspectOne(sessionsRoot: SecureDir, name: string): ScopeDirectoryReport {
  const where = path.join(sessionsRoot.path, name);
  let dir: SecureDir;
  try {
    dir = sessionsRoot.openDir(name);
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    return { name, path: where, state: "unsafe_directory", cause: error.code };
  }
  try {
    const bytes = readBindingFile(dir);
    if (!Buffer.isBuffer(bytes)) {
      return bytes.kind === "absent" ? { name, path: where, state: "binding_missing" } : { name, path: where, state: "binding_invalid", cause: bytes.cause };
    }
    const binding = decodeBinding(bytes);
    if (binding === undefined) return { name, path: where, state: "binding_invalid", cause: "not_canonical" };
    const digest = name.slice(SCOPE_DIRECTORY_PREFIX.length);
    const consistent = binding.identityDigest === digest && scopeDigest(binding.platform, binding.canonicalPath) === digest;
    return { name, path: where, state: consistent ? "valid" : "digest_mismatch", binding };
  } finally {
    dir.close();
  }
}
