/**
 * What GJC hands extensions, hooks and tools instead of its manager: a frozen read-only facade
 * whose results are frozen copies (nothing it returns reaches the session), and the artifact
 * capability a tool may use to spill large output, reachable only from the real manager or a
 * facade made here: an object that merely looks like either gets none.
 */
import type { BlobPutResult } from "../storage/index.js";
import { copyValue, type FileEntry, type SessionHeader, type SessionTreeNode, type UsageStatistics } from "../session/index.js";
import { SessionManager } from "./session-manager.js";

/** The read-only view of a session manager GJC gives extensions and custom tools. */
export interface ReadonlySessionManager {
  getCwd(): string;
  getSessionDir(): string;
  getSessionId(): string;
  getSessionFile(): string | undefined;
  getSessionName(): string | undefined;
  getArtifactsDir(): string | null;
  /** The path of artifact `id` of the session's artifact manager, `null` when it has none or no such artifact. */
  getArtifactPath(id: string): Promise<string | null>;
  getLeafId(): string | null;
  getLeafEntry(): FileEntry | undefined;
  getEntry(id: string): FileEntry | undefined;
  getLabel(id: string): string | undefined;
  getBranch(fromId?: string): FileEntry[];
  getHeader(): SessionHeader | null;
  getEntries(): FileEntry[];
  getTree(): SessionTreeNode[];
  getUsageStatistics(): UsageStatistics;
}

/** Artifact writing for one manager, bound to it: what {@link sessionArtifactCapability} hands out. */
export interface SessionArtifactCapability {
  readonly allocateArtifactPath: SessionManager["allocateArtifactPath"];
  readonly saveArtifact: SessionManager["saveArtifact"];
  /** Stores bytes in the manager's blob store; present when the manager offers one (`putBlob`). */
  readonly putBlob?: (data: Uint8Array) => Promise<BlobPutResult>;
}

const capabilities = new WeakMap<SessionManager, SessionArtifactCapability>();
const facadeCapabilities = new WeakMap<object, SessionArtifactCapability>();

/**
 * A frozen facade over `manager` with GJC's sixteen getters. Entries, the tree, the header and
 * the totals come back as deep-frozen copies; the rest are plain values. The facade answers for
 * whatever session the manager is on at the time.
 */
export function createReadonlySessionManager(manager: SessionManager): ReadonlySessionManager {
  const facade: ReadonlySessionManager = Object.freeze({
    getCwd: () => manager.getCwd(),
    getSessionDir: () => manager.getSessionDir(),
    getSessionId: () => manager.getSessionId(),
    getSessionFile: () => manager.getSessionFile(),
    getSessionName: () => manager.getSessionName(),
    getArtifactsDir: () => manager.getArtifactsDir(),
    getArtifactPath: (id: string) => manager.getArtifactPath(id),
    getLeafId: () => manager.getLeafId(),
    getLeafEntry: () => frozenCopy(manager.getLeafEntry()),
    getEntry: (id: string) => frozenCopy(manager.getEntry(id)),
    getLabel: (id: string) => manager.getLabel(id),
    getBranch: (fromId?: string) => frozenCopy(manager.getBranch(fromId)),
    getHeader: () => frozenCopy(manager.getHeader() ?? null),
    getEntries: () => frozenCopy(manager.getEntries()),
    getTree: () => frozenCopy(manager.getTree()),
    getUsageStatistics: () => frozenCopy(manager.getUsageStatistics()),
  });
  facadeCapabilities.set(facade, capabilityOf(manager));
  return facade;
}

/**
 * The artifact capability of `value`: for a {@link SessionManager} of this module, one frozen
 * object per manager bound to it; for a facade from {@link createReadonlySessionManager}, its
 * manager's; for anything else, `undefined`.
 */
export function sessionArtifactCapability(value: unknown): SessionArtifactCapability | undefined {
  if (value instanceof SessionManager) return capabilityOf(value);
  if (typeof value !== "object" || value === null) return undefined;
  return facadeCapabilities.get(value);
}

function capabilityOf(manager: SessionManager): SessionArtifactCapability {
  let capability = capabilities.get(manager);
  if (capability === undefined) {
    const blobs = (manager as { putBlob?: (data: Uint8Array) => Promise<BlobPutResult> }).putBlob;
    capability = Object.freeze({
      allocateArtifactPath: manager.allocateArtifactPath.bind(manager),
      saveArtifact: manager.saveArtifact.bind(manager),
      ...(typeof blobs === "function" ? { putBlob: blobs.bind(manager) } : {}),
    });
    capabilities.set(manager, capability);
  }
  return capability;
}

/** A deep copy of `value` with every object in it frozen. */
function frozenCopy<T>(value: T): T {
  if (value === undefined || value === null) return value;
  const copy = copyValue(value);
  const seen = new Set<object>();
  const freeze = (node: unknown): void => {
    if (typeof node !== "object" || node === null || seen.has(node)) return;
    seen.add(node);
    for (const child of Object.values(node)) freeze(child);
    Object.freeze(node);
  };
  freeze(copy);
  return copy;
}
