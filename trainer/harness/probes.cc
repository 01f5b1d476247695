// See probes.h. Everything here is arithmetic on host arrays the model filled:
// the model never sees which positions are compared or what is recomputed.
#include "harness/probes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>


namespace harness {
namespace {

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

/// logits() over n rows of T+1 tokens, in calls of at most max_probe_rows rows.
std::vector<float> logits_of(ProbeModel& model, const std::vector<uint16_t>& rows, int n, int seq_len) {
  const size_t V = static_cast<size_t>(model.vocab_size());
  const size_t row_tokens = static_cast<size_t>(seq_len) + 1, row_logits = static_cast<size_t>(seq_len) * V;
  std::vector<float> out(static_cast<size_t>(n) * row_logits);
  const int chunk = std::max(1, model.max_probe_rows());
  for (int r = 0; r < n; r += chunk) {
    int b = std::min(chunk, n - r);
    model.logits(rows.data() + r * row_tokens, b, seq_len, out.data() + r * row_logits);
  }
  return out;
}

}  // namespace

std::vector<ProbeRow> pick_probe_rows(const TokenShard& shard, int seq_len, const ProbeSettings& settings) {
  const size_t need = static_cast<size_t>(seq_len) + 1;
  if (shard.num_tokens() < need || seq_len < 2)
    throw std::runtime_error("probes: the validation shard is shorter than one row of " + std::to_string(need));
  std::mt19937_64 rng(settings.seed);
  std::vector<ProbeRow> rows;
  for (int r = 0; r < settings.rows; ++r) {
    size_t offset = rng() % (shard.num_tokens() - need + 1);
    int boundary = -1;
    // Straddle a document boundary: a document's BOS somewhere inside the row.
    for (int attempt = 0; attempt < 64 && shard.num_docs() > 1; ++attempt) {
      size_t d = 1 + rng() % (shard.num_docs() - 1);
      size_t b = 1 + rng() % static_cast<size_t>(seq_len - 1);
      if (shard.doc_begin(d) < b || shard.doc_begin(d) - b + need > shard.num_tokens()) continue;
      offset = shard.doc_begin(d) - b;
      boundary = static_cast<int>(b);
      break;
    }
    ProbeRow row;
    row.tokens.assign(shard.tokens() + offset, shard.tokens() + offset + need);
    row.boundary = boundary;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<int> causality_positions(const ProbeRow& row, int seq_len, const std::vector<int>& windows,
                                     const ProbeSettings& settings) {
  std::mt19937_64 rng(settings.seed ^ (0x9e3779b97f4a7c15ull * (row.tokens.size() + row.tokens[0] + 1)));
  const int last = seq_len - 2;  // t + 1 must still be an input position
  std::vector<int> out;
  auto add = [&](int t) {
    if (t >= 0 && t <= last && std::find(out.begin(), out.end(), t) == out.end() &&
        static_cast<int>(out.size()) < settings.positions_per_row)
      out.push_back(t);
  };
  if (row.boundary >= 1) {
    add(row.boundary - 1);  // the last token of one document
    add(row.boundary);      // the next document's BOS
  }
  std::vector<int> edges;
  std::vector<int> all_windows = windows;
  for (int w : {64, 128, 256, 512, 1024}) all_windows.push_back(w);
  for (int w : all_windows)
    for (int t : {w - 1, w})
      if (t >= 0 && t <= last) edges.push_back(t);
  std::shuffle(edges.begin(), edges.end(), rng);
  for (size_t i = 0, added = 0; i < edges.size() && added < 2; ++i) {
    size_t before = out.size();
    add(edges[i]);
    added += out.size() - before;
  }
  for (int guard = 0; static_cast<int>(out.size()) < settings.positions_per_row && guard < 1000; ++guard)
    add(static_cast<int>(rng() % static_cast<uint64_t>(last + 1)));
  std::sort(out.begin(), out.end());
  return out;
}

ProbeResult check_causality(ProbeModel& model, const ProbeRow& row, int row_index, int seq_len,
                            const TokenShard& shard, const ProbeSettings& settings) {
  const int V = model.vocab_size();
  const size_t row_tokens = static_cast<size_t>(seq_len) + 1;
  const std::vector<int> positions = causality_positions(row, seq_len, model.attention_windows(), settings);
  std::mt19937_64 rng(settings.seed + 7919u * static_cast<uint64_t>(row_index + 1));

  // The row itself, then one copy per position t with every token after t replaced
  // by real text from elsewhere (the first replaced token always differs).
  std::vector<uint16_t> rows(row.tokens);
  for (int t : positions) {
    std::vector<uint16_t> v(row.tokens);
    size_t from = rng() % (shard.num_tokens() - row_tokens + 1);
    for (size_t i = static_cast<size_t>(t) + 1; i < row_tokens; ++i) v[i] = shard.tokens()[from + i];
    if (v[t + 1] == row.tokens[t + 1]) v[t + 1] = static_cast<uint16_t>((row.tokens[t + 1] + 1) % V);
    rows.insert(rows.end(), v.begin(), v.end());
  }
  const std::vector<float> logits = logits_of(model, rows, 1 + static_cast<int>(positions.size()), seq_len);
  const size_t row_logits = static_cast<size_t>(seq_len) * V;
  for (size_t k = 0; k < positions.size(); ++k) {
    const int t = positions[k];
    const float* base = logits.data();
    const float* changed = logits.data() + (k + 1) * row_logits;
    for (int p = 0; p <= t; ++p)
      for (int v = 0; v < V; ++v) {
        const size_t i = static_cast<size_t>(p) * V + v;
        const float a = base[i], b = changed[i];
        if (!std::isfinite(a) || !std::isfinite(b))
          return {false, "causality: probe row " + std::to_string(row_index) + " has a logit that is not finite at position " +
                             std::to_string(p)};
        const float diff = std::fabs(a - b), tol = settings.causal_abs_tol + settings.causal_rel_tol * std::fabs(a);
        if (diff > tol)
          return {false, "causality: changing the tokens after position " + std::to_string(t) + " of probe row " +
                             std::to_string(row_index) + " changed the logits at position " + std::to_string(p) +
                             fmt(" by %.4g (tolerance %.3g): the model sees later tokens", diff, tol)};
      }
  }
  return {};
}

ProbeResult check_honest_losses(ProbeModel& model, const ProbeRow& row, int row_index, int seq_len,
                                const ProbeSettings& settings) {
  const int V = model.vocab_size();
  const std::vector<float> logits = logits_of(model, row.tokens, 1, seq_len);
  std::vector<float> reported(static_cast<size_t>(seq_len));
  model.per_token_losses(row.tokens.data(), 1, seq_len, reported.data());
  const std::string name = "honest losses: probe row " + std::to_string(row_index);
  double sum_reported = 0, sum_recomputed = 0, worst_excess = 0;
  int worst = -1;
  double worst_reported = 0, worst_recomputed = 0;
  for (int t = 0; t < seq_len; ++t) {
    const float* l = logits.data() + static_cast<size_t>(t) * V;
    const int target = row.tokens[t + 1];
    if (target >= V) return {false, name + ": target token " + std::to_string(target) + " is outside the vocabulary"};
    double mx = -INFINITY;
    for (int v = 0; v < V; ++v) mx = std::max(mx, static_cast<double>(l[v]));
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp(static_cast<double>(l[v]) - mx);
    const double ce = mx + std::log(sum) - l[target];
    const double got = reported[t];
    if (!std::isfinite(ce) || !std::isfinite(got))
      return {false, name + ": a loss or logit is not finite at position " + std::to_string(t)};
    sum_reported += got;
    sum_recomputed += ce;
    const double excess = std::fabs(got - ce) - (settings.loss_abs_tol + settings.loss_rel_tol * std::fabs(ce));
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = t;
      worst_reported = got;
      worst_recomputed = ce;
    }
  }
  const double rel = (sum_reported - sum_recomputed) / std::max(sum_recomputed, 1e-9);
  if (std::fabs(rel) > settings.loss_mean_rel_tol)
    return {false, name + fmt(": the model reports a mean loss of %.4f nats where its logits give %.4f (%+.1f%%)",
                              sum_reported / seq_len, sum_recomputed / seq_len, 100 * rel)};
  if (worst >= 0)
    return {false, name + ": at position " + std::to_string(worst) +
                       fmt(" the model reports a loss of %.4f nats where its logits give %.4f", worst_reported,
                           worst_recomputed)};
  return {};
}

ProbeResult run_integrity_probes(ProbeModel& model, const TokenShard& shard, int seq_len,
                                 const ProbeSettings& settings) {
  const std::vector<ProbeRow> rows = pick_probe_rows(shard, seq_len, settings);
  for (size_t r = 0; r < rows.size(); ++r) {
    ProbeResult c = check_causality(model, rows[r], static_cast<int>(r), seq_len, shard, settings);
    if (!c.ok) return c;
    ProbeResult h = check_honest_losses(model, rows[r], static_cast<int>(r), seq_len, settings);
    if (!h.ok) return h;
  }
  return {};
}

std::string tampered_fail_line(const ProbeResult& result) { return "FAIL: tampered: " + result.message; }

}  // namespace harness
