// bench_prompt: the first request of 10 consecutive experiments, assembled from
// a real tree (trainer/train.cu and trainer/model/) and program.md, with a
// synthetic but realistic history (scripts/bench_prompt.sh runs it). A
// benchmark, not a test: it prints figures.
//
// For each experiment it prints the Anthropic request body's size and its
// estimated tokens; then the share of the input that is a prefix common to all
// ten requests, and the input cost of the ten at the README's example prices,
// without caching and with Anthropic's prompt caching (the prefix up to the
// last cache_control breakpoint is written once, then read while it is the same).
//
// Then the grown tree: program.md grown to 16 KB and train.cu by 5 KB of code.
// Its first request must still hold train.cu whole, and a READ round of a
// 16 KB model file must return it whole within the limit, the way the
// proposer computes a round's room (prompt.h read_room).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "llm_client/chat_protocol.h"
#include "llm_client/edit_format.h"
#include "llm_client/prompt.h"

// The assembly under test (docs/bench/prompt_before.txt holds the figures of
// the assembly before it: every editable file whole, no cache breakpoint).
#define BENCH_BUILD_PROMPT(c, cfg) llm::build_prompt(c, cfg).conversation

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::vector<ard::EditableFile> editable_files(const fs::path& root) {
  std::vector<ard::EditableFile> files;
  files.push_back({"trainer/train.cu", slurp(root / "trainer/train.cu")});
  std::vector<fs::path> model;
  for (const auto& e : fs::directory_iterator(root / "trainer/model")) model.push_back(e.path());
  std::sort(model.begin(), model.end());
  for (const auto& p : model) files.push_back({"trainer/model/" + p.filename().string(), slurp(p)});
  return files;
}

// A night of research as the history table shows it: mostly discarded
// hyperparameter and kernel changes, some kept, a few crashes and build failures.
std::vector<ard::HistoryEntry> history(int n) {
  const char* ideas[] = {"raise MATRIX_LR from 0.04 to 0.05 for faster early progress",
                         "lower WARMDOWN_RATIO to 0.3 to keep the peak learning rate longer",
                         "add QK-norm gain per head initialised to 1.2",
                         "increase DEPTH from 8 to 10 and shrink the batch to fit the budget",
                         "fuse the residual add into the RMSNorm kernel of the MLP input",
                         "use a 2048-token sliding window on every other layer",
                         "switch the value embeddings to the first and last two layers only",
                         "tune Muon momentum warmup from 300 to 500 steps"};
  const char* statuses[] = {"discarded", "discarded", "kept", "discarded", "crash", "discarded", "build_fail", "discarded"};
  std::vector<ard::HistoryEntry> h;
  double best = 1.02;
  for (int i = 1; i <= n; ++i) {
    ard::HistoryEntry e;
    e.id = i;
    e.commit = "abc" + std::to_string(1000 + i);
    e.description = i == 1 ? "baseline" : ideas[i % 8];
    e.status = i == 1 ? "kept" : statuses[i % 8];
    e.baseline = i == 1;
    if (e.status == "kept") best -= 0.002, e.val_bpb = best;
    else if (e.status == "discarded") e.val_bpb = best + 0.001 * (i % 7);
    h.push_back(e);
  }
  return h;
}

std::string compiler_errors() {
  std::string s;
  for (int i = 0; i < 12; ++i)
    s += "trainer/model/layers.cu(" + std::to_string(210 + i) +
         "): error: identifier \"rms_scale\" is undefined\n          float r = rms_scale * x[i];\n                    ^\n";
  return s + "12 errors detected in the compilation of \"trainer/model/layers.cu\".\n";
}

/// The text of an Anthropic body's system and message blocks, in order, and
/// the length of the part up to the end of the last block marked cache_control.
struct Flat {
  std::string text;
  size_t cached = 0;
};

void add_content(const json& content, Flat& f) {
  if (content.is_string()) {
    f.text += content.get<std::string>();
    return;
  }
  for (const json& b : content) {
    f.text += b.value("text", "");
    if (b.contains("cache_control")) f.cached = f.text.size();
  }
}

