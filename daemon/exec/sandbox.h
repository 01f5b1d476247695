// The sandbox every child runs in: the bubblewrap (bwrap) command line that
// wraps a build, a stage or prepare, and the probe that says whether bwrap can
// run here. The runner spawns the argv this returns in place of the child's own.
//
// Inside: its own PID, IPC and UTS namespaces (and network unless allowed), a
// fresh /proc that shows only the sandbox's processes, a minimal /dev with the
// GPU's /dev/nvidia* devices, a tmpfs /tmp (and scratch) with a size cap, and of
// the host's files only these: the system read-only (/usr, /bin, /sbin, /lib*,
// /etc without its secrets, /opt, /sys, and any path [sandbox] read_only adds),
// the worktree and its scratch writable, the paths the caller lists read-only
// (the data, the build output for a stage), and what the command names by an
// absolute path, read-only. Not the user's home, not the repository around the
// worktree, not its .git, not other slots, not the daemon's state. Every
// capability is dropped, so a child run as root cannot remount anything
// writable. When the sandbox's first process exits or is killed, the kernel kills
// every process left in its PID namespace, setsid or not; --die-with-parent does
// the same when the runner dies.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config.h"

namespace ard {

struct SandboxSpec {
  std::filesystem::path worktree;                 ///< writable; its `.git` file stays read-only
  std::filesystem::path scratch;                  ///< writable; the child's private scratch space
  /// The sandbox's /tmp is a tmpfs of at most this many bytes (0: the kernel's
  /// default, half of RAM); it is gone when the sandbox ends.
  uint64_t tmp_bytes = 0;
  /// >0: scratch is a tmpfs of at most this many bytes mounted over the
  /// directory (empty at every start, gone with the sandbox, nothing on the
  /// host's disk); 0: the directory itself, bound writable.
  uint64_t scratch_bytes = 0;
  std::vector<std::filesystem::path> extra_rw;    ///< writable too (the data cache, for prepare only)
  std::vector<std::filesystem::path> read_only;   ///< bound read-only, also under a writable dir (the build output)
  /// More of the host's system, read-only (`sandbox.read_only`: a toolchain outside /usr and /opt).
  std::vector<std::filesystem::path> system_read_only;
  std::vector<std::filesystem::path> devices;     ///< device nodes bound in (nvidia_devices())
  bool network = false;                           ///< false: an empty network namespace (no loopback peers)
  std::filesystem::path cwd;                      ///< the child's working directory; the worktree if empty
  std::vector<std::string> argv;                  ///< the command, argv[0] looked up in PATH
};

/// The full argv: `bwrap <options> -- <spec.argv...>`. Mounts are ordered by
/// path depth (a deeper path is mounted later and wins), read-only before writable
/// at equal depth, so a read-only path inside a writable one stays read-only. The
/// worktree's .git file (a linked worktree's) is read-only; the gitdir it names
/// and the repository behind it are not bound at all; a .git directory in the
/// worktree is hidden behind an empty read-only tmpfs. A writable dir inside a
/// read-only one is writable (the deeper mount wins): the caller lists what it
/// means. Throws std::invalid_argument for a relative path, an empty argv, or a
/// path that is both writable and read-only.
std::vector<std::string> sandbox_argv(const SandboxSpec& spec, const std::string& bwrap = "bwrap");

/// sandbox_argv for a child that the runner starts as `/bin/sh -c <command>`
/// behind it: the argv up to and including `--` (spec.argv is ignored; the paths
/// that command names are bound as sandbox_argv binds them).
std::vector<std::string> sandbox_wrapper(SandboxSpec spec, const std::string& command,
                                         const std::string& bwrap = "bwrap");

/// Whether the sandbox shows a host path without the caller binding it: true for
/// a path under the system paths (resolved, so /bin/x is /usr/bin/x on merged
/// /usr) or under one of extra_read_only (`sandbox.read_only`), and not one of
/// the hidden secrets. The worktree, the data and what a command names are bound
/// by the caller and are not considered here.
bool sandbox_shows(const std::filesystem::path& path, const std::vector<std::string>& extra_read_only);

/// The /dev/nvidia* entries under dev (the GPU's device nodes and nvidia-caps).
std::vector<std::filesystem::path> nvidia_devices(const std::filesystem::path& dev = "/dev");

/// nullopt when bwrap is on PATH and can create the namespaces the sandbox uses;
/// otherwise one line: what is wrong and how to fix it.
std::optional<std::string> sandbox_unavailable(const std::string& bwrap = "bwrap");

/// Why `start` refuses to run under [sandbox] mode (nullopt: it may run): mode
/// "bwrap" with a bwrap that is missing or cannot create its namespaces.
std::optional<std::string> sandbox_start_refusal(SandboxMode mode, const std::string& bwrap = "bwrap");

/// The line `status` prints under mode "off", "" otherwise.
std::string sandbox_off_warning(SandboxMode mode);

}  // namespace ard
