/*
 * Lets Bun's musl binary run on Debian (scripts/smoke-musl.sh). That binary needs a C++
 * runtime, libstdc++.so.6 and libgcc_s.so.1, and Debian builds those for glibc only: musl's
 * loader accepts them (it ignores symbol versions and serves libc.so.6 itself), except for a
 * few names only glibc has, which this library supplies. It is built for musl and installed
 * under the name libstdc++ asks for, ld-linux-x86-64.so.2, in a folder of its own beside the
 * two libraries. None of it is reached by the addon under test: its libc imports resolve in
 * musl, which is the point of the run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <time.h>

/* Read by libstdc++ to skip atomics; 0 keeps it on the multi-threaded path, always safe. */
char __libc_single_threaded = 0;

size_t __strftime_l(char *out, size_t size, const char *format, const struct tm *tm, locale_t locale) {
  return strftime_l(out, size, format, tm, locale);
}

/* libstdc++ for aarch64 asks the kernel's hardware capabilities through glibc's internal name. */
unsigned long __getauxval(unsigned long type) { return getauxval(type); }

uint32_t arc4random(void) {
  uint32_t value;
  size_t got = 0;
  while (got < sizeof value) {
    ssize_t n = getrandom((char *)&value + got, sizeof value - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      abort();
    }
    got += (size_t)n;
  }
  return value;
}

/* thread_local destructors: run in reverse order of registration when the thread exits. */
struct thread_dtor {
  void (*dtor)(void *);
  void *object;
  struct thread_dtor *next;
};
static pthread_key_t dtor_key;
static pthread_once_t dtor_once = PTHREAD_ONCE_INIT;

static void run_thread_dtors(void *head) {
  struct thread_dtor *entry = head;
  while (entry != NULL) {
    struct thread_dtor *next = entry->next;
    entry->dtor(entry->object);
    free(entry);
    entry = next;
  }
}

static void make_dtor_key(void) {
  if (pthread_key_create(&dtor_key, run_thread_dtors) != 0) abort();
}

int __cxa_thread_atexit_impl(void (*dtor)(void *), void *object, void *dso) {
  (void)dso;
  if (pthread_once(&dtor_once, make_dtor_key) != 0) return -1;
  struct thread_dtor *entry = malloc(sizeof *entry);
  if (entry == NULL) return -1;
  entry->dtor = dtor;
  entry->object = object;
  entry->next = pthread_getspecific(dtor_key);
  if (pthread_setspecific(dtor_key, entry) != 0) {
    free(entry);
    return -1;
  }
  return 0;
}

/* libgcc_s's unwinder finds a frame's unwind table with this; the layout is glibc's. */
struct dl_find_object {
  unsigned long long dlfo_flags;
  void *dlfo_map_start;
  void *dlfo_map_end;
  void *dlfo_link_map;
  void *dlfo_eh_frame;
  unsigned long long reserved[7];
};

struct find_request {
  uintptr_t pc;
  struct dl_find_object *result;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct find_request *request = data;
  uintptr_t low = UINTPTR_MAX, high = 0;
  int inside = 0;
  void *eh_frame = NULL;
  for (size_t i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD) {
      if (start < low) low = start;
      if (start + ph->p_memsz > high) high = start + ph->p_memsz;
      if (request->pc >= start && request->pc < start + ph->p_memsz) inside = 1;
    } else if (ph->p_type == PT_GNU_EH_FRAME) {
      eh_frame = (void *)start;
    }
  }
  if (!inside) return 0;
  request->result->dlfo_flags = 0;
  request->result->dlfo_map_start = (void *)low;
  request->result->dlfo_map_end = (void *)high;
  request->result->dlfo_link_map = NULL;
  request->result->dlfo_eh_frame = eh_frame;
  return 1;
}

int _dl_find_object(void *pc, struct dl_find_object *result) {
  struct find_request request = {(uintptr_t)pc, result};
  return dl_iterate_phdr(find_object, &request) == 1 ? 0 : -1;
}

/* libgcc_s binds its own CPU-feature data by a version musl skips; zeroes mean "unknown CPU". */
struct {
  unsigned int vendor, type, subtype, features[1];
} __cpu_model;

int __cpu_indicator_init(void) { return 0; }
