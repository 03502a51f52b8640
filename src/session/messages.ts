/**
 * Agent messages by role: {@link AgentMessage} is what an agent appends (a misspelt role does not compile), the
 * synthetic ones keep the peer's shapes for its `convertToLlm`. Every type is open, since the agent owns the payload;
 * {@link StoredAgentMessage} also admits a newer agent's roles.
 */

/** A content block: text, image, tool call, thinking, or a kind this version does not know. */
interface MessageContentBlock {
  type: string;
  [key: string]: unknown;
}

/** Token and cost counts of one model response, as the peers' assistant messages carry them. */
export interface MessageUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens?: number;
  premiumRequests?: number;
  cost?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number; total: number; [key: string]: unknown };
  [key: string]: unknown;
}

/** Fields every appended message may carry. `timestamp` is milliseconds since the epoch. */
interface MessageFields {
  timestamp?: number;
  [key: string]: unknown;
}

/** What the user typed (or pasted). */
export interface UserMessage extends MessageFields {
  role: "user";
  content: string | readonly MessageContentBlock[];
}

/** A model response. `provider` and `model` name the model that produced it. */
export interface AssistantMessage extends MessageFields {
  role: "assistant";
  content: string | readonly MessageContentBlock[];
  api?: string;
  provider?: string;
  model?: string;
  usage?: MessageUsage;
  stopReason?: string;
  errorMessage?: string;
}

/** The result of one tool call. A `task` tool result may carry a sub-agent's usage in `details.usage`. */
export interface ToolResultMessage extends MessageFields {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: string | readonly MessageContentBlock[];
  details?: unknown;
  isError?: boolean;
}

/** What a command the user ran printed, and how it ended. */
interface ExecutionFields extends MessageFields {
  output?: string;
  exitCode?: number | null;
  cancelled?: boolean;
  truncated?: boolean;
  excludeFromContext?: boolean;
}

/** A shell command the user ran (`!cmd`) and what it printed. */
export interface BashExecutionMessage extends ExecutionFields {
  role: "bashExecution";
  command: string;
  fullOutputPath?: string;
}

/** Python code the user ran in the agent's kernel, and what it printed (GJC only). */
export interface PythonExecutionMessage extends ExecutionFields {
  role: "pythonExecution";
  code: string;
}

/** Files the user mentioned with `@path`, read and packed into one message (GJC only). */
export interface FileMentionMessage extends MessageFields {
  role: "fileMention";
  files: readonly { path: string; content: string; [key: string]: unknown }[];
}

/** The fields of an extension's message; `content` holds text or image blocks, or anything a `custom_message` carries. */
interface ExtensionMessageFields extends MessageFields {
  customType: string;
  content: string | readonly unknown[];
  display?: boolean;
  details?: unknown;
}

/** An extension's message in the conversation; context reconstruction makes one per `custom_message` entry. */
export interface CustomAgentMessage extends ExtensionMessageFields {
  role: "custom";
  attribution?: unknown;
}

/** The v2 name of a `custom` message; migration to v3 renames it, GJC still accepts it on append. */
export interface HookAgentMessage extends ExtensionMessageFields {
  role: "hookMessage";
}

/** The agent message made from a `branch_summary` entry. */
export interface BranchSummaryAgentMessage extends MessageFields {
  role: "branchSummary";
  summary: string;
  /** The entry the branch left from, or `"root"`. */
  fromId: string;
  timestamp: number;
}

/** The agent message that stands in for everything a compaction summarised. */
export interface CompactionSummaryAgentMessage extends MessageFields {
  role: "compactionSummary";
  summary: string;
  shortSummary?: string | undefined;
  tokensBefore: number;
  /** Only present when the compaction carried provider-side replacement history. */
  providerPayload?: unknown;
  timestamp: number;
}

/** A message an agent appends, discriminated on `role`. */
export type AgentMessage =
  | UserMessage
  | AssistantMessage
  | ToolResultMessage
  | BashExecutionMessage
  | PythonExecutionMessage
  | FileMentionMessage
  | CustomAgentMessage
  | HookAgentMessage
  | BranchSummaryAgentMessage
  | CompactionSummaryAgentMessage;

/** Every role {@link AgentMessage} names. */
export type AgentMessageRole = AgentMessage["role"];

/** A message read from a file whose role no type here names; kept as read. */
export interface UnknownRoleMessage {
  role: string;
  [key: string]: unknown;
}

/** The message of a loaded `message` entry: a known role, or one kept as read. */
export type StoredAgentMessage = AgentMessage | UnknownRoleMessage;
