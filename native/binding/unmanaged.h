// importFilesAsync and walkTreeAsync: the N-API faces of import_files and walk_tree
// (native/core/platform.h), the calls that read unmanaged trees.
#pragma once

#include <napi.h>

namespace gjc::binding {

// importFilesAsync(dest, sourceDir, dirId, names, versions, buffer) -> a promise of
// "unsupported" or {info, failures, digests}, or a failure record (bad arguments, or the whole
// batch failed). The layout is documented with the type in src/native/binding.d.cts.
Napi::Value ImportFilesAsync(const Napi::CallbackInfo& info);

// walkTreeAsync(root, rootId, maxDepth, maxEntries, expected?) -> a promise of "unsupported"
// or {paths, info, ids, times, truncated} (with `expected`, an earlier walk's result: "same"
// or "differs"), or a failure record.
Napi::Value WalkTreeAsync(const Napi::CallbackInfo& info);

}  // namespace gjc::binding
