// Tests of the sandbox: the bwrap command line (mount order, namespaces), and
// real bwrap children: descendants die with the sandbox, /proc shows only the
// sandbox, no network, and nothing outside the writable dirs can be changed.
// Each behaviour has a control run without the sandbox that shows the attack
// works there, so a test that passes proves the sandbox stops it.
#include "daemon/exec/sandbox.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "testing/test_util.h"

namespace ard {
namespace {

namespace fs = std::filesystem;
using testing::sh_quote;
using testing::shell;

/// A research repo with the daemon's worktree inside it, as the daemon lays it out.
struct RepoWithWorktree {
  testing::TempDir dir;
  fs::path repo = dir / "repo";
  fs::path worktree = repo / ".autoresearchd" / "worktrees" / "t";
  fs::path scratch = dir / "scratch";
  RepoWithWorktree() {
    testing::write_file(repo / "trainer" / "train.cu", "x\n");
    EXPECT_EQ(testing::commit_base_repo(repo), 0);
    auto r = shell("git -C " + sh_quote(repo.string()) + " worktree add -q -b autoresearch/t " +
                   sh_quote(worktree.string()));
    EXPECT_EQ(r.code, 0) << r.out;
    fs::create_directories(scratch);
  }
  SandboxSpec spec(std::vector<std::string> argv) const {
    SandboxSpec s;
    s.worktree = worktree;
    s.scratch = scratch;
    s.argv = std::move(argv);
    return s;
  }
};

struct Child {
  pid_t pid = -1;
  int out = -1;  ///< the child's stdout and stderr
};

/// Starts argv in its own process group with exactly env, and marker_fd (if >= 0) as fd 3.
Child spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, int marker_fd = -1) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    if (marker_fd >= 0) dup2(marker_fd, 3);  // dup2 clears close-on-exec on fd 3
    std::vector<char*> a, e;
    for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    for (auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    e.push_back(nullptr);
    execvpe(a[0], a.data(), e.data());
    _exit(127);
  }
  close(out[1]);
  return {pid, out[0]};
}

