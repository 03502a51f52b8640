/** The audit of an agent directory: owner-only and integrity findings per object, and the safe repairs (the CLI only formats them). */
export { auditAgentDir } from "./audit.js";
export type { AuditOptions } from "./audit.js";
export { AuditError } from "./errors.js";
export type { AuditErrorCode } from "./errors.js";
export { MAX_LINE_FINDINGS_PER_FILE } from "./content.js";
export { AUDIT_FINDING_CODES, AUDIT_FIXABLE_CODES, AuditFindingSchema, AuditObjectSchema, AuditRepairSchema, AuditReportSchema } from "./schema.js";
export type { AuditFinding, AuditFindingCode, AuditObject, AuditObjectType, AuditRepair, AuditReport, AuditSeverity } from "./schema.js";
