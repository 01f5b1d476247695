// See demo_repo.h. The texts are built from demo_candidates(), so the trainer
// file, the script and the descriptions cannot disagree.
#include "daemon/cli/demo_repo.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "daemon/git_repo.h"

namespace ard {
namespace {

namespace fs = std::filesystem;

/// The candidate's line in trainer/train.sim before and after its change.
std::string slot_line(size_t i, const DemoCandidate& c, bool changed) {
  char id[8];
  std::snprintf(id, sizeof id, "c%02zu", i + 1);
  if (!changed) return "effect 0        " + std::string(id) + " " + c.knob + " = " + c.from + "\n";
  char effect[32];
  std::snprintf(effect, sizeof effect, "%+.4f", c.effect);
  std::string line = "effect " + std::string(effect) + "  " + id + " " + c.knob + " = " + c.to + "\n";
  if (c.build_error)
    line += "BUILD_ERROR '" + c.knob + "' was not declared in this scope; did you mean '" + c.knob + "_'?\n";
  return line;
}

std::string description(const DemoCandidate& c) {
  char truth[64];
  if (c.build_error) std::snprintf(truth, sizeof truth, "(true effect: does not build)");
  else if (c.effect == 0) std::snprintf(truth, sizeof truth, "(true effect: none)");
  else std::snprintf(truth, sizeof truth, "(true effect: val_bpb %+.4f)", -c.effect);
  return c.knob + " " + c.from + " -> " + c.to + " " + truth;
}

/// A TOML basic string holding the shell word 'path' (single-quoted).
std::string quoted_command_word(const fs::path& p) { return "'" + p.string() + "'"; }

bool write_file(const fs::path& path, const std::string& text, std::string* error) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary);
  if (!ec && out && (out << text) && out.flush()) return true;
  *error = "cannot write " + path.string();
  return false;
}

}  // namespace

const std::vector<DemoCandidate>& demo_candidates() {
  // 12 gains, 16 without effect, 11 regressions, 1 that does not build.
  static const std::vector<DemoCandidate> night = {
      {"matrix_lr", "0.02", "0.03", 0.0150},
      {"warmdown_ratio", "0.40", "0.50", 0},
      {"embedding_lr", "0.60", "0.90", -0.0080},
      {"muon_momentum", "0.95", "0.97", 0.0060},
      {"weight_decay", "0.00", "0.01", 0},
      {"mlp_ratio", "4", "3", -0.0120},
      {"value_embeddings", "every 2nd layer", "every layer", 0.0090},
      {"adam_beta2", "0.95", "0.99", 0},
      {"window_pattern", "SSSL", "SSLL", 0.0040},
      {"head_dim", "128", "64", -0.0200},
      {"logit_softcap", "15", "20", 0},
      {"qk_norm_eps", "1e-6", "1e-5", 0},
      {"attention_window", "1024", "2048", 0, true},
      {"scalar_lr", "0.5", "0.4", 0.0050},
      {"rope_base", "10000", "50000", 0},
      {"unembedding_lr", "0.004", "0.008", -0.0060},
      {"warmup_steps", "0", "100", 0},
      {"depth", "12", "13", 0.0110},
      {"batch_tokens", "524288", "262144", -0.0150},
      {"grad_clip", "off", "1.0", 0},
      {"polar_express_steps", "5", "4", 0},
      {"final_lr_frac", "0.0", "0.1", 0.0030},
      {"x0_lambda", "0.1", "0.2", 0},
      {"norm_before_head", "yes", "no", -0.0300},
      {"muon_nesterov", "on", "off", -0.0040},
      {"cautious_wd", "on", "off", 0},
      {"embedding_init_std", "1.0", "0.5", 0.0070},
      {"relu2", "relu^2", "gelu", -0.0100},
      {"normuon_beta2", "0.95", "0.90", 0},
      {"lr_schedule", "linear", "cosine", 0.0045},
      {"n_kv_heads", "6", "3", -0.0070},
      {"resid_lambda_init", "1.0", "0.9", 0},
      {"ve_gate_bias", "0", "1", 0.0080},
      {"adam_eps", "1e-10", "1e-8", 0},
      {"model_dim", "768", "704", -0.0050},
      {"seq_len", "2048", "1024", 0},
      {"muon_lr_warmup", "off", "300 steps", 0.0035},
      {"tied_embeddings", "no", "yes", -0.0250},
      {"bf16_residual", "off", "on", 0},
      {"aspect_ratio", "64", "72", 0.0055},
  };
  return night;
}

