// See run_end.h.
#include "daemon/engine/run_end.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "daemon/store/store.h"
#include "daemon/util/text.h"

namespace ard {

namespace {

/// The log's last lines as the store keeps them.
std::string tail_of(const std::filesystem::path& log) { return file_tail(log); }

/// Where a failure line is looked for: the last 400 lines (64 KiB) of the log.
std::string failure_part(const std::filesystem::path& log) { return file_tail(log, 400, 65536); }

RunEnd end(RunEnd::Kind kind, std::string detail, const std::filesystem::path& log) {
  RunEnd e;
  e.kind = kind;
  e.detail = std::move(detail);
  e.log_tail = tail_of(log);
  return e;
}

RunEnd build_failed(const RunOutcome& o, const std::filesystem::path& log) {
  std::string errors = compiler_errors(failure_part(log));
  RunEnd e = end(RunEnd::Kind::kBuildFailed, o.what, log);
  if (o.exit == RunOutcome::Exit::kFailed) {
    std::string first = first_nonblank_line(errors);
    if (!first.empty()) e.detail += ": " + first;
  }
  e.failure_detail = errors;
  return e;
}

RunEnd stages_passed(const RunOutcome& o, const std::filesystem::path& log, const EndSettings& s) {
  const std::string source = "stage " + o.last_stage;
  if (!o.tampered.empty()) return end(RunEnd::Kind::kTampered, "after " + source + ": " + o.tampered, log);
  // The whole log (capped when it was written): a second block anywhere in it is a forgery.
  SummaryParse parsed = parse_summary(file_tail(log, std::numeric_limits<size_t>::max(), size_t{1} << 30),
                                      s.summary_keys);
  if (!parsed.tampered.empty())
    return end(RunEnd::Kind::kTampered, source + ": the summary cannot be believed: " + parsed.tampered, log);
  if (!parsed.summary) return end(RunEnd::Kind::kCrashed, source + " printed no summary block", log);
  auto it = parsed.summary->values.find(s.metric);
  if (it == parsed.summary->values.end())
    return end(RunEnd::Kind::kCrashed, "the summary of " + source + " has no " + s.metric, log);
  if (!std::isfinite(it->second))
    return end(RunEnd::Kind::kCrashed, s.metric + " is " + format_number(it->second), log);
  RunEnd e = end(RunEnd::Kind::kOk, "", log);
  e.value = it->second;
  e.summary = std::move(parsed.summary);
  return e;
}

}  // namespace

std::string compiler_errors(const std::string& log) {
  std::istringstream in(log);
  std::string out;
  int n = 0;
  for (std::string line; std::getline(in, line) && n < 40;) {
    if (line.find("error") != std::string::npos || line.find("Error") != std::string::npos) {
      out += line + "\n";
      ++n;
    }
  }
  if (!out.empty()) return out;
  // No line says error: the tail is the best we have.
  std::vector<std::string> lines;
  std::istringstream again(log);
  for (std::string line; std::getline(again, line);) lines.push_back(line);
  for (size_t i = lines.size() > 30 ? lines.size() - 30 : 0; i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

RunOutcome process_outcome(const ProcessResult& r, const std::string& stage, const std::string& last_stage,
                           std::optional<EnvironmentFault> fault) {
  RunOutcome o;
  o.build = stage == "build";
  o.last_stage = last_stage;
  const std::string what = o.build ? "build" : "stage " + stage;
  if (r.end == ProcessResult::End::kStopped) {
    o.exit = RunOutcome::Exit::kStopped;
    o.what = "stopped during " + (o.build ? "the build" : what);
  } else if (fault) {
    o.exit = RunOutcome::Exit::kMachineFault;
    o.fault = std::move(fault);
  } else if (r.end == ProcessResult::End::kTimedOut) {
    o.exit = RunOutcome::Exit::kTimedOut;
    o.what = what + " " + r.describe();
  } else if (!r.ok()) {
    o.exit = RunOutcome::Exit::kFailed;
    o.what = what + " failed (" + r.describe() + ")";
  } else {
    o.exit = RunOutcome::Exit::kSucceeded;
  }
  return o;
}

RunEnd classify_end(const RunOutcome& o, const std::filesystem::path& log, const EndSettings& s) {
  using Exit = RunOutcome::Exit;
  switch (o.exit) {
    case Exit::kStopped:
      return end(RunEnd::Kind::kStopped, o.what, log);
    case Exit::kMachineFault: {
      RunEnd e = end(RunEnd::Kind::kMachineFault, o.fault ? o.fault->message() : o.what, log);
      e.fault = o.fault;
      return e;
    }
    case Exit::kTimedOut:
      if (o.build) return build_failed(o, log);
      return end(RunEnd::Kind::kTimedOut, o.what, log);
    case Exit::kFailed: {
      if (o.build) return build_failed(o, log);
      std::string fl = fail_line(failure_part(log));
      // The harness's integrity probes failed: the experiment fooled the metric, it did not crash.
      if (auto probe = tampered_reason(fl))
        return end(RunEnd::Kind::kTampered, o.what + ": integrity probe failed: " + *probe, log);
      return end(RunEnd::Kind::kCrashed, o.what + (fl.empty() ? "" : ": " + fl), log);
    }
    case Exit::kSucceeded:
      if (o.build) {
        if (!o.tampered.empty()) return end(RunEnd::Kind::kTampered, o.tampered, log);
        RunEnd e;
        e.kind = RunEnd::Kind::kOk;
        return e;
      }
      return stages_passed(o, log, s);
  }
  return end(RunEnd::Kind::kCrashed, o.what, log);
}

const char* final_status(RunEnd::Kind kind) {
  switch (kind) {
    case RunEnd::Kind::kOk: return "ok";
    case RunEnd::Kind::kBuildFailed: return status::kBuildFail;
    case RunEnd::Kind::kCrashed: return status::kCrash;
    case RunEnd::Kind::kTampered: return status::kTampered;
    case RunEnd::Kind::kTimedOut: return status::kTimeout;
    case RunEnd::Kind::kStopped:
    case RunEnd::Kind::kMachineFault: return status::kInterrupted;
  }
  return status::kCrash;
}

const char* to_string(RunEnd::Kind kind) {
  switch (kind) {
    case RunEnd::Kind::kOk: return "ok";
    case RunEnd::Kind::kBuildFailed: return "build_failed";
    case RunEnd::Kind::kCrashed: return "crashed";
    case RunEnd::Kind::kTampered: return "tampered";
    case RunEnd::Kind::kTimedOut: return "timed_out";
    case RunEnd::Kind::kStopped: return "stopped";
    case RunEnd::Kind::kMachineFault: return "machine_fault";
  }
  return "?";
}

}  // namespace ard
