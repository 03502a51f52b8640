/**
 * GJC's session-memory telemetry, as this store's truth. GJC keeps a sidecar and cold-memory
 * runtime to bound what a long session holds; this store holds the parsed session and nothing
 * beside it, so there are no sidecars, caches, cold retirement or reopens to report, and the held
 * session's size is reported where GJC reports its resident hot set.
 */
import type { FileEntry } from "../session/index.js";

/** GJC's phase timing record (always empty here: no first-open phases run). */
export interface SessionMemoryPhaseTelemetry {
  wallMs: number;
  cpuMs: number | null;
}

/** GJC's bounded first-open telemetry; zero-valued here, as GJC's is when no bounded open ran. */
export interface SessionMemoryFirstOpenTelemetry {
  attempted: boolean;
  succeeded: boolean;
  strategy: "current" | "none" | "async" | "pressure";
  secondaryArtifactMode: "auto" | "enabled" | "disabled";
  wallMs: number;
  cpuMs: number;
  gcRequests: number;
  gcRequestCount: number;
  gcElapsedMs: number;
  bytesRead: number;
  transcriptBytesRead: number;
  bytesWritten: number;
  sidecarBytesWritten: number;
  sidecarFileBytes: number;
  recordsParsed: number;
  semanticRecordsParsed: number;
  suffixRecordsParsed: number;
  lineAssemblyCopyCount: number;
  lineCopyCount: number;
  lineAssemblyCopyBytes: number;
  indexWriteCalls: number;
  indexWriteBytes: number;
  fsyncCount: number;
  fsyncElapsedMs: number;
  phaseTelemetry: Record<string, SessionMemoryPhaseTelemetry>;
  phaseEvidence: Readonly<Record<string, SessionMemoryPhaseTelemetry>>;
  phaseTimings: Readonly<Record<string, SessionMemoryPhaseTelemetry>>;
  dictionaryArtifactEnabled: boolean;
  parentArtifactEnabled: boolean;
  dictionaryBuildElapsedMs: number;
  parentBuildElapsedMs: number;
  flatIndexElapsedMs: number;
}

/** GJC's `SessionMemoryStats`, field for field. */
export interface SessionMemoryStats {
  sidecarEnabled: boolean;
  coldRetirementActive: boolean;
  sidecarIneligible: boolean;
  hotRegionBytes: number;
  metaDescriptorBytes: number;
  totalAccountedBytes: number;
  reservedBudgetBytes: number;
  allocatedCacheBytes: number;
  /** Here: the UTF-8 size of every entry the manager holds, as JSON. */
  hotResidentBytes: number;
  metadataResidentBytes: number;
  sidecarFileBytes: number;
  firstOpen: SessionMemoryFirstOpenTelemetry;
  lastReopenTransition: string | undefined;
  currentCommitTransition: string | undefined;
  lazyReopenAttempted: boolean;
  lazyReopenSucceeded: boolean;
  lazyReopenFallbackReason: string | undefined;
  retirementFallbackReason: string | undefined;
  autoDisabledReason: string | undefined;
  consecutiveBuildFailures: number;
  parentArtifactEnabled: boolean;
  dictionaryArtifactEnabled: boolean;
  metadataDeltaDescriptorBytes: number;
  coldIndexBytes: number;
  coldIndexBlockCacheBytes: number;
  coldEntryCacheBytes: number;
  coldEntriesRetired: number;
  coldEntriesReloaded: number;
  rangeReadCount: number;
  rangeReadGenerationMismatchCount: number;
  sidecarRebuildCount: number;
  coldMutationPromotions: number;
  hotOverflowTransitions: number;
  labelDiskFallbackCount: number;
  shadowParityMismatchCount: number;
  shadowParityCheckCount: number;
  transcriptGeneration: number;
}

/** GJC's result of `evictCompactedContent`: counts of what moved to the blob store. */
export interface EvictCompactedContentResult {
  evictedEntries: number;
  hotCharsRemoved: number;
  coldBlobBytes: number;
  payloadRefs: number;
  alreadyEvictedEntries: number;
  coldSpillWriteCount: number;
  coldSpillReadCount: number;
  residentTextReadCount: number;
  residentImageReadCount: number;
}

