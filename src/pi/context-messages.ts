/**
 * What `buildSessionContext` hands back, typed as pi types it: pi's `SessionContext.messages` is pi-agent-core's
 * `AgentMessage[]` (pi-ai's `Message` plus the roles pi-coding-agent adds), and pi's callers give that array to the
 * agent as is. The types here have pi's fields and arrays (mutable, no index signatures), so a context from this
 * entry is assignable where pi's is expected. The store passes each message on as the file holds it, as pi's own
 * store does: a role or field another agent wrote is not removed, and pi's `convertToLlm` passes over roles it does
 * not know.
 */
import { buildPiSessionContext, type FileEntry, type PiSessionContext } from "../session/index.js";

/** pi-ai's `TextContent`. */
export interface PiTextContent {
  type: "text";
  text: string;
  textSignature?: string;
}

/** pi-ai's `ThinkingContent`. */
export interface PiThinkingContent {
  type: "thinking";
  thinking: string;
  thinkingSignature?: string;
  redacted?: boolean;
}

/** pi-ai's `ImageContent`: base64 `data` of type `mimeType`. */
export interface PiImageContent {
  type: "image";
  data: string;
  mimeType: string;
}

/** pi-ai's `ToolCall`. */
export interface PiToolCall {
  type: "toolCall";
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  thoughtSignature?: string;
}

/** pi-ai's `Usage`: tokens and cost of one response. */
export interface PiUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens: number;
  cost: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
}

/** pi-ai's `StopReason`. */
export type PiStopReason = "stop" | "length" | "toolUse" | "error" | "aborted";

/** pi-ai's `UserMessage`, as the context holds it. */
export interface PiAgentUserMessage {
  role: "user";
  content: string | (PiTextContent | PiImageContent)[];
  timestamp: number;
}

/** pi-ai's `AssistantMessage`, as the context holds it. */
export interface PiAgentAssistantMessage {
  role: "assistant";
  content: (PiTextContent | PiThinkingContent | PiToolCall)[];
  api: string;
  provider: string;
  model: string;
  responseModel?: string;
  responseId?: string;
  usage: PiUsage;
  stopReason: PiStopReason;
  errorMessage?: string;
  timestamp: number;
}

/** pi-ai's `ToolResultMessage`, as the context holds it. */
export interface PiAgentToolResultMessage {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: (PiTextContent | PiImageContent)[];
  details?: unknown;
  isError: boolean;
  timestamp: number;
}

/** pi's `BashExecutionMessage`, as the context holds it. */
export interface PiAgentBashExecutionMessage {
  role: "bashExecution";
  command: string;
  output: string;
  exitCode: number | undefined;
  cancelled: boolean;
  truncated: boolean;
  fullOutputPath?: string;
  timestamp: number;
  excludeFromContext?: boolean;
}

/** pi's `CustomMessage`: an extension's message, one per `custom_message` entry on the path. */
export interface PiAgentCustomMessage {
  role: "custom";
  customType: string;
  content: string | (PiTextContent | PiImageContent)[];
  display: boolean;
  details?: unknown;
  timestamp: number;
}

/** pi's `BranchSummaryMessage`, made from a `branch_summary` entry. */
export interface PiAgentBranchSummaryMessage {
  role: "branchSummary";
  summary: string;
  fromId: string;
  timestamp: number;
}

/** pi's `CompactionSummaryMessage`, standing in for what the latest compaction summarised. */
export interface PiAgentCompactionSummaryMessage {
  role: "compactionSummary";
  summary: string;
  tokensBefore: number;
  timestamp: number;
}

/** pi-agent-core's `AgentMessage` with pi-coding-agent's roles: what the agent is given. */
export type PiAgentMessage =
  | PiAgentUserMessage
  | PiAgentAssistantMessage
  | PiAgentToolResultMessage
  | PiAgentBashExecutionMessage
  | PiAgentCustomMessage
  | PiAgentBranchSummaryMessage
  | PiAgentCompactionSummaryMessage;

/** pi's `SessionContext`: the messages the agent is given, the thinking level and the model at the leaf. */
export interface PiAgentSessionContext extends Omit<PiSessionContext, "messages"> {
  messages: PiAgentMessage[];
}

/** Rebuilds the context at `leafId` as pi does, typed as pi's `SessionContext` (see the module comment). */
export function buildPiAgentSessionContext(
  entries: readonly FileEntry[],
  leafId?: string | null,
  byId?: ReadonlyMap<string, FileEntry>,
): PiAgentSessionContext {
  const built = buildPiSessionContext(entries, leafId, byId);
  // The one place the messages as read are declared pi's: what pi wrote has these shapes, and pi types its own
  // store's context the same way without looking.
  return { ...built, messages: built.messages as PiAgentMessage[] };
}
