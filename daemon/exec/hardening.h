// The daemon's own protection against the children it runs: it holds the LLM
// API key in its environment and memory, and its children are untrusted code.
#pragma once

#include <string>

namespace ard {

/// Makes this process non-dumpable (PR_SET_DUMPABLE 0) and sets its core size
/// limit to 0: no core file is written when it crashes, and processes of the same
/// user cannot read its /proc/<pid>/environ or mem or ptrace it. (Root, or a
/// holder of CAP_SYS_PTRACE, still can: the sandbox drops every capability and
/// hides the daemon behind its own PID namespace.) Call it once, first thing at
/// daemon start. Returns "" or the one-line reason it failed.
std::string harden_process();

}  // namespace ard
