// What `status` and `show` print about decisions: σ and the last noise round,
// the boards' budget scales, the GPU time repeats and calibration cost, an
// experiment's runs and the keep rule's reason line (docs/daemon.md, "The
// keep rule"), and val_bpb as mean ± spread (n).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/decide/run_evidence.h"
#include "daemon/store/store.h"

namespace ard {

/// Lines for `status`: "noise: σ = … usable …" (noise_status, as the engine
/// decides with it), "budget scales: …", "repeats and
/// calibration: …% of GPU time …". Empty before any run.
std::string render_noise_status(Store& store, const std::string& tag, double now, const NoiseSettings& noise = {});

/// "0.981200 ± 0.001100 (3)" over the finished runs of the experiment's own
/// commit as configured (rung 0: a larger rung's runs are another model's);
/// "-" when it has none.
std::string mean_spread(const std::vector<TrialRow>& trials, const ExperimentRow& row);

/// For `show`: the decision's reason line and one line per run (purpose, GPU,
/// budget scale, its rung when above 0, steps, tokens, val_bpb, status).
std::string render_runs(Store& store, const ExperimentRow& row);

}  // namespace ard
