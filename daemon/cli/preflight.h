// What `start` does before it builds anything: the doctor's checks, and the
// fetch of the default corpus when the configured inputs are missing.
#pragma once

#include "daemon/config.h"
#include "daemon/data/data_fetch.h"
#include "daemon/exec/process_runner.h"

namespace ard {

/// Runs every doctor check; the first that blocks throws FatalError with the
/// doctor's own line. Then returns fetch_missing_inputs(config, fetch).
Config preflight(const Config& config, ProcessRunner& runner, const FetchOptions& fetch);

/// When the data step is on and an input is missing: with data.fetch, fetches
/// the source list's files and returns config reading them instead; without,
/// throws FatalError naming the key and file ("data.train[0]: PATH: no such
/// file"). Returns config unchanged when every input is readable.
Config fetch_missing_inputs(const Config& config, const FetchOptions& fetch);

}  // namespace ard
