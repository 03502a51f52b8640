/** Failures of the command line itself; library failures keep their own classes and codes. */
import { GjcError, type DiscoverySkipCode } from "../index.js";

/** Codes of {@link CliError}: its own, and the skip code of a session file found but refused (`unsafe_entry`, ...). */
type CliErrorCode =
  | "session_not_found"
  | "ambiguous_session"
  | "unknown_entry"
  | "scope_unavailable"
  | "agent_dir_unusable"
  | "agent_dir_not_found"
  | "usage"
  | DiscoverySkipCode;

/** A request the CLI cannot carry out. */
export class CliError extends GjcError<CliErrorCode> {}