/// Waits for the child and returns its exit code (128 + signal) and output.
testing::ShellResult finish(Child c) {
  testing::ShellResult r;
  char buf[4096];
  for (ssize_t n; (n = read(c.out, buf, sizeof buf)) > 0;) r.out.append(buf, static_cast<size_t>(n));
  close(c.out);
  int st;
  waitpid(c.pid, &st, 0);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

const std::vector<std::string> kEnv = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C"};

testing::ShellResult run(const std::vector<std::string>& argv) { return finish(spawn(argv, kEnv)); }

/// Reads one line-ish chunk from fd, or "" at EOF or after timeout_ms.
std::string read_with_timeout(int fd, int timeout_ms, bool* eof = nullptr) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return "";
  char buf[256];
  ssize_t n = read(fd, buf, sizeof buf);
  if (eof) *eof = n == 0;
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

#define REQUIRE_BWRAP()                                              \
  do {                                                               \
    if (auto why = sandbox_unavailable()) GTEST_SKIP() << *why;      \
  } while (0)

ptrdiff_t index_of(const std::vector<std::string>& argv, const std::vector<std::string>& seq) {
  auto it = std::search(argv.begin(), argv.end(), seq.begin(), seq.end());
  return it == argv.end() ? -1 : it - argv.begin();
}

TEST(SandboxArgv, TheSystemReadOnlyTheWorktreeWritableAndTheRepositoryNotBound) {
  RepoWithWorktree r;
  SandboxSpec s = r.spec({"true"});
  auto argv = sandbox_argv(s);
  const std::string wt = r.worktree.string(), repo = r.repo.string();
  EXPECT_EQ(index_of(argv, {"--ro-bind", "/", "/"}), -1);  // not the whole host
  ptrdiff_t usr = index_of(argv, {"--ro-bind", "/usr", "/usr"});
  ptrdiff_t etc = index_of(argv, {"--ro-bind", "/etc", "/etc"});
  ptrdiff_t wt_rw = index_of(argv, {"--bind", wt, wt});
  ptrdiff_t wt_git_ro = index_of(argv, {"--ro-bind", wt + "/.git", wt + "/.git"});
  ptrdiff_t tmp = index_of(argv, {"--tmpfs", "/tmp"});
  ptrdiff_t scratch_rw = index_of(argv, {"--bind", r.scratch.string(), r.scratch.string()});
  ASSERT_GE(usr, 0);
  ASSERT_GE(etc, 0);
  ASSERT_GE(wt_git_ro, 0);
  EXPECT_LT(wt_rw, wt_git_ro);    // the worktree writable, then its .git file read-only over it
  EXPECT_LT(tmp, scratch_rw);     // a scratch under /tmp is not hidden by the tmpfs
  // Neither the repository around the worktree nor the git metadata the .git file points to.
  for (const std::string& hidden : {repo, repo + "/.git", repo + "/.git/worktrees/t", repo + "/.autoresearchd"})
    EXPECT_EQ(index_of(argv, {hidden}), -1) << hidden;
  if (fs::is_symlink("/bin")) EXPECT_GE(index_of(argv, {"--symlink", fs::read_symlink("/bin").string(), "/bin"}), 0);
  if (fs::exists("/etc/shadow")) EXPECT_GT(index_of(argv, {"--ro-bind", "/dev/null", "/etc/shadow"}), etc);
  EXPECT_EQ(argv.back(), "true");
  for (const char* opt : {"--unshare-pid", "--die-with-parent", "--unshare-ipc", "--unshare-uts", "--unshare-net",
                          "--new-session"})
    EXPECT_GE(index_of(argv, {opt}), 0) << opt;
  EXPECT_GE(index_of(argv, {"--cap-drop", "ALL"}), 0);
  EXPECT_GE(index_of(argv, {"--proc", "/proc"}), 0);
  EXPECT_GE(index_of(argv, {"--chdir", wt}), 0);
  // sandbox.read_only adds a path; the wrapper binds what its command names.
  testing::TempDir tools;
  s.system_read_only = {tools.path()};
  EXPECT_GE(index_of(sandbox_argv(s), {"--ro-bind", tools.path().string(), tools.path().string()}), 0);
  s.system_read_only.clear();
  testing::write_file(tools / "tool", "");
  auto wrapper = sandbox_wrapper(s, (tools / "tool").string() + " --flag");
  EXPECT_EQ(wrapper.back(), "--");
  EXPECT_GE(index_of(wrapper, {"--ro-bind", (tools / "tool").string(), (tools / "tool").string()}), 0);
}

TEST(SandboxArgv, NetworkOnlyWhenAskedAndNvidiaDevicesBound) {
  testing::TempDir dev;
  for (const char* n : {"nvidia0", "nvidiactl", "nvidia-uvm", "null"}) testing::write_file(dev / n, "");
  auto devices = nvidia_devices(dev.path());
  ASSERT_EQ(devices.size(), 3u);
  SandboxSpec s;
  s.worktree = dev / "wt";
  s.scratch = dev / "scratch";
  s.devices = devices;
  s.network = true;
  s.argv = {"true"};
  auto argv = sandbox_argv(s);
  EXPECT_EQ(index_of(argv, {"--unshare-net"}), -1);
  ptrdiff_t d = index_of(argv, {"--dev", "/dev"});
  const std::string gpu = (dev / "nvidia0").string();
  EXPECT_GT(index_of(argv, {"--dev-bind", gpu, gpu}), d);
  EXPECT_EQ(index_of(argv, {"--dev-bind", (dev / "null").string(), (dev / "null").string()}), -1);
}

TEST(SandboxArgv, RefusesBadSpecs) {
  SandboxSpec s;
  s.worktree = "relative/wt";
  s.scratch = "/tmp/s";
  s.argv = {"true"};
  EXPECT_THROW(sandbox_argv(s), std::invalid_argument);
  s.worktree = "/tmp/wt";
  s.argv.clear();
  EXPECT_THROW(sandbox_argv(s), std::invalid_argument);
  s.argv = {"true"};
  s.read_only = {"/tmp/s"};
  EXPECT_THROW(sandbox_argv(s), std::invalid_argument);  // both writable and read-only
}

TEST(SandboxAvailable, ExplainsAMissingOrBrokenBwrap) {
  auto missing = sandbox_unavailable("/nonexistent/bwrap");
  ASSERT_TRUE(missing);
  EXPECT_NE(missing->find("not found"), std::string::npos) << *missing;
  EXPECT_NE(missing->find("apt-get install bubblewrap"), std::string::npos) << *missing;
  EXPECT_NE(missing->find("mode = \"off\""), std::string::npos) << *missing;

  testing::TempDir dir;
  fs::path fake = dir / "bwrap";
  testing::write_file(fake, "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n");
  fs::permissions(fake, fs::perms::owner_all);
  auto broken = sandbox_unavailable(fake.string());
  ASSERT_TRUE(broken);
  EXPECT_NE(broken->find("No permissions to create new namespace"), std::string::npos) << *broken;
  EXPECT_NE(broken->find("mode = \"off\""), std::string::npos) << *broken;
  EXPECT_EQ(broken->find('\n'), std::string::npos);
}

TEST(SandboxAvailable, StartRefusesUnlessTheSandboxIsOffAndStatusWarnsWhenOff) {
  auto refusal = sandbox_start_refusal(SandboxMode::kBwrap, "/nonexistent/bwrap");
  ASSERT_TRUE(refusal);
  EXPECT_EQ(*refusal,
            "the sandbox cannot run, so no experiment would be confined: /nonexistent/bwrap not found: install "
            "bubblewrap (apt-get install bubblewrap), or set [sandbox] mode = \"off\"");
  EXPECT_FALSE(sandbox_start_refusal(SandboxMode::kOff, "/nonexistent/bwrap"));
  EXPECT_EQ(sandbox_off_warning(SandboxMode::kBwrap), "");
  EXPECT_EQ(sandbox_off_warning(SandboxMode::kOff).rfind("warning: [sandbox] mode = \"off\"", 0), 0u);
}

// A setsid grandchild holds the write end of a pipe; EOF on the read end means
// every holder is gone. Without the sandbox it outlives its process group.
const std::string kGrandchild =
    "setsid sh -c 'echo $$ >&3; exec sleep 600' >/dev/null 2>&1 & wait";

/// A child started with a marker pipe's write end as fd 3, once a holder wrote to it.
struct MarkedChild {
  Child child;
  int marker = -1;
  std::string first;  ///< what a holder wrote first; empty if none did within 10 s
  explicit MarkedChild(const std::vector<std::string>& argv) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    child = spawn(argv, kEnv, p[1]);
    close(p[1]);
    marker = p[0];
    first = read_with_timeout(marker, 10000);
  }
  ~MarkedChild() { close(marker); }
  /// True when every holder of the write end is gone within timeout_ms.
  bool released(int timeout_ms) {
    bool eof = false;
    read_with_timeout(marker, timeout_ms, &eof);
    return eof;
  }
};

