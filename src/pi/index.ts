/**
 * `gjc-session-store/pi`: the session manager and module functions with pi's signatures
 * (pi 0.58.3 / 0.73.1), for pi-based agents, on the same engine as the main entry. Where pi
 * and GJC agree the calls are the main entry's; where they differ (synchronous switches,
 * `appendModelChange(provider, modelId)`, `appendSessionInfo`, `fromHook`, the context's
 * `model`) these are pi's. See the README section "pi-based agents".
 */
export { SessionManager } from "./session-manager.js";
export type { NewSessionOptions, SessionTreeNode } from "./session-manager.js";
export { findMostRecentSession, getDefaultSessionDir, loadEntriesFromFile } from "./files.js";
export type { ListProgress, PiSessionManagerOptions, SessionInfo } from "./files.js";
export type {
  PiAppendableMessage, PiAssistantMessage, PiBashExecutionMessage, PiContentBlock, PiCustomContent, PiCustomMessage,
  PiToolResultMessage, PiUserMessage,
} from "./messages.js";
export { buildPiAgentSessionContext as buildSessionContext } from "./context-messages.js";
export type {
  PiAgentAssistantMessage, PiAgentBashExecutionMessage, PiAgentBranchSummaryMessage, PiAgentCompactionSummaryMessage, PiAgentCustomMessage,
  PiAgentMessage, PiAgentSessionContext as SessionContext, PiAgentToolResultMessage, PiAgentUserMessage, PiImageContent, PiStopReason,
  PiTextContent, PiThinkingContent, PiToolCall, PiUsage,
} from "./context-messages.js";
export {
  CURRENT_SESSION_VERSION,
  getLatestCompactionEntry,
  migrateSessionEntries,
  parseSessionEntries,
} from "../session/index.js";
export type {
  AgentMessage,
  BranchSummaryEntry,
  CompactionEntry,
  CustomEntry,
  CustomMessageEntry,
  FileEntry as SessionEntry,
  LabelEntry,
  MessageEntry,
  ModelChangeEntry,
  PiModelRef,
  SessionFileEntry as FileEntry,
  SessionHeader,
  SessionInfoEntry,
  ThinkingLevelChangeEntry,
} from "../session/index.js";
export type { ListOptions, SessionManagerOptions } from "../manager/index.js";
