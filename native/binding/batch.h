// readDirBatch: the N-API face of read_directory_batch (native/core/platform.h).
#pragma once

#include <napi.h>

namespace gjc::binding {

// readDirBatch(dir, maxFileBytes, buffer) -> {names, info, ids, failures} or a failure
// record; file contents land in `buffer`. The layout is documented with the type in
// src/native/binding.d.cts.
Napi::Value ReadDirBatch(const Napi::CallbackInfo& info);

// readDirBatchStart(dir, maxFileBytes, buffer) -> a job, or a failure record: the same
// batch on a thread of its own. readDirBatchFinish(job) waits for it and returns what
// readDirBatch would have (once; `closed` after that).
Napi::Value ReadDirBatchStart(const Napi::CallbackInfo& info);
Napi::Value ReadDirBatchFinish(const Napi::CallbackInfo& info);

}  // namespace gjc::binding
