/*
 * enosys_exec <syscall>[,<syscall>...] <program> [args...]
 *
 * Runs <program> under a seccomp filter that answers the named system calls (renameat2,
 * getrandom) with ENOSYS before the kernel sees them, as a kernel from before they existed
 * would (renameat2 came in 3.15, getrandom in 3.17). Unlike an LD_PRELOAD shim this reaches
 * the direct system call too, the path the addon takes when its libc has no wrapper.
 * getrandom is refused only when asked with GRND_NONBLOCK, as the addon asks: Node's own start
 * draws blocking randomness and aborts without it, while the kernels without getrandom
 * refused both alike. Every other call is allowed; the filter is inherited by children.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define HOST_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define HOST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "enosys_exec knows the audit arch of x86_64 and aarch64 only"
#endif

static long syscall_number(const char *name) {
  if (strcmp(name, "renameat2") == 0) return SYS_renameat2;
  if (strcmp(name, "getrandom") == 0) return SYS_getrandom;
  return -1;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: enosys_exec <syscall>[,<syscall>...] <program> [args...]\n");
    return 2;
  }
  enum { kMaxCalls = 8 };
  long numbers[kMaxCalls];
  int count = 0;
  char names[256];
  snprintf(names, sizeof names, "%s", argv[1]);
  for (char *save = NULL, *name = strtok_r(names, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    const long number = syscall_number(name);
    if (number < 0 || count == kMaxCalls) {
      fprintf(stderr, "enosys_exec: unknown or too many system calls: %s\n", name);
      return 2;
    }
    numbers[count++] = number;
  }

  /* A call from another ABI (x32, ia32) would carry other numbers: it is killed, not let through. */
  struct sock_filter filter[5 + 5 * kMaxCalls];
  int n = 0;
  filter[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  filter[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, HOST_AUDIT_ARCH, 1, 0);
  filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  filter[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  for (int i = 0; i < count; ++i) {
    if (numbers[i] == SYS_getrandom) {
      /* nr matches: load flags (low word, little-endian), refuse if GRND_NONBLOCK, else allow. */
      filter[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)numbers[i], 0, 4);
      filter[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2]));
      filter[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, GRND_NONBLOCK, 0, 1);
      filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
      filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
      continue;
    }
    filter[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)numbers[i], 0, 1);
    filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
  }
  filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog program = {.len = (unsigned short)n, .filter = filter};

  /* Without no_new_privs an unprivileged process may not install a filter. */
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    perror("enosys_exec: prctl(PR_SET_NO_NEW_PRIVS)");
    return 1;
  }
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
    perror("enosys_exec: prctl(PR_SET_SECCOMP)");
    return 1;
  }
  execvp(argv[2], argv + 2);
  perror("enosys_exec: execvp");
  return 127;
}
