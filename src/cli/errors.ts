/**
 * Failures of the command line itself (what the user asked for does not exist or is
 * ambiguous); library failures keep their own classes and codes.
 */
import { GjcError, type DiscoverySkipCode } from "../index.js";

/**
 * Codes of {@link CliError}: its own, and the listing's skip code of a session file that was
 * found but is refused (`unsafe_entry`, `symlink_refused`, ...).
 */
export type CliErrorCode = "session_not_found" | "ambiguous_session" | "unknown_entry" | "scope_unavailable" | "agent_dir_unusable" | DiscoverySkipCode;

/** A request the CLI cannot carry out. */
export class CliError extends GjcError<CliErrorCode> {}
