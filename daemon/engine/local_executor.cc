// See local_executor.h.
#include "daemon/engine/local_executor.h"

#include <boost/asio/post.hpp>

#include "daemon/exec/fault_pause.h"
#include "daemon/exec/process_runner.h"

namespace ard {

void LocalExecutor::start(const Run& run, RunCallbacks callbacks) {
  const uint64_t key = ++next_key_;
  runs_[key] = InFlight{run, std::move(callbacks)};
  try {
    start_step(key);
  } catch (...) {
    runs_.erase(key);  // a callback threw before the child started: no end will come
    throw;
  }
}

void LocalExecutor::stop_all() {
  for (auto& [key, f] : runs_) {
    f.stop_requested = true;
    if (f.child) f.child->stop();
  }
}

void LocalExecutor::start_step(uint64_t key) {
  InFlight& f = runs_.at(key);
  const bool build = f.run.build.has_value();
  const RunStep& step = build ? *f.run.build : f.run.stages[f.stage];
  if (!build) {
    if (std::string t = f.callbacks.check_slot(); !t.empty()) {
      RunEnd end;
      end.kind = RunEnd::Kind::kTampered;
      end.detail = "before stage " + step.name + ": " + t;
      // The end is reported from the loop: start() never calls back into its caller's ended.
      boost::asio::post(io_, [this, key, end] { finish(key, end); });
      return;
    }
  }
  f.callbacks.step_started(build ? 0 : f.stage, step);
  ChildSpec spec;
  spec.command = step.command;
  spec.wrapper = step.wrapper;
  spec.cwd = f.run.worktree;
  spec.env = f.run.env;
  spec.log = step.log;
  spec.timeout_s = step.timeout_s;
  f.child = ChildProcess::start(
      io_, spec, [this, key](pid_t pgid) { runs_.at(key).callbacks.group(pgid); },
      [this, key](const ProcessResult& r) {
        try {
          on_exit(key, r);
        } catch (...) {
          runs_.erase(key);  // a callback threw: the run is over, its end unreported (the caller recovers)
          throw;
        }
      });
}

void LocalExecutor::on_exit(uint64_t key, const ProcessResult& r) {
  InFlight& f = runs_.at(key);
  f.child.reset();
  const bool build = f.run.build.has_value();
  const RunStep& step = build ? *f.run.build : f.run.stages[f.stage];
  std::optional<EnvironmentFault> fault;
  if (r.end != ProcessResult::End::kStopped)  // a stop is a stop, whatever the disk
    fault = child_fault(r, step.log, {f.run.logs_dir, f.run.worktree});
  RunOutcome o = process_outcome(r, build ? "build" : step.name, f.run.last_stage, std::move(fault));
  if (!build && o.exit == RunOutcome::Exit::kSucceeded && f.stage + 1 < f.run.stages.size()) {
    if (f.stop_requested) {
      RunEnd end;
      end.kind = RunEnd::Kind::kStopped;
      end.detail = "stopped after stage " + step.name;
      end.log_tail = file_tail(step.log);
      return finish(key, end);
    }
    ++f.stage;
    return start_step(key);
  }
  if (o.exit == RunOutcome::Exit::kSucceeded) o.tampered = f.callbacks.check_slot();
  finish(key, classify_end(o, step.log, f.run.end_settings));
}

void LocalExecutor::finish(uint64_t key, const RunEnd& end) {
  auto it = runs_.find(key);
  RunCallbacks callbacks = std::move(it->second.callbacks);
  runs_.erase(it);
  callbacks.ended(end);
}

}  // namespace ard
