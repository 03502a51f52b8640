/*
 * LD_PRELOAD fault injector for the native tests. Production code has no test hooks: this
 * library replaces glibc's fgetxattr, renameat2 and linkat in a child process and, as the
 * environment asks, makes them fail or return chosen bytes.
 *
 *   GJC_FAULT_XATTR_ERRNO=<n>     fgetxattr of system.posix_acl_* fails with errno n
 *   GJC_FAULT_XATTR_NAME=<name>   ...only for this attribute name (default: both ACL names)
 *   GJC_FAULT_XATTR_HEX=<hex>     fgetxattr of the ACL names returns these bytes
 *   GJC_FAULT_XATTR_SKIP=<n>      let the first n ACL reads through untouched (e.g. the
 *                                 root directory's), so the fault hits the object under test
 *   GJC_FAULT_RENAMEAT2_ERRNO=<n> renameat2 fails with errno n (file system unchanged)
 *   GJC_FAULT_LINKAT_ERRNO=<n>    linkat fails with errno n (file system unchanged)
 *   GJC_FAULT_FSTATFS_TYPE=<hex>  fstatfs reports this f_type (e.g. 6969 = NFS)
 *   GJC_FAULT_READLINK_ERRNO=<n>  readlink of /proc/self/fd/* fails with errno n
 *   GJC_FAULT_REALPATH_ERRNO=<n>  realpath fails with errno n
 *   GJC_FAULT_FSYNC_ERRNO=<n>     fsync of a regular file fails with errno n (directories sync)
 *   GJC_FAULT_PWRITE_FLIP=<n>     a pwrite of exactly n bytes stores its first byte inverted
 *                                 (and reports success), like a write path that corrupts data
 *   GJC_FAULT_LOG=<path>          one line per intercepted call, for the test to assert on
 *   GJC_FAULT_LOG_SYNCS=1         also log every fsync (as "fsync")
 */
#define _GNU_SOURCE
#define _LARGEFILE64_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

static int env_errno(const char *name) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : 0;
}

static void log_call(const char *what) {
  const char *path = getenv("GJC_FAULT_LOG");
  if (!path || !*path) return;
  // One write per line: calls on several threads (fsyncs on the thread pool) must not
  // interleave a name with another's newline.
  char line[128];
  const int length = snprintf(line, sizeof line, "%s\n", what);
  if (length <= 0 || (size_t)length >= sizeof line) return;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  ssize_t ignored = write(fd, line, (size_t)length);
  (void)ignored;
  close(fd);
}

static int is_acl_name(const char *name) {
  if (strncmp(name, "system.posix_acl_", 17) != 0) return 0;
  const char *only = getenv("GJC_FAULT_XATTR_NAME");
  return !only || !*only || strcmp(only, name) == 0;
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

ssize_t fgetxattr(int fd, const char *name, void *value, size_t size) {
  static ssize_t (*real)(int, const char *, void *, size_t);
  if (!real) real = (ssize_t (*)(int, const char *, void *, size_t))dlsym(RTLD_NEXT, "fgetxattr");
  static int seen = 0;
  if (is_acl_name(name) && seen++ >= env_errno("GJC_FAULT_XATTR_SKIP")) {
    const int injected = env_errno("GJC_FAULT_XATTR_ERRNO");
    const char *hex = getenv("GJC_FAULT_XATTR_HEX");
    if (injected) {
      log_call("fgetxattr:errno");
      errno = injected;
      return -1;
    }
    if (hex) {
      log_call("fgetxattr:bytes");
      size_t n = strlen(hex) / 2;
      if (n > size) {
        errno = ERANGE;
        return -1;
      }
      for (size_t i = 0; i < n; ++i) {
        ((unsigned char *)value)[i] = (unsigned char)(hex_value(hex[2 * i]) * 16 + hex_value(hex[2 * i + 1]));
      }
      return (ssize_t)n;
    }
  }
  return real(fd, name, value, size);
}

/* Logs a publication (or flush) call and returns the errno the environment asks it to fail with. */
static int publication_fault(const char *env_name, const char *call) {
  const int injected = env_errno(env_name);
  char line[64];
  snprintf(line, sizeof line, "%s%s", call, injected ? ":errno" : "");
  log_call(line);
  return injected;
}

int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags) {
  static int (*real)(int, const char *, int, const char *, unsigned int);
  if (!real) real = (int (*)(int, const char *, int, const char *, unsigned int))dlsym(RTLD_NEXT, "renameat2");
  const int injected = publication_fault("GJC_FAULT_RENAMEAT2_ERRNO", "renameat2");
  if (injected) {
    errno = injected;
    return -1;
  }
  return real(olddirfd, oldpath, newdirfd, newpath, flags);
}

int linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags) {
  static int (*real)(int, const char *, int, const char *, int);
  if (!real) real = (int (*)(int, const char *, int, const char *, int))dlsym(RTLD_NEXT, "linkat");
  const int injected = publication_fault("GJC_FAULT_LINKAT_ERRNO", "linkat");
  if (injected) {
    errno = injected;
    return -1;
  }
  return real(olddirfd, oldpath, newdirfd, newpath, flags);
}

/* Replaces a successful fstatfs answer's f_type when the environment asks for one. */
static void fake_fs_type(int result, __fsword_t *type) {
  const char *fake = getenv("GJC_FAULT_FSTATFS_TYPE");
  if (result == 0 && fake && *fake) *type = (__fsword_t)strtoul(fake, NULL, 16);
}

/* The addon is built with _FILE_OFFSET_BITS=64, where glibc routes fstatfs to fstatfs64. */
int fstatfs64(int fd, struct statfs64 *buf) {
  static int (*real)(int, struct statfs64 *);
  if (!real) real = (int (*)(int, struct statfs64 *))dlsym(RTLD_NEXT, "fstatfs64");
  const int result = real(fd, buf);
  fake_fs_type(result, &buf->f_type);
  return result;
}

int fstatfs(int fd, struct statfs *buf) {
  static int (*real)(int, struct statfs *);
  if (!real) real = (int (*)(int, struct statfs *))dlsym(RTLD_NEXT, "fstatfs");
  const int result = real(fd, buf);
  fake_fs_type(result, &buf->f_type);
  return result;
}

ssize_t readlink(const char *path, char *buf, size_t size) {
  static ssize_t (*real)(const char *, char *, size_t);
  if (!real) real = (ssize_t (*)(const char *, char *, size_t))dlsym(RTLD_NEXT, "readlink");
  const int injected = env_errno("GJC_FAULT_READLINK_ERRNO");
  if (injected && strncmp(path, "/proc/self/fd/", 14) == 0) {
    log_call("readlink:errno");
    errno = injected;
    return -1;
  }
  return real(path, buf, size);
}

char *realpath(const char *path, char *resolved) {
  static char *(*real)(const char *, char *);
  if (!real) real = (char *(*)(const char *, char *))dlsym(RTLD_NEXT, "realpath");
  const int injected = env_errno("GJC_FAULT_REALPATH_ERRNO");
  if (injected) {
    log_call("realpath:errno");
    errno = injected;
    return NULL;
  }
  return real(path, resolved);
}

int fsync(int fd) {
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  const char *log_syncs = getenv("GJC_FAULT_LOG_SYNCS");
  const int injected = env_errno("GJC_FAULT_FSYNC_ERRNO");
  struct stat st;
  if (injected && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    log_call("fsync:errno");
    errno = injected;
    return -1;
  }
  if (log_syncs && *log_syncs) log_call("fsync");
  return real(fd);
}

/* Writes `data`, with its first byte inverted when the environment targets writes of this size. */
static ssize_t maybe_flipped(ssize_t (*real)(int, const void *, size_t, off_t), int fd, const void *data, size_t size,
                             off_t offset) {
  const int target = env_errno("GJC_FAULT_PWRITE_FLIP");
  if (target <= 0 || (size_t)target != size) return real(fd, data, size, offset);
  unsigned char *copy = malloc(size);
  if (!copy) return real(fd, data, size, offset);
  memcpy(copy, data, size);
  copy[0] = (unsigned char)~copy[0];
  log_call("pwrite:flipped");
  const ssize_t written = real(fd, copy, size, offset);
  free(copy);
  return written;
}

ssize_t pwrite64(int fd, const void *data, size_t size, off_t offset) {
  static ssize_t (*real)(int, const void *, size_t, off_t);
  if (!real) real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
  return maybe_flipped(real, fd, data, size, offset);
}

ssize_t pwrite(int fd, const void *data, size_t size, off_t offset) {
  static ssize_t (*real)(int, const void *, size_t, off_t);
  if (!real) real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
  return maybe_flipped(real, fd, data, size, offset);
}
