/**
 * The synthetic agent messages that context reconstruction puts in front of the model for
 * entries that are not themselves messages (`custom_message`, `branch_summary`,
 * `compaction`). Their shapes match the peer agent's, so a context built here can be handed
 * to the same conversion step (`convertToLlm`) unchanged.
 */

/** A text or image block, or anything else a `custom_message` carries in its content array. */
export type CustomMessageContent = string | readonly unknown[];

/** The agent message made from a `custom_message` entry. */
export interface CustomAgentMessage {
  role: "custom";
  customType: string;
  content: CustomMessageContent;
  display: boolean;
  details: unknown;
  attribution: unknown;
  /** Milliseconds since the epoch, parsed from the entry's ISO timestamp. */
  timestamp: number;
}

/** The agent message made from a `branch_summary` entry. */
export interface BranchSummaryAgentMessage {
  role: "branchSummary";
  summary: string;
  /** The entry the branch left from, or `"root"`. */
  fromId: string;
  timestamp: number;
}

/** The agent message that stands in for everything a compaction summarised. */
export interface CompactionSummaryAgentMessage {
  role: "compactionSummary";
  summary: string;
  shortSummary: string | undefined;
  tokensBefore: number;
  /** Only present when the compaction carried provider-side replacement history. */
  providerPayload?: unknown;
  timestamp: number;
}

/**
 * Builds the `custom` agent message for a `custom_message` entry.
 *
 * @param timestamp - the entry's ISO timestamp; an unparseable one yields `NaN`, exactly as
 *   the peer does, because inventing a time would be worse than admitting there is none.
 */
export function createCustomMessage(
  customType: string,
  content: CustomMessageContent,
  display: boolean,
  details: unknown,
  attribution: unknown,
  timestamp: string,
): CustomAgentMessage {
  return {
    role: "custom",
    customType,
    content,
    display,
    details,
    attribution,
    timestamp: Date.parse(timestamp),
  };
}

/** Builds the `branchSummary` agent message for a `branch_summary` entry. */
export function createBranchSummaryMessage(
  summary: string,
  fromId: string,
  timestamp: string,
): BranchSummaryAgentMessage {
  return { role: "branchSummary", summary, fromId, timestamp: Date.parse(timestamp) };
}

/**
 * Builds the `compactionSummary` agent message that opens a compacted context.
 *
 * `providerPayload` is omitted from the result when undefined, so that a context serialised
 * to JSON looks the same as the peer's.
 */
export function createCompactionSummaryMessage(
  summary: string,
  tokensBefore: number,
  timestamp: string,
  shortSummary?: string,
  providerPayload?: unknown,
): CompactionSummaryAgentMessage {
  const time = Date.parse(timestamp);
  // Two literals rather than a later assignment keep the peer's key order in serialised output.
  return providerPayload === undefined
    ? { role: "compactionSummary", summary, shortSummary, tokensBefore, timestamp: time }
    : {
        role: "compactionSummary",
        summary,
        shortSummary,
        tokensBefore,
        providerPayload,
        timestamp: time,
      };
}
