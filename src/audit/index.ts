/**
 * The audit of an agent directory: owner-only and integrity findings per object, and the safe
 * repairs. The `gjc-session audit` command only formats what {@link auditAgentDir} returns.
 */
export { auditAgentDir } from "./audit.js";
export type { AuditOptions } from "./audit.js";
export { AuditError } from "./errors.js";
export type { AuditErrorCode } from "./errors.js";
export { DEFAULT_STALE_AFTER_MS, MAX_LINE_FINDINGS_PER_FILE, isStagingName } from "./content.js";
export {
  AUDIT_CONTENT_CODES,
  AUDIT_FINDING_CODES,
  AUDIT_FIXABLE_CODES,
  AUDIT_FS_CODES,
  AuditFindingSchema,
  AuditObjectSchema,
  AuditObjectTypeSchema,
  AuditRepairSchema,
  AuditReportSchema,
  AuditSeveritySchema,
} from "./schema.js";
export type {
  AuditFinding,
  AuditFindingCode,
  AuditObject,
  AuditObjectType,
  AuditRepair,
  AuditReport,
  AuditSeverity,
} from "./schema.js";
