/** Why an audit could not run at all (as opposed to the findings it reports). */
import { GjcError } from "../errors.js";

/**
 * Codes of {@link AuditError}: no agent directory; not a directory, or the OS refused to open it; `fix` pointed at
 * something that is not an agent directory (nothing changed); a malformed argument of `auditAgentDir`.
 */
export type AuditErrorCode = "agent_dir_not_found" | "agent_dir_unusable" | "not_agent_dir" | "invalid_argument";

/** The audit could not run; nothing was examined (the CLI exits with status 2). */
export class AuditError extends GjcError<AuditErrorCode> {}
