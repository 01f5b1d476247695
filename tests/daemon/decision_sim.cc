// decision_sim: a simulation of the keep policy, not of the daemon. It plays
// nights of candidates through keep_rule, noise and calibration on simulated
// boards (daemon/sim_board.h, the world the fake trainer's simulation mode shares)
// and prints the policy's error rates next to those of the old rule, strictly
// lower than the best single run on uncalibrated boards.
//
// What it leaves out: the engine's scheduling (runs are played one after
// another; the board of a candidate's first run rotates over the boards),
// proposals made against an older best, build and start-up time (GPU time is
// budget × scale per run). scripts/bench_decisions.sh runs it for both signs
// of b.
//
//   decision_sim --b B [--a A] [--nights N] [--count N] [--seed S]
//                [--speeds 0.95,0.98,1.00,1.03] [--budget S] [--every N]
//                [--z Z] [--confirmations N] [--candidates-out FILE]
//                [--discard-below K] [--settle-df N]
//
// --every, --z and --confirmations default to the shipped [noise] and [keep]
// settings (daemon/config.h); --discard-below and --settle-df to the keep
// rule's and the engine's constants (keep_rule.h, noise_rounds.h).
//
// --candidates-out writes the first night's candidates (effect, lines added,
// lines removed), the script a scripted proposer replays when the benchmark
// drives the daemon instead.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/decide/calibration.h"
#include "daemon/decide/keep_rule.h"
#include "daemon/decide/noise.h"
#include "daemon/decide/noise_rounds.h"
#include "daemon/sim_board.h"

namespace {

struct Options {
  ard::sim_board::World world;
  int nights = 200;
  int count = 300;
  uint64_t seed = 1;
  std::vector<double> speeds = {0.95, 0.98, 1.00, 1.03};
  double budget_s = 300;
  ard::Config config;  ///< the shipped defaults of [noise] and [keep]; flags override some
  std::string candidates_out;
  std::optional<double> discard_below;  ///< --discard-below: overrides the keep rule's
  int settle_df = 0;                    ///< --settle-df: overrides settle_noise_df (0: the engine's)
};

struct Candidate {
  enum Kind { worse, null, gain } kind;
  double effect;  ///< the true improvement of val_bpb over the incumbent (> 0: better)
  int lines_added = 4, lines_removed = 1;
};

/// A night's mix: 50 % worse by 3σ to 6σ, 35 % no effect, 15 % a 3σ gain, shuffled.
std::vector<Candidate> make_candidates(const Options& o, std::mt19937_64& rng) {
  std::vector<Candidate> c;
  std::uniform_real_distribution<double> extra(0, 3);
  const int worse = o.count / 2, null = o.count * 35 / 100;
  for (int i = 0; i < o.count; ++i) {
    if (i < worse) c.push_back({Candidate::worse, -o.world.sigma * (3 + extra(rng))});
    else if (i < worse + null) c.push_back({Candidate::null, 0});
    else c.push_back({Candidate::gain, 3 * o.world.sigma});
  }
  std::shuffle(c.begin(), c.end(), rng);
  return c;
}

struct Tally {
  long null_n = 0, null_kept = 0, gain_n = 0, gain_kept = 0, worse_kept = 0;
  std::map<int, std::pair<long, long>> null_by_board;  // board → (null candidates, kept)
  double gpu_s = 0, repeat_gpu_s = 0;
  double sigma_sum = 0;
  int sigma_nights = 0;

  void count(const Candidate& c, bool kept, int board) {
    if (c.kind == Candidate::null) {
      ++null_n, null_kept += kept;
      auto& [n, k] = null_by_board[board];
      ++n, k += kept;
    } else if (c.kind == Candidate::gain) {
      ++gain_n, gain_kept += kept;
    } else {
      worse_kept += kept;
    }
  }
  double rate(long k, long n) const { return n ? static_cast<double>(k) / n : 0; }
  double board_rate(int board) const {
    auto it = null_by_board.find(board);
    return it == null_by_board.end() ? 0 : rate(it->second.second, it->second.first);
  }
};

class Night {
 public:
  Night(const Options& o, int night) : o_(o), night_(night), scales_(o.speeds.size(), 1.0) {}

  /// One run of `commit` (true effect over the baseline: effect) on board g.
  double run(int commit, double effect, int g, bool repeat, Tally& t, long* steps_out = nullptr) {
    const long steps = ard::sim_board::steps(o_.budget_s, scales_[g], o_.speeds[g], o_.world.step_cost);
    std::ostringstream content;
    content << "night " << night_ << " seed " << o_.seed << " commit " << commit;
    const double v = ard::sim_board::val_bpb(o_.world, steps, effect, ard::sim_board::run_seed(content.str(), nonce_++));
    const double gpu_s = o_.budget_s * scales_[g];
    t.gpu_s += gpu_s;
    if (repeat) t.repeat_gpu_s += gpu_s;
    if (steps_out) *steps_out = steps;
    return v;
  }

