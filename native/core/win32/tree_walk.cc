// walk_tree on Windows: not provided, for the reason import_files is not (import_batch.cc):
// the migration compares these stats with the ones Node reports, and the handle-based
// Windows stats differ from them. The caller walks the tree itself.
#include "../platform.h"

namespace gjc {

Result<TreeWalk> walk_tree(const std::string&, std::uint64_t, std::uint64_t, std::uint32_t, std::size_t,
                           const std::vector<TreeEntry>*) {
  TreeWalk walk;
  walk.supported = false;
  return walk;
}

}  // namespace gjc