Flat flatten(const std::string& body) {
  json j = json::parse(body);
  Flat f;
  if (j.contains("system")) add_content(j["system"], f);
  for (const json& m : j["messages"]) add_content(m["content"], f);
  return f;
}

double tokens(size_t chars) { return chars / 4.0; }

/// program.md grown to `size` bytes: its own paragraphs again, as a longer
/// program would add more of the same kind of guidance.
std::string grown_program(const std::string& program, size_t size) {
  std::string out = program;
  for (int round = 2; out.size() < size; ++round)
    out += "\n## Further notes, round " + std::to_string(round) + "\n\n" + program;
  out.resize(size);
  return out;
}

/// About `size` bytes of CUDA C++ of the kind a kept edit adds to train.cu:
/// schedule helpers and a small kernel per block.
std::string grown_code(size_t size) {
  std::string out = "\n// Learning-rate and momentum schedules added by kept experiments.\n";
  for (int i = 0; out.size() < size; ++i) {
    std::string n = std::to_string(i);
    out += "static float lr_schedule_" + n + "(int step, int total_steps) {\n"
           "  const float warmup = 0.0" + std::to_string(1 + i % 9) + "f * total_steps;\n"
           "  if (step < warmup) return (step + 1) / warmup;\n"
           "  const float progress = (step - warmup) / fmaxf(1.0f, total_steps - warmup);\n"
           "  return 0.5f * (1.0f + cosf(3.14159265f * progress));\n}\n\n"
           "__global__ void scale_rows_" + n + "(float* __restrict__ x, const float* __restrict__ g, int n, int d) {\n"
           "  int row = blockIdx.x, col = threadIdx.x;\n"
           "  for (; col < d; col += blockDim.x) x[row * d + col] *= g[col];\n}\n\n";
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: bench_prompt <repo root> <label>\n";
    return 2;
  }
  fs::path root = argv[1];
  // README's Anthropic example: input, output, cached read, cache write ($/Mtok).
  const double in_price = 3.0, read_price = 0.30, write_price = 6.0, out_price = 15.0;
  const double out_tokens = 1000;  // an answer of SEARCH/REPLACE blocks, assumed

  llm::LlmConfig config;
  config.protocol = llm::Protocol::kAnthropic;
  config.model = "claude-sonnet-4-5";
  config.base_url = "https://api.anthropic.com";
  config.max_output_tokens = 16000;

  ard::ProposalContext context;
  context.program_md = slurp(root / "program.md");
  context.files = editable_files(root);
  std::vector<ard::HistoryEntry> all = history(110);

  {
    llm::Prompt first = llm::build_prompt(context, config);
    std::printf("%s: files whole:", argv[2]);
    for (const auto& p : first.whole) std::printf(" %s", p.c_str());
    std::printf("; %zu in the map\n", first.mapped.size());
  }
  std::vector<Flat> flats;
  size_t max_bytes = 0;
  for (int k = 0; k < 10; ++k) {
    context.experiment_id = 101 + k;
    context.history.assign(all.begin(), all.begin() + 100 + k);
    const std::string& last = context.history.back().status;
    context.last_failure.reset();
    if (last == "build_fail") context.last_failure = ard::Failure{"build_fail", compiler_errors()};
    if (last == "crash") context.last_failure = ard::Failure{"crash", "step 412: loss is NaN\n"};
    llm::HttpRequest request = llm::build_request(config, "", BENCH_BUILD_PROMPT(context, config));
    Flat f = flatten(request.body);
    std::printf("%s experiment %ld: request %zu bytes, ~%.0f input tokens%s\n", argv[2], context.experiment_id,
                request.body.size(), tokens(f.text.size()), context.last_failure ? " (after a failure)" : "");
    max_bytes = std::max(max_bytes, request.body.size());
    flats.push_back(std::move(f));
  }

  // The prefix common to all ten inputs, over their mean length.
  size_t common = flats[0].text.size(), total = 0;
  for (const Flat& f : flats) {
    total += f.text.size();
    size_t i = 0;
    while (i < common && i < f.text.size() && f.text[i] == flats[0].text[i]) ++i;
    common = i;
  }
  double share = common / (total / 10.0);

  double uncached = 0, cached = 0;
  std::string previous_prefix;
  for (const Flat& f : flats) {
    uncached += tokens(f.text.size()) * in_price / 1e6;
    std::string prefix = f.text.substr(0, f.cached);
    double rest = tokens(f.text.size() - f.cached) * in_price / 1e6;
    if (f.cached == 0) cached += rest;
    else if (prefix == previous_prefix) cached += tokens(f.cached) * read_price / 1e6 + rest;
    else cached += tokens(f.cached) * write_price / 1e6 + rest;
    previous_prefix = prefix;
  }
  double out_cost = out_tokens * out_price / 1e6;
  std::printf("%s: input cost of 10 first requests $%.4f uncached, $%.4f with caching\n", argv[2], uncached, cached);
  std::printf("%s: $ per experiment (input + %.0f output tokens): $%.4f uncached, $%.4f with caching\n", argv[2],
              out_tokens, uncached / 10 + out_cost, cached / 10 + out_cost);

  // The grown tree: a longer program.md, a train.cu that kept edits made longer,
  // the last experiment failed; and a READ of a 16 KB model file.
  ard::ProposalContext grown = context;
  grown.experiment_id = 111;
  grown.program_md = grown_program(context.program_md, 16384);
  grown.files[0].content += grown_code(5 * 1024);
  const std::string probe_path = "trainer/model/read_probe_16k.cu";
  std::string probe = slurp(root / "trainer/model/attention.cu");
  while (probe.size() < 16384) probe += probe;
  probe.resize(16384);
  grown.files.push_back({probe_path, probe});
  grown.history.assign(all.begin(), all.end());
  grown.last_failure = ard::Failure{"build_fail", compiler_errors()};
  llm::Prompt g = llm::build_prompt(grown, config);
  llm::HttpRequest grown_request = llm::build_request(config, "", g.conversation);
  const bool has_surface = std::find(g.whole.begin(), g.whole.end(), "trainer/train.cu") != g.whole.end();
  std::printf("%s grown: program.md %zu bytes, train.cu %zu bytes: request %zu bytes, ~%.0f input tokens of %ld; "
              "train.cu %s; %s\n",
              argv[2], grown.program_md.size(), grown.files[0].content.size(), grown_request.body.size(),
              tokens(render(g.conversation).size()), g.limit, has_surface ? "whole" : "in the map",
              g.cuts.empty() ? "nothing cut" : llm::cut_note(g, config).c_str());

  // The READ round as the proposer makes it: the answer, its room, the reply.
  const std::string answer = "I want to see the kernel first.\nREAD: " + probe_path + "\n";
  llm::ParsedAnswer parsed = llm::parse_answer(answer);
  std::string reply = llm::read_reply(parsed.reads, grown.files, llm::read_room(g, config, answer));
  llm::Conversation round = g.conversation;
  round.messages.push_back({"assistant", answer});
  round.messages.push_back({"user", reply});
  const long round_tokens = llm::estimate_tokens(llm::render(round));
  const bool read_ok = reply.find(probe) != std::string::npos && round_tokens <= g.limit;
  std::printf("%s read: READ %s (%zu bytes): %s; the round's request ~%ld tokens of %ld\n", argv[2],
              probe_path.c_str(), probe.size(), reply.find(probe) != std::string::npos ? "shown whole" : "NOT shown",
              round_tokens, g.limit);

  std::printf("RESULT first_request_bytes=%zu stable_prefix_share=%.3f cached_cost_ratio=%.3f "
              "grown_prompt_has_surface=%d read_16k_ok=%d\n",
              max_bytes, share, cached / uncached, has_surface ? 1 : 0, read_ok ? 1 : 0);
  return 0;
}
