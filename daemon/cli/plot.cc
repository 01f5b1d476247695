// See plot.h. The data travels inside the script as gnuplot datablocks, so
// one file holds the whole chart and nothing but numbers reaches gnuplot (no
// description or other stored text is ever part of the script).
#include "daemon/cli/plot.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "daemon/fatal_error.h"
#include "daemon/util/file.h"

extern char** environ;

namespace ard {
namespace {

// The dashboard's colours (daemon/serve/dashboard/app.js), in drawing order.
const std::vector<std::pair<std::string, std::string>> kStateColours = {
    {"discarded", "#9e9e9e"},  {"crash", "#c62828"},          {"timeout", "#ef6c00"},
    {"build_fail", "#ad1457"}, {"tampered", "#6a1b9a"},       {"patch_rejected", "#5d4037"},
    {"proposer_error", "#37474f"}, {"interrupted", "#90a4ae"}, {"duplicate", "#8d6e63"}, {"kept", "#2e7d32"},
};
constexpr const char* kOtherColour = "#1565c0";  // in flight

/// A gnuplot single-quoted string: only ' needs doubling.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

/// A value as the title shows it: 4 decimals, as val_bpb is quoted in the docs.
std::string rounded(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

}  // namespace

std::optional<PlotFormat> plot_format(const std::filesystem::path& out) {
  std::string ext = out.extension().string();
  if (ext == ".png") return PlotFormat::kPng;
  if (ext == ".svg") return PlotFormat::kSvg;
  return std::nullopt;
}

std::string gnuplot_script(const std::vector<ExperimentRow>& rows, const std::string& tag, PlotFormat format,
                           const std::filesystem::path& output, bool by_time, const MetricSpec& metric) {
  if (rows.empty()) throw FatalError("nothing to plot: no experiments yet in tag " + tag);
  double t0 = rows.front().started_at;
  auto x_of = [&](const ExperimentRow& r) { return by_time ? (r.started_at - t0) / 3600.0 : static_cast<double>(r.id); };

  std::map<std::string, std::string> blocks;  // state -> "x y" lines
  std::map<std::string, std::vector<double>> failed;  // state -> x of each finished row without a val_bpb
  std::string best_block;
  std::optional<double> best, lo, hi;
  int points = 0;
  for (const auto& r : rows) {
    if (!r.val_bpb) {
      if (is_final_state(r.state)) failed[r.state].push_back(x_of(r));
      continue;
    }
    ++points;
    lo = std::min(lo.value_or(*r.val_bpb), *r.val_bpb);
    hi = std::max(hi.value_or(*r.val_bpb), *r.val_bpb);
    blocks[r.state] += number(x_of(r)) + " " + number(*r.val_bpb) + "\n";
    if (r.state == status::kKept && (!best || is_better(metric.goal, *r.val_bpb, *best))) {
      best = r.val_bpb;
      best_block += number(x_of(r)) + " " + number(*best) + "\n";
    }
  }
  if (points == 0) throw FatalError("nothing to plot: no experiment of tag " + tag + " has a " + metric.name + " yet");
  if (best) best_block += number(x_of(rows.back())) + " " + number(*best) + "\n";
  // The y range holds the values with a margin, and above them a row where
  // the experiments without a value (crashes, timeouts, ...) are marked.
  const double span = *hi - *lo > 0 ? *hi - *lo : std::max(1e-3, 0.01 * std::fabs(*hi));
  const double y_min = *lo - 0.05 * span, y_failed = *hi + 0.12 * span, y_max = *hi + 0.16 * span;

  std::ostringstream s;
  if (format == PlotFormat::kPng) s << "set terminal pngcairo size 1200,600 font 'sans,10'\n";
  else s << "set terminal svg size 1200,600 font 'sans,10' background rgb 'white'\n";
  s << "set output " << quoted(output.string()) << "\n";
  s << "set title " << quoted("autoresearchd: tag " + tag + ", " + std::to_string(rows.size()) + " experiments" +
                              (best ? ", best " + metric.name + " " + rounded(*best) : "")) << " noenhanced\n";
  s << "set xlabel " << quoted(by_time ? "hours since the first experiment" : "experiment") << " noenhanced\n";
  // noenhanced: in gnuplot's enhanced text "_b" would be a subscript b.
  s << "set ylabel " << quoted(metric.name) << " noenhanced\nset grid\nset key outside right top noenhanced\n";
  s << "set yrange [" << number(y_min) << ":" << number(y_max) << "]\n";
  // Time starts at the first experiment: no margin to the left of 0 h.
  if (by_time) s << "set xrange [0:*]\nset offsets 0, graph 0.02, 0, 0\n";
  else s << "set offsets graph 0.02, graph 0.02, 0, 0\n";
  if (!failed.empty())
    s << "set label 1 " << quoted("no " + metric.name) << " at graph 0.005, first " << number(y_failed) << " left font 'sans,8' noenhanced\n";

  std::vector<std::string> plots;
  int n = 0;
  auto add_block = [&](const std::string& data, const std::string& style) {
    std::string block = "$d" + std::to_string(n++);
    s << block << " << EOD\n" << data << "EOD\n";
    plots.push_back(block + " using 1:2 " + style);
  };
  if (!best_block.empty()) add_block(best_block, "with steps lw 2 lc rgb '#2e7d32' title 'best so far'");
  for (const auto& [state, colour] : kStateColours)
    if (blocks.count(state)) add_block(blocks[state], "with points pt 7 ps 1 lc rgb '" + colour + "' title " + quoted(state));
  for (const auto& [state, data] : blocks) {
    bool known = false;
    for (const auto& kc : kStateColours) known |= kc.first == state;
    if (!known) add_block(data, "with points pt 7 ps 1 lc rgb '" + std::string(kOtherColour) + "' title " + quoted(state));
  }
  // The experiments without a value: a downward triangle at the top, in their status's colour.
  for (const auto& [state, xs] : failed) {
    std::string colour = kOtherColour;
    for (const auto& kc : kStateColours)
      if (kc.first == state) colour = kc.second;
    std::string data;
    for (double x : xs) data += number(x) + " " + number(y_failed) + "\n";
    add_block(data, "with points pt 11 ps 1.2 lc rgb '" + colour + "' title " + quoted(state + " (no " + metric.name + ")"));
  }
  s << "plot ";
  for (size_t i = 0; i < plots.size(); ++i) s << (i ? ", \\\n     " : "") << plots[i];
  s << "\nunset output\n";
  return s.str();
}

void write_plot(Store& store, const std::string& tag, const std::filesystem::path& out, bool by_time,
                const MetricSpec& metric) {
  auto format = plot_format(out);
  if (!format) throw FatalError("plot --out: " + out.string() + ": expected a .png or .svg file name");
  std::filesystem::path target = std::filesystem::absolute(out);
  std::string suffix = ".tmp-" + std::to_string(getpid());
  std::filesystem::path tmp = target, script_path = target, err_path = target;
  tmp += suffix;
  script_path += suffix + ".gp";
  err_path += suffix + ".err";
  {
    std::ofstream script(script_path, std::ios::binary | std::ios::trunc);
    if (!(script << gnuplot_script(store.experiments(tag), tag, *format, tmp, by_time, metric)) || !script.flush())
      throw FatalError("plot: cannot write " + script_path.string());
  }
  auto cleanup = [&] {
    std::error_code ec;
    std::filesystem::remove(script_path, ec);
    std::filesystem::remove(err_path, ec);
    std::filesystem::remove(tmp, ec);
  };

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::string script_arg = script_path.string();
  char* argv[] = {const_cast<char*>("gnuplot"), script_arg.data(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    cleanup();
    throw FatalError(std::string("plot: cannot run gnuplot (install gnuplot-nox): ") + std::strerror(rc));
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  std::string messages = read_file(err_path).value_or("");
  bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && std::filesystem::exists(tmp) && std::filesystem::file_size(tmp) > 0;
  if (!ok) {
    cleanup();
    while (!messages.empty() && (messages.back() == '\n' || messages.back() == ' ')) messages.pop_back();
    auto nl = messages.rfind('\n');
    throw FatalError("plot: gnuplot failed: " + (nl == std::string::npos ? messages : messages.substr(nl + 1)));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    cleanup();
    throw FatalError("plot: cannot replace " + target.string() + ": " + ec.message());
  }
  cleanup();
}

}  // namespace ard
