// See sandbox.h.
#include "daemon/sandbox.h"

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
  std::string option;  ///< --ro-bind, --bind, --dev-bind, --proc, --dev, --tmpfs
  fs::path path;
  uint64_t size = 0;   ///< a --tmpfs's size cap in bytes (--size), 0: none
  size_t depth() const { return static_cast<size_t>(std::distance(path.begin(), path.end())); }
};

fs::path absolute_path(const fs::path& p, const char* what) {
  if (p.empty() || p.is_relative())
    throw std::invalid_argument(std::string("sandbox: ") + what + " must be an absolute path, got '" +
                                p.string() + "'");
  // Mount points are the real paths: bwrap would otherwise mount over a symlink's target anyway.
  return fs::weakly_canonical(p);
}

/// "gitdir: <path>" from a worktree's .git file, resolved against its directory.
std::optional<fs::path> read_gitdir(const fs::path& dot_git) {
  std::ifstream in(dot_git);
  std::string line;
  if (!in || !std::getline(in, line) || !line.starts_with("gitdir: ")) return std::nullopt;
  fs::path dir = line.substr(8);
  if (dir.is_relative()) dir = dot_git.parent_path() / dir;
  return fs::weakly_canonical(dir);
}

/// The worktree's git metadata: its .git (a file in a linked worktree), the
/// directory that file points to, and the repository's common directory. None of
/// it may change from inside: a changed ref, config or hook would outlive the child.
std::vector<fs::path> git_metadata(const fs::path& worktree) {
  std::vector<fs::path> out;
  fs::path dot_git = worktree / ".git";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dot_git, ec))) return out;
  out.push_back(dot_git);
  if (!fs::is_regular_file(dot_git, ec)) return out;
  auto gitdir = read_gitdir(dot_git);
  if (!gitdir || !fs::is_directory(*gitdir, ec)) return out;
  out.push_back(*gitdir);
  std::ifstream common(*gitdir / "commondir");
  std::string line;
  if (common && std::getline(common, line) && !line.empty()) {
    fs::path dir = line;
    if (dir.is_relative()) dir = *gitdir / dir;
    if (fs::is_directory(dir, ec)) out.push_back(fs::weakly_canonical(dir));
  }
  return out;
}

/// The existing paths under /tmp that the command names (argv words, and the
/// words of a shell command line in them), which the tmpfs on /tmp would hide:
/// a tool or a repo in /tmp (a clone there, a test's temporary directory) is
/// bound back read-only so the command finds what it names.
std::vector<fs::path> named_tmp_paths(const std::vector<std::string>& argv) {
  std::vector<fs::path> out;
  for (const auto& arg : argv) {
    std::string word;
    auto flush = [&] {
      if (word.rfind("/tmp/", 0) == 0) {
        std::error_code ec;
        fs::path p = fs::weakly_canonical(word, ec);
        if (!ec && p.string().rfind("/tmp/", 0) == 0 && fs::exists(p, ec) &&
            std::find(out.begin(), out.end(), p) == out.end())
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

  std::vector<Mount> mounts = {
      {"--ro-bind", "/"}, {"--proc", "/proc"}, {"--dev", "/dev"}, {"--tmpfs", "/tmp", spec.tmp_bytes}};
  for (const auto& d : spec.devices) mounts.push_back({"--dev-bind", absolute_path(d, "a device")});

  const fs::path scratch = absolute_path(spec.scratch, "the scratch dir");
  std::vector<fs::path> writable = {worktree};
  if (spec.scratch_bytes > 0) mounts.push_back({"--tmpfs", scratch, spec.scratch_bytes});
  else writable.push_back(scratch);
  for (const auto& p : spec.extra_rw) writable.push_back(absolute_path(p, "a writable dir"));
  std::vector<fs::path> read_only = git_metadata(worktree);
  for (const auto& p : spec.read_only) read_only.push_back(absolute_path(p, "a read-only dir"));

  for (const auto& w : writable)
    if (std::find(read_only.begin(), read_only.end(), w) != read_only.end())
      throw std::invalid_argument("sandbox: '" + w.string() + "' is both writable and read-only");

  for (const auto& w : writable) mounts.push_back({"--bind", w});
  for (const auto& r : read_only) mounts.push_back({"--ro-bind", r});
  // What the command names under /tmp, unless a writable dir already holds it.
  for (const auto& p : named_tmp_paths(spec.argv)) {
    bool inside = false;
    for (const auto& w : writable) {
      auto rel = p.lexically_relative(w);
      inside = inside || (!rel.empty() && *rel.begin() != "..");
    }
    if (!inside) mounts.push_back({"--ro-bind", p});
  }
  // Deeper paths are mounted later, so they win over their parents; at equal depth
  // the order above holds (read-only after writable, so a path in both is read-only).
  std::stable_sort(mounts.begin(), mounts.end(), [](const Mount& a, const Mount& b) { return a.depth() < b.depth(); });

  std::vector<std::string> argv = {bwrap,           "--die-with-parent", "--new-session", "--unshare-pid",
                                   "--unshare-ipc", "--unshare-uts",     "--unshare-cgroup-try"};
  if (!spec.network) argv.push_back("--unshare-net");
  argv.insert(argv.end(), {"--cap-drop", "ALL"});
  for (const auto& m : mounts) {
    if (m.size > 0) argv.insert(argv.end(), {"--size", std::to_string(m.size)});
    argv.push_back(m.option);
    if (m.option == "--ro-bind" || m.option == "--bind" || m.option == "--dev-bind") argv.push_back(m.path.string());
    argv.push_back(m.path.string());
  }
  argv.push_back("--chdir");
  argv.push_back(spec.cwd.empty() ? worktree.string() : absolute_path(spec.cwd, "the working directory").string());
  argv.push_back("--");
  argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
  return argv;
}

std::vector<fs::path> nvidia_devices(const fs::path& dev) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dev, ec))
    if (e.path().filename().string().starts_with("nvidia")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> sandbox_wrapper(SandboxSpec spec, const std::string& bwrap) {
  spec.argv = {"/bin/sh"};
  std::vector<std::string> argv = sandbox_argv(spec, bwrap);
  argv.pop_back();  // the runner appends the shell and its gate
  return argv;
}

std::optional<std::string> sandbox_unavailable(const std::string& bwrap) {
  const std::string fix = "install bubblewrap (apt-get install bubblewrap), or set [sandbox] mode = \"off\"";
  // The smallest sandbox with every namespace and mount kind the real one uses.
  std::vector<std::string> args = {bwrap,           "--die-with-parent", "--unshare-pid", "--unshare-ipc",
                                   "--unshare-uts", "--unshare-net",     "--cap-drop",    "ALL",
                                   "--ro-bind",     "/",                 "/",             "--proc",
                                   "/proc",         "--dev",             "/dev",          "--tmpfs",
                                   "/tmp",          "--",                "/bin/true"};
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

std::optional<std::string> sandbox_start_refusal(const std::string& mode, const std::string& bwrap) {
  if (mode == "off") return std::nullopt;
  auto why = sandbox_unavailable(bwrap);
  if (!why) return std::nullopt;
  return "the sandbox cannot run, so no experiment would be confined: " + *why;
}

std::string sandbox_off_warning(const std::string& mode) {
  return mode == "off" ? "warning: [sandbox] mode = \"off\": builds and stages run unconfined, with your user's "
                         "access to every file, process and network"
                       : "";
}

}  // namespace ard