TEST(SandboxProcesses, ControlSetsidGrandchildOutlivesItsGroupWithoutSandbox) {
  MarkedChild m({"sh", "-c", kGrandchild});
  ASSERT_FALSE(m.first.empty());
  kill(-m.child.pid, SIGKILL);
  finish(m.child);
  EXPECT_FALSE(m.released(500)) << "the grandchild should survive here: the control is wrong";
  kill(std::stoi(m.first), SIGKILL);  // clean up the escaped grandchild
  EXPECT_TRUE(m.released(10000));
}

TEST(SandboxProcesses, SetsidGrandchildDiesWhenTheSandboxIsKilled) {
  REQUIRE_BWRAP();
  RepoWithWorktree r;
  MarkedChild m(sandbox_argv(r.spec({"sh", "-c", kGrandchild})));
  ASSERT_FALSE(m.first.empty()) << "the grandchild never started";
  kill(-m.child.pid, SIGKILL);  // what the runner does at a timeout or stop
  finish(m.child);
  EXPECT_TRUE(m.released(10000)) << "a process of the sandbox survived it";
}

TEST(SandboxProcesses, SetsidGrandchildDiesWhenTheStageExitsNormally) {
  REQUIRE_BWRAP();
  RepoWithWorktree r;
  // The stage starts the grandchild, waits until it is up, and exits 0.
  MarkedChild m(sandbox_argv(
      r.spec({"sh", "-c", "setsid sh -c 'echo up >&3; exec sleep 600' >/dev/null 2>&1 & sleep 1; exit 0"})));
  ASSERT_FALSE(m.first.empty());
  EXPECT_EQ(finish(m.child).code, 0);
  EXPECT_TRUE(m.released(10000)) << "the grandchild outlived a stage that exited";
}

