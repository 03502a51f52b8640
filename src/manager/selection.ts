/**
 * Which discoverable tools a session has explicitly chosen, in two independent domains: MCP tools (`mcp_tool_selection`) and
 * discovered built-ins (`discovered_builtin_tool_selection`). A list speaks only for the domains its names belong to; essential
 * built-ins are always on, so naming them is never a choice and never persisted; an empty list clears both domains.
 */
import { randomUUID } from "node:crypto";

import { SessionManagerError } from "./errors.js";

/** Where a tool name belongs: an MCP tool, a discoverable built-in, or an essential (baseline) built-in. */
export type ToolDomain = "mcp" | "builtin" | "essential_builtin";

/** Tells the manager which domain a tool name belongs to; supplied by the host agent. */
export type ToolClassifier = (name: string) => ToolDomain;

/** What one selection mutation sets: a present domain (even `[]`) gets exactly these names, an absent one is left alone. */
export interface ToolSelectionChange {
  mcp?: readonly string[];
  discoveredBuiltin?: readonly string[];
}

/** The selection state of a session at its current leaf; `undefined` means "no authority". */
export interface ToolSelectionState {
  /** The MCP tools explicitly selected, or `undefined` when the configured defaults apply. */
  mcp: string[] | undefined;
  /** The discovered built-ins explicitly selected, or `undefined` when the baseline applies. */
  discoveredBuiltin: string[] | undefined;
}

/**
 * The selection change the `toolNames` of a new session stand for: `undefined` none, `[]` clears both domains, otherwise each
 * name goes to its domain (essential built-ins dropped, a domain no name belongs to left out).
 * @throws SessionManagerError `tool_classifier_required` for non-empty names without a classifier
 */
export function selectionFromToolNames(toolNames: readonly string[] | undefined, classify: ToolClassifier | undefined): ToolSelectionChange {
  if (toolNames === undefined) return {};
  if (toolNames.length === 0) return { mcp: [], discoveredBuiltin: [] };
  if (classify === undefined)
    throw new SessionManagerError("tool_classifier_required", "toolNames were given without classifyTool; their selection domain is unknown");
  const mcp: string[] = [];
  const builtin: string[] = [];
  for (const name of new Set(toolNames)) {
    const domain = classify(name);
    if (domain === "mcp") mcp.push(name);
    else if (domain === "builtin") builtin.push(name);
  }
  const change: ToolSelectionChange = {};
  if (mcp.length > 0) change.mcp = mcp;
  if (builtin.length > 0) change.discoveredBuiltin = builtin;
  return change;
}

/** The drafts one selection change appends, MCP first; a change touching both shares one correlation id. */
export function selectionDrafts(change: ToolSelectionChange): SelectionDraft[] {
  const shared = change.mcp !== undefined && change.discoveredBuiltin !== undefined ? { mutationCorrelationId: randomUUID() } : {};
  const drafts: SelectionDraft[] = [];
  if (change.mcp !== undefined) drafts.push({ type: "mcp_tool_selection", selectedToolNames: [...change.mcp], ...shared });
  if (change.discoveredBuiltin !== undefined)
    drafts.push({ type: "discovered_builtin_tool_selection", selectedToolNames: [...change.discoveredBuiltin], ...shared });
  return drafts;
}

/** A draft of one selection entry. */
type SelectionDraft = { type: "mcp_tool_selection" | "discovered_builtin_tool_selection"; selectedToolNames: string[]; mutationCorrelationId?: string };
