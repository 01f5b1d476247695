// Process groups the daemon started, known after a restart by their id plus
// the start time of their leader: a group id alone may have been reused by
// someone else's processes, and a working directory proves nothing (a stage
// may cd anywhere). The caller records (pgid, process_start_time(pgid)) in
// the store before the group's command runs; a restart passes each record to
// kill_recorded_group.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ard {

class Store;

/// Field 22 (starttime) of /proc/<pid>/stat: clock ticks since boot when the
/// process started. nullopt when there is no such process.
std::optional<int64_t> process_start_time(pid_t pid);

enum class RecordedGroup {
  killed,    ///< it was the recorded group and had live members: all killed
  gone,      ///< nothing of it runs
  not_ours,  ///< the id now belongs to a process that started at another time: left alone
};

/// Kills the group pgid when it is the one recorded: its leader (pid ==
/// pgid) still runs and started at leader_start, or the leader is gone and
/// every live member started at or after leader_start (Linux does not reuse
/// an id a live group still holds). Waits (on pidfds, at most timeout_s)
/// until the killed members have exited.
RecordedGroup kill_recorded_group(pid_t pgid, int64_t leader_start, double timeout_s = 10);

/// Records a group started outside an experiment in the store's
/// process_groups table: pass it as the runner's OnStart, which runs after
/// the fork and before the command (the runner holds the child at a gate),
/// so a daemon killed at any later point leaves the record behind. The
/// record is deleted when this object goes, that is once the run returned
/// (the runner has killed what was left of the group).
class GroupRecord {
 public:
  GroupRecord(Store& store, std::string what) : store_(store), what_(std::move(what)) {}
  ~GroupRecord();
  GroupRecord(const GroupRecord&) = delete;
  GroupRecord& operator=(const GroupRecord&) = delete;
  /// The OnStart: records (pgid, its leader's start time).
  void operator()(pid_t pgid);

 private:
  Store& store_;
  std::string what_;
  std::optional<int64_t> id_;
};

/// One line per group the store recorded outside experiments and a killed
/// daemon left behind: kills each (kill_recorded_group) and deletes its
/// record. Returns what it did, for the daemon log ("killed prepare group 123").
std::vector<std::string> kill_recorded_groups(Store& store);

}  // namespace ard
