// Tests of the daemon lock: one holder at a time, visible to other processes.
#include "daemon/store/state_dir.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testing/test_util.h"

namespace ard {
namespace {

TEST(StateDir, OnlyItsOwnerCanEnterIt) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir / ".autoresearchd/logs");
  std::filesystem::permissions(dir / ".autoresearchd", std::filesystem::perms(0755));  // as an older daemon made it
  StateDir state(dir.path());
  state.create();
  EXPECT_EQ(std::filesystem::status(state.root).permissions(), std::filesystem::perms::owner_all);
  EXPECT_EQ(std::filesystem::status(state.logs()).permissions(), std::filesystem::perms::owner_all);
  int fd = open_owner_only(state.root / "x.log", O_WRONLY);
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_EQ(std::filesystem::status(state.root / "x.log").permissions(),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

TEST(DaemonLock, OneHolderAtATime) {
  testing::TempDir dir;
  StateDir state(dir.path());
  state.create();
  EXPECT_FALSE(running_daemon(state.pid_file()));
  {
    auto lock = DaemonLock::acquire(state.pid_file());
    ASSERT_TRUE(lock);
    EXPECT_FALSE(DaemonLock::acquire(state.pid_file()));  // a second open file description is refused
    EXPECT_EQ(running_daemon(state.pid_file()), getpid());
    // Another process sees the holder too, and cannot take the lock.
    pid_t child = fork();
    if (child == 0) _exit(DaemonLock::acquire(state.pid_file()) ? 1 : 0);
    int st;
    waitpid(child, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  EXPECT_FALSE(running_daemon(state.pid_file()));
  EXPECT_TRUE(DaemonLock::acquire(state.pid_file()));
}

TEST(DaemonLock, DiesWithItsHolder) {
  testing::TempDir dir;
  StateDir state(dir.path());
  state.create();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    auto lock = DaemonLock::acquire(state.pid_file());
    (void)!write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  EXPECT_EQ(running_daemon(state.pid_file()), child);
  kill(child, SIGKILL);
  int st;
  waitpid(child, &st, 0);
  EXPECT_FALSE(running_daemon(state.pid_file()));
  close(ready[0]);
  close(ready[1]);
}

TEST(StateDir, LaysOutItsFiles) {
  StateDir s("/r");
  EXPECT_EQ(s.db(), "/r/.autoresearchd/results.db");
  EXPECT_EQ(s.worktree("t"), "/r/.autoresearchd/worktrees/t");
}

TEST(StateDir, KnowsTheRepoAroundAStateDirectory) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir / "repo/.autoresearchd/worktrees/t/trainer");
  EXPECT_EQ(state_dir_owner(dir / "repo/.autoresearchd/worktrees/t"), dir / "repo");
  EXPECT_EQ(state_dir_owner(dir / "repo/.autoresearchd/worktrees/t/trainer"), dir / "repo");
  EXPECT_EQ(state_dir_owner(dir / "repo/.autoresearchd"), dir / "repo");
  EXPECT_FALSE(state_dir_owner(dir / "repo"));
  EXPECT_FALSE(state_dir_owner(dir / "repo/trainer"));
}

}  // namespace
}  // namespace ard
