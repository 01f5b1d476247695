// See preflight.h.
#include "daemon/cli/preflight.h"

#include "daemon/cli/doctor.h"
#include "daemon/data/data_inputs.h"
#include "daemon/fatal_error.h"

namespace ard {

Config preflight(const Config& config, ProcessRunner& runner, const FetchOptions& fetch) {
  for (const Check& c : run_checks(config, runner))
    if (c.blocks()) throw FatalError(c.text() + " (autoresearchd doctor lists every check)");
  return fetch_missing_inputs(config, fetch);
}

Config fetch_missing_inputs(const Config& config, const FetchOptions& fetch) {
  if (!config.data.enabled) return config;
  auto missing = unreadable_input(config);
  if (!missing) return config;
  if (!config.data.fetch)
    throw FatalError(*missing + "; fix: put the file there, set data.train and data.val to your own files, or set "
                                "data.fetch = true to download the default corpus");
  FetchPlan plan = data_fetch_plan(config);
  if (fetch.progress)
    *fetch.progress << "data: " << *missing << "; fetching " << plan.train.size() << " train and " << plan.val.size()
                    << " val files of " << sources_path(config).string() << " (data.fetch) into "
                    << plan.train.front().dest.parent_path().string() << "\n";
  fetch_plan(plan, fetch);
  return with_inputs(config, plan);
}

}  // namespace ard
