// See process_runner.h. The blocking runner is a private io_context that runs
// one ChildProcess, and a wait on the stop flag's pipe.
#include "daemon/exec/process_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "daemon/exec/child_process.h"

namespace ard {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Waits until the group has no live member; a killed group's members need a
/// moment to be reaped by their parents. Bounded: gives up after timeout_s.
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

StopFlag::StopFlag() {
  if (pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error(std::string("pipe: ") + strerror(errno));
}

StopFlag::~StopFlag() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

void StopFlag::request() {
  char c = 1;
  (void)!::write(fds_[1], &c, 1);
}

bool StopFlag::requested() const {
  struct stat st {};
  // A pipe's st_size is the number of unread bytes on Linux.
  return fstat(fds_[0], &st) == 0 && st.st_size > 0;
}

ProcessResult PosixProcessRunner::run(const ProcessSpec& spec, const OnStart& on_start) {
  boost::asio::io_context io;
  ChildSpec child{spec.command, spec.wrapper, spec.cwd, spec.env, spec.log, spec.timeout_s, kill_grace_s_};
  ProcessResult result;
  std::exception_ptr record_error;  // on_start's failure goes back to the caller as it was thrown
  auto record = [&](pid_t pgid) {
    try {
      if (on_start) on_start(pgid);
    } catch (...) {
      record_error = std::current_exception();
      throw;
    }
  };
  std::unique_ptr<boost::asio::posix::stream_descriptor> stop_wait;
  auto proc = ChildProcess::start(io, child, record, [&](const ProcessResult& r) {
    result = r;
    if (stop_wait) stop_wait->cancel();
  });
  if (stop_) {
    stop_wait = std::make_unique<boost::asio::posix::stream_descriptor>(io, ::dup(stop_->wait_fd()));
    stop_wait->async_wait(boost::asio::posix::stream_descriptor::wait_read, [&](const boost::system::error_code& e) {
      if (!e) proc->stop();
    });
  }
  io.run();
  if (proc->pgid() > 0) wait_group_gone(proc->pgid(), 5);
  if (record_error) std::rethrow_exception(record_error);
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
