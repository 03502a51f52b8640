// Windows flushes a whole volume only through a volume handle opened with administrator
// rights, so whole-file-system sync is unsupported there; callers flush file by file.
#include "../platform.h"

namespace gjc {

Result<FilesystemSync> sync_filesystem(NativeHandle handle) {
  (void)handle;
  return FilesystemSync::unsupported;
}

}  // namespace gjc
