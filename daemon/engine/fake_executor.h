// A test double of the Executor seam (executor.h): it runs nothing. Every
// Run it is given is recorded, and ends with what a script says about it, a
// function of the Run, or later when the test ends it (end_held); the ends are
// posted to the io_context, so none comes
// from inside start() or re-enters the engine. The slot's check is asked as
// the local executor asks it (before each stage, after the last that
// passed), so the engine's tamper check still runs on its real slots.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "daemon/engine/executor.h"

namespace ard {

class FakeExecutor : public Executor {
 public:
  /// The end of a run, given the run and its index among every run started
  /// (0 first); nullopt: the run stays in flight until stop_all.
  using Script = std::function<std::optional<RunEnd>(const Run& run, size_t index)>;

  FakeExecutor(boost::asio::io_context& io, Script script) : io_(io), script_(std::move(script)) {}

  /// Every run started, in the order started.
  const std::vector<Run>& runs() const { return runs_; }

  void start(const Run& run, RunCallbacks callbacks) override {
    const size_t index = runs_.size();
    runs_.push_back(run);
    in_flight_[index] = std::move(callbacks);
    RunCallbacks& cb = in_flight_[index];
    std::optional<RunEnd> end;
    if (run.build) {
      cb.step_started(0, *run.build);
      end = script_(run, index);
    } else {
      for (size_t i = 0; i < run.stages.size() && !end; ++i) {
        if (std::string t = cb.check_slot(); !t.empty()) end = tampered("before stage " + run.stages[i].name + ": " + t);
        else cb.step_started(i, run.stages[i]);
      }
      if (!end) end = script_(run, index);
      if (end && end->kind == RunEnd::Kind::kOk)
        if (std::string t = cb.check_slot(); !t.empty()) end = tampered(t);
    }
    if (end) boost::asio::post(io_, [this, index, e = *end] { finish(index, e); });
  }

  /// Ends run `index`, one the script left in flight, as `end` (from the loop).
  void end_held(size_t index, const RunEnd& end) {
    boost::asio::post(io_, [this, index, end] { finish(index, end); });
  }

  /// Ends every run in flight as stopped, from the loop.
  void stop_all() override {
    for (auto& [index, cb] : in_flight_) {
      RunEnd end;
      end.kind = RunEnd::Kind::kStopped;
      end.detail = "stopped during " + (runs_[index].build ? std::string("the build")
                                                           : "stage " + runs_[index].stages.back().name);
      boost::asio::post(io_, [this, i = index, end] { finish(i, end); });
    }
  }

  size_t active() const override { return in_flight_.size(); }

 private:
  static RunEnd tampered(const std::string& why) {
    RunEnd end;
    end.kind = RunEnd::Kind::kTampered;
    end.detail = why;
    return end;
  }
  /// Reports the end once (a run stopped after its scripted end was posted keeps the first).
  void finish(size_t index, const RunEnd& end) {
    auto it = in_flight_.find(index);
    if (it == in_flight_.end()) return;
    RunCallbacks cb = std::move(it->second);
    in_flight_.erase(it);
    cb.ended(end);
  }

  boost::asio::io_context& io_;
  Script script_;
  std::vector<Run> runs_;
  std::map<size_t, RunCallbacks> in_flight_;
};

}  // namespace ard