TEST(SandboxProcesses, ProcShowsOnlyTheSandboxAndNotTheParentsEnvironment) {
  REQUIRE_BWRAP();
  RepoWithWorktree r;
  // A stand-in daemon whose environment holds the key (the runner scrubs the child's).
  Child daemon = spawn({"sleep", "600"}, {"PATH=/bin:/usr/bin", "ARD_TEST_API_KEY=sk-secret-marker"});
  const std::string probe =
      "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c sk-secret-marker; "
      "ls /proc | grep -c '^[0-9]'";
  auto control = run({"sh", "-c", probe});
  auto boxed = run(sandbox_argv(r.spec({"sh", "-c", probe})));
  kill(daemon.pid, SIGKILL);
  finish(daemon);
  EXPECT_EQ(control.out.rfind("1\n", 0), 0u) << "the control cannot read the daemon's environ: " << control.out;
  std::istringstream lines(boxed.out);
  int secrets = -1, pids = -1;
  lines >> secrets >> pids;
  EXPECT_EQ(secrets, 0) << boxed.out;
  EXPECT_GE(pids, 1) << boxed.out;
  EXPECT_LE(pids, 5) << "more processes than the sandbox's own: " << boxed.out;
}

TEST(SandboxNetwork, NoConnectionUnlessAllowed) {
  REQUIRE_BWRAP();
  RepoWithWorktree r;
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 8), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string connect =
      "exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(ntohs(addr.sin_port)) + " && echo connected";
  SandboxSpec s = r.spec({"bash", "-c", connect});
  auto blocked = run(sandbox_argv(s));
  EXPECT_NE(blocked.code, 0) << blocked.out;
  EXPECT_EQ(blocked.out.find("connected\n"), std::string::npos);
  s.network = true;
  auto allowed = run(sandbox_argv(s));
  EXPECT_EQ(allowed.code, 0) << allowed.out;
  EXPECT_NE(allowed.out.find("connected"), std::string::npos);
  close(listener);
}

