/*
 * Outside-tree observer for the race tests: watches every directory below <root> with
 * inotify (opens, reads, writes, creations, deletions, attribute changes and renames of
 * the tree's own entries; directories created meanwhile are watched too) until stdin is
 * closed, then reports what it saw.
 *   outside_watch <root>
 * Prints "ready" once every watch is in place. At the end, the first events as
 * "event <kinds> <path relative to root>" lines and one line
 * "total <n> reads <n> writes <n> overflow <0|1> rootopens <n> rootattribs <n> rootdeletes <n>",
 * the last three counting the plain opens, attribute changes and deletion of <root> itself
 * (checking an object opens it without using it; unlinking it changes its link count).
 * <root> may also be a single file. Renaming an entry of the directory that
 * CONTAINS <root> (a swap of a link pointing at it) is not an event of the tree, so an
 * attacker's exchanges beside it are not counted; only use of the tree itself is.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define MASK (IN_OPEN | IN_ACCESS | IN_MODIFY | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | \
              IN_DELETE_SELF | IN_MOVE_SELF | IN_CLOSE_WRITE)
#define READS (IN_OPEN | IN_ACCESS)
#define MAX_SHOWN 64

static int ino = -1;
static char **paths = NULL; /* by watch descriptor */
static int paths_len = 0;
static const char *root_path;
static long long total = 0, reads = 0, writes = 0;
static long long rootopens = 0, rootattribs = 0, rootdeletes = 0;
static int root_wd = -1;
static int overflow = 0, shown = 0;
static char shown_lines[MAX_SHOWN][PATH_MAX + 128];

static void remember(int wd, const char *path) {
  if (wd >= paths_len) {
    int n = wd * 2 + 16;
    char **grown = realloc(paths, sizeof(char *) * (size_t)n);
    if (grown == NULL) {
      perror("realloc");
      exit(1);
    }
    for (int i = paths_len; i < n; ++i) grown[i] = NULL;
    paths = grown;
    paths_len = n;
  }
  free(paths[wd]);
  paths[wd] = strdup(path);
  if (paths[wd] == NULL) {
    perror("strdup");
    exit(1);
  }
}

/*
 * Watches `path` and, with `recurse`, every directory below it (never following links).
 * Listing a directory is itself an open and a read of it, so only the initial set-up
 * recurses (its own events are discarded before "ready"); a directory created later is
 * watched without being read, its creation having been counted already.
 */
static void watch_tree(const char *path, int recurse) {
  struct stat self;
  const int is_dir = lstat(path, &self) == 0 && S_ISDIR(self.st_mode);
  int wd = inotify_add_watch(ino, path, MASK | IN_DONT_FOLLOW | (is_dir || !recurse ? IN_ONLYDIR : 0));
  if (wd < 0) {
    /* A directory the victim created and removed again before we got to it. */
    if (errno == ENOENT || errno == ENOTDIR) return;
    perror("inotify_add_watch");
    exit(1);
  }
  remember(wd, path);
  if (root_wd < 0) root_wd = wd;
  if (!recurse || !is_dir) return;
  DIR *d = opendir(path);
  if (d == NULL) {
    if (errno == ENOENT || errno == ENOTDIR) return;
    perror("opendir");
    exit(1);
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char child[PATH_MAX];
    if (snprintf(child, sizeof child, "%s/%s", path, e->d_name) >= (int)sizeof child) continue;
    struct stat st;
    if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode)) watch_tree(child, 1);
  }
  closedir(d);
}

static void kinds(uint32_t m, char *out, size_t size) {
  static const struct { uint32_t bit; const char *name; } names[] = {
      {IN_OPEN, "OPEN"}, {IN_ACCESS, "ACCESS"}, {IN_MODIFY, "MODIFY"}, {IN_CREATE, "CREATE"},
      {IN_DELETE, "DELETE"}, {IN_ATTRIB, "ATTRIB"}, {IN_MOVED_FROM, "MOVED_FROM"}, {IN_MOVED_TO, "MOVED_TO"},
      {IN_DELETE_SELF, "DELETE_SELF"}, {IN_MOVE_SELF, "MOVE_SELF"}, {IN_CLOSE_WRITE, "CLOSE_WRITE"}, {IN_ISDIR, "ISDIR"}};
  out[0] = '\0';
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    if (!(m & names[i].bit)) continue;
    if (out[0] != '\0') strncat(out, ",", size - strlen(out) - 1);
    strncat(out, names[i].name, size - strlen(out) - 1);
  }
}

/* Reads whatever is queued; returns 0 when nothing was (EAGAIN). */
static int drain(void) {
  char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
  ssize_t n = read(ino, buf, sizeof buf);
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return 0;
    perror("read");
    exit(1);
  }
  for (char *p = buf; p < buf + n;) {
    const struct inotify_event *ev = (const struct inotify_event *)p;
    p += sizeof *ev + ev->len;
    if (ev->mask & IN_Q_OVERFLOW) {
      overflow = 1;
      continue;
    }
    if (ev->mask & IN_IGNORED) continue;
    const char *dir = ev->wd >= 0 && ev->wd < paths_len && paths[ev->wd] != NULL ? paths[ev->wd] : "?";
    char full[PATH_MAX];
    if (ev->len > 0) snprintf(full, sizeof full, "%s/%s", dir, ev->name);
    else snprintf(full, sizeof full, "%s", dir);
    ++total;
    if (ev->wd == root_wd && ev->len == 0) {
      const uint32_t m = ev->mask & ~(uint32_t)IN_ISDIR;
      if (m == IN_OPEN) ++rootopens;
      else if (m == IN_ATTRIB) ++rootattribs;
      else if (m == IN_DELETE_SELF) ++rootdeletes;
    }
    if (ev->mask & READS) ++reads;
    else ++writes;
    if (shown < MAX_SHOWN) {
      char k[256];
      kinds(ev->mask, k, sizeof k);
      const char *rel = strncmp(full, root_path, strlen(root_path)) == 0 ? full + strlen(root_path) : full;
      snprintf(shown_lines[shown++], sizeof shown_lines[0], "event %s %s", k, *rel == '\0' ? "/" : rel);
    }
    if ((ev->mask & IN_CREATE) && (ev->mask & IN_ISDIR) && ev->len > 0) watch_tree(full, 0);
  }
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: outside_watch <root>\n");
    return 2;
  }
  root_path = argv[1];
  ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (ino < 0) {
    perror("inotify_init1");
    return 1;
  }
  watch_tree(root_path, 1);
  /* Forget the set-up's own reads of the tree. */
  while (drain()) {
  }
  total = reads = writes = rootopens = rootattribs = rootdeletes = 0;
  overflow = shown = 0;
  printf("ready\n");
  fflush(stdout);
  struct pollfd fds[2] = {{.fd = 0, .events = POLLIN}, {.fd = ino, .events = POLLIN}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      perror("poll");
      return 1;
    }
    if (fds[1].revents & POLLIN) drain();
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char c[256];
      ssize_t r = read(0, c, sizeof c);
      if (r <= 0 && !(r < 0 && errno == EINTR)) break;
    }
  }
  /* Events of syscalls that returned before stdin closed are already queued. */
  while (drain()) {
  }
  for (int i = 0; i < shown; ++i) printf("%s\n", shown_lines[i]);
  printf("total %lld reads %lld writes %lld overflow %d rootopens %lld rootattribs %lld rootdeletes %lld\n", total, reads, writes,
         overflow, rootopens, rootattribs, rootdeletes);
  return 0;
}
