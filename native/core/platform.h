// The operations every platform implements (Linux: posix/ + linux/, macOS: posix/ +
// darwin/, Windows: win32/): the contract between the N-API binding and the platform files.
//
// Shared rules for every function:
//  - A `name` is one directory entry, validated with is_valid_name() before any syscall
//    (invalid_name otherwise, nothing touched).
//  - Nothing is opened through a symbolic link or reparse point: a link where a directory
//    or file is expected is symlink_refused, not followed.
//  - Every handle is close-on-exec / non-inheritable, and owned by an OwnedHandle from the
//    moment the OS returns it.
//  - "Owner-only": right type, owner == the effective user, permission bits exactly 0700
//    (directory) or 0600 (file), a file has exactly one link, and no ACL grants anything
//    (Linux: no system.posix_acl_* xattr; macOS: no extended ACL entry; Windows: owner SID ==
//    user, protected DACL with one allow ACE).
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

// What the ACL gate proved for one attribute. `unsupported` (Linux ENOTSUP/EOPNOTSUPP) is
// only reported after the type/owner/mode checks on the same handle passed; `default_acl`
// is not_applicable for files and on platforms without default ACLs.
enum class Evidence : std::uint8_t { absent, unsupported, not_applicable };
struct VerifyEvidence {
  Evidence access_acl = Evidence::absent;
  Evidence default_acl = Evidence::not_applicable;
};

enum class EntryType : std::uint8_t { file, directory, symlink, fifo, socket, char_device, block_device, unknown };
const char* entry_type_name(EntryType type) noexcept;

// Metadata of one object, never following a link: `mode` the low 12 bits, `uid` 0 on Windows,
// times in ns since 1970.
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
  bool write = false;   // positional writes
  bool append = false;  // implies write; every write lands at the end
  CreateMode create = CreateMode::none;
  // repair_file an existing file whose mode or ACLs deviate instead of refusing it; creates
  // nothing, and the wrong type, another owner or a second link is still refused.
  bool repair = false;
};

// What open_root / open_dir do with the directory they reach.
enum class DirPolicy : std::uint8_t {
  verify,  // it must exist and be owner-only
  create,  // a missing one is created owner-only; an existing one is verified
  repair,  // as repair_file, for a directory
  // For a directory only read through (an older tool's 0755 agent directory): one of the
  // effective user is accepted whatever its mode and ACLs. POSIX only; Windows verifies.
  owned,
};

struct DirOpenOptions {
  DirPolicy policy = DirPolicy::verify;
  // With `create`: no parent sync after a creation, as the caller syncs a whole staging tree
  // once (Windows has no directory sync).
  bool defer_sync = false;
};

// All aliases of one directory give equal values. dev/ino are decimal strings (Windows:
// volume serial, and the 128-bit FileId in hex).
struct DirectoryIdentity {
  std::string platform;        // "linux", "darwin" or "win32"
  std::string canonical_path;  // UTF-8; Windows: the VOLUME_NAME_GUID form
  std::string dev;
  std::string ino;
};

// Opens the trusted root, an absolute normalised path (no "." or "..", no trailing
// separator). Its existing ancestors are canonicalised (links in them resolved); the last
// component must not be a link. With DirPolicy::create missing components are created
// owner-only, otherwise a missing root is not_found; the policy applies to the root itself.
// POSIX: the canonical ancestors are opened one by one from "/" without following a link,
// each owned by root or the effective user and not group- or other-writable unless sticky
// (insecure_ancestor); a component turned into a link meanwhile is symlink_refused.
// Windows trusts the ancestors as given (README).
Result<OwnedHandle> open_root(const std::string& absolute_path, const DirOpenOptions& options);

// Opens directory `name` below `parent` as `options.policy` says. A created directory that
// deviates (umask, inherited default ACL) is forced owner-only; an existing one is verified
// like any other (existence is never trusted).
Result<OwnedHandle> open_dir(NativeHandle parent, std::string_view name, const DirOpenOptions& options);

// Opens regular file `name` below `parent` and verifies it owner-only (or repairs it); a FIFO
// or device never blocks the open. CreateMode::exclusive fails with already_exists on a
// taken name; a created file that deviates is forced owner-only, then verified.
Result<OwnedHandle> open_file(NativeHandle parent, std::string_view name, const FileOpenOptions& options);

// Checks an open handle against the owner-only rules, on that handle.
Result<VerifyEvidence> verify_directory(NativeHandle dir);
Result<VerifyEvidence> verify_file(NativeHandle file);

// On an object of the right type owned by the effective user (else the verify failure, and
// nothing changed): force the exact mode, remove ACLs, verify again.
Result<VerifyEvidence> repair_directory(NativeHandle dir);
Result<VerifyEvidence> repair_file(NativeHandle file);