TEST(SandboxFiles, WritableDirsOnlyAndTheRepoGitUntouchable) {
  REQUIRE_BWRAP();
  RepoWithWorktree r;
  const std::string repo = sh_quote(r.repo.string()), wt = sh_quote(r.worktree.string()),
                    scratch = sh_quote(r.scratch.string());
  const std::string tip_before = shell("git -C " + repo + " rev-parse autoresearch/t").out;
  // Each attack prints its name when it succeeds.
  const std::string script =
      "exec 2>/dev/null\n"
      "touch " + wt + "/made-in-worktree " + scratch + "/made-in-scratch /tmp/private || echo rw-failed\n"
      "git -C " + repo + " config core.fsmonitor 'touch /tmp/pwned' 2>/dev/null && echo fsmonitor-set\n"
      "echo '[core] fsmonitor = evil' >> " + repo + "/.git/config 2>/dev/null && echo config-appended\n"
      "echo 'gitdir: /elsewhere' > " + wt + "/.git 2>/dev/null && echo worktree-git-file-changed\n"
      "touch " + repo + "/outside 2>/dev/null && echo repo-written\n"
      "touch " + repo + "/.autoresearchd/results.db 2>/dev/null && echo state-written\n"
      "cd " + wt + " && git -c user.name=x -c user.email=x@x commit -q --allow-empty -m evil 2>/dev/null && "
      "echo committed\n"
      "mount -o remount,rw / 2>/dev/null && echo remounted\n"
      "mount -o remount,rw,bind " + repo + "/.git 2>/dev/null && echo git-remounted\n"
      "exit 0\n";
  auto control_repo = shell("git -C " + repo + " config --get core.fsmonitor");
  EXPECT_NE(control_repo.code, 0);
  auto boxed = run(sandbox_argv(r.spec({"sh", "-c", script})));
  EXPECT_EQ(boxed.code, 0) << boxed.out;
  EXPECT_EQ(boxed.out, "") << "an attack worked or a writable dir was not writable";
  EXPECT_TRUE(fs::exists(r.worktree / "made-in-worktree"));
  EXPECT_TRUE(fs::exists(r.scratch / "made-in-scratch"));
  EXPECT_FALSE(fs::exists("/tmp/private"));  // the sandbox's /tmp is its own
  EXPECT_NE(shell("git -C " + repo + " config --get core.fsmonitor").code, 0);
  EXPECT_FALSE(fs::exists(r.repo / "outside"));
  EXPECT_EQ(shell("git -C " + repo + " rev-parse autoresearch/t").out, tip_before);
  EXPECT_EQ(testing::read_file(r.worktree / ".git").rfind("gitdir: ", 0), 0u);

  // The control: the same script outside the sandbox does change the repo's config.
  auto unboxed = run({"sh", "-c", "git -C " + repo + " config core.fsmonitor 'touch /tmp/pwned' && echo fsmonitor-set"});
  EXPECT_EQ(unboxed.out, "fsmonitor-set\n");
}

// What a stage can read: the system, its worktree, scratch and what it was given. Not the
// user's home, the repository around the worktree (its other files, a staged file in its
// index, its config), another slot, or the system's secrets; each read prints its name when
// it works. The control reads them all outside the sandbox.
TEST(SandboxFiles, AStageReadsTheSystemAndItsOwnFilesOnly) {
  REQUIRE_BWRAP();
  RepoWithWorktree r;
  testing::TempDir home;
  testing::write_file(home / ".bashrc", "export SECRET=1\n");
  testing::write_file(r.repo / "notes.txt", "uncommitted\n");
  testing::write_file(r.repo / "staged.txt", "staged secret\n");
  ASSERT_EQ(shell("git -C " + sh_quote(r.repo.string()) + " add staged.txt").code, 0);
  testing::write_file(r.repo / ".autoresearchd/worktrees/other/trainer/train.cu", "another slot\n");
  std::string reads;
  for (const fs::path& p : {home / ".bashrc", r.repo / "notes.txt", r.repo / ".git/index", r.repo / ".git/config",
                            r.repo / ".autoresearchd/worktrees/other/trainer/train.cu"})
    reads += "cat " + sh_quote(p.string()) + " >/dev/null 2>&1 && echo read " + sh_quote(p.filename().string()) + "\n";
  if (fs::exists("/etc/shadow")) reads += "test -s /etc/shadow && echo read shadow\n";
  const std::string own = "cat trainer/train.cu >/dev/null && touch " + sh_quote((r.scratch / "s").string()) +
                          " && head -c 1 /etc/passwd >/dev/null && /usr/bin/env true && echo own files ok\n";
  // The reads are in the worktree's code, as an edit would make them: the command names none of
  // those paths (a path the user's command names is bound, by design).
  testing::write_file(r.worktree / "reads.sh", reads + own);
  auto boxed = run(sandbox_argv(r.spec({"sh", "reads.sh"})));
  EXPECT_EQ(boxed.out, "own files ok\n");
  auto unboxed = run({"sh", "-c", reads});
  EXPECT_NE(unboxed.out.find("read notes.txt\n"), std::string::npos) << unboxed.out;
  EXPECT_NE(unboxed.out.find("read index\n"), std::string::npos) << unboxed.out;
  EXPECT_NE(unboxed.out.find("read train.cu\n"), std::string::npos) << unboxed.out;
}

