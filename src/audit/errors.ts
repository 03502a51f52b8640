/**
 * Why an audit could not run at all (as opposed to the findings it reports).
 */
import { GjcError } from "../errors.js";

/** Codes of {@link AuditError}. */
export type AuditErrorCode =
  /** the agent directory does not exist */
  | "agent_dir_not_found"
  /** the agent directory is not a directory, or the OS refused to open it */
  | "agent_dir_unusable"
  /** an argument of `auditAgentDir` is malformed */
  | "invalid_argument";

/** The audit could not run; nothing was examined (the CLI exits with status 2). */
export class AuditError extends GjcError<AuditErrorCode> {}
