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
//   LEAVE path        training appends a line to path (relative to the worktree):
//                     a `core`, a checkpoint, an edit after the commit
//   GIT_COMMIT        training runs `git commit --allow-empty` in the worktree
//   MOVE_REF ref      training points ref at the worktree's HEAD (git update-ref)
//   SYMLINK path to   training replaces path (relative to the worktree) with a
//                     symlink to `to`
//   REWRITE path      training rewrites path in place with the same size and
//                     its old mtime (the letters' case flipped)
//   VAL_TEXT s        the summary's val_bpb line reads `val_bpb: s`, verbatim
//   EXTRA_BLOCK v     a second summary block with val_bpb v after the real one
//   PRINT path        training prints the file at path (what a stage can read)
//   FILL path         training writes zeros to path until the disk is full,
//                     then fails (exit 1)
//   POISON path       training writes "val_bpb 0.001" to path, dated a day
//                     ahead: a stale build output an incremental build keeps
//   PROBE_FAIL        print the harness's integrity-probe failure line
//                     "FAIL: tampered: causality: ..." and exit 1
//   HANG              never finish training (ignores SIGTERM too)
//   HANG_UNLESS path  the same, unless the file at path (absolute) exists: a run
//                     that a test lets finish after a restart
//   NAN               report val_bpb: nan
//   SILENT            print nothing and exit 0
//   BUILD_ERROR msg   `build` fails with a compiler-style error at that line (the
//                     simulated trainer's build, daemon/sim_trainer.h)
//   TAMPER            `build` modifies trainer/harness/eval.h (a fixed file)
//
//
// Simulation mode (the decision benchmark), when the file has an `effect`
// line: the simulated trainer that ships with the daemon (daemon/sim_trainer.h,
// `autoresearchd sim-trainer`), whose lines (effect, bpb_a, bpb_b, noise_sigma,
// step_cost, seconds, vram) and board speeds (FAKE_GPU_SPEED, FAKE_GPU_SPEEDS)
// it documents; this file keeps only the test-only modes above.
//
//   fake_trainer build FILE
//   fake_trainer run FILE [--check] [--data DIR] [--budget S] [--budget-scale F] [--depth-scale S] [--nonce N]
//       (--data: the dir must exist)
//   fake_trainer prepare --train F --val F [--field X] [--cache DIR]
//       speaks prepare's protocol: checks its inputs exist, makes DIR/dataset
//       and prints `data_dir: DIR/dataset` last, or a one-line error and exit 1
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/sim_trainer.h"

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

std::string word_after(const std::vector<std::string>& lines, const std::string& key) {
  for (const auto& l : lines)
    if (l.rfind(key, 0) == 0) return l.substr(key.size());
  return "";
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
  if (!has(lines, "BUILD_ERROR") && has(lines, "TAMPER")) {
    std::ofstream out("trainer/harness/eval.h", std::ios::app);
    out << "// changed by the build\n";
  }
  return ard::sim_build(path, std::cout, std::cerr);  // BUILD_ERROR: the simulated trainer's build
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

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "fake_trainer: %s\n", message.c_str());
  std::exit(2);
}

