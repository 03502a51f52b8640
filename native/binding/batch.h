// readDirBatch: the N-API face of read_directory_batch (native/core/platform.h).
#pragma once

#include <napi.h>

namespace gjc::binding {

// readDirBatch(dir, maxFileBytes, budgetBytes) -> {names, info, ids, failures, data} or a
// failure record. The layout is documented with the type in src/native/binding.d.cts.
Napi::Value ReadDirBatch(const Napi::CallbackInfo& info);

}  // namespace gjc::binding
