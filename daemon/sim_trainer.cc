// See sim_trainer.h.
#include "daemon/sim_trainer.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <cmath>
#include <sstream>
#include <thread>

#include "daemon/sim_board.h"

namespace ard {
namespace {

std::optional<std::vector<std::string>> read_lines(const std::string& path, std::string* content) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  *content = ss.str();
  std::vector<std::string> lines;
  std::istringstream text(*content);
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  return lines;
}

double number(const std::vector<std::string>& lines, const std::string& key, double fallback) {
  for (const auto& l : lines)
    if (l.rfind(key + " ", 0) == 0) return std::atof(l.c_str() + key.size() + 1);
  return fallback;
}

/// An `effect X [scaled Y] ...` line's effect: X, or at depth_scale > 1 Y where the line gives one.
double line_effect(const std::string& line, double depth_scale) {
  std::istringstream words(line.substr(7));
  double effect = 0, scaled = 0;
  std::string word;
  if (!(words >> effect)) return 0;
  if (depth_scale > 1 && words >> word && word == "scaled" && words >> scaled) return scaled;
  return effect;
}

/// The board's speed from FAKE_GPU_SPEED / FAKE_GPU_SPEEDS, or why not.
std::variant<double, std::string> board_speed() {
  if (const char* one = std::getenv("FAKE_GPU_SPEED")) return std::atof(one);
  const char* table = std::getenv("FAKE_GPU_SPEEDS");
  if (!table) return 1.0;
  const char* device = std::getenv("CUDA_VISIBLE_DEVICES");
  const int index = device ? std::atoi(device) : 0;
  std::stringstream ss(table);
  std::string item;
  for (int i = 0; std::getline(ss, item, ','); ++i)
    if (i == index) return std::atof(item.c_str());
  return "FAKE_GPU_SPEEDS has no entry for CUDA_VISIBLE_DEVICES=" + std::to_string(index);
}

}  // namespace

std::variant<SimRunFlags, std::string> parse_sim_run_flags(const std::vector<std::string>& words) {
  SimRunFlags f;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& flag = words[i];
    if (flag == "--check") {
      f.check = true;
      continue;
    }
    if (flag == "--data" && i + 1 >= words.size()) continue;  // `--data {data_dir}` with the data step off
    if (flag != "--data" && flag != "--budget" && flag != "--budget-scale" && flag != "--nonce" &&
        flag != "--depth-scale")
      return flag + ": unknown flag";
    if (i + 1 >= words.size()) return flag + ": missing value";
    const std::string& value = words[++i];
    if (flag == "--data") {
      f.data = value;
      continue;
    }
    char* end = nullptr;
    if (flag == "--budget") f.budget_s = std::strtod(value.c_str(), &end);
    else if (flag == "--budget-scale") f.budget_scale = std::strtod(value.c_str(), &end);
    else if (flag == "--depth-scale") f.depth_scale = std::strtod(value.c_str(), &end);
    else f.nonce = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0') return flag + ": not a number: '" + value + "'";
    if (flag == "--depth-scale" && !(f.depth_scale >= 1 && f.depth_scale <= 64))
      return flag + ": must be from 1 to 64, got " + value;
  }
  return f;
}

int sim_build(const std::string& file, std::ostream& out, std::ostream& err) {
  std::string content;
  auto lines = read_lines(file, &content);
  if (!lines) {
    err << "sim-trainer: cannot read " << file << "\n";
    return 2;
  }
  out << "[1/2] compiling " << file << "\n";
  for (size_t i = 0; i < lines->size(); ++i) {
    const std::string& l = (*lines)[i];
    if (l.rfind("BUILD_ERROR", 0) != 0) continue;
    const size_t start = l.find_first_not_of(' ', 11);
    err << file << ":" << i + 1 << ":1: error: " << (start == std::string::npos ? "" : l.substr(start)) << "\n"
        << "ninja: build stopped: subcommand failed.\n";
    return 1;
  }
  out << "[2/2] linking train\n";
  return 0;
}

