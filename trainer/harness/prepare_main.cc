// prepare: the command-line entry over prepare_dataset (prepare.h).
//   prepare --train FILE [--train FILE ...] --val FILE [--val FILE ...]
//           [--field text] [--cache DIR] [--threads N]
// Last stdout line on success: "data_dir: <absolute path>". Bad input: exit 1
// with "prepare: error: <file>:<line>: <cause>" on stderr.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "harness/input_error.h"
#include "harness/prepare.h"

namespace {

constexpr const char* kUsage =
    "usage: prepare --train FILE [--train FILE ...] --val FILE [--val FILE ...]\n"
    "               [--field text] [--cache DIR] [--threads N]\n"
    "  inputs: .jsonl (one JSON object a line) or .txt (blank-line separated documents),\n"
    "          optionally compressed as .xz, .gz or .zst\n"
    "  --field NAME   JSON field holding the document text (default: text)\n"
    "  --cache DIR    where datasets are kept (default: ~/.cache/autoresearchd)\n"
    "  --threads N    worker threads (default: all cores)\n";

}  // namespace

int main(int argc, char** argv) {
  harness::PrepareOptions o;
  o.log = &std::cout;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        std::cout << kUsage;
        return 0;
      }
      if (i + 1 >= argc) throw harness::InputError(arg, 0, arg.rfind("--", 0) == 0 ? "missing value" : "unexpected argument");
      std::string value = argv[++i];
      if (arg == "--train") o.train.push_back(value);
      else if (arg == "--val") o.val.push_back(value);
      else if (arg == "--field") o.field = value;
      else if (arg == "--cache") o.cache_dir = value;
      else if (arg == "--threads") {
        char* end = nullptr;
        long n = std::strtol(value.c_str(), &end, 10);
        if (*end != '\0' || n < 1 || n > 1024) throw harness::InputError(arg, 0, "expected a thread count, got '" + value + "'");
        o.threads = static_cast<int>(n);
      } else {
        throw harness::InputError(arg, 0, "unknown flag (see --help)");
      }
    }
    harness::PrepareResult r = harness::prepare_dataset(o);
    std::cout << "data_dir: " << r.data_dir << std::endl;
    return 0;
  } catch (const harness::InputError& e) {
    std::cerr << "prepare: error: " << e.what() << std::endl;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "prepare: error: " << e.what() << std::endl;
    return 2;
  }
}
