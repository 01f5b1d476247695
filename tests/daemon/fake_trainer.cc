// A stand-in for the CUDA trainer and its build, for the daemon's tests.
// It reads the editable file the daemon edits and does what its lines say:
//
//   val_bpb 0.95      the value to report (default 1.0)
//   bonus 0.1         subtracted from it (every such line counts), so edits to
//                     different lines combine the way re-applied changes do
//   seconds 0.2       how long "training" takes (default 0.05)
//   vram 2048         peak_vram_mb to report (default 1024)
//   CRASH             abort (SIGABRT) during training
//   FAIL              print "FAIL: loss is NaN at step 3" and exit 1
//   HANG              never finish training (ignores SIGTERM too)
//   NAN               report val_bpb: nan
//   SILENT            print nothing and exit 0
//   BUILD_ERROR msg   `build` fails with a compiler-style error at that line
//   TAMPER            `build` modifies trainer/harness/eval.h (a fixed file)
//
//   fake_trainer build FILE
//   fake_trainer run FILE [--check] [--data DIR]    (--data: the dir must exist)
//   fake_trainer prepare --train F --val F [--field X] [--cache DIR]
//       speaks prepare's protocol: checks its inputs exist, makes DIR/dataset
//       and prints `data_dir: DIR/dataset` last, or a one-line error and exit 1
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::vector<std::string> read_lines(const char* path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "fake_trainer: cannot read %s\n", path);
    std::exit(2);
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool has(const std::vector<std::string>& lines, const std::string& word) {
  for (const auto& l : lines)
    if (l.rfind(word, 0) == 0) return true;
  return false;
}

double number(const std::vector<std::string>& lines, const std::string& key, double fallback) {
  for (const auto& l : lines)
    if (l.rfind(key + " ", 0) == 0) return std::atof(l.c_str() + key.size() + 1);
  return fallback;
}

double bonus(const std::vector<std::string>& lines) {
  double sum = 0;
  for (const auto& l : lines)
    if (l.rfind("bonus ", 0) == 0) sum += std::atof(l.c_str() + 6);
  return sum;
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

int build(const char* path) {
  auto lines = read_lines(path);
  std::printf("[1/2] compiling %s\n", path);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("BUILD_ERROR", 0) == 0) {
      size_t start = lines[i].find_first_not_of(' ', 11);
      std::string msg = start == std::string::npos ? "" : lines[i].substr(start);
      std::fprintf(stderr, "%s:%zu:1: error: %s\n", path, i + 1, msg.c_str());
      std::fprintf(stderr, "ninja: build stopped: subcommand failed.\n");
      return 1;
    }
  }
  if (has(lines, "TAMPER")) {
    std::ofstream out("trainer/harness/eval.h", std::ios::app);
    out << "// changed by the build\n";
  }
  std::printf("[2/2] linking train\n");
  return 0;
}

int prepare(int argc, char** argv) {
  std::string cache = ".";
  bool have_train = false, have_val = false;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--train" || flag == "--val") {
      if (!std::ifstream(value)) {
        std::fprintf(stderr, "prepare: error: %s:0: cannot open the file\n", value.c_str());
        return 1;
      }
      (flag == "--train" ? have_train : have_val) = true;
    } else if (flag == "--cache") {
      cache = value;
    }
  }
  if (!have_train || !have_val) {
    std::fprintf(stderr, "prepare: error: -:0: need --train and --val\n");
    return 1;
  }
  std::string dir = cache + "/dataset";
  std::string mk = "mkdir -p '" + dir + "'";
  if (std::system(mk.c_str()) != 0) return 1;
  std::printf("tokenizing...\ndata_dir: %s\n", dir.c_str());
  return 0;
}

int run(const char* path, bool check, const std::string& data) {
  auto lines = read_lines(path);
  if (!data.empty()) {
    if (!std::ifstream(data + "/.")) {
      std::printf("FAIL: no dataset at %s\n", data.c_str());
      return 1;
    }
    std::printf("data: %s\n", data.c_str());
  }
  if (check) {
    std::printf("check: ok\n");
    return 0;
  }
  if (has(lines, "SILENT")) return 0;
  double seconds = number(lines, "seconds", 0.05);
  std::printf("step 0 | loss 9.01\n");
  std::fflush(stdout);
  if (has(lines, "HANG")) {
    signal(SIGTERM, SIG_IGN);
    while (true) sleep_s(1);
  }
  sleep_s(seconds);
  if (has(lines, "CRASH")) {
    std::printf("step 1 | loss 8.50\n");
    std::fflush(stdout);
    std::abort();
  }
  if (has(lines, "FAIL")) {
    std::printf("FAIL: loss is NaN at step 3\n");
    return 1;
  }
  std::printf("---\n");
  if (has(lines, "NAN")) std::printf("val_bpb:          nan\n");
  else std::printf("val_bpb:          %.6f\n", number(lines, "val_bpb", 1.0) - bonus(lines));
  std::printf("training_seconds: %.1f\n", seconds);
  std::printf("total_seconds:    %.1f\n", seconds + 0.1);
  std::printf("peak_vram_mb:     %.1f\n", number(lines, "vram", 1024));
  std::printf("mfu_percent:      39.80\n");
  std::printf("total_tokens_M:   1.0\n");
  std::printf("num_steps:        10\n");
  std::printf("num_params_M:     0.1\n");
  std::printf("depth:            2\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "build") return build(argv[2]);
  if (argc >= 3 && std::string(argv[1]) == "run") {
    bool check = false;
    std::string data;
    for (int i = 3; i < argc; ++i) {
      if (std::string(argv[i]) == "--check") check = true;
      if (std::string(argv[i]) == "--data" && i + 1 < argc) data = argv[++i];
    }
    return run(argv[2], check, data);
  }
  if (argc >= 2 && std::string(argv[1]) == "prepare") return prepare(argc, argv);
  std::fprintf(stderr, "usage: fake_trainer build FILE | run FILE [--check] [--data DIR] | prepare ...\n");
  return 2;
}
