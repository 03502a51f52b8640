/** Prompt history: a SQLite FTS5 store beside (and independent of) the session files. */
export { HistoryStorage } from "./history-storage.js";
export type { HistoryEntry, HistoryStorageOptions } from "./history-storage.js";
export { defaultHistoryDbPath, MAX_RESULT_LIMIT } from "./arguments.js";
export { HISTORY_ERROR_CODES, HistoryError } from "./errors.js";
export type { HistoryErrorCode } from "./errors.js";
export { HISTORY_SCHEMA_VERSION } from "./schema.js";
export { HISTORY_DB_NAME } from "./owner-only.js";
export { MAX_QUERY_LENGTH } from "./query.js";