// Entries without "." and "..", in no particular order, typed from the directory entry
// (unknown where the fs gives none). A name that is not valid UTF-8 fails with not_utf8.
Result<std::vector<DirEntry>> list_directory(NativeHandle dir);

// Metadata of entry `name` below `dir`, not following a link (a link reports `symlink`).
Result<StatInfo> stat_entry(NativeHandle dir, std::string_view name);
Result<StatInfo> stat_handle(NativeHandle handle);

// Reads up to `length` bytes at `offset` (0 at the end); the writes write all and return `length`.
Result<std::size_t> read_at(NativeHandle file, void* buffer, std::size_t length, std::uint64_t offset);
Result<std::size_t> write_at(NativeHandle file, const void* data, std::size_t length, std::uint64_t offset);
// To a file opened with `append`, normally in one write call and without re-verification
// (the handle was verified when opened).
Result<std::size_t> write_append(NativeHandle file, const void* data, std::size_t length);

// Flushes a file's data and metadata, or a directory's entries, to stable storage
// (macOS: F_FULLFSYNC; Windows: FlushFileBuffers, a no-op for directories).
Status sync_handle(NativeHandle handle);

Status unlink_file(NativeHandle dir, std::string_view name);

// Renames `from` to `to` within `dir` only if `to` does not exist (already_exists; the
// target is never replaced), then syncs `dir`. Linux: renameat2(RENAME_NOREPLACE), and on
// EINVAL/ENOSYS only, linkat + unlinkat; when neither can work, fail closed.
Status publish_no_replace(NativeHandle dir, std::string_view from, std::string_view to);

// Writes `data` to `name` atomically: an owner-only temporary in `dir` is written, synced
// and verified, then published (replacing, or with `no_replace` via publish_no_replace),
// then `dir` is synced. On any failure the temporary is removed.
Status write_file_atomic(NativeHandle dir, std::string_view name, const void* data, std::size_t length,
                         bool no_replace);

// Tries once to take the kernel lock on lock file `name` below `dir` (created owner-only if
// missing, verified if present). On success the file holds `record` and the handle owns the
// lock; lock_busy when another holder has it. The kernel releases it when the holder dies.
Result<OwnedHandle> try_lock(NativeHandle dir, std::string_view name, const void* record, std::size_t record_length);

// Empties the record and releases the lock; the handle is then closed by its owner.
Status unlock(NativeHandle lock);

// Legacy sources: objects older tools made below the agent directory with looser modes
// (pi writes 0755 directories and 0644 files). Opens entry `name` below `parent` read-only,
// never through a link and never waiting on a FIFO or device, and accepts it only when, on
// that handle: it has the asked type (not_directory / not_regular_file); its owner is the
// effective user (owner_mismatch); POSIX: no write for group or other (mode_mismatch) and no
// ACL (the owner-only ACL gate); a file has one link (hardlink_refused). Windows: type, owner
// SID and links; the DACL need not be owner-only (legacy files inherit the profile's).
Result<OwnedHandle> open_source(NativeHandle parent, std::string_view name, bool directory);

// open_source of the directory at an absolute path, its ancestors trusted as open_root does.
Result<OwnedHandle> open_source_root(const std::string& absolute_path);

// Removes directory `name` below `parent` and everything in it, by handle, never following
// a link: every directory in the tree is opened relative to its parent's handle and must
// pass verify_directory before anything in it is removed; every other entry is unlinked as
// itself. A name swapped meanwhile is removed as what it is then, or the call fails
// (identity_mismatch); nothing outside the tree is opened or deleted. More than `max_depth`
// levels or `max_entries` entries: too_large, what was removed stays removed.
Status remove_tree(NativeHandle parent, std::string_view name, std::uint32_t max_depth, std::size_t max_entries);

// Sets the access and modification times (ns since 1970) of an open file, on the handle.
Status set_file_times(NativeHandle file, std::int64_t atime_ns, std::int64_t mtime_ns);

#ifdef __linux__
// The POSIX ACL xattr values (kernel format) of one object; empty where none is stored or
// the file system stores none.
struct AclValues {
  std::vector<unsigned char> access;
  std::vector<unsigned char> dflt;
};

// Linux only: the ACLs of entry `name` below `dir`, read before a repair strips them so the
// record of the repair can put them back. The entry is reached without following a link
// (O_PATH; symlink_refused) and must have the asked type (not_directory / not_regular_file);
// neither its owner nor its mode is checked, as it is read whatever they are. A value that
// does not parse is acl_malformed; a read refused or failing is acl_denied, acl_io_error or
// acl_unknown.
Result<AclValues> read_acl_values(NativeHandle dir, std::string_view name, bool directory);
#endif

// The identity of the existing directory `path` leads to (links in it are followed).
// Failures: not_found, not_directory, not_utf8, network_unsupported, identity_unavailable,
// io_error.
Result<DirectoryIdentity> directory_identity(const std::string& path);

}  // namespace gjc
