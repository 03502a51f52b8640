/**
 * The binding file ties a `v2-<digest>` directory to the one workspace identity it was made for.
 * Its bytes are canonical (compact JSON, fixed key order, one trailing LF): any edit shows.
 */
import { SecureFsError, type SecureDir } from "../fs/index.js";
import { scopeFailure, type ScopeFailure } from "./errors.js";
import { isIdentityDigest, type IdentityPlatform, type WorkspaceIdentity } from "./identity.js";

/** The binding file's name inside a scope directory. */
export const BINDING_FILE_NAME = ".gjc-managed-session-scope.v2.json";

/** The decoded binding. */
export interface ScopeBinding {
  readonly schemaVersion: 1;
  readonly layoutVersion: 2;
  readonly identityVersion: 1;
  readonly platform: IdentityPlatform;
  readonly canonicalPath: string;
  readonly identityDigest: string;
}

/** What a binding must say for a given workspace. */
export type BindingIdentity = Pick<WorkspaceIdentity, "platform" | "canonicalPath" | "digest">;

/** The exact bytes of the binding of `identity`. */
export function encodeBinding(identity: BindingIdentity): string {
  // Key order is part of the format: built literally, never from a spread.
  const binding: ScopeBinding = {
    schemaVersion: 1,
    layoutVersion: 2,
    identityVersion: 1,
    platform: identity.platform,
    canonicalPath: identity.canonicalPath,
    identityDigest: identity.digest,
  };
  return `${JSON.stringify(binding)}\n`;
}

/** Outcome of checking binding bytes. */
export type BindingCheck = { readonly kind: "valid"; readonly binding: ScopeBinding } | ScopeFailure;

/** Checks binding bytes against the expected identity: another workspace is `binding_conflict`; unparsable, misshapen or not canonical `binding_invalid`. */
export function checkBindingBytes(bytes: Uint8Array, expected: BindingIdentity): BindingCheck {
  const parsed = parseBinding(bytes);
  if (parsed.kind === "error") return parsed;
  const { binding } = parsed;
  if (binding.platform !== expected.platform || binding.canonicalPath !== expected.canonicalPath || binding.identityDigest !== expected.digest) {
    return scopeFailure("binding_conflict", "identity_mismatch", "the scope directory belongs to another workspace");
  }
  if (!parsed.canonical) return scopeFailure("binding_invalid", "not_canonical", "the scope binding is not canonically encoded");
  return { kind: "valid", binding };
}

/** Decodes binding bytes without an expected identity (for audits); `undefined` unless canonical. */
export function decodeBinding(bytes: Uint8Array): ScopeBinding | undefined {
  const parsed = parseBinding(bytes);
  return parsed.kind === "parsed" && parsed.canonical ? parsed.binding : undefined;
}

function parseBinding(bytes: Uint8Array): { readonly kind: "parsed"; readonly canonical: boolean; readonly binding: ScopeBinding } | ScopeFailure {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return scopeFailure("binding_invalid", "unparsable", "the scope binding is not valid JSON");
  }
  if (!isBindingShape(parsed)) return scopeFailure("binding_invalid", "shape", "the scope binding has the wrong shape");
  // Compared as raw bytes: the decoder drops a leading BOM, which is not canonical.
  const canonical = encodeBinding({ platform: parsed.platform, canonicalPath: parsed.canonicalPath, digest: parsed.identityDigest });
  return { kind: "parsed", canonical: Buffer.from(bytes).toString("utf8") === canonical, binding: parsed };
}

function isBindingShape(value: unknown): value is ScopeBinding {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return (
    v.schemaVersion === 1 &&
    v.layoutVersion === 2 &&
    v.identityVersion === 1 &&
    (v.platform === "posix" || v.platform === "win32") &&
    typeof v.canonicalPath === "string" &&
    isIdentityDigest(v.identityDigest)
  );
}

/**
 * The binding file's bytes, read with the fs layer's owner-only checks (a canonical one is far below
 * 64 KiB); `absent` without one; a file failing the checks is `binding_invalid` with the fs code as cause.
 */
export function readBindingFile(scopeDir: SecureDir): Buffer | { readonly kind: "absent" } | ScopeFailure {
  try {
    const file = scopeDir.openFile(BINDING_FILE_NAME);
    try {
      return file.readAll({ maxBytes: 64 * 1024 });
    } finally {
      file.close();
    }
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    if (error.code === "not_found") return { kind: "absent" };
    return scopeFailure("binding_invalid", error.code, `the scope binding cannot be used (${error.code})`);
  }
}

/** Result of reading a scope's binding. */
export type BindingRead = BindingCheck | { readonly kind: "absent" };

/** Reads and checks the binding in the held scope directory ({@link readBindingFile}). Never writes. */
export function readBinding(scopeDir: SecureDir, expected: BindingIdentity): BindingRead {
  const bytes = readBindingFile(scopeDir);
  return Buffer.isBuffer(bytes) ? checkBindingBytes(bytes, expected) : bytes;
}

/**
 * Publishes the binding of `expected` without replacing anything or, when another creator won
 * (or it existed), checks the bytes there and syncs the directory so the winner's is durable too.
 */
export function ensureBinding(scopeDir: SecureDir, expected: BindingIdentity): BindingCheck {
  const existing = readBinding(scopeDir, expected);
  if (existing.kind !== "absent") return existing;
  try {
    scopeDir.writeFileAtomic(BINDING_FILE_NAME, encodeBinding(expected), { noReplace: true });
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    if (error.code !== "already_exists") {
      return scopeFailure("durability_failed", error.code, `the scope binding could not be written (${error.code})`);
    }
  }
  const written = readBinding(scopeDir, expected);
  if (written.kind === "absent") return scopeFailure("binding_invalid", "vanished", "the scope binding disappeared");
  if (written.kind === "valid") scopeDir.sync();
  return written;
}