  /// The incumbent on every board; its runs feed σ; then the boards are re-calibrated.
  void noise_round(Tally& t) {
    std::vector<ard::CalibrationRun> cal;
    for (size_t g = 0; g < o_.speeds.size(); ++g) {
      long steps = 0;
      const double v = run(incumbent_, incumbent_effect_, static_cast<int>(g), true, t, &steps);
      record(incumbent_, v, true);
      cal.push_back({std::to_string(g), scales_[g], steps});
    }
    auto result = ard::calibrate_scales(cal);
    if (auto* e = std::get_if<std::string>(&result)) {
      std::fprintf(stderr, "decision_sim: %s\n", e->c_str());
      std::exit(1);
    }
    bool changed = false;
    for (auto& [gpu, scale] : std::get<std::map<std::string, double>>(result)) {
      double& s = scales_[std::stoi(gpu)];
      if (std::fabs(s - scale) > 1e-9) changed = true;
      s = scale;
    }
    if (changed) ++epoch_;  // runs at other step counts are not comparable, nor repeats of each other
  }

  /// unselected: a run no decision selected (noise rounds, the best's re-runs);
  /// only those feed σ, as in the engine (run_evidence.h).
  void record(int commit, double v, bool unselected = false) {
    runs_[{commit, epoch_}].push_back(v);
    if (unselected) unselected_[{commit, epoch_}].push_back(v);
  }

  std::vector<double> runs_of(int commit) const {
    std::vector<double> all;
    for (const auto& [key, values] : runs_)
      if (key.first == commit && key.second == epoch_) all.insert(all.end(), values.begin(), values.end());
    return all;
  }

  std::optional<ard::NoiseEstimate> noise() const {
    return ard::noise_for_decisions(ard::pooled_noise(groups_after_calibration()), 0);
  }

  /// The policy over the night's candidates.
  void play(const std::vector<Candidate>& candidates, Tally& t) {
    noise_round(t);  // calibrate at scale 1
    noise_round(t);  // σ at the calibrated scales
    // Then, as the engine does, more rounds until σ rests on the settle df (noise_rounds.h).
    const int settle_df = o_.settle_df > 0 ? o_.settle_df : ard::settle_noise_df(static_cast<int>(o_.speeds.size()));
    for (int r = 1; r < ard::kMaxSettleRounds; ++r) {
      const auto n = ard::pooled_noise(groups_after_calibration());
      if (n && n->df >= settle_df) break;
      noise_round(t);
    }
    ard::KeepSettings settings = ard::keep_settings(o_.config);
    if (o_.discard_below) settings.discard_below = *o_.discard_below;
    const int gpu_count = static_cast<int>(o_.speeds.size());
    int since_round = 0;
    std::vector<std::string> gpus;
    for (size_t g = 0; g < o_.speeds.size(); ++g) gpus.push_back(std::to_string(g));

    for (size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      const int commit = static_cast<int>(i) + 1;
      const double effect = incumbent_effect_ + c.effect;
      const int board = static_cast<int>(i % o_.speeds.size());
      std::vector<std::string> used = {gpus[board]};
      record(commit, run(commit, effect, board, false, t));
      ard::KeepInput in;
      in.lines_added = c.lines_added;
      in.lines_removed = c.lines_removed;
      ard::KeepDecision d;
      for (;;) {
        in.incumbent = runs_of(incumbent_);
        in.candidate = runs_of(commit);
        in.noise = noise();
        d = ard::decide_keep(in, settings);
        if (d.verdict != ard::Verdict::confirm) break;
        const std::string gpu = ard::confirmation_gpu(gpus, used);
        used.push_back(gpu);
        record(commit, run(commit, effect, std::stoi(gpu), true, t));
        ++in.confirmations_done;
      }
      const bool kept = d.verdict == ard::Verdict::keep;
      t.count(c, kept, board);
      if (kept) {
        incumbent_ = commit, incumbent_effect_ = effect;
        incumbent_gpus_ = used;
        for (int k = ard::incumbent_reruns_wanted(static_cast<int>(runs_of(incumbent_).size())); k > 0; --k) {
          const std::string gpu = ard::confirmation_gpu(gpus, incumbent_gpus_);
          incumbent_gpus_.push_back(gpu);
          record(incumbent_, run(incumbent_, incumbent_effect_, std::stoi(gpu), true, t), true);
        }
      }
      ++since_round;
      if (ard::noise_round_due(true, since_round, 0, o_.config.noise.every, gpu_count, 0) != ard::NoiseDue::not_due) {
        noise_round(t);
        since_round = 0;
      }
    }
    if (auto n = ard::pooled_noise(groups_after_calibration())) t.sigma_sum += n->sigma, ++t.sigma_nights;
  }

  /// The old rule: one run, uncalibrated boards, kept when strictly lower than the best run.
  void play_old_rule(const std::vector<Candidate>& candidates, Tally& t) {
    double best = run(0, 0, 0, false, t);
    double best_effect = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      const int board = static_cast<int>(i % o_.speeds.size());
      const double effect = best_effect + c.effect;
      const double v = run(static_cast<int>(i) + 1, effect, board, false, t);
      const bool kept = v < best;
      t.count(c, kept, board);
      if (kept) best = v, best_effect = effect;
    }
  }

