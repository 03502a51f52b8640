/**
 * The session layer: format (schemas, ids, JSONL, load, migrations, patches, validation) and
 * model. Pure: strings and bytes in, objects out; nothing here touches the disk.
 */
export * from "./schemas.js";
export * from "./ids.js";
export * from "./errors.js";
export * from "./salvage.js";
export * from "./jsonl.js";
export * from "./migrate.js";
export * from "./patches.js";
export * from "./validate.js";
export * from "./load.js";
export * from "./schema-check.js";
export * from "./tree.js";
export * from "./context.js";
export * from "./messages.js";
export * from "./sanitize.js";
export * from "./blob-refs.js";
export * from "./usage.js";
export * from "./peer-format.js";
export * from "./pi-context.js";
export * from "./entry-drafts.js";
export * from "./line-scan.js";
