/**
 * Failures of the command line itself (what the user asked for does not exist or is
 * ambiguous); library failures keep their own classes and codes.
 */
import { GjcError } from "../index.js";

/** Codes of {@link CliError}. */
export type CliErrorCode = "session_not_found" | "ambiguous_session" | "unknown_entry" | "scope_unavailable";

/** A request the CLI cannot carry out. */
export class CliError extends GjcError<CliErrorCode> {}
