// See child_process.h.
#include "daemon/exec/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

// Boost 1.81's Process v2 with std::filesystem needs these included first.
#include <boost/optional.hpp>
#include <boost/type_traits/remove_pointer.hpp>
#include <type_traits>
#define BOOST_PROCESS_USE_STD_FS 1
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/start_dir.hpp>
#include <boost/process/v2/stdio.hpp>
#include <chrono>

#include "daemon/duration.h"
#include "daemon/exec/capped_log.h"

namespace ard {
namespace bp = boost::process::v2;
namespace asio = boost::asio;

namespace {

using Clock = std::chrono::steady_clock;

/// The fd the gate arrives on in the child.
constexpr int kGateFd = 3;

/// Waits on the gate, closes it, then runs the command in a fresh shell.
constexpr const char* kGateScript = "read -r _ <&3 || exit 127; exec 3<&-; exec /bin/sh -c \"$1\"";

/// A Boost.Process v2 initializer: the child's environment, its own process
/// group, the gate on fd 3, and default signal handling (the daemon's ignored
/// SIGPIPE and its signal mask would otherwise be inherited).
struct GroupGateEnv {
  int gate_fd;
  const char* const* envp;

  template <typename Launcher>
  bp::error_code on_setup(Launcher& launcher, const std::filesystem::path&, const char* const*&) {
    launcher.env = envp;
    launcher.fd_whitelist.push_back(kGateFd);
    return {};
  }

