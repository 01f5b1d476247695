// Tests of recorded process groups with real processes: the recorded group
// is killed wherever its processes run, a reused id is left alone.
#include "daemon/exec/process_groups.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "daemon/store/store.h"
#include "testing/test_util.h"

namespace ard {
namespace {

/// A shell command as the leader of its own process group, like the runner starts one.
pid_t spawn_group(const std::string& command) {
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

/// State letter of /proc/<pid>/stat, 0 when there is no such process.
char proc_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  return line[line.rfind(')') + 2];
}

bool running(pid_t pid) {
  char s = proc_state(pid);
  return s != 0 && s != 'Z' && s != 'X';
}

/// Pids whose group is pgid, read from /proc; waits until there are n (the
/// shell forks its background jobs after it starts).
std::vector<pid_t> members(pid_t pgid, size_t n) {
  std::vector<pid_t> out;
  for (int i = 0; i < 500 && out.size() < n; ++i) {
    out.clear();
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream in(e.path() / "stat");
      std::string line;
      if (!std::getline(in, line)) continue;
      std::istringstream f(line.substr(line.rfind(')') + 1));
      char st;
      long ppid, pgrp;
      if (f >> st >> ppid >> pgrp && pgrp == pgid && st != 'Z') out.push_back(std::stoi(name));
    }
    if (out.size() < n) usleep(10000);
  }
  return out;
}

struct GroupGuard {  // kills what a failed test leaves behind
  pid_t pgid;
  ~GroupGuard() {
    kill(-pgid, SIGKILL);
    waitpid(pgid, nullptr, 0);
  }
};

TEST(ProcessStartTime, ReadsField22) {
  auto mine = process_start_time(getpid());
  ASSERT_TRUE(mine);
  EXPECT_GT(*mine, 0);
  pid_t child = spawn_group("exec sleep 30");
  GroupGuard g{child};
  auto theirs = process_start_time(child);
  ASSERT_TRUE(theirs);
  EXPECT_GE(*theirs, *mine);
  EXPECT_FALSE(process_start_time(0x3fffffff));
}

TEST(KillRecordedGroup, KillsTheRecordedGroupWhereverItRuns) {
  // The leader and its job cd out of the state directory: the old check by
  // working directory left such a group running.
  pid_t leader = spawn_group("cd / && sleep 300 & cd / && exec sleep 300");
  GroupGuard g{leader};
  auto ms = members(leader, 2);
  ASSERT_EQ(ms.size(), 2u);
  auto start = process_start_time(leader);
  ASSERT_TRUE(start);
  EXPECT_EQ(kill_recorded_group(leader, *start), RecordedGroup::killed);
  for (pid_t p : ms) EXPECT_FALSE(running(p)) << p;
  int st = 0;
  ASSERT_EQ(waitpid(leader, &st, 0), leader);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  EXPECT_EQ(kill_recorded_group(leader, *start), RecordedGroup::gone);
}

TEST(KillRecordedGroup, LeavesAReusedIdAlone) {
  pid_t leader = spawn_group("sleep 300 & exec sleep 300");
  GroupGuard g{leader};
  auto ms = members(leader, 2);
  ASSERT_EQ(ms.size(), 2u);
  auto start = process_start_time(leader);
  ASSERT_TRUE(start);
  // The record says the leader started at another time: the id was reused.
  EXPECT_EQ(kill_recorded_group(leader, *start - 1), RecordedGroup::not_ours);
  EXPECT_EQ(kill_recorded_group(leader, *start + 1), RecordedGroup::not_ours);
  for (pid_t p : ms) EXPECT_TRUE(running(p)) << p;
}

TEST(KillRecordedGroup, KillsMembersTheLeaderLeftBehind) {
  pid_t leader = spawn_group("sleep 300 & exit 0");
  GroupGuard g{leader};
  auto start = process_start_time(leader);
  ASSERT_TRUE(start);
  ASSERT_EQ(waitpid(leader, nullptr, 0), leader);  // the shell forked its job, then exited
  auto ms = members(leader, 1);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(kill_recorded_group(leader, *start), RecordedGroup::killed);
  EXPECT_FALSE(running(ms[0]));
}

TEST(KillRecordedGroups, KillsWhatTheStoreRecordedAndForgetsIt) {
  testing::TempDir dir;
  Store store((dir / "results.db").string());
  pid_t leader = spawn_group("exec sleep 300");
  GroupGuard g{leader};
  auto start = process_start_time(leader);
  ASSERT_TRUE(start);
  store.add_process_group(leader, *start, "prepare");
  store.add_process_group(leader, *start + 5, "prepare");  // an older record whose id was reused
  auto lines = kill_recorded_groups(store);
  ASSERT_EQ(lines.size(), 1u);  // the second found nothing of its group running
  EXPECT_EQ(lines[0], "killed orphaned prepare group " + std::to_string(leader));
  EXPECT_FALSE(running(leader));
  EXPECT_TRUE(store.live_process_groups().empty());
}

}  // namespace
}  // namespace ard
