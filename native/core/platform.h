// The operations every platform implements (Linux: posix/ + linux/, macOS: posix/ +
// darwin/, Windows: win32/). This header is the contract between the N-API binding and
// the platform files; each comment below is a promise an implementation must keep.
//
// Shared rules for every function:
//  - A `name` is one directory entry. It is validated with is_valid_name() before any
//    syscall; a bad name returns Code::invalid_name and touches nothing.
//  - Nothing is ever opened through a symbolic link or reparse point: a link where a
//    directory or file is expected returns Code::symlink_refused (the link is not followed).
//  - Every handle is created close-on-exec / non-inheritable, and owned by an OwnedHandle
//    from the moment the OS returns it.
//  - "Owner-only" means: right type, owner == the effective user, permission bits exactly
//    0700 (directory) or 0600 (file) with no setuid/setgid/sticky, a file has exactly one
//    link, and no ACL grants anything (Linux: no system.posix_acl_* xattr; macOS: no
//    extended ACL entry; Windows: owner SID == user, protected DACL with one allow ACE).
//  - Functions never throw; failures come back as a Failure with a stable Code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "handle.h"
#include "result.h"

namespace gjc {

// What the ACL gate proved for one attribute. `unsupported` is only ever reported after the
// type/owner/mode checks on the same handle passed (Linux ENOTSUP/EOPNOTSUPP).
enum class Evidence : std::uint8_t { absent, unsupported, not_applicable };

// The evidence returned by a successful verify. `default_acl` is not_applicable for files
// and on platforms without default ACLs.
struct VerifyEvidence {
  Evidence access_acl = Evidence::absent;
  Evidence default_acl = Evidence::not_applicable;
};

enum class EntryType : std::uint8_t {
  file, directory, symlink, fifo, socket, char_device, block_device, unknown
};
const char* entry_type_name(EntryType type) noexcept;

// Metadata of one object, never following a link. `mode` holds the low 12 permission bits
// (07777). `uid` is the numeric owner on POSIX and 0 on Windows. Times are ns since epoch.
struct StatInfo {
  EntryType type = EntryType::unknown;
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::uint64_t size = 0;
  std::uint64_t nlink = 0;
  std::uint32_t mode = 0;
  std::uint64_t uid = 0;
  std::int64_t atime_ns = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
};

struct DirEntry {
  std::string name;
  EntryType type = EntryType::unknown;
};

enum class CreateMode : std::uint8_t { none, exclusive, if_missing };

struct FileOpenOptions {
  bool write = false;   // open for writing (positional writes)
  bool append = false;  // open for appending (implies write); every write lands at the end
  CreateMode create = CreateMode::none;
  // Instead of refusing an existing file whose mode or ACLs deviate, apply repair_file to
  // it. Nothing is created (`create` is ignored); the wrong type, another owner or more
  // than one link is still refused and left unchanged (audit --fix style callers).
  bool repair = false;
};

// What open_root / open_dir do with the directory they reach.
enum class DirPolicy : std::uint8_t {
  verify,  // it must exist and be owner-only
  create,  // a missing one is created owner-only; an existing one is verified
  // An existing one with a deviating mode or ACLs is fixed by repair_directory; nothing is
  // created, and the wrong type or another owner is still refused and left unchanged.
  repair,
  // For a directory only read through (an older tool's 0755 agent directory): one of the
  // effective user is accepted whatever its mode and ACLs, and nothing is created or
  // changed. POSIX only; Windows verifies in full.
  owned,
};

struct DirOpenOptions {
  DirPolicy policy = DirPolicy::verify;
  // With `create`: a creation is not made durable by syncing the parent; the caller does
  // it (sync_filesystem, or sync_handle on the parent), as a staging tree does once for
  // all of its entries. Windows has no directory sync, and there it changes nothing.
  bool defer_sync = false;
};

// The native identity of a directory: all aliases of one directory give equal values.
// dev/ino are decimal strings (Windows: volume serial and the 128-bit FileId in hex).
struct DirectoryIdentity {
  std::string platform;        // "linux", "darwin" or "win32"
  std::string canonical_path;  // UTF-8; Windows: the VOLUME_NAME_GUID form
  std::string dev;
  std::string ino;
};

// Opens the trusted root. `absolute_path` is absolute and already normalised (no "." or
// ".." segments, no trailing separator). Its existing ancestors are canonicalised (links
// in them are resolved); the final component itself must not be a link. With
// DirPolicy::create, missing components are created owner-only; otherwise a missing root
// is not_found, and the policy applies to the root itself.
// POSIX: the canonical ancestors are then opened one by one from "/" without following a
// link, and each must be owned by root or the effective user and not group- or
// other-writable unless sticky (insecure_ancestor otherwise); a component turned into a
// link meanwhile is symlink_refused. Windows trusts the ancestors as given (README).
// Without repair or owned, the returned directory handle has passed verify_directory.
Result<OwnedHandle> open_root(const std::string& absolute_path, const DirOpenOptions& options);

// Opens directory `name` below `parent` as `options.policy` says. A created directory that
// deviates (umask, inherited default ACL) is forced to 0700 with ACLs stripped, then
// verified; an existing one is opened and verified like any other (existence is never
// trusted).
Result<OwnedHandle> open_dir(NativeHandle parent, std::string_view name,
                             const DirOpenOptions& options);

// Opens regular file `name` below `parent` and verifies it owner-only (or repairs it, with
// `options.repair`). A FIFO or device never blocks the open. CreateMode::exclusive fails
// with already_exists when the name is taken; if_missing creates or opens-and-verifies. A
// created file that is not owner-only as created (umask, inherited default ACL) is forced
// to 0600 with ACLs stripped; then it is verified.
Result<OwnedHandle> open_file(NativeHandle parent, std::string_view name,
                              const FileOpenOptions& options);

// Checks an open directory / file handle against the owner-only rules, on that handle.
Result<VerifyEvidence> verify_directory(NativeHandle dir);
Result<VerifyEvidence> verify_file(NativeHandle file);

// Owner-only apply on an existing object: only when it has the right type and is owned by
// the effective user (otherwise the matching verify failure, e.g. owner_mismatch, and
// nothing is changed), force the exact mode, remove ACLs, then verify again. A file with
// more than one link is not repairable (hardlink_refused).
Result<VerifyEvidence> repair_directory(NativeHandle dir);
Result<VerifyEvidence> repair_file(NativeHandle file);

// Entries of a directory, without "." and "..", in no particular order. The type comes
// from the directory entry (never by following a link); unknown where the fs gives none.
// A name that is not valid UTF-8 fails the whole listing with not_utf8.
Result<std::vector<DirEntry>> list_directory(NativeHandle dir);

// Metadata of entry `name` below `dir`, not following a link (a link reports `symlink`).
Result<StatInfo> stat_entry(NativeHandle dir, std::string_view name);

// Metadata of an open handle.
Result<StatInfo> stat_handle(NativeHandle handle);

// Reads up to `length` bytes at `offset` into `buffer`; returns the count (0 at the end).
Result<std::size_t> read_at(NativeHandle file, void* buffer, std::size_t length,
                            std::uint64_t offset);

// Writes all `length` bytes at `offset`; returns `length`.
Result<std::size_t> write_at(NativeHandle file, const void* data, std::size_t length,
                             std::uint64_t offset);

// Appends all `length` bytes to a file opened with `append`: normally one write call, and
// no per-write re-verification (the handle was verified when opened).
Result<std::size_t> write_append(NativeHandle file, const void* data, std::size_t length);

// Flushes a file's data and metadata, or a directory's entries, to stable storage
// (macOS: F_FULLFSYNC; Windows: FlushFileBuffers, a no-op for directories).
Status sync_handle(NativeHandle handle);

// Removes file `name` below `dir`. Refuses directories (not_regular_file).
Status unlink_file(NativeHandle dir, std::string_view name);

// Renames `from` to `to` within `dir` only if `to` does not exist (already_exists
// otherwise; the target is never replaced). Linux: renameat2(RENAME_NOREPLACE), and on
// EINVAL/ENOSYS only, linkat + unlinkat; when neither can work, fail closed. Then syncs dir.
Status publish_no_replace(NativeHandle dir, std::string_view from, std::string_view to);

// Writes `data` to `name` atomically: an owner-only temporary file in `dir` is written,
// synced and verified, then published (replacing, or with `no_replace` via
// publish_no_replace), then `dir` is synced. On any failure the temporary is removed.
Status write_file_atomic(NativeHandle dir, std::string_view name, const void* data,
                         std::size_t length, bool no_replace);

// Tries once to take the kernel lock on lock file `name` below `dir` (created owner-only
// if missing, verified if present). On success the file holds `record` (replacing what was
// there) and the returned handle owns the lock; lock_busy when another holder has it. The
// kernel releases the lock when the holder dies.
Result<OwnedHandle> try_lock(NativeHandle dir, std::string_view name, const void* record,
                             std::size_t record_length);

// Empties the record and releases the lock explicitly; the handle is then closed by its owner.
Status unlock(NativeHandle lock);

// Legacy sources: objects below the agent directory that older tools made with looser
// permissions than owner-only (pi writes 0755 directories and 0644 files). open_source opens
// entry `name` below `parent` read-only, never through a link or reparse point (a link is
// symlink_refused, not followed) and never waiting on a FIFO or device, and accepts it only
// when, on that very handle: it has the asked type (not_directory / not_regular_file); its
// owner is the effective user (owner_mismatch); POSIX: no write permission for group or
// other (mode_mismatch) and no ACL (the owner-only ACL gate); a file has exactly one link
// (hardlink_refused). Windows: type, owner SID and links as above; the DACL is not
// required to be owner-only (legacy files inherit the profile's), reading grants nothing.
Result<OwnedHandle> open_source(NativeHandle parent, std::string_view name, bool directory);

// open_source for a directory given by absolute path: its ancestors are trusted as given
// (canonicalised, as open_root does), its last component is opened as open_source does.
Result<OwnedHandle> open_source_root(const std::string& absolute_path);

// Removes directory `name` below `parent` and everything in it, by handle, never following
// a link or reparse point: the directory and every directory below it is opened no-follow
// relative to its parent's handle and must pass verify_directory (owner-only) before
// anything in it is removed; every other entry (file, link, FIFO, socket, device) is
// unlinked as itself. A name swapped while it is removed is removed as what it is then,
// or the call fails (identity_mismatch); nothing outside the tree is opened or deleted.
// More than `max_depth` levels or `max_entries` entries: too_large, and what was removed
// so far stays removed. A missing `name` is not_found.
Status remove_tree(NativeHandle parent, std::string_view name, std::uint32_t max_depth,
                   std::size_t max_entries);

// Sets the access and modification times (ns since 1970) of an open file handle, on the
// handle itself (POSIX futimens; Windows SetFileInformationByHandle on a reopened handle).
Status set_file_times(NativeHandle file, std::int64_t atime_ns, std::int64_t mtime_ns);

// The identity of an existing directory reached by `path` (links in it are followed: the
// identity is that of the directory they lead to). Failures: not_found, not_directory,
// not_utf8, network_unsupported, identity_unavailable, io_error.
Result<DirectoryIdentity> directory_identity(const std::string& path);

}  // namespace gjc
