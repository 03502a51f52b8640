/**
 * The audit report: finding codes, the zod schema of the machine-readable document and its types. Consumers of
 * `gjc-session audit --json` validate against {@link AuditReportSchema}; the CLI's JSON output is exactly `AuditReport`.
 */
import type { z } from "zod";

import type { SecureFsErrorCode } from "../fs/index.js";
import { lazySchemas, type Zod } from "../session/lazy-zod.js";

/** The owner-only problems, named by the `SecureFsError` code for the same condition (compiler-checked), as a refused open names it. */
const OWNER_ONLY_CODES = [
  "owner_mismatch",
  "mode_mismatch",
  "acl_present",
  "acl_malformed",
  "acl_denied",
  "acl_io_error",
  "acl_unknown",
  "symlink_refused",
  "hardlink_refused",
  "not_regular_file",
  "permission_denied",
  "io_error",
] as const satisfies readonly SecureFsErrorCode[];

/** Codes of problems found on filesystem objects. */
export const AUDIT_FS_CODES = [...OWNER_ONLY_CODES, "not_audited", "insecure_ancestor"] as const;

/** Codes of problems found in what the objects hold. */
export const AUDIT_CONTENT_CODES = [
  "invalid_header",
  "unparseable_line",
  "version_too_new",
  "invalid_version",
  "line_too_long",
  "dangling_blob_ref",
  "orphan_blob",
  "corrupt_blob",
  "invalid_blob_name",
  "stale_staging_file",
  "binding_invalid",
  "binding_conflict",
  "legacy_unmigrated",
] as const;

/** Every finding code, in documentation order. */
export const AUDIT_FINDING_CODES = [...AUDIT_FS_CODES, ...AUDIT_CONTENT_CODES] as const;

/** A stable finding code (see the README table "Audit finding codes"). */
export type AuditFindingCode = (typeof AUDIT_FINDING_CODES)[number];

/** The finding codes `fix` may fix: modes and ACLs of objects the user owns, and stale temporaries (regular files, removed). */
export const AUDIT_FIXABLE_CODES: ReadonlySet<AuditFindingCode> = new Set<AuditFindingCode>([
  "mode_mismatch",
  "acl_present",
  "acl_malformed",
  "stale_staging_file",
]);

/** Builds the report schemas once, on first use, so importing the package does not load zod (see src/lazy-zod.ts). */
function define(z: Zod) {
  const count = () => z.number().int().nonnegative();
  const AuditSeveritySchema = z.enum(["error", "warning"]);

  const AuditObjectTypeSchema = z.enum(["file", "directory", "symlink", "fifo", "socket", "char_device", "block_device", "unknown"]);

  const AuditFindingSchema = z.object({
    code: z.enum(AUDIT_FINDING_CODES),
    severity: AuditSeveritySchema,
    /** what is wrong, for people; never parsed */
    message: z.string(),
    /** 1-based line of a session file the finding is about */
    line: z.number().int().positive().optional(),
    /** a supporting value: the mode found (octal), a blob digest, a session id */
    detail: z.string().optional(),
    /** true when `--fix` may repair it (mode or ACL of an object the user owns) */
    fixable: z.boolean(),
  });

  const AuditObjectSchema = z.object({
    path: z.string(),
    type: AuditObjectTypeSchema,
    findings: z.array(AuditFindingSchema).min(1),
  });

  const AuditRepairSchema = z.object({
    path: z.string(),
    /** the finding codes this repair was about */
    codes: z.array(z.enum(AUDIT_FINDING_CODES)).min(1),
    outcome: z.enum(["repaired", "refused"]),
    /** why a repair was refused, or the error code of a repair that failed */
    reason: z.string().optional(),
    /** a repaired object's mode before the fix, in octal (`0755`); also in the report's `undoFile` */
    previousMode: z.string().optional(),
    /** true when the fix removed an ACL of the object */
    aclRemoved: z.boolean().optional(),
  });

  const AuditReportSchema = z.object({
    schema: z.literal("gjc-session-audit/1"),
    /** the audited agent directory, absolute */
    agentDir: z.string(),
    startedAt: z.string(),
    durationMs: z.number().nonnegative(),
    /** true when no finding is left (repaired ones do not count) */
    clean: z.boolean(),
    counts: z.object({ directories: count(), files: count(), sessions: count(), blobs: count(), errors: count(), warnings: count() }),
    /** objects with at least one finding left, in walk order */
    objects: z.array(AuditObjectSchema),
    /** present only when the audit ran with `fix` */
    repairs: z.array(AuditRepairSchema).optional(),
    /** the owner-only shell script holding the old modes of what `fix` changed (`sh` it to restore them); absent when nothing was changed */
    undoFile: z.string().optional(),
  });

  return { AuditSeveritySchema, AuditObjectTypeSchema, AuditFindingSchema, AuditObjectSchema, AuditRepairSchema, AuditReportSchema };
}

/** The schemas, as {@link define} builds them. */
type Schemas = ReturnType<typeof define>;

const schemas = lazySchemas(define);

/** One problem with one object. */
export const AuditFindingSchema = schemas.lazy("AuditFindingSchema");
/** An object with its findings. `path` is relative to the agent dir (`.` is the dir itself). */
export const AuditObjectSchema = schemas.lazy("AuditObjectSchema");
/** What `--fix` did about one object. */
export const AuditRepairSchema = schemas.lazy("AuditRepairSchema");
/** The whole audit document (`gjc-session audit --json`). */
export const AuditReportSchema = schemas.lazy("AuditReportSchema");

/** One finding. */
export type AuditFinding = z.infer<Schemas["AuditFindingSchema"]>;
/** An object with its findings. */
export type AuditObject = z.infer<Schemas["AuditObjectSchema"]>;
/** What `--fix` did about one object. */
export type AuditRepair = z.infer<Schemas["AuditRepairSchema"]>;
/** The audit document. */
export type AuditReport = z.infer<Schemas["AuditReportSchema"]>;
/** The OS type of an audited object, as reported without following links. */
export type AuditObjectType = z.infer<Schemas["AuditObjectTypeSchema"]>;
/** How bad a finding is. Warnings concern things outside the store's control. */
export type AuditSeverity = z.infer<Schemas["AuditSeveritySchema"]>;
