// See sandbox.h.
#include "daemon/exec/sandbox.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

extern char** environ;

namespace ard {
namespace {

namespace fs = std::filesystem;

struct Mount {
  std::string option;  ///< --ro-bind, --bind, --dev-bind, --proc, --dev, --tmpfs, --symlink
  fs::path path;       ///< where it appears inside
  uint64_t size = 0;   ///< a --tmpfs's size cap in bytes (--size), 0: none
  fs::path source = {};     ///< a bind's host path or a symlink's target when not `path` itself
  bool remount_ro = false;  ///< a --tmpfs made read-only once mounted (an empty dir hiding what was there)
  size_t depth() const { return static_cast<size_t>(std::distance(path.begin(), path.end())); }
};

/// The host's system, read-only: programs, libraries and their configuration, the CUDA toolkit
/// (under /usr/local or /opt), and /sys for the GPU driver. A top-level link (merged /usr:
/// /bin -> usr/bin) is made as the same link inside.
constexpr const char* kSystemPaths[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                                        "/etc", "/opt", "/sys"};
/// Secrets under the system paths that no build or stage needs: hidden (a file behind /dev/null,
/// a directory behind an empty read-only tmpfs).
constexpr const char* kHiddenPaths[] = {"/etc/shadow",  "/etc/shadow-",  "/etc/gshadow",     "/etc/gshadow-",
                                        "/etc/sudoers", "/etc/sudoers.d", "/etc/ssh",        "/etc/ssl/private",
                                        "/etc/credstore", "/etc/credstore.encrypted", "/etc/wireguard"};

/// The mounts that make the host's system visible (existing paths only).
std::vector<Mount> system_mounts(const std::vector<fs::path>& extra_read_only) {
  std::vector<Mount> out;
  std::error_code ec;
  for (const char* p : kSystemPaths) {
    const fs::file_status st = fs::symlink_status(p, ec);
    if (ec || !fs::exists(st)) continue;
    if (fs::is_symlink(st)) {
      out.push_back({"--symlink", p, 0, fs::read_symlink(p, ec)});
      if (ec) out.pop_back();
    } else if (fs::is_directory(st)) {
      out.push_back({"--ro-bind", p});
    }
  }
  for (const auto& p : extra_read_only)
    if (fs::exists(p, ec)) out.push_back({"--ro-bind", fs::weakly_canonical(p)});
  for (const char* p : kHiddenPaths) {
    const fs::file_status st = fs::symlink_status(p, ec);
    if (ec || !fs::exists(st)) continue;
    if (fs::is_directory(st)) out.push_back({"--tmpfs", p, 0, {}, true});
    else if (fs::is_regular_file(st)) out.push_back({"--ro-bind", p, 0, "/dev/null"});
  }
  return out;
}

/// A mount as bwrap's options: [--size N] OPTION [SOURCE] PATH [--remount-ro PATH].
void append_mount(std::vector<std::string>& argv, const Mount& m) {
  if (m.size > 0) argv.insert(argv.end(), {"--size", std::to_string(m.size)});
  argv.push_back(m.option);
  if (m.option == "--ro-bind" || m.option == "--bind" || m.option == "--dev-bind" || m.option == "--symlink")
    argv.push_back((m.source.empty() ? m.path : m.source).string());
  argv.push_back(m.path.string());
  if (m.remount_ro) argv.insert(argv.end(), {"--remount-ro", m.path.string()});
}

bool is_under(const fs::path& p, const fs::path& dir) {
  const auto rel = p.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

fs::path absolute_path(const fs::path& p, const char* what) {
  if (p.empty() || p.is_relative())
    throw std::invalid_argument(std::string("sandbox: ") + what + " must be an absolute path, got '" +
                                p.string() + "'");
  // Mount points are the real paths: bwrap would otherwise mount over a symlink's target anyway.
  return fs::weakly_canonical(p);
}

/// The existing absolute paths that the command names (argv words, and the
/// words of a shell command line in them), other than / itself: a tool or a
/// data file the user's command names by its path (in a clone under /tmp, in
/// a home directory) is bound read-only so the command finds it.
std::vector<fs::path> named_paths(const std::vector<std::string>& argv) {
  std::vector<fs::path> out;
  for (const auto& arg : argv) {
    std::string word;
    auto flush = [&] {
      if (word.size() > 1 && word[0] == '/') {
        std::error_code ec;
        fs::path p = fs::weakly_canonical(word, ec);
        if (!ec && p != "/" && fs::exists(p, ec) && std::find(out.begin(), out.end(), p) == out.end())
          out.push_back(p);
      }
      word.clear();
    };
    for (char c : arg) {
      if (std::isspace(static_cast<unsigned char>(c)) || std::strchr("'\"`;&|()<>=:,", c)) flush();
      else word += c;
    }
    flush();
  }
  return out;
}

}  // namespace

std::vector<std::string> sandbox_argv(const SandboxSpec& spec, const std::string& bwrap) {
  if (spec.argv.empty()) throw std::invalid_argument("sandbox: empty command");
  const fs::path worktree = absolute_path(spec.worktree, "the worktree");

  std::vector<fs::path> extra_system;
  for (const auto& p : spec.system_read_only) extra_system.push_back(absolute_path(p, "a read-only system path"));
  std::vector<Mount> mounts = system_mounts(extra_system);
  mounts.insert(mounts.end(), {{"--proc", "/proc"}, {"--dev", "/dev"}, {"--tmpfs", "/tmp", spec.tmp_bytes}});
  for (const auto& d : spec.devices) mounts.push_back({"--dev-bind", absolute_path(d, "a device")});

  const fs::path scratch = absolute_path(spec.scratch, "the scratch dir");
  std::vector<fs::path> writable = {worktree};
  if (spec.scratch_bytes > 0) mounts.push_back({"--tmpfs", scratch, spec.scratch_bytes});
  else writable.push_back(scratch);
  for (const auto& p : spec.extra_rw) writable.push_back(absolute_path(p, "a writable dir"));
  // The worktree's own .git (a linked worktree's file naming its gitdir) stays as it is; the
  // gitdir and the repository behind it are not bound, so git's objects, index and config (a
  // staged file, a hook) are out of sight. Where the worktree is a repository itself, its .git
  // directory is hidden behind an empty read-only tmpfs.
  std::vector<fs::path> read_only;
  std::error_code git_ec;
  const fs::path dot_git = worktree / ".git";
  const bool git_dir_inside = fs::is_directory(fs::symlink_status(dot_git, git_ec));
  if (!git_dir_inside && fs::exists(fs::symlink_status(dot_git, git_ec))) read_only.push_back(dot_git);
  for (const auto& p : spec.read_only) read_only.push_back(absolute_path(p, "a read-only dir"));

  for (const auto& w : writable)
    if (std::find(read_only.begin(), read_only.end(), w) != read_only.end())
      throw std::invalid_argument("sandbox: '" + w.string() + "' is both writable and read-only");

  for (const auto& w : writable) mounts.push_back({"--bind", w});
  for (const auto& r : read_only) mounts.push_back({"--ro-bind", r});
  if (git_dir_inside) mounts.push_back({"--tmpfs", dot_git, 0, {}, true});
  // What the command names, unless a bound path already holds it (inside the worktree it is
  // writable already; under /usr it is there already).
  for (const auto& p : named_paths(spec.argv)) {
    bool inside = is_under(p, "/proc") || is_under(p, "/dev");
    for (const auto& m : mounts)
      inside = inside || ((m.option == "--ro-bind" || m.option == "--bind") && m.source.empty() &&
                          (p == m.path || is_under(p, m.path)));
    if (!inside) mounts.push_back({"--ro-bind", p});
  }
  // Deeper paths are mounted later, so they win over their parents; at equal depth
  // the order above holds (read-only after writable, so a path in both is read-only).
  std::stable_sort(mounts.begin(), mounts.end(), [](const Mount& a, const Mount& b) { return a.depth() < b.depth(); });

  std::vector<std::string> argv = {bwrap,           "--die-with-parent", "--new-session", "--unshare-pid",
                                   "--unshare-ipc", "--unshare-uts",     "--unshare-cgroup-try"};
  if (!spec.network) argv.push_back("--unshare-net");
  argv.insert(argv.end(), {"--cap-drop", "ALL"});
  for (const auto& m : mounts) append_mount(argv, m);
  argv.push_back("--chdir");
  argv.push_back(spec.cwd.empty() ? worktree.string() : absolute_path(spec.cwd, "the working directory").string());
  argv.push_back("--");
  argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
  return argv;
}

bool sandbox_shows(const fs::path& path, const std::vector<std::string>& extra_read_only) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(path, ec);
  if (ec) return false;
  for (const char* h : kHiddenPaths)
    if (p == h || is_under(p, h)) return false;
  for (const char* s : kSystemPaths) {
    const fs::path root = fs::weakly_canonical(s, ec);
    if (!ec && (p == root || is_under(p, root))) return true;
  }
  for (const auto& e : extra_read_only) {
    const fs::path root = fs::weakly_canonical(e, ec);
    if (!ec && (p == root || is_under(p, root))) return true;
  }
  return false;
}

std::vector<fs::path> nvidia_devices(const fs::path& dev) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dev, ec))
    if (e.path().filename().string().starts_with("nvidia")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> sandbox_wrapper(SandboxSpec spec, const std::string& command, const std::string& bwrap) {
  spec.argv = {"/bin/sh", "-c", command};
  std::vector<std::string> argv = sandbox_argv(spec, bwrap);
  argv.resize(argv.size() - spec.argv.size());  // the runner appends the shell, its gate and the command
  return argv;
}

std::optional<std::string> sandbox_unavailable(const std::string& bwrap) {
  const std::string fix = "install bubblewrap (apt-get install bubblewrap), or set [sandbox] mode = \"off\"";
  // The smallest sandbox with every namespace and mount kind the real one uses: the system
  // mounts as every child gets them, then /proc, /dev and /tmp.
  std::vector<std::string> args = {bwrap,           "--die-with-parent", "--unshare-pid", "--unshare-ipc",
                                   "--unshare-uts", "--unshare-net",     "--cap-drop",    "ALL"};
  for (const auto& m : system_mounts({})) append_mount(args, m);
  args.insert(args.end(), {"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--", "/bin/true"});
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);

  int err[2];
  if (pipe2(err, O_CLOEXEC) != 0) return "sandbox: pipe failed: " + std::string(strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, bwrap.c_str(), &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(err[1]);
  if (rc != 0) {
    close(err[0]);
    if (rc == ENOENT) return bwrap + " not found: " + fix;
    return "cannot run " + bwrap + ": " + strerror(rc) + ": " + fix;
  }
  std::string message;
  char buf[512];
  for (ssize_t n; (n = read(err[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (message.size() < 4096) message.append(buf, static_cast<size_t>(n));
  }
  close(err[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return std::nullopt;
  if (size_t nl = message.find('\n'); nl != std::string::npos) message.resize(nl);
  if (message.empty()) message = "exit status " + std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  return bwrap + " cannot create its namespaces (" + message +
         "): allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or "
         "kernel.apparmor_restrict_unprivileged_userns=0), or set [sandbox] mode = \"off\"";
}

std::optional<std::string> sandbox_start_refusal(SandboxMode mode, const std::string& bwrap) {
  if (mode == SandboxMode::kOff) return std::nullopt;
  auto why = sandbox_unavailable(bwrap);
  if (!why) return std::nullopt;
  return "the sandbox cannot run, so no experiment would be confined: " + *why;
}

std::string sandbox_off_warning(SandboxMode mode) {
  return mode == SandboxMode::kOff ? "warning: [sandbox] mode = \"off\": builds and stages run unconfined, with your user's "
                         "access to every file, process and network"
                       : "";
}

}  // namespace ard
