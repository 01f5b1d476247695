// Tests of harden_process: a hardened process's environment cannot be read by
// another process of the same user, and it writes no core file. Both processes
// run as an unprivileged user (nobody when the test runs as root), because root
// holds CAP_SYS_PTRACE and reads any /proc/<pid>/environ whatever the flag says;
// the sandbox answers that case by dropping every capability.
#include "daemon/exec/hardening.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "testing/test_util.h"

namespace ard {
namespace {

constexpr uid_t kNobody = 65534;

/// Drops to the unprivileged user the test runs both processes as; false if it cannot.
bool become_test_user() {
  if (geteuid() != 0) return true;
  return setgid(kNobody) == 0 && setuid(kNobody) == 0;
}

/// A process (as the test user) that sets a secret in its environment, hardens
/// itself or not, reports ready and waits to be killed. Returns its pid.
pid_t start_target(bool harden, int* ready_fd) {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    if (!become_test_user()) _exit(3);
    // setuid cleared the dumpable flag; a process the user starts has it set.
    if (prctl(PR_SET_DUMPABLE, 1) != 0) _exit(5);
    setenv("ARD_TEST_API_KEY", "sk-secret", 1);
    if (harden && !harden_process().empty()) _exit(4);
    (void)!write(ready[1], "r", 1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  *ready_fd = ready[0];
  return pid;
}

/// In a second process of the same user: 0 when /proc/<pid>/environ of target can be read, else errno.
int read_environ_as_test_user(pid_t target) {
  pid_t pid = fork();
  if (pid == 0) {
    if (!become_test_user()) _exit(250);
    std::string path = "/proc/" + std::to_string(target) + "/environ";
    int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) _exit(errno);
    char buf[64];
    ssize_t n = read(fd, buf, sizeof buf);
    _exit(n >= 0 ? 0 : errno);
  }
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int environ_access(bool harden) {
  int ready;
  pid_t target = start_target(harden, &ready);
  char c;
  EXPECT_EQ(read(ready, &c, 1), 1) << "the target did not start";
  close(ready);
  int result = read_environ_as_test_user(target);
  kill(target, SIGKILL);
  waitpid(target, nullptr, 0);
  return result;
}

TEST(Hardening, EnvironReadableByTheSameUserWithout) {
  EXPECT_EQ(environ_access(false), 0) << "the control: an ordinary process's environ is readable by its user";
}

TEST(Hardening, EnvironUnreadableByTheSameUserWhenHardened) {
  int err = environ_access(true);
  EXPECT_EQ(err, EACCES) << "errno " << err;
}

TEST(Hardening, NoCoreDumps) {
  pid_t pid = fork();
  if (pid == 0) {
    if (!harden_process().empty()) _exit(1);
    rlimit core{};
    getrlimit(RLIMIT_CORE, &core);
    _exit(prctl(PR_GET_DUMPABLE) == 0 && core.rlim_cur == 0 && core.rlim_max == 0 ? 0 : 2);
  }
  int st;
  waitpid(pid, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

TEST(Hardening, ACrashLeavesNoCoreFile) {
  testing::TempDir dir;
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.path().c_str()) != 0 || !harden_process().empty()) _exit(1);
    abort();
  }
  int st;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFSIGNALED(st));
  EXPECT_FALSE(WCOREDUMP(st));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace ard
