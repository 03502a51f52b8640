// import_files on Windows: not provided. The migration's snapshot and its version checks
// are expressed in the stat fields Node reports, which the handle-based Windows primitives
// do not reproduce exactly (file ids, change times), so a native batch could refuse every
// file as changed. The caller copies file by file through the verified primitives instead.
#include "../platform.h"

namespace gjc {

Result<ImportBatch> import_files(const std::string&, std::uint64_t, std::uint64_t, NativeHandle,
                                 const std::vector<ImportRequest>&, unsigned char*, std::size_t) {
  ImportBatch batch;
  batch.supported = false;
  return batch;
}

}  // namespace gjc
