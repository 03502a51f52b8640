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
#include "sha256.h"

namespace gjc {

// What the ACL gate proved for one attribute. `unsupported` is only ever reported after the
// type/owner/mode checks on the same handle passed (Linux ENOTSUP/EOPNOTSUPP).
enum class Evidence : std::uint8_t { absent, unsupported, not_applicable };
const char* evidence_name(Evidence evidence) noexcept;

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

// What read_directory_batch did with one entry.
enum class BatchOutcome : std::uint8_t {
  not_file,   // the directory entry is not a regular file: only stat'ed, never opened
  read,       // passed the owner-only open; its whole content is in the caller's buffer
  too_large,  // passed the owner-only open but holds more than the bound (or grew): not read
  deferred,   // passed the owner-only open but did not fit in what is left of the buffer
  refused,    // the stat, open, owner-only check or read failed: `failure` says why
};

// One entry of read_directory_batch. `type` comes from the directory entry, exactly as
// list_directory reports it. `stat` (when `stated`) is, for a regular file, the stat of its
// open handle (the object the verdict and the content are about), and for any other entry
// the no-follow stat of its name.
struct BatchEntry {
  std::string name;
  EntryType type = EntryType::unknown;
  BatchOutcome outcome = BatchOutcome::not_file;
  bool stated = false;
  StatInfo stat;
  Failure failure;               // outcome == refused
  std::size_t data_offset = 0;   // outcome == read: the content is buffer[offset, offset+length)
  std::size_t data_length = 0;
};

// Lists `dir` and, in the same call, examines every entry: each regular file (by its
// directory entry) gets the same no-follow, non-blocking owner-only open and verdict as
// open_file, is read whole into `buffer` (back to back) when it holds at most
// `max_file_bytes` and fits in what is left of `capacity`, and is closed; every other entry
// gets a no-follow stat. Per-entry failures never fail the batch; the listing's own
// failures (and not_utf8) do, as in list_directory.
Result<std::vector<BatchEntry>> read_directory_batch(NativeHandle dir, std::size_t max_file_bytes,
                                                     unsigned char* buffer, std::size_t capacity);

// One object met by walk_tree: its path below the root ('/'-separated, never empty), its
// depth (children of the root: 1) and its no-follow stat.
struct TreeEntry {
  std::string path;
  std::uint32_t depth = 0;
  StatInfo stat;
};

// What walk_tree found, or `unsupported` on platforms without it (not a failure: the
// caller walks the tree itself).
struct TreeWalk {
  bool supported = true;
  // The walk stopped early: more than max_entries entries were met (the one past the bound
  // is the last entry returned).
  bool truncated = false;
  std::vector<TreeEntry> entries;
  // A walk given `expected` collects nothing: `compared` is set, and `matches` tells whether
  // the tree met was exactly the expected one.
  bool compared = false;
  bool matches = false;
};

// Walks the unmanaged directory tree at `root` (absolute; its last component is opened
// without following a link, and it must be the directory with identity `dev`/`ino`,
// identity_mismatch otherwise) by descriptor and never through a link: every directory is
// listed, its names sorted (by bytes), and each entry stat'ed without following it; a
// directory entry at depth <= max_depth is opened no-follow (it must be the object just
// stat'ed) and walked in turn, right after its own entry, so directories come before their
// contents. Deeper directories are reported but not entered. Failures: the root's open or
// identity, any listing (not_utf8 for a name JS cannot hold), stat or open on the way.
// With `expected` (the entries of an earlier walk), the walk checks instead of collecting:
// it stops at the first entry that differs from the expected one at its place (path or
// type; for a regular file also dev, ino, size, link count, mtime or ctime) and reports
// whether the whole tree matched, entry for entry.
Result<TreeWalk> walk_tree(const std::string& root, std::uint64_t dev, std::uint64_t ino,
                           std::uint32_t max_depth, std::size_t max_entries,
                           const std::vector<TreeEntry>* expected = nullptr);

// One file for import_files: entry `name` of the source directory, to be copied to the same
// name in the destination, and the exact version it must be (times in ns since epoch).
struct ImportRequest {
  std::string name;
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
};

// What import_files did with one request.
enum class ImportOutcome : std::uint8_t {
  copied,    // created owner-only, written, read back equal; its bytes are in the buffer
  deferred,  // does not fit in what is left of the buffer: nothing was created for it
  changed,   // the source cannot be opened or is not the requested version: `change` says how
  failed,    // creating, writing or reading back the copy failed: `failure` says why
  mismatch,  // the copy did not read back as the bytes written
  skipped,   // not attempted, because an earlier request was neither copied nor deferred
};

// How a source differed from its request (outcome `changed`).
enum class ImportChange : std::uint8_t {
  none,
  unopenable,     // the no-follow open failed (`failure` has the errno; ELOOP: a link)
  not_regular,    // not a regular file
  hardlink,       // more than one link
  before_copy,    // another version than requested when opened
  while_copying,  // it read shorter or longer than its requested size
};

struct ImportEntry {
  ImportOutcome outcome = ImportOutcome::skipped;
  ImportChange change = ImportChange::none;
  Failure failure;
  std::size_t data_offset = 0;  // outcome == copied: the bytes are buffer[offset, offset+length)
  std::size_t data_length = 0;
  Sha256Digest sha256{};        // outcome == copied: the SHA-256 of those bytes
};

// What import_files returns: per request, in order; or `unsupported` on platforms without
// it (not a failure: the caller copies those files one by one instead).
struct ImportBatch {
  bool supported = true;
  std::vector<ImportEntry> entries;
};

// Copies files from an unmanaged directory into the owner-only directory `dest`, in one
// call. `source_dir` is absolute; its last component is opened without following a link,
// and it must be the directory with identity `dir_dev`/`dir_ino` (identity_mismatch
// otherwise, and nothing is done). Then, for each request in order: the entry is opened
// read-only without following a link or waiting on a FIFO and must be a single-link regular
// file of exactly the requested version; `name` is created in `dest` exclusively exactly as
// open_file does; the content goes through `buffer` (back to back) into the copy, which is
// read back and compared, and is hashed (SHA-256) as it reads back equal. A source that
// reads shorter or longer than its requested size is `changed` (while_copying); any other
// change after the open is left to the caller, who must check the sources again once the
// copies are made. Stops at
// the first request that is neither copied nor deferred; a copy it had created for that
// request is removed again (an existing name is never touched), so only copied requests
// leave a file in `dest`. Nothing is synced: the caller makes the copies durable. Failures
// of the whole call: the source directory's open or identity, the digest, and memory.
Result<ImportBatch> import_files(const std::string& source_dir, std::uint64_t dir_dev,
                                 std::uint64_t dir_ino, NativeHandle dest,
                                 const std::vector<ImportRequest>& requests,
                                 unsigned char* buffer, std::size_t capacity);

// Reads up to `length` bytes at `offset` into `buffer`; returns the count (0 at the end).
Result<std::size_t> read_at(NativeHandle file, void* buffer, std::size_t length,
                            std::uint64_t offset);

// Reads until `length` bytes or the end of the file, starting at `offset`; returns the
// count. Only a zero read marks the end: a regular file may still answer a read short (a
// signal, some file systems), and such a read is continued.
Result<std::size_t> read_fully(NativeHandle file, void* buffer, std::size_t length,
                               std::uint64_t offset);

// Reads the `size` bytes expected at `offset` and one more, into `buffer` (room for
// size + 1), to see where the file ends: returns size when it ends there, size + 1 when it
// goes on, less when it is shorter. A read that comes back short before `size` bytes is
// continued; one that ends exactly at `size` is taken as the end.
Result<std::size_t> read_to_end(NativeHandle file, void* buffer, std::size_t size,
                                std::uint64_t offset);

// Writes all `length` bytes at `offset`; returns `length`.
Result<std::size_t> write_at(NativeHandle file, const void* data, std::size_t length,
                             std::uint64_t offset);

// When the written range of write_verified goes to the device: `now` hands it to
// start_writeback at once (long streams, whose writeback then overlaps the rest of the
// copy), `later` leaves it to the caller's flush (small files, which a flush writes out
// together instead of one request each).
enum class Writeback : std::uint8_t { later, now };

// Writes all `length` bytes of `data` at `offset`, then reads the range back through the same
// handle and compares: true when exactly these bytes come back and the file ends right
// after them, false when the file does not hold what was written. With `digest`, each
// slice is added to it once it has read back equal (while it is still in the CPU cache), so
// a digest taken over a sequence of verified writes is the digest of the copy's bytes.
Result<bool> write_verified(NativeHandle file, const void* data, std::size_t length,
                            std::uint64_t offset, Writeback writeback,
                            Sha256* digest = nullptr);

// Asks the OS to start writing a just-written range of `file` out to the device now,
// without waiting for it, so that a later flush (sync_filesystem, sync_handle) finds less
// to do. Durability still comes only from that flush. Linux: sync_file_range(WRITE); macOS
// and Windows have no such request, and there it does nothing.
Status start_writeback(NativeHandle file, std::uint64_t offset, std::size_t length);

// Appends all `length` bytes to a file opened with `append`: normally one write call, and
// no per-write re-verification (the handle was verified when opened).
Result<std::size_t> write_append(NativeHandle file, const void* data, std::size_t length);

// Flushes a file's data and metadata, or a directory's entries, to stable storage
// (macOS: F_FULLFSYNC; Windows: FlushFileBuffers, a no-op for directories).
Status sync_handle(NativeHandle handle);

// What sync_filesystem did: flushed the whole file system, or found no such call on this
// platform (not a failure: the caller flushes object by object with sync_handle instead).
enum class FilesystemSync : std::uint8_t { synced, unsupported };

// Flushes every dirty file (data and metadata) and directory entry of the file system that
// `handle` lives on, and reports any writeback error on it since `handle` was opened, so
// hold a handle opened before the writes it must cover. Linux: syncfs, only on kernels
// whose syncfs reports writeback errors (5.8+); macOS and Windows: unsupported.
Result<FilesystemSync> sync_filesystem(NativeHandle handle);

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
