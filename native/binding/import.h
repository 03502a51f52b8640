// importFilesAsync: the N-API face of import_files (native/core/platform.h).
#pragma once

#include <napi.h>

namespace gjc::binding {

// importFilesAsync(dest, sourceDir, dirId, names, versions, buffer) -> a promise of
// "unsupported" or {info, failures}, or a failure record (bad arguments, or the whole
// batch failed). The layout is documented with the type in src/native/binding.d.cts.
Napi::Value ImportFilesAsync(const Napi::CallbackInfo& info);

}  // namespace gjc::binding
