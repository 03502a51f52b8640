/*
 * A SQLite loadable extension (Linux only) registering, as the default VFS, SQLite's "unix"
 * VFS with one change: a path /proc/self/fd/<n>/<name> is kept as given. The unix VFS would
 * resolve the /proc link back to the directory's path, which is looked up by name again at
 * every open of the database, its -wal, -shm and -journal, so a swapped component could
 * redirect them; kept as given, the kernel resolves <n> to the held directory and the last
 * component is opened with O_NOFOLLOW. src/history loads it once per process.
 */
#include <string.h>

#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1

static const char kPinnedVfsName[] = "gjc-pinned";
static const char kPrefix[] = "/proc/self/fd/";

static sqlite3_vfs pinned_vfs;
static sqlite3_vfs* unix_vfs;

/* /proc/self/fd/<digits>/<one name>, the name neither "." nor ".." (which would climb out). */
static int is_pinned_path(const char* path) {
  const size_t prefix = sizeof(kPrefix) - 1;
  if (strncmp(path, kPrefix, prefix) != 0) return 0;
  const char* p = path + prefix;
  if (*p < '0' || *p > '9') return 0;
  while (*p >= '0' && *p <= '9') ++p;
  if (*p != '/') return 0;
  const char* name = p + 1;
  if (*name == '\0' || strchr(name, '/') != NULL) return 0;
  if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return 0;
  return 1;
}

static int pinned_full_pathname(sqlite3_vfs* vfs, const char* path, int out_size, char* out) {
  (void)vfs;
  if (!is_pinned_path(path)) return unix_vfs->xFullPathname(unix_vfs, path, out_size, out);
  const size_t length = strlen(path);
  if (out_size <= 0 || length + 1 > (size_t)out_size) return SQLITE_CANTOPEN;
  memcpy(out, path, length + 1);
  return SQLITE_OK;
}

#ifdef _WIN32
__declspec(dllexport)
#else
__attribute__((visibility("default")))
#endif
    int sqlite3_gjcpinnedvfs_init(sqlite3* db, char** error, const sqlite3_api_routines* api) {
  (void)db;
  (void)error;
  SQLITE_EXTENSION_INIT2(api);
  if (sqlite3_vfs_find(kPinnedVfsName) == NULL) {
    unix_vfs = sqlite3_vfs_find("unix");
    if (unix_vfs == NULL) return SQLITE_ERROR;
    /* The unix VFS's methods read their own settings (pAppData, szOsFile, mxPathname) from
     * the VFS object they are called with, so a copy serves them unchanged. */
    pinned_vfs = *unix_vfs;
    pinned_vfs.pNext = NULL;
    pinned_vfs.zName = kPinnedVfsName;
    pinned_vfs.xFullPathname = pinned_full_pathname;
    const int rc = sqlite3_vfs_register(&pinned_vfs, 1);
    if (rc != SQLITE_OK) return rc;
  }
  /* The VFS must outlive the connection that loaded it. */
  return SQLITE_OK_LOAD_PERMANENTLY;
}