 private:
  std::vector<std::vector<double>> groups_after_calibration() const {
    // Epoch 0 is before the first calibration, except on one board: nothing to calibrate there,
    // and the engine pools its runs from the start.
    std::vector<std::vector<double>> groups;
    for (const auto& [key, values] : unselected_)
      if (key.second > 0 || o_.speeds.size() == 1) groups.push_back(values);
    return groups;
  }

  const Options& o_;
  int night_;
  std::vector<double> scales_;
  std::map<std::pair<int, int>, std::vector<double>> runs_;  // (commit, epoch) → val_bpb
  std::map<std::pair<int, int>, std::vector<double>> unselected_;  // the runs of runs_ that feed σ
  int epoch_ = 0;
  int incumbent_ = 0;
  double incumbent_effect_ = 0;
  std::vector<std::string> incumbent_gpus_;
  uint64_t nonce_ = 0;
};

std::vector<double> parse_list(const std::string& text) {
  std::vector<double> v;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) v.push_back(std::stod(item));
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  bool have_b = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "decision_sim: %s: missing value\n", flag.c_str());
      std::exit(2);
    }
    const std::string value = argv[++i];
    try {
      if (flag == "--b") o.world.b = std::stod(value), have_b = true;
      else if (flag == "--a") o.world.a = std::stod(value);
      else if (flag == "--nights") o.nights = std::stoi(value);
      else if (flag == "--count") o.count = std::stoi(value);
      else if (flag == "--seed") o.seed = std::stoull(value);
      else if (flag == "--speeds") o.speeds = parse_list(value);
      else if (flag == "--budget") o.budget_s = std::stod(value);
      else if (flag == "--every") o.config.noise.every = std::stoi(value);
      else if (flag == "--z") o.config.noise.z = std::stod(value);
      else if (flag == "--confirmations") o.config.keep.confirmations = std::stoi(value);
      else if (flag == "--candidates-out") o.candidates_out = value;
      else if (flag == "--discard-below") o.discard_below = std::stod(value);
      else if (flag == "--settle-df") o.settle_df = std::stoi(value);
      else throw std::invalid_argument("unknown flag");
    } catch (const std::exception&) {
      std::fprintf(stderr, "decision_sim: %s: bad flag or value '%s'\n", flag.c_str(), value.c_str());
      std::exit(2);
    }
  }
  if (!have_b || o.nights < 1 || o.count < 1 || o.config.noise.every < 1 || o.speeds.empty()) {
    std::fprintf(stderr, "decision_sim: need --b, and positive --nights, --count, --every, --speeds\n");
    std::exit(2);
  }
  return o;
}

void print(const char* label, const Options& o, const Tally& t) {
  const int fastest = static_cast<int>(std::max_element(o.speeds.begin(), o.speeds.end()) - o.speeds.begin());
  const int slowest = static_cast<int>(std::min_element(o.speeds.begin(), o.speeds.end()) - o.speeds.begin());
  std::printf("%-9s b=%g null_keep_rate=%.4f true_keep_rate=%.4f board_bias=%.4f repeat_share=%.4f worse_kept=%ld",
              label, o.world.b, t.rate(t.null_kept, t.null_n), t.rate(t.gain_kept, t.gain_n),
              std::fabs(t.board_rate(fastest) - t.board_rate(slowest)), t.gpu_s > 0 ? t.repeat_gpu_s / t.gpu_s : 0,
              t.worse_kept);
  std::printf("  null keep by board:");
  for (size_t g = 0; g < o.speeds.size(); ++g) std::printf(" %.2f×=%.4f", o.speeds[g], t.board_rate(static_cast<int>(g)));
  if (t.sigma_nights) std::printf("  mean measured σ=%.6f", t.sigma_sum / t.sigma_nights);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  Tally policy, old_rule;
  for (int night = 0; night < o.nights; ++night) {
    std::mt19937_64 rng(o.seed * 1000003 + night);
    const auto candidates = make_candidates(o, rng);
    if (night == 0 && !o.candidates_out.empty()) {
      std::ofstream out(o.candidates_out);
      out << "# effect\tlines_added\tlines_removed\n";
      for (const auto& c : candidates) out << c.effect << '\t' << c.lines_added << '\t' << c.lines_removed << '\n';
      if (!out) {
        std::fprintf(stderr, "decision_sim: cannot write %s\n", o.candidates_out.c_str());
        return 1;
      }
    }
    Night(o, night).play(candidates, policy);
    Night(o, night).play_old_rule(candidates, old_rule);
  }
  std::printf("%d nights of %d candidates on %zu boards, σ=%g, a=%g, b=%g, budget %gs, noise round every %d "
              "experiments per GPU, z=%g, %d confirmation(s), incumbent re-run to %d runs\n",
              o.nights, o.count, o.speeds.size(), o.world.sigma, o.world.a, o.world.b, o.budget_s,
              o.config.noise.every, o.config.noise.z, o.config.keep.confirmations, ard::kMinIncumbentRuns);
  print("old_rule", o, old_rule);
  print("policy", o, policy);
  return 0;
}
