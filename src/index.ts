/**
 * gjc-session-store public API. Everything a user (or the `gjc-session` CLI) imports comes
 * from this module.
 */
export { GjcError } from "./errors.js";
export * from "./session/index.js";
export * from "./fs/index.js";
export * from "./storage/index.js";
export * from "./history/index.js";
export * from "./manager/index.js";
export * from "./scope/index.js";
export * from "./migration/index.js";
export * from "./audit/index.js";
