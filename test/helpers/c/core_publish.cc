// core_publish <store> <name> <text>...: the native core alone, without Node, for a libc no Node
// here runs on (musl): opens <store> as a trusted root and writes each <text> to <name> with
// write_file_atomic(no_replace), printing one line per write, "ok" or "<code> <syscall> <errno>".
#include <cstdio>
#include <cstring>

#include "../../../native/core/platform.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: core_publish <store> <name> <text>...\n");
    return 2;
  }
  auto root = gjc::open_root(argv[1], gjc::DirOpenOptions{});
  if (!root.ok()) {
    std::printf("root %s %s %d\n", gjc::code_name(root.failure().code), root.failure().syscall, root.failure().sys_errno);
    return 1;
  }
  for (int i = 3; i < argc; ++i) {
    const gjc::Status written = gjc::write_file_atomic(root.value().get(), argv[2], argv[i], std::strlen(argv[i]), true);
    if (written.ok()) {
      std::printf("ok\n");
    } else {
      const gjc::Failure& failure = written.failure();
      std::printf("%s %s %d\n", gjc::code_name(failure.code), failure.syscall, failure.sys_errno);
    }
  }
  return 0;
}
