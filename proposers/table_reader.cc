// See table_reader.h.
#include "proposers/table_reader.h"

#include <sstream>

namespace ard {

std::string show_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace ard
