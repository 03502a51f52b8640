/*
 * Race helper: swaps two directory entries with renameat2(RENAME_EXCHANGE) as fast as it
 * can until the deadline, then prints how many swaps it made.
 *   swap_race <dir> <name-a> <name-b> <milliseconds>
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: swap_race <dir> <a> <b> <ms>\n");
    return 2;
  }
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
        perror("renameat2");
        return 1;
      }
      ++swaps;
    }
  }
  printf("%lld\n", swaps);
  return 0;
}
