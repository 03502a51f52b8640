/** Workspace identity v1: the cwd's native canonical path, its SHA-256 digest (the peer's, bit for bit: scopes are found by it) and the `v2-<digest>` name. */
import { createHash } from "node:crypto";
import path from "node:path";

import { directoryIdentity, SecureFsError } from "../fs/index.js";
import { scopeFailure, type ScopeFailure } from "./errors.js";

/** Platform tag hashed into the identity; POSIX systems share one tag. */
export type IdentityPlatform = "posix" | "win32";

// Domain separation: no other SHA-256 use can collide with the identity hash.
const IDENTITY_DOMAIN = "gjc-managed-session-scope\0identity-v1\0";

const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";

/** Prefix of every v2 scope directory name. */
export const SCOPE_DIRECTORY_PREFIX = "v2-";

const DIGEST_PATTERN = /^[a-z2-7]{52}$/;

/** Lowercase RFC 4648 base32 of `bytes`, most significant bit first, without padding. */
export function base32Lower(bytes: Uint8Array): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = ((buffer << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += BASE32[(buffer >> bits) & 31];
    }
  }
  // The leftover bits are the high bits of one last group, zero-filled on the right.
  if (bits > 0) out += BASE32[(buffer << (5 - bits)) & 31];
  return out;
}

/** The 52-character identity digest of a canonical workspace path on `platform`. */
export function scopeDigest(platform: IdentityPlatform, canonicalPath: string): string {
  return base32Lower(createHash("sha256").update(`${IDENTITY_DOMAIN}${platform}\0${canonicalPath}`, "utf8").digest());
}

/** True when `value` has the shape of an identity digest. */
export function isIdentityDigest(value: unknown): value is string {
  return typeof value === "string" && DIGEST_PATTERN.test(value);
}

/** `v2-<digest>`. */
export function scopeDirectoryName(digest: string): string {
  return SCOPE_DIRECTORY_PREFIX + digest;
}

/** True for a name of the form `v2-<52 base32 chars>`. */
export function isScopeDirectoryName(name: string): boolean {
  return name.startsWith(SCOPE_DIRECTORY_PREFIX) && isIdentityDigest(name.slice(SCOPE_DIRECTORY_PREFIX.length));
}

/**
 * Lexical Windows rule, before any I/O: `\\?\UNC\...` is network, any other `\\?\...` local, and
 * every other spelling starting with two separators (`\` or `/`) network. Pure, so tested everywhere.
 */
export function classifyWindowsPath(spelling: string): "local" | "network" {
  const s = spelling.replace(/\//g, "\\");
  if (s.toUpperCase().startsWith("\\\\?\\UNC\\")) return "network";
  if (s.startsWith("\\\\?\\")) return "local";
  return s.startsWith("\\\\") ? "network" : "local";
}

/** True when `text` round-trips through UTF-8 (no lone surrogates). */
function isWellFormedUtf16(text: string): boolean {
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

/** The identity of a workspace directory, as hashed. */
export interface WorkspaceIdentity {
  readonly platform: IdentityPlatform;
  /** realpath on POSIX; the Volume-GUID final path on Windows. */
  readonly canonicalPath: string;
  readonly digest: string;
  /** Device and inode (Windows: volume serial and file id) as decimal strings. */
  readonly dev: string;
  readonly ino: string;
}

/** Outcome of {@link workspaceIdentity}: the identity, or a scope error code with its cause. */
export type WorkspaceIdentityResult = { readonly kind: "identity"; readonly identity: WorkspaceIdentity } | ScopeFailure;

/**
 * Resolves `cwd` (against `process.cwd()`) to its native identity, or `cwd_missing`, `cwd_not_directory`,
 * `network_unsupported`, `identity_unavailable`. On Windows the lexical rule runs first: a UNC cwd never touches the network.
 */
export function workspaceIdentity(cwd: string, platform: NodeJS.Platform = process.platform): WorkspaceIdentityResult {
  if (typeof cwd !== "string" || cwd.length === 0 || cwd.includes("\0")) {
    return scopeFailure("identity_unavailable", "invalid_argument", "the cwd is not a usable path");
  }
  if (!isWellFormedUtf16(cwd)) return scopeFailure("identity_unavailable", "not_utf8", "the cwd is not valid UTF-8");
  if (platform === "win32" && classifyWindowsPath(cwd) === "network") {
    return scopeFailure("network_unsupported", "unc_path", "network workspaces are not supported");
  }
  try {
    const native = directoryIdentity(path.resolve(cwd));
    const tag: IdentityPlatform = native.platform === "win32" ? "win32" : "posix";
    if (tag === "win32" && !native.canonicalPath.startsWith("\\\\?\\Volume{")) {
      return scopeFailure("identity_unavailable", "not_volume_path", "the cwd has no volume identity");
    }
    const identity = { platform: tag, canonicalPath: native.canonicalPath, dev: native.dev, ino: native.ino };
    return { kind: "identity", identity: { ...identity, digest: scopeDigest(tag, identity.canonicalPath) } };
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    switch (error.code) {
      case "not_found":
        return scopeFailure("cwd_missing", error.code, "the cwd does not exist");
      case "not_directory":
        return scopeFailure("cwd_not_directory", error.code, "the cwd is not a directory");
      case "network_unsupported":
        return scopeFailure("network_unsupported", error.code, "network workspaces are not supported");
      default:
        return scopeFailure("identity_unavailable", error.errnoName ?? error.code, `no native identity for the cwd (${error.code})`);
    }
  }
}

/**
 * The identity a workspace that no longer exists had, for reaching its sessions on an explicit request: the native
 * identity of its nearest existing ancestor with the missing names appended as spelt (so the directory, made again at
 * that path, resolves to the same scope). An existing `cwd` gets {@link workspaceIdentity}'s answer. `dev` and `ino`
 * are empty: the directory is gone.
 */
export function formerWorkspaceIdentity(cwd: string, platform: NodeJS.Platform = process.platform): WorkspaceIdentityResult {
  const found = workspaceIdentity(cwd, platform);
  if (found.kind !== "error" || found.code !== "cwd_missing") return found;
  const missing: string[] = [];
  let at = path.resolve(cwd);
  for (;;) {
    const parent = path.dirname(at);
    if (parent === at) return found;
    missing.unshift(path.basename(at));
    at = parent;
    const ancestor = workspaceIdentity(at, platform);
    if (ancestor.kind === "error" && ancestor.code === "cwd_missing") continue;
    if (ancestor.kind === "error") return ancestor;
    const separator = ancestor.identity.platform === "win32" ? "\\" : "/";
    const base = ancestor.identity.canonicalPath;
    const canonicalPath = [base.endsWith(separator) ? base.slice(0, -1) : base, ...missing].join(separator);
    const { platform: tag } = ancestor.identity;
    return { kind: "identity", identity: { platform: tag, canonicalPath, dev: "", ino: "", digest: scopeDigest(tag, canonicalPath) } };
  }
}
