/*
 * Race helper: swaps two directory entries with renameat2(RENAME_EXCHANGE) as fast as it
 * can until the deadline, then prints how many swaps it made.
 *   swap_race <dir> <name-a> <name-b> <milliseconds> [keep-going]
 * The names may be relative paths below <dir>, resolved at each swap. With "keep-going" a
 * failed swap (a name missing while the victim removes and recreates it) is counted, not
 * fatal; the count of failures goes to stderr.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
  if (argc != 5 && !(argc == 6 && strcmp(argv[5], "keep-going") == 0)) {
    fprintf(stderr, "usage: swap_race <dir> <a> <b> <ms> [keep-going]\n");
    return 2;
  }
  const int keep_going = argc == 6;
  long long failures = 0;
  int dir = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    perror("open");
    return 1;
  }
  const long long deadline = now_ms() + atoll(argv[4]);
  long long swaps = 0;
  while (now_ms() < deadline) {
    for (int i = 0; i < 64; ++i) {
      if (renameat2(dir, argv[2], dir, argv[3], RENAME_EXCHANGE) != 0) {
        if (keep_going) {
          ++failures;
          continue;
        }
        perror("renameat2");
        return 1;
      }
      ++swaps;
    }
  }
  printf("%lld\n", swaps);
  if (keep_going) fprintf(stderr, "%lld failed\n", failures);
  return 0;
}
