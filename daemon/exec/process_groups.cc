// See process_groups.h.
#include "daemon/exec/process_groups.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "daemon/duration.h"
#include "daemon/exec/process_runner.h"
#include "daemon/store/store.h"

namespace ard {
namespace {

struct ProcStat {
  char state = 0;
  long pgrp = 0;
  int64_t start = 0;
};

/// The fields of /proc/<pid>/stat this file needs; nullopt when gone.
std::optional<ProcStat> read_proc_stat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: fields are
  // counted from the last ")". Field 3 is state, 5 pgrp, 22 starttime.
  size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 1));
  ProcStat st;
  long ppid = 0;
  if (!(fields >> st.state >> ppid >> st.pgrp)) return std::nullopt;
  std::string skip;
  for (int field = 6; field < 22; ++field)
    if (!(fields >> skip)) return std::nullopt;
  if (!(fields >> st.start)) return std::nullopt;
  return st;
}

struct Member {
  pid_t pid;
  int64_t start;
};

std::vector<Member> live_members(pid_t pgid) {
  std::vector<Member> out;
  for (pid_t p : group_members(pgid))
    if (auto st = read_proc_stat(p)) out.push_back({p, st->start});  // skips one that just exited
  return out;
}

/// Waits until each process has exited (became a zombie or was reaped),
/// on pidfds: the kernel reports the exit, nothing is polled by time.
void wait_exited(const std::vector<Member>& members, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + steady_seconds(timeout_s);
  for (const Member& m : members) {
    int fd = static_cast<int>(syscall(SYS_pidfd_open, m.pid, 0));
    if (fd < 0) continue;  // already reaped
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() > 0) poll(&p, 1, static_cast<int>(left.count()));
    close(fd);
  }
}

}  // namespace

std::optional<int64_t> process_start_time(pid_t pid) {
  auto st = read_proc_stat(pid);
  if (!st) return std::nullopt;
  return st->start;
}

RecordedGroup kill_recorded_group(pid_t pgid, int64_t leader_start, double timeout_s) {
  if (pgid <= 1 || pgid == getpgrp()) return RecordedGroup::not_ours;
  auto leader = read_proc_stat(pgid);
  bool leader_alive = leader && leader->state != 'Z' && leader->state != 'X';
  if (leader_alive && (leader->start != leader_start || leader->pgrp != pgid)) return RecordedGroup::not_ours;
  auto members = live_members(pgid);
  if (members.empty()) return RecordedGroup::gone;
  for (const Member& m : members)
    if (m.start < leader_start) return RecordedGroup::not_ours;  // older than our leader: not of our group
  kill(-pgid, SIGKILL);
  wait_exited(members, timeout_s);
  return RecordedGroup::killed;
}

void GroupRecord::operator()(pid_t pgid) {
  auto start = process_start_time(pgid);
  // The child waits at the runner's gate, so it exists; without its start
  // time the group could not be told from a later one: do not run it.
  if (!start) throw std::runtime_error("cannot read the start time of process " + std::to_string(pgid));
  id_ = store_.add_process_group(pgid, *start, what_);
}

GroupRecord::~GroupRecord() {
  if (!id_) return;
  try {
    store_.end_process_group(*id_);
  } catch (...) {
    // A record left behind is harmless: the next start finds its group gone.
  }
}

std::vector<std::string> kill_recorded_groups(Store& store) {
  std::vector<std::string> out;
  for (const ProcessGroupRow& g : store.live_process_groups()) {
    RecordedGroup r = kill_recorded_group(static_cast<pid_t>(g.pgid), g.leader_start);
    if (r == RecordedGroup::killed) out.push_back("killed orphaned " + g.what + " group " + std::to_string(g.pgid));
    else if (r == RecordedGroup::not_ours)
      out.push_back("left group " + std::to_string(g.pgid) + " alone: its id now belongs to other processes");
    store.end_process_group(g.id);
  }
  return out;
}

}  // namespace ard