std::string read_all(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run(const char* path, const ard::SimRunFlags& flags) {
  const bool check = flags.check;
  const std::string& data = flags.data;
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
  if (has(lines, "effect ")) return ard::sim_simulate(path, flags, std::cout, std::cerr);
  for (const auto& line : lines) {
    if (line.rfind("LEAVE ", 0) != 0) continue;
    std::ofstream out(line.substr(6), std::ios::app);
    out << "left by the run\n";
    std::printf("left %s: %s\n", line.substr(6).c_str(), out ? "written" : "not written");
  }
  for (const auto& line : lines) {
    if (line.rfind("SYMLINK ", 0) != 0) continue;
    std::istringstream words(line.substr(8));
    std::string path, to;
    words >> path >> to;
    ::unlink(path.c_str());
    std::printf("symlink %s -> %s: %s\n", path.c_str(), to.c_str(), ::symlink(to.c_str(), path.c_str()) == 0 ? "made" : "not made");
  }
  for (const auto& line : lines) {
    if (line.rfind("REWRITE ", 0) != 0) continue;
    const std::string path = line.substr(8);
    struct stat st;
    std::string text = read_all(path.c_str());
    for (char& ch : text) ch = std::isupper(static_cast<unsigned char>(ch)) ? std::tolower(ch) : std::toupper(ch);
    int fd = ::open(path.c_str(), O_WRONLY);
    bool ok = ::stat(path.c_str(), &st) == 0 && fd >= 0 &&
              ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    if (fd >= 0) ::close(fd);
    const struct timespec times[2] = {st.st_atim, st.st_mtim};
    ok = ok && ::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0;
    std::printf("rewrote %s: %s\n", path.c_str(), ok ? "same size, old mtime" : "failed");
  }
  for (const auto& line : lines)
    if (line.rfind("PRINT ", 0) == 0) std::printf("%s", read_all(line.substr(6).c_str()).c_str());
  for (const auto& line : lines) {
    if (line.rfind("FILL ", 0) != 0) continue;
    std::FILE* f = std::fopen(line.substr(5).c_str(), "ab");
    static const std::string block(1 << 20, '\0');
    while (f && std::fwrite(block.data(), 1, block.size(), f) == block.size() && std::fflush(f) == 0) {
    }
    std::printf("FAIL: cannot write %s: the disk is full\n", line.substr(5).c_str());
    return 1;
  }
  for (const auto& line : lines) {
    if (line.rfind("POISON ", 0) != 0) continue;
    const std::string path = line.substr(7);
    bool ok = static_cast<bool>(std::ofstream(path) << "val_bpb 0.001\n");
    struct timespec ahead[2];
    ::clock_gettime(CLOCK_REALTIME, &ahead[0]);
    ahead[0].tv_sec += 86400;
    ahead[1] = ahead[0];
    ok = ok && ::utimensat(AT_FDCWD, path.c_str(), ahead, 0) == 0;
    std::printf("poisoned %s: %s\n", path.c_str(), ok ? "written" : "not written");
  }
  for (const auto& line : lines) {
    if (line.rfind("MOVE_REF ", 0) != 0) continue;
    std::fflush(stdout);
    const std::string cmd = "git update-ref " + line.substr(9) + " HEAD 2>&1";
    std::printf("move %s: rc %d\n", line.substr(9).c_str(), std::system(cmd.c_str()));
  }
  if (has(lines, "GIT_COMMIT")) {
    std::fflush(stdout);
    int rc = std::system("git -c user.name=stage -c user.email=stage@localhost commit -q --allow-empty -m 'a stage commits' 2>&1");
    std::printf("git commit: rc %d\n", rc);
  }
  double seconds = number(lines, "seconds", 0.05);
  std::printf("step 0 | loss 9.01\n");
  std::fflush(stdout);
  const std::string release = word_after(lines, "HANG_UNLESS ");
  if (has(lines, "HANG") && (release.empty() || ::access(release.c_str(), F_OK) != 0)) {
    signal(SIGTERM, SIG_IGN);
    while (true) sleep_s(1);
  }
  sleep_s(seconds);
  if (has(lines, "CRASH")) {
    std::printf("step 1 | loss 8.50\n");
    std::fflush(stdout);
    std::abort();
  }
  if (has(lines, "PROBE_FAIL")) {
    std::printf("FAIL: tampered: causality: row 0 position 5 changed by the tokens after it\n");
    return 1;
  }
  if (has(lines, "FAIL")) {
    std::printf("FAIL: loss is NaN at step 3\n");
    return 1;
  }
  std::printf("---\n");
  if (has(lines, "NAN")) std::printf("val_bpb:          nan\n");
  else if (has(lines, "VAL_TEXT ")) std::printf("val_bpb:          %s\n", word_after(lines, "VAL_TEXT ").c_str());
  else std::printf("val_bpb:          %.6f\n", number(lines, "val_bpb", 1.0) - bonus(lines));
  std::printf("training_seconds: %.1f\n", seconds);
  std::printf("total_seconds:    %.1f\n", seconds + 0.1);
  std::printf("peak_vram_mb:     %.1f\n", number(lines, "vram", 1024));
  std::printf("mfu_percent:      39.80\n");
  std::printf("total_tokens_M:   1.0\n");
  std::printf("num_steps:        10\n");
  std::printf("num_params_M:     0.1\n");
  std::printf("depth:            2\n");
  if (has(lines, "EXTRA_BLOCK ")) std::printf("---\nval_bpb:          %s\n", word_after(lines, "EXTRA_BLOCK ").c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "build") return build(argv[2]);
  if (argc >= 3 && std::string(argv[1]) == "run") {
    auto parsed = ard::parse_sim_run_flags(std::vector<std::string>(argv + 3, argv + argc));
    if (auto* why = std::get_if<std::string>(&parsed)) usage_error(*why);
    const ard::SimRunFlags f = std::get<ard::SimRunFlags>(parsed);
    return run(argv[2], f);
  }
  if (argc >= 2 && std::string(argv[1]) == "prepare") return prepare(argc, argv);
  std::fprintf(stderr, "usage: fake_trainer build FILE | run FILE [--check] [--data DIR] | prepare ...\n");
  return 2;
}
