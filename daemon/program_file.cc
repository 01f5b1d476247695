// See program_file.h.
#include "daemon/program_file.h"

#include <string.h>

#include <cerrno>
#include <fstream>
#include <sstream>

namespace ard {

ProgramFile read_program_file(const std::filesystem::path& path) {
  ProgramFile out;
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec) && !ec) {
      out.problem = ProgramFile::Problem::missing;
      out.message = path.string() + " is missing; waiting for it before the next proposal";
    } else {
      out.problem = ProgramFile::Problem::unreadable;
      out.message = path.string() + ": cannot read: " + (err ? strerror(err) : "unknown error") +
                    "; waiting for it before the next proposal";
    }
    return out;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    out.problem = ProgramFile::Problem::unreadable;
    out.message = path.string() + ": read error; waiting for it before the next proposal";
    return out;
  }
  out.content = ss.str();
  if (out.content.find_first_not_of(" \t\r\n") == std::string::npos) {
    out.problem = ProgramFile::Problem::empty;
    out.message = path.string() + " is empty; waiting for it before the next proposal";
    out.content.clear();
  }
  return out;
}

}  // namespace ard
