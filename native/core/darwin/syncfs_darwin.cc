// macOS has no call that flushes one file system and waits for it (sync(2) only schedules
// writeback; F_FULLFSYNC is per file), so whole-file-system sync is unsupported there.
#include "../platform.h"

namespace gjc {

Result<FilesystemSync> sync_filesystem(NativeHandle handle) {
  (void)handle;
  return FilesystemSync::unsupported;
}

}  // namespace gjc