int sim_simulate(const std::string& file, const SimRunFlags& f, std::ostream& out, std::ostream& err) {
  std::string content;
  auto read = read_lines(file, &content);
  if (!read) {
    err << "sim-trainer: cannot read " << file << "\n";
    return 2;
  }
  const std::vector<std::string>& lines = *read;
  sim_board::World w;
  w.a = number(lines, "bpb_a", w.a);
  w.b = number(lines, "bpb_b", w.b);
  w.sigma = number(lines, "noise_sigma", w.sigma);
  w.step_cost = number(lines, "step_cost", w.step_cost);
  auto speed = board_speed();
  if (auto* why = std::get_if<std::string>(&speed)) {
    err << "sim-trainer: " << *why << "\n";
    return 2;
  }
  if (!(std::get<double>(speed) > 0) || !(w.step_cost > 0)) {
    err << "sim-trainer: board speed and step_cost must be positive\n";
    return 2;
  }
  const uint64_t nonce =
      f.nonce ? *f.nonce
              : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  // A larger rung: each step costs depth_scale times as much, on a line lower by 0.02 per doubling.
  const double scale = f.depth_scale;
  w.step_cost *= scale;
  w.a -= 0.02 * std::log2(scale);
  const long steps = sim_board::steps(f.budget_s, f.budget_scale, std::get<double>(speed), w.step_cost);
  double effect = 0;  // every effect line counts, so kept changes add up
  for (const auto& l : lines)
    if (l.rfind("effect ", 0) == 0) effect += line_effect(l, scale);
  const double v = sim_board::val_bpb(w, steps, effect, sim_board::run_seed(content, nonce));
  out << "step 0 | loss 9.01" << std::endl;
  std::this_thread::sleep_for(std::chrono::duration<double>(number(lines, "seconds", 0.05)));
  char block[1024];
  std::snprintf(block, sizeof block,
                "---\n"
                "val_bpb:          %.6f\n"
                "training_seconds: %.1f\n"
                "total_seconds:    %.1f\n"
                "peak_vram_mb:     %.1f\n"
                "mfu_percent:      39.80\n"
                "total_tokens_M:   %.1f\n"
                "num_steps:        %ld\n"
                "num_params_M:     %.1f\n"
                "depth:            %ld\n"
                "budget_scale:     %.4f\n",
                v, f.budget_s * f.budget_scale, f.budget_s * f.budget_scale + 10, number(lines, "vram", 1024),
                static_cast<double>(steps) * 0.524288, steps, 0.1 * scale * scale * scale, std::lround(2 * scale),
                f.budget_scale);
  out << block << std::flush;
  return 0;
}

int sim_trainer_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const char* usage =
      "usage: autoresearchd sim-trainer build FILE | run FILE [--check] [--data DIR] [--budget S] "
      "[--budget-scale F] [--depth-scale S] [--nonce N]\n";
  if (args.size() >= 2 && args[0] == "build" && args.size() == 2) return sim_build(args[1], out, err);
  if (args.size() < 2 || args[0] != "run") {
    err << usage;
    return 2;
  }
  auto parsed = parse_sim_run_flags(std::vector<std::string>(args.begin() + 2, args.end()));
  if (auto* why = std::get_if<std::string>(&parsed)) {
    err << "sim-trainer: " << *why << "\n";
    return 2;
  }
  const SimRunFlags& flags = std::get<SimRunFlags>(parsed);
  if (!std::ifstream(args[1])) {
    err << "sim-trainer: cannot read " << args[1] << "\n";
    return 2;
  }
  if (!flags.data.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(flags.data, ec)) {
      out << "FAIL: no dataset at " << flags.data << "\n";
      return 1;
    }
    out << "data: " << flags.data << "\n";
  }
  if (flags.check) {
    out << "check: ok\n";
    return 0;
  }
  return sim_simulate(args[1], flags, out, err);
}

}  // namespace ard