  template <typename Launcher>
  bp::error_code on_exec_setup(Launcher&, const std::filesystem::path&, const char* const*&) {
    if (setpgid(0, 0) != 0) return bp::error_code(errno, bp::system_category());
    if (gate_fd == kGateFd) {
      if (fcntl(kGateFd, F_SETFD, 0) != 0) return bp::error_code(errno, bp::system_category());
    } else if (dup2(gate_fd, kGateFd) < 0) {
      return bp::error_code(errno, bp::system_category());
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) signal(sig, SIG_DFL);
    return {};
  }
};

/// Closes an fd once.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

std::string resolve_executable(const std::string& name, const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  std::string path;
  for (const auto& e : env)
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string candidate = path.substr(start, end - start) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return name;
}

}  // namespace

struct ChildProcess::Impl {
  explicit Impl(asio::io_context& io) : out(io), timeout(io), grace(io), drain(io), proc(io) {}
  asio::readable_pipe out;
  asio::steady_timer timeout;
  asio::steady_timer grace;
  asio::steady_timer drain;  ///< how long output may still come after the exit
  bp::process proc;
  std::unique_ptr<CappedLog> log;
  ChildSpec spec;
  OnExit on_exit;
  Clock::time_point t0;
  std::optional<ProcessResult::End> forced;  ///< kTimedOut or kStopped once decided
  std::optional<ProcessResult> exit;         ///< the exit, once seen
  bool output_done = false;
  std::array<char, 65536> buf{};
};

ChildProcess::ChildProcess(asio::io_context& io) : io_(io), impl_(std::make_unique<Impl>(io)) {}

ChildProcess::~ChildProcess() {
  // Never leave a group behind, whatever the owner did.
  if (!done_ && pgid_ > 0) ::kill(-pgid_, SIGKILL);
  if (impl_ && impl_->proc.is_open()) impl_->proc.detach();
}

std::shared_ptr<ChildProcess> ChildProcess::start(asio::io_context& io, const ChildSpec& spec,
                                                  const OnStart& on_start, OnExit on_exit) {
  std::shared_ptr<ChildProcess> self(new ChildProcess(io));
  Impl& m = *self->impl_;
  m.spec = spec;
  m.on_exit = std::move(on_exit);
  m.t0 = Clock::now();
  auto fail = [&](const std::string& why) {
    ProcessResult r;
    r.end = ProcessResult::End::kSpawnFailed;
    r.error = why;
    // Reported from the loop, never from inside start().
    asio::post(io, [self, r] { self->finish(r); });
    return self;
  };

  std::error_code dir_error;
  if (!std::filesystem::is_directory(spec.cwd, dir_error))
    return fail("cannot enter the working directory " + spec.cwd.string());
  m.log = std::make_unique<CappedLog>(spec.log, spec.log_cap_bytes);
  if (!m.log->error().empty()) return fail("cannot open log: " + m.log->error());
  int out_fds[2], gate_fds[2];
  if (pipe2(out_fds, O_CLOEXEC) != 0) return fail(std::string("pipe: ") + strerror(errno));
  Fd out_read(out_fds[0]), out_write(out_fds[1]);
  if (pipe2(gate_fds, O_CLOEXEC) != 0) return fail(std::string("pipe: ") + strerror(errno));
  Fd gate_read(gate_fds[0]), gate_write(gate_fds[1]);

  std::vector<const char*> envp;
  for (const auto& e : spec.env) envp.push_back(e.c_str());
  envp.push_back(nullptr);
  std::vector<std::string> args(spec.wrapper.begin() + (spec.wrapper.empty() ? 0 : 1), spec.wrapper.end());
  std::string exe = spec.wrapper.empty() ? "/bin/sh" : resolve_executable(spec.wrapper.front(), spec.env);
  if (!spec.wrapper.empty()) args.push_back("/bin/sh");
  args.insert(args.end(), {"-c", kGateScript, "autoresearchd-gate", spec.command});

  bp::error_code ec;
  bp::process proc(io.get_executor());
  {
    bp::posix::default_launcher launcher;
    proc = launcher(io.get_executor(), ec, exe, args, bp::process_start_dir(spec.cwd.string()),
                    bp::process_stdio{nullptr, out_write.fd, out_write.fd}, GroupGateEnv{gate_read.fd, envp.data()});
  }
  out_write.reset();
  gate_read.reset();
  if (ec) return fail(spec.wrapper.empty() ? ec.message() : exe + ": " + ec.message());
  m.proc = std::move(proc);
  self->pgid_ = m.proc.id();
  setpgid(self->pgid_, self->pgid_);  // also here, so the group exists whichever side runs first
  m.out.assign(out_read.release());

  try {
    if (on_start) on_start(self->pgid_);
  } catch (const std::exception& e) {
    ::kill(-self->pgid_, SIGKILL);
    self->impl_->forced = ProcessResult::End::kSpawnFailed;
    ProcessResult r;
    r.end = ProcessResult::End::kSpawnFailed;
    r.error = std::string("could not record the child: ") + e.what();
    // The exit still arrives through async_wait below; finish reports r.
    self->impl_->exit = r;
  }
  if (!m.exit) {
    char go = '\n';
    if (::write(gate_write.fd, &go, 1) != 1) {
      ::kill(-self->pgid_, SIGKILL);
      ProcessResult r;
      r.end = ProcessResult::End::kSpawnFailed;
      r.error = "cannot release the child";
      m.exit = r;
    }
  }
  gate_write.reset();

  std::weak_ptr<ChildProcess> weak = self;
  if (spec.timeout_s > 0 && !m.exit) {
    m.timeout.expires_after(steady_seconds(spec.timeout_s));
    m.timeout.async_wait([weak](const bp::error_code& e) {
      if (auto s = weak.lock(); s && !e) s->terminate(ProcessResult::End::kTimedOut);
    });
  }
  // Output: read until EOF, into the capped log.
  std::function<void()> read_more;
  auto reader = std::make_shared<std::function<void()>>();
  *reader = [weak, reader]() {
    auto s = weak.lock();
    if (!s) return;
    s->impl_->out.async_read_some(asio::buffer(s->impl_->buf), [weak, reader](const bp::error_code& e, size_t n) {
      auto s = weak.lock();
      if (!s) return;
      if (n > 0) s->impl_->log->write(s->impl_->buf.data(), n);
      if (e) {
        s->impl_->output_done = true;
        if (s->impl_->exit) s->finish(*s->impl_->exit);
        return;
      }
      (*reader)();
    });
  };
  (*reader)();
  // The exit. The lambda holds the child alive until it has exited.
  m.proc.async_wait([self](const bp::error_code& e, int) {
    Impl& m = *self->impl_;
    ProcessResult r;
    r.seconds = std::chrono::duration<double>(Clock::now() - m.t0).count();
    if (m.exit) {
      r = *m.exit;  // a failure decided before the command ran
    } else if (m.forced) {
      r.end = *m.forced;
    } else if (e) {
      r.end = ProcessResult::End::kSpawnFailed;
      r.error = "wait: " + e.message();
    } else if (int status = m.proc.native_exit_code(); WIFEXITED(status)) {
      r.end = ProcessResult::End::kExited;
      r.code = WEXITSTATUS(status);
    } else {
      r.end = ProcessResult::End::kSignaled;
      r.code = WTERMSIG(m.proc.native_exit_code());
    }
    // Whatever of the group outlived the shell goes now; its pipe ends close
    // with it. A process that left the group keeps the pipe open: the drain
    // timer stops waiting for its output.
    ::kill(-self->pgid_, SIGKILL);
    m.timeout.cancel();
    m.grace.cancel();
    m.exit = r;
    if (m.output_done) {
      self->finish(r);
      return;
    }
    m.drain.expires_after(std::chrono::seconds(1));
    m.drain.async_wait([self](const bp::error_code& e) {
      if (!e && !self->done_) {
        bp::error_code ignored;
        self->impl_->out.close(ignored);
        self->finish(*self->impl_->exit);
      }
    });
  });
  return self;
}

void ChildProcess::terminate(ProcessResult::End why) {
  if (done_ || impl_->forced || impl_->exit) return;
  impl_->forced = why;
  ::kill(-pgid_, SIGTERM);
  std::weak_ptr<ChildProcess> weak = shared_from_this();
  impl_->grace.expires_after(steady_seconds(impl_->spec.kill_grace_s));
  impl_->grace.async_wait([weak](const bp::error_code& e) {
    if (auto s = weak.lock(); s && !e && !s->done_) ::kill(-s->pgid_, SIGKILL);
  });
}

void ChildProcess::stop() { terminate(ProcessResult::End::kStopped); }

void ChildProcess::finish(ProcessResult result) {
  if (done_) return;
  done_ = true;
  impl_->drain.cancel();
  impl_->timeout.cancel();
  impl_->grace.cancel();
  if (impl_->log) {
    impl_->log->close();
    if (!impl_->log->error().empty() && result.error.empty()) result.log_error = impl_->log->error();
  }
  if (impl_->on_exit) {
    OnExit cb = std::move(impl_->on_exit);
    cb(result);
  }
}

}  // namespace ard
