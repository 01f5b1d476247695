// See process_runner.h. The child waits on a pipe between fork and exec, so the
// parent has recorded its group id before the command starts; the pipe is
// close-on-exec, so it never leaks into the command.
#include "daemon/process_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace ard {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Waits up to timeout_s for pid; true when it was reaped into *status.
bool wait_for(pid_t pid, int* status, double timeout_s) {
  auto t0 = Clock::now();
  while (true) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;  // already reaped: nothing to wait for
    if (since(t0) >= timeout_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void wait_group_gone(pid_t pgid, double timeout_s) {
  auto t0 = Clock::now();
  while (!group_members(pgid).empty() && since(t0) < timeout_s)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

}  // namespace

std::string ProcessResult::describe() const {
  std::ostringstream os;
  switch (end) {
    case End::kExited:
      // A shell reports a command killed by signal N as exit code 128+N.
      if (code > 128 && code < 128 + 65)
        os << "killed by signal " << code - 128 << " (" << strsignal(code - 128) << "), exit code " << code;
      else
        os << "exit code " << code;
      break;
    case End::kSignaled: os << "killed by signal " << code << " (" << strsignal(code) << ")"; break;
    case End::kTimedOut: os << "timed out after " << static_cast<long>(seconds + 0.5) << " s"; break;
    case End::kStopped: os << "stopped by the daemon"; break;
    case End::kSpawnFailed: os << "could not start: " << error; break;
  }
  return os.str();
}

ProcessResult PosixProcessRunner::run(const ProcessSpec& spec, const OnStart& on_start) {
  ProcessResult result;
  int log_fd = open(spec.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    result.error = "cannot open log " + spec.log.string() + ": " + strerror(errno);
    return result;
  }
  int gate[2];
  if (pipe2(gate, O_CLOEXEC) != 0) {
    close(log_fd);
    result.error = std::string("pipe: ") + strerror(errno);
    return result;
  }
  // Everything the child needs is built before fork: after it, only
  // async-signal-safe calls.
  std::vector<char*> argv = {const_cast<char*>("sh"), const_cast<char*>("-c"),
                             const_cast<char*>(spec.command.c_str()), nullptr};
  std::vector<char*> envp;
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::string cwd = spec.cwd.string();

  auto t0 = Clock::now();
  pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    close(gate[0]);
    close(gate[1]);
    result.error = std::string("fork: ") + strerror(errno);
    return result;
  }
  if (pid == 0) {
    setpgid(0, 0);
    close(gate[1]);
    char go = 0;
    if (read(gate[0], &go, 1) != 1) _exit(127);  // the parent could not record us
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) signal(sig, SIG_DFL);
    if (chdir(cwd.c_str()) != 0) {
      const char msg[] = "autoresearchd: cannot enter the working directory\n";
      (void)!write(2, msg, sizeof msg - 1);
      _exit(127);
    }
    execve("/bin/sh", argv.data(), envp.data());
    _exit(127);
  }
  close(gate[0]);
  close(log_fd);
  setpgid(pid, pid);  // also here, so the group exists whichever side runs first
  try {
    if (on_start) on_start(pid);
  } catch (...) {
    close(gate[1]);
    kill(-pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    throw;
  }
  char go = 1;
  ssize_t w = write(gate[1], &go, 1);
  close(gate[1]);
  if (w != 1) {
    kill(-pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    result.error = "cannot release the child";
    return result;
  }

  int status = 0;
  bool reaped = false;
  while (!reaped) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      reaped = true;
      break;
    }
    bool timed_out = spec.timeout_s > 0 && since(t0) >= spec.timeout_s;
    bool stopped = stop_ && stop_->load();
    if (timed_out || stopped) {
      result.end = timed_out ? ProcessResult::End::kTimedOut : ProcessResult::End::kStopped;
      kill(-pid, SIGTERM);
      if (!wait_for(pid, &status, kill_grace_s_)) {
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
      }
      result.seconds = since(t0);
      kill(-pid, SIGKILL);  // whatever of the group outlived the shell
      wait_group_gone(pid, 5);
      return result;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  result.seconds = since(t0);
  // A finished command may have left background children in its group.
  kill(-pid, SIGKILL);
  if (WIFEXITED(status)) {
    result.end = ProcessResult::End::kExited;
    result.code = WEXITSTATUS(status);
  } else {
    result.end = ProcessResult::End::kSignaled;
    result.code = WTERMSIG(status);
  }
  return result;
}

std::vector<std::string> scrubbed_env(const std::vector<std::string>& allowed) {
  std::vector<std::string> out;
  for (const auto& name : allowed) {
    if (const char* v = getenv(name.c_str())) out.push_back(name + "=" + v);
  }
  return out;
}

std::vector<pid_t> group_members(pid_t pgid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    // Fields after the ")" that closes the command name: state ppid pgrp ...
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 1));
    char state = 0;
    long ppid = 0, pgrp = 0;
    if (!(fields >> state >> ppid >> pgrp)) continue;
    if (pgrp == pgid && state != 'Z' && state != 'X') out.push_back(std::stoi(name));
  }
  return out;
}

bool kill_orphan_group(pid_t pgid, const std::filesystem::path& cwd_prefix) {
  if (pgid <= 1 || pgid == getpgrp()) return false;
  bool ours = false;
  for (pid_t p : group_members(pgid)) {
    std::error_code ec;
    auto cwd = std::filesystem::read_symlink("/proc/" + std::to_string(p) + "/cwd", ec);
    if (ec) continue;
    auto rel = cwd.lexically_relative(cwd_prefix);
    if (!rel.empty() && *rel.begin() != "..") ours = true;
  }
  if (!ours) return false;
  kill(-pgid, SIGKILL);
  wait_group_gone(pgid, 10);
  return true;
}

std::string file_tail(const std::filesystem::path& path, size_t max_lines, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  std::streamoff size = in.tellg();
  std::streamoff start = size > static_cast<std::streamoff>(max_bytes) ? size - max_bytes : 0;
  in.seekg(start);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (start > 0) {  // drop the partial first line
    size_t nl = text.find('\n');
    text = nl == std::string::npos ? text : text.substr(nl + 1);
  }
  size_t lines = 0;
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  while (pos > 0) {
    size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) break;
    if (++lines == max_lines) return text.substr(nl + 1);
    pos = nl;
  }
  return text;
}

}  // namespace ard
