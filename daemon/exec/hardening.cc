// See hardening.h.
#include "daemon/exec/hardening.h"

#include <sys/prctl.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>

namespace ard {

std::string harden_process() {
  rlimit no_core{0, 0};
  if (setrlimit(RLIMIT_CORE, &no_core) != 0) return std::string("setrlimit(RLIMIT_CORE, 0): ") + strerror(errno);
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return std::string("prctl(PR_SET_DUMPABLE, 0): ") + strerror(errno);
  return "";
}

}  // namespace ard
