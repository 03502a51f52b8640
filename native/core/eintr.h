// The one place EINTR is retried. Every interruptible POSIX call in the core goes through
// retry_eintr, so no call site carries its own loop and none forgets one.
#pragma once

#include <cerrno>

namespace gjc {

// Calls `call()` until it returns something other than -1 with errno EINTR.
template <class Call>
auto retry_eintr(Call&& call) -> decltype(call()) {
  for (;;) {
    auto result = call();
    if (!(result == -1 && errno == EINTR)) return result;
  }
}

}  // namespace gjc