std::string demo_trainer_file() {
  std::string s =
      "# The demo's simulated trainer (autoresearchd sim-trainer reads this file).\n"
      "# A run takes `seconds` of wall time and reports\n"
      "#   val_bpb = bpb_a + bpb_b * steps - (the sum of the effect lines) + N(0, noise_sigma)\n"
      "# with steps = budget / step_cost. Each `effect` line below is one setting;\n"
      "# a candidate of night.json sets its line's number to that change's true effect.\n"
      "# The `#` lines between them keep changes to different lines apart for git.\n"
      "seconds 0.3\n"
      "bpb_a 1.05\n"
      "bpb_b -0.00003\n"
      "noise_sigma 0.0015\n"
      "step_cost 0.00015\n"
      "\n";
  // Two lines between slots, so that changes to different slots re-apply onto
  // each other without a conflict (a change measured on an older best is
  // cherry-picked onto the new one).
  const auto& night = demo_candidates();
  for (size_t i = 0; i < night.size(); ++i) s += slot_line(i, night[i], false) + "#\n#\n";
  return s;
}

std::string demo_script_json() {
  nlohmann::json script = nlohmann::json::array();
  const auto& night = demo_candidates();
  for (size_t i = 0; i < night.size(); ++i)
    script.push_back({{"description", description(night[i])},
                      {"edits", nlohmann::json::array({{{"path", "trainer/train.sim"},
                                                        {"find", slot_line(i, night[i], false)},
                                                        {"replace", slot_line(i, night[i], true)}}})}});
  return script.dump(1) + "\n";
}

std::string demo_program() {
  return "# The demo's research program\n"
         "\n"
         "Lower val_bpb of the simulated trainer (trainer/train.sim) within its fixed budget.\n"
         "The proposer here is scripted (night.json): forty changes whose true effects are\n"
         "known and written in their descriptions, so the keep rule's decisions can be\n"
         "checked against the truth. With a real trainer and an LLM, this file is where\n"
         "you tell the LLM what to try.\n";
}

std::string demo_config_toml(const DemoSettings& settings) {
  const std::string daemon = quoted_command_word(settings.daemon);
  return "# autoresearchd demo: the simulated trainer, a scripted night of 40 candidates.\n"
         "tag = \"demo\"\n"
         "editable = [\"trainer/train.sim\"]\n"
         "budget_s = 0.3\n"
         "startup_s = 5\n"
         "retry_wait_s = 1\n"
         "gpus = [\"0\"]      # one simulated GPU slot\n"
         "\n"
         "[build]\n"
         "command = \"" + daemon + " sim-trainer build trainer/train.sim\"\n"
         "timeout_s = 30\n"
         "\n"
         "[[stage]]\n"
         "name = \"train\"\n"
         "command = \"" + daemon + " sim-trainer run trainer/train.sim --budget {budget} --budget-scale {budget_scale}\"\n"
         "timeout_s = 30\n"
         "expected_s = 1\n"
         "\n"
         "[data]\n"
         "enabled = false    # the simulated trainer reads no data\n"
         "\n"
         "[preflight]\n"
         "gpu = \"off\"        # no GPU needed\n"
         "\n"
         "[sandbox]\n"
         "mode = \"" + std::string(settings.sandbox ? "bwrap" : "off") + "\"\n"
         "\n"
         "[logs]\n"
         "keep_days = 0\n"
         "\n"
         "[proposer]\n"
         "kind = \"scripted\"\n"
         "script = \"night.json\"\n"
         "\n"
         "[serve]\n"
         "enabled = true\n"
         "port = " + std::to_string(settings.port) + "\n";
}

std::variant<DemoRepo, std::string> make_demo_repo(const DemoSettings& settings) {
  if (!settings.daemon.is_absolute()) return "the daemon's path must be absolute: " + settings.daemon.string();
  for (char c : settings.daemon.string())
    if (c == ' ' || c == '\t' || c == '\n' || c == '\'' || c == '"' || c == '\\')
      return "the daemon's path has a space, quote or backslash, which its stage command cannot name: " +
             settings.daemon.string();
  if (settings.port < 1 || settings.port > 65535) return "port out of range: " + std::to_string(settings.port);
  std::error_code ec;
  const fs::path root = fs::absolute(settings.dir, ec).lexically_normal();
  if (ec) return "cannot resolve " + settings.dir.string();
  if (fs::exists(root, ec) && !(fs::is_directory(root, ec) && fs::is_empty(root, ec)))
    return root.string() + " exists and is not an empty directory";
  std::string error;
  if (!write_file(root / "trainer/train.sim", demo_trainer_file(), &error) ||
      !write_file(root / "night.json", demo_script_json(), &error) ||
      !write_file(root / "program.md", demo_program(), &error) ||
      !write_file(root / "autoresearch.toml", demo_config_toml(settings), &error) ||
      !write_file(root / ".gitignore", "build/\n", &error))
    return error;
  try {
    std::string commit = GitRepo::init_with_files(root, "the demo's research repo");
    return DemoRepo{root, commit, demo_candidates().size()};
  } catch (const GitError& e) {
    return std::string(e.what());
  }
}

}  // namespace ard
