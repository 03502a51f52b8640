/**
 * Builders for raw Linux POSIX ACL xattr values (kernel posix_acl_xattr format).
 */
import { spawnSync } from "node:child_process";

/** ACL entry tags. */
export const ACL_TAG = { USER_OBJ: 0x01, USER: 0x02, GROUP_OBJ: 0x04, GROUP: 0x08, MASK: 0x10, OTHER: 0x20 } as const;

/** [tag, perm, id?]; id defaults to ACL_UNDEFINED_ID for the *_OBJ, MASK and OTHER tags. */
export type AclEntry = readonly [tag: number, perm: number, id?: number];

/** Encodes a version (default 2) and entries as the bytes the kernel stores. */
export function aclBytes(entries: readonly AclEntry[], version = 2): Buffer {
  const out = Buffer.alloc(4 + entries.length * 8);
  out.writeUInt32LE(version, 0);
  entries.forEach(([tag, perm, id], i) => {
    out.writeUInt16LE(tag, 4 + i * 8);
    out.writeUInt16LE(perm, 6 + i * 8);
    out.writeUInt32LE(id ?? 0xffffffff, 8 + i * 8);
  });
  return out;
}

/** The same, as hex (for the fault shim and set_xattr). */
export function aclHex(entries: readonly AclEntry[], version = 2): string {
  return aclBytes(entries, version).toString("hex");
}

const T = ACL_TAG;

/** user::rw-, group::---, other::--- : the three required entries only. */
export const MINIMAL_ACL: readonly AclEntry[] = [
  [T.USER_OBJ, 6],
  [T.GROUP_OBJ, 0],
  [T.OTHER, 0],
];

/**
 * MINIMAL plus one named user and the mask it requires. The mask is empty so the mode's
 * group bits (which mirror the mask) stay 0: only the ACL gate can catch it. `uid` defaults
 * to 0, which is mapped in user namespaces too. `ownerPerm` becomes the owner's mode
 * bits (7 keeps a directory at 0700; on a 0600 file use 6).
 */
export function extendedAcl(uid = 0, ownerPerm = 7): AclEntry[] {
  return [
    [T.USER_OBJ, ownerPerm],
    [T.USER, 4, uid],
    [T.GROUP_OBJ, 0],
    [T.MASK, 0],
    [T.OTHER, 0],
  ];
}

/**
 * Stores {@link extendedAcl} (named user 0 may read) as the access ACL of `target` with the `set_xattr` test tool;
 * false when the filesystem cannot store ACLs (a probe file tells whether ACL cases can run).
 */
export function trySetAcl(setXattr: string, target: string, ownerPerm = 6): boolean {
  return spawnSync(setXattr, [target, "system.posix_acl_access", aclHex(extendedAcl(0, ownerPerm))]).status === 0;
}