// A clone or a tool under /tmp: the tmpfs on /tmp would hide it, so the paths
// the command names there are bound back read-only; what it does not name
// stays hidden, and what is bound cannot be written.
TEST(SandboxFiles, AToolUnderTmpThatTheCommandNamesRunsReadOnly) {
  REQUIRE_BWRAP();
  RepoWithWorktree r;
  testing::TempDir tools;
  ASSERT_EQ(tools.path().string().rfind("/tmp/", 0), 0u) << "the test needs its temporary directory under /tmp";
  const fs::path tool = tools / "bin/fake-tool";
  testing::write_file(tool, "#!/bin/sh\necho tool ran with $1\n");
  fs::permissions(tool, fs::perms::owner_all);
  testing::write_file(tools / "unnamed.txt", "secret\n");
  // The glob names no existing path, so unnamed.txt is not bound back.
  const std::string command = sh_quote(tool.string()) + " x; cat " + tools.path().parent_path().string() +
                              "/ardtest-*/unnamed.txt 2>/dev/null || echo unnamed hidden; { echo y > " +
                              sh_quote(tool.string()) + "; } 2>/dev/null || echo tool read-only";
  auto argv = sandbox_argv(r.spec({"sh", "-c", command}));
  EXPECT_GE(index_of(argv, {"--ro-bind", tool.string(), tool.string()}), 0);
  auto boxed = run(argv);
  EXPECT_EQ(boxed.out, "tool ran with x\nunnamed hidden\ntool read-only\n");
  // Inside the worktree (already writable) nothing more is bound.
  auto in_tree = sandbox_argv(r.spec({"sh", "-c", (r.worktree / "trainer/train.cu").string()}));
  EXPECT_LT(index_of(in_tree, {"--ro-bind", (r.worktree / "trainer/train.cu").string()}), 0);
}

TEST(SandboxFiles, TmpAndScratchAreCappedAndLeaveNothingBehind) {
  REQUIRE_BWRAP();
  RepoWithWorktree r;
  const std::string write_3mb = "head -c 3145728 /dev/zero > ";
  const std::string script = write_3mb + "/tmp/big 2>/dev/null || echo tmp-full\nrm -f /tmp/big\n" + write_3mb +
                             sh_quote((r.scratch / "big").string()) + " 2>/dev/null || echo scratch-full\n"
                             "head -c 100000 /dev/zero > /tmp/small && echo tmp-small-ok\n"
                             "touch " + sh_quote((r.scratch / "left").string()) + " && echo scratch-ok\n";
  // The control: uncapped, both writes fit, and the scratch file lands on the host.
  auto open = run(sandbox_argv(r.spec({"sh", "-c", script})));
  EXPECT_EQ(open.out, "tmp-small-ok\nscratch-ok\n");
  EXPECT_TRUE(fs::exists(r.scratch / "left"));
  fs::remove(r.scratch / "big");
  fs::remove(r.scratch / "left");
  SandboxSpec capped = r.spec({"sh", "-c", script});
  capped.tmp_bytes = 1 << 20;
  capped.scratch_bytes = 1 << 20;
  const auto argv = sandbox_argv(capped);
  EXPECT_GE(index_of(argv, {"--size", "1048576", "--tmpfs", "/tmp"}), 0);
  EXPECT_GE(index_of(argv, {"--size", "1048576", "--tmpfs", r.scratch.string()}), 0);
  auto boxed = run(argv);
  EXPECT_EQ(boxed.out, "tmp-full\nscratch-full\ntmp-small-ok\nscratch-ok\n");
  EXPECT_TRUE(fs::is_empty(r.scratch));  // the scratch tmpfs went with the sandbox
}

}  // namespace
}  // namespace ard
