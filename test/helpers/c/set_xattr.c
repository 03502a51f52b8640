/*
 * Writes raw extended-attribute bytes, so tests can store exact system.posix_acl_* values
 * without libacl or setfacl:  set_xattr <path> <name> <hex-bytes>
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: set_xattr <path> <name> <hex>\n");
    return 2;
  }
  const size_t n = strlen(argv[3]) / 2;
  unsigned char *bytes = malloc(n ? n : 1);
  for (size_t i = 0; i < n; ++i) {
    unsigned int b;
    if (sscanf(argv[3] + 2 * i, "%2x", &b) != 1) return 2;
    bytes[i] = (unsigned char)b;
  }
  if (lsetxattr(argv[1], argv[2], bytes, n, 0) != 0) {
    perror("lsetxattr");
    return 1;
  }
  return 0;
}
