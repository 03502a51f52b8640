/**
 * Prompt history: a SQLite FTS5 store beside (and independent of) the session files.
 */
export {
  DEFAULT_MAX_PENDING,
  DEFAULT_MAX_PROMPT_LENGTH,
  HistoryStorage,
} from "./history-storage.js";
export { defaultHistoryDbPath, MAX_RESULT_LIMIT } from "./arguments.js";
export type { HistoryEntry, HistoryStorageOptions } from "./history-storage.js";
export { HISTORY_ERROR_CODES, HistoryError } from "./errors.js";
export type { HistoryErrorCode, HistoryErrorDetails } from "./errors.js";
export { HISTORY_SCHEMA_VERSION } from "./schema.js";
export { HISTORY_DB_NAME } from "./owner-only.js";
export { MAX_QUERY_LENGTH, MAX_QUERY_TOKENS } from "./query.js";
