/*
 * Race helper: swaps directory entries with renameat2(RENAME_EXCHANGE) as fast as it can
 * until the deadline, the swap budget or SIGTERM, then prints how many swaps it made.
 *   swap_race <dir> <name-a> <name-b> <milliseconds> [<max-swaps> [<name-a2> <name-b2> ...]]
 * With several pairs it exchanges them in turn. A pair whose entry is missing (ENOENT: the
 * victim removed it, or it only exists at times, like a SQLite -wal file) counts as a miss
 * and the loop goes on; every other failure ends it with status 1. "ready" goes to stderr
 * once the directory is held, so a caller can wait for the attack to be running. Misses are
 * reported on stderr, the swap count alone on stdout.
 * With SWAP_RACE_PAUSE_US=<n> in the environment, each time a pair is back in its original
 * orientation the loop sleeps a random 0..n microseconds: the victim then mostly sees the
 * original entries, passes its checks and goes on, and is caught by a brief swap later in
 * the operation (a full-speed loop makes long operations fail their first check instead).
 * With SWAP_RACE_NOTIFY_AT=<n>, "reached <n>" goes to stderr once the n-th swap is made, so a
 * caller can keep its victim running until the attack has done that much work.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop_requested = 0;

static void on_term(int sig) {
  (void)sig;
  stop_requested = 1;
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
  if (argc < 5 || (argc > 6 && (argc - 6) % 2 != 0)) {
    fprintf(stderr, "usage: swap_race <dir> <a> <b> <ms> [<max-swaps>|keep-going [<a2> <b2> ...]]\n");
    return 2;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_term;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0) {
    perror("sigaction");
    return 1;
  }
  int dir = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    perror("open");
    return 1;
  }
  const char *names[64];
  int pairs = 0;
  names[0] = argv[2];
  names[1] = argv[3];
  pairs = 1;
  for (int i = 6; i + 1 < argc && pairs < 32; i += 2, ++pairs) {
    names[2 * pairs] = argv[i];
    names[2 * pairs + 1] = argv[i + 1];
  }
  const int keep_going = argc > 5 && strcmp(argv[5], "keep-going") == 0;
  const long long max_swaps = argc > 5 && !keep_going ? atoll(argv[5]) : 0;
  const long long deadline = now_ms() + atoll(argv[4]);
  long long swaps = 0, misses = 0;
  const char *pause_env = getenv("SWAP_RACE_PAUSE_US");
  const long pause_us = pause_env == NULL ? 0 : atol(pause_env);
  const char *notify_env = getenv("SWAP_RACE_NOTIFY_AT");
  const long long notify_at = notify_env == NULL ? 0 : atoll(notify_env);
  unsigned long long parity = 0; /* bit i: pair i is swapped */
  unsigned int seed = (unsigned int)now_ms();
  int pair = 0;
  fprintf(stderr, "ready\n");
  fflush(stderr);
  while (!stop_requested && now_ms() < deadline && (max_swaps <= 0 || swaps < max_swaps)) {
    for (int i = 0; i < 64 && !stop_requested; ++i) {
      if (renameat2(dir, names[2 * pair], dir, names[2 * pair + 1], RENAME_EXCHANGE) == 0) {
        ++swaps;
        if (swaps == notify_at) {
          fprintf(stderr, "reached %lld\n", swaps);
          fflush(stderr);
        }
        parity ^= 1ULL << pair;
        if (pause_us > 0 && !(parity & (1ULL << pair))) {
          struct timespec ts = {0, (long)(rand_r(&seed) % (unsigned long)(pause_us + 1)) * 1000L};
          nanosleep(&ts, NULL);
        }
        /* Stay on this pair until it is back, so a pause never leaves one swapped. */
        if (parity & (1ULL << pair)) continue;
      } else if (errno == ENOENT || (keep_going && errno != EINTR)) {
        ++misses;
      } else if (errno != EINTR) {
        perror("renameat2");
        printf("%lld\n", swaps);
        return 1;
      }
      pair = (pair + 1) % pairs;
    }
  }
  fprintf(stderr, "misses %lld\n", misses);
  printf("%lld\n", swaps);
  return 0;
}
