// See slurm_job.h.
#include "daemon/slurm/slurm_job.h"

#include <cstdlib>
#include <sstream>

#include "proposers/text_lines.h"

namespace ard {

namespace {

bool to_int(const std::string& s, int& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (*end != '\0') return false;
  out = static_cast<int>(v);
  return true;
}

}  // namespace

SlurmState parse_slurm_state(const std::string& word) {
  std::string w = trim(word);
  w = w.substr(0, w.find_first_of("+ ("));
  if (w == "PENDING" || w == "REQUEUE_HOLD" || w == "REQUEUE_FED" || w == "RESV_DEL_HOLD" || w == "SPECIAL_EXIT")
    return SlurmState::kPending;
  if (w == "RUNNING" || w == "CONFIGURING" || w == "COMPLETING" || w == "SUSPENDED" || w == "STOPPED" ||
      w == "SIGNALING" || w == "STAGE_OUT" || w == "RESIZING")
    return SlurmState::kRunning;
  if (w == "REQUEUED") return SlurmState::kRequeued;
  if (w == "COMPLETED") return SlurmState::kCompleted;
  if (w == "FAILED" || w == "OUT_OF_MEMORY") return SlurmState::kFailed;
  if (w == "TIMEOUT") return SlurmState::kTimeout;
  if (w == "CANCELLED") return SlurmState::kCancelled;
  if (w == "PREEMPTED") return SlurmState::kPreempted;
  if (w == "NODE_FAIL" || w == "BOOT_FAIL") return SlurmState::kNodeFail;
  if (w == "DEADLINE") return SlurmState::kDeadline;
  return SlurmState::kUnknown;
}

const char* slurm_state_name(SlurmState s) {
  switch (s) {
    case SlurmState::kPending: return "pending";
    case SlurmState::kRunning: return "running";
    case SlurmState::kRequeued: return "requeued";
    case SlurmState::kCompleted: return "completed";
    case SlurmState::kFailed: return "failed";
    case SlurmState::kTimeout: return "timeout";
    case SlurmState::kCancelled: return "cancelled";
    case SlurmState::kPreempted: return "preempted";
    case SlurmState::kNodeFail: return "node_fail";
    case SlurmState::kDeadline: return "deadline";
    case SlurmState::kUnknown: return "unknown";
  }
  return "unknown";
}

bool is_ended(SlurmState s) {
  switch (s) {
    case SlurmState::kCompleted:
    case SlurmState::kFailed:
    case SlurmState::kTimeout:
    case SlurmState::kCancelled:
    case SlurmState::kPreempted:
    case SlurmState::kNodeFail:
    case SlurmState::kDeadline:
      return true;
    default:
      return false;
  }
}

bool is_environment_end(SlurmState s) { return s == SlurmState::kPreempted || s == SlurmState::kNodeFail; }

std::optional<std::string> parse_sbatch_output(const std::string& output) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    std::string id = trim(line).substr(0, trim(line).find(';'));
    int n = 0;
    if (to_int(id, n) && n > 0) return id;
  }
  return std::nullopt;
}

std::map<std::string, std::string> scontrol_fields(const std::string& line) {
  // Fields are separated by spaces; a value may itself hold spaces (Command=,
  // Reason=...), so a token without '=' belongs to the previous value.
  std::map<std::string, std::string> out;
  std::istringstream in(line);
  std::string last;
  for (std::string tok; in >> tok;) {
    size_t eq = tok.find('=');
    if (eq == std::string::npos || eq == 0) {
      if (!last.empty()) out[last] += " " + tok;
      continue;
    }
    last = tok.substr(0, eq);
    out[last] = tok.substr(eq + 1);
  }
  return out;
}

std::map<std::string, SlurmJobInfo> parse_scontrol_jobs(const std::string& output) {
  std::map<std::string, SlurmJobInfo> jobs;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    auto f = scontrol_fields(line);
    if (!f.count("JobId") || !f.count("JobState")) continue;
    SlurmJobInfo j;
    j.id = f["JobId"];
    j.name = f["JobName"];
    j.state_word = f["JobState"];
    j.state = parse_slurm_state(j.state_word);
    j.reason = f["Reason"] == "None" ? "" : f["Reason"];
    std::string node = f["NodeList"];
    j.node = node == "(null)" ? "" : node;
    if (auto e = f.find("ExitCode"); e != f.end()) {
      size_t colon = e->second.find(':');
      to_int(e->second.substr(0, colon), j.exit_code);
      if (colon != std::string::npos) to_int(e->second.substr(colon + 1), j.exit_signal);
    }
    to_int(f["Restarts"], j.restarts);
    jobs[j.id] = j;
  }
  return jobs;
}

std::optional<JobExitFile> parse_job_exit_file(const std::string& text) {
  std::istringstream in(text);
  std::string code;
  JobExitFile out;
  if (!(in >> code)) return std::nullopt;
  if (code == "signalled") {
    out.code = 143;
    out.signalled = true;
  } else if (!to_int(code, out.code)) {
    return std::nullopt;
  }
  in >> out.node;
  return out;
}

}  // namespace ard