/** Nothing evicted (this store never moves held history out). */
export const NOTHING_EVICTED: Readonly<EvictCompactedContentResult> = Object.freeze({
  evictedEntries: 0,
  hotCharsRemoved: 0,
  coldBlobBytes: 0,
  payloadRefs: 0,
  alreadyEvictedEntries: 0,
  coldSpillWriteCount: 0,
  coldSpillReadCount: 0,
  residentTextReadCount: 0,
  residentImageReadCount: 0,
});

function noFirstOpen(): SessionMemoryFirstOpenTelemetry {
  const phases: Record<string, SessionMemoryPhaseTelemetry> = {};
  return {
    attempted: false,
    succeeded: false,
    strategy: "none",
    secondaryArtifactMode: "disabled",
    wallMs: 0,
    cpuMs: 0,
    gcRequests: 0,
    gcRequestCount: 0,
    gcElapsedMs: 0,
    bytesRead: 0,
    transcriptBytesRead: 0,
    bytesWritten: 0,
    sidecarBytesWritten: 0,
    sidecarFileBytes: 0,
    recordsParsed: 0,
    semanticRecordsParsed: 0,
    suffixRecordsParsed: 0,
    lineAssemblyCopyCount: 0,
    lineCopyCount: 0,
    lineAssemblyCopyBytes: 0,
    indexWriteCalls: 0,
    indexWriteBytes: 0,
    fsyncCount: 0,
    fsyncElapsedMs: 0,
    phaseTelemetry: phases,
    phaseEvidence: phases,
    phaseTimings: phases,
    dictionaryArtifactEnabled: false,
    parentArtifactEnabled: false,
    dictionaryBuildElapsedMs: 0,
    parentBuildElapsedMs: 0,
    flatIndexElapsedMs: 0,
  };
}

/** The stats of a manager holding `heldBytes` of session entries. */
export function memoryStats(heldBytes: number): SessionMemoryStats {
  return {
    sidecarEnabled: false,
    coldRetirementActive: false,
    sidecarIneligible: false,
    hotRegionBytes: heldBytes,
    metaDescriptorBytes: 0,
    totalAccountedBytes: heldBytes,
    reservedBudgetBytes: 0,
    allocatedCacheBytes: 0,
    hotResidentBytes: heldBytes,
    metadataResidentBytes: 0,
    sidecarFileBytes: 0,
    firstOpen: noFirstOpen(),
    lastReopenTransition: undefined,
    currentCommitTransition: undefined,
    lazyReopenAttempted: false,
    lazyReopenSucceeded: false,
    lazyReopenFallbackReason: undefined,
    retirementFallbackReason: undefined,
    autoDisabledReason: undefined,
    consecutiveBuildFailures: 0,
    parentArtifactEnabled: false,
    dictionaryArtifactEnabled: false,
    metadataDeltaDescriptorBytes: 0,
    coldIndexBytes: 0,
    coldIndexBlockCacheBytes: 0,
    coldEntryCacheBytes: 0,
    coldEntriesRetired: 0,
    coldEntriesReloaded: 0,
    rangeReadCount: 0,
    rangeReadGenerationMismatchCount: 0,
    sidecarRebuildCount: 0,
    coldMutationPromotions: 0,
    hotOverflowTransitions: 0,
    labelDiskFallbackCount: 0,
    shadowParityMismatchCount: 0,
    shadowParityCheckCount: 0,
    transcriptGeneration: 0,
  };
}

/** The UTF-8 size of `entries` as JSON lines: what the manager holds of them. */
export function heldEntryBytes(entries: readonly FileEntry[]): number {
  let bytes = 0;
  for (const entry of entries) bytes += Buffer.byteLength(JSON.stringify(entry), "utf8") + 1;
  return bytes;
}

/** The decoded sizes of the distinct images the entries hold inline. */
export function heldImageBytes(entries: readonly FileEntry[]): number {
  const seen = new Set<string>();
  let bytes = 0;
  const visit = (content: unknown): void => {
    if (!Array.isArray(content)) return;
    for (const block of content as { type?: unknown; data?: unknown }[]) {
      if (block?.type !== "image" || typeof block.data !== "string" || block.data.startsWith("blob:") || seen.has(block.data)) continue;
      seen.add(block.data);
      bytes += Buffer.byteLength(block.data, "base64");
    }
  };
  for (const entry of entries) {
    const record = entry as { type?: string; message?: { content?: unknown }; content?: unknown };
    if (record.type === "message") visit(record.message?.content);
    else if (record.type === "custom_message") visit(record.content);
  }
  return bytes;
}
