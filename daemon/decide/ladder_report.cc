// See ladder_report.h.
#include "daemon/decide/ladder_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

#include "daemon/decide/run_evidence.h"
#include "daemon/log.h"
#include "daemon/util/text.h"

namespace ard {
namespace {

std::string percent(double share) { return format_number(std::round(share * 1000) / 10) + "%"; }

std::string id_list(const std::vector<int64_t>& ids) {
  std::string out;
  for (int64_t id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out.empty() ? "none" : out;
}

/// "2x (rung 1)".
std::string rung_title(const std::vector<RungConfig>& rungs, int rung) {
  return rung_name(rungs, rung) + " (rung " + std::to_string(rung) + ")";
}

/// A label row's kind; untested for a word the schema would not hold.
LabelKind kind_of(const ChangeLabelRow& row) { return parse_label_kind(row.label).value_or(LabelKind::kUntested); }

/// The evidence of a label in words: the comparison that decided it.
std::string evidence_words(const std::string& json) {
  std::optional<RungEvidence> e;
  try {
    e = parse_evidence_json(json);
  } catch (const std::invalid_argument& error) {
    return "its evidence is unreadable (" + std::string(error.what()) + ")";
  }
  if (!e) return "no comparison recorded";
  std::string rule;  // labels decided by the transfer rule also keep what it tested against
  if (e->gain_at_rung0 && e->lambda)
    rule = ", against its gain at rung 0 g = " + format_signed(*e->gain_at_rung0, 6) + ": λ = " + format_signed(*e->lambda, 2);
  return "the change " + format_fixed(e->candidate_mean, 6) + " (n " + std::to_string(e->candidate_n) +
         ") against the commit before it " + format_fixed(e->best_mean, 6) + " (n " + std::to_string(e->best_n) +
         "): Δ = " + format_signed(e->delta, 6) + ", σ at the rung " + format_fixed(e->sigma, 6) + rule + "; trials " +
         id_list(e->trials);
}

}  // namespace

LadderSettings ladder_settings(const Config& config) { return {config.rungs, config.promote}; }

std::string rung_name(const std::vector<RungConfig>& rungs, int rung) {
  if (rung >= 0 && static_cast<size_t>(rung) < rungs.size() && !rungs[rung].name.empty()) return rungs[rung].name;
  return "rung " + std::to_string(rung);
}

std::string label_words(LabelKind kind, const std::string& rung) {
  switch (kind) {
    case LabelKind::kTransfers:
      return "transfers at " + rung;
    case LabelKind::kScaleBound:
      return "scale-bound at " + rung;
    case LabelKind::kUntested:
      break;
  }
  return "untested at " + rung;
}

Ladder ladder_of(Store& store, const std::string& tag, const LadderSettings& settings) {
  Ladder ladder;
  ladder.promote = settings.promote;
  if (settings.rungs.size() < 2) return ladder;
  const std::vector<TrialRow> trials = store.trials(tag);
  ladder.promotion_share = run_time(trials).promotion_share();

  std::map<std::pair<int64_t, int>, LabelKind> current;  // (experiment, rung) -> its last label
  for (const ChangeLabelRow& row : store.current_change_labels(tag))
    current[{row.experiment_id, row.rung}] = kind_of(row);

  const std::string base = store.run_base(tag).value_or("");
  for (size_t r = 1; r < settings.rungs.size(); ++r) {
    const RungConfig& config = settings.rungs[r];
    RungStanding rung;
    rung.rung = static_cast<int>(r);
    rung.name = config.name;
    rung.depth_scale = config.depth_scale;
    rung.budget_s = config.budget_s;
    rung.reference_commit = base;  // until a change is tested there
    rung.sigma = rung_noise(trials, rung.rung, 0);
    ladder.rungs.push_back(std::move(rung));
  }
  for (const ExperimentRow& row : store.experiments(tag)) {
    if (row.state != status::kKept || row.is_baseline) continue;
    ChangeStanding change{row.id, row.commit, display_description(row), {}};
    for (RungStanding& rung : ladder.rungs) {
      auto it = current.find({row.id, rung.rung});
      const LabelKind kind = it == current.end() ? LabelKind::kUntested : it->second;
      change.labels.push_back(kind);
      if (kind != LabelKind::kUntested) {  // tested there: the rung's reference from now on
        rung.reference = row.id;
        rung.reference_commit = row.commit;
      }
    }
    ladder.changes.push_back(std::move(change));
  }
  return ladder;
}

std::string render_ladder(const Ladder& ladder) {
  if (ladder.rungs.empty()) return "";
  std::ostringstream os;
  os << "promotion ladder (a round every " << ladder.promote.every << " kept changes, on_fail "
     << to_string(ladder.promote.on_fail) << "): GPU time at rungs above 0 " << percent(ladder.promotion_share)
     << " of " << percent(ladder.promote.max_share) << " allowed (promote.max_share)";
  if (ladder.promote.gpus > 0) os << "; " << ladder.promote.gpus << " GPU(s) reserved (promote.gpus)";
  os << "\n";
  for (const RungStanding& rung : ladder.rungs) {
    os << "  " << rung.name << " (rung " << rung.rung << "): depth_scale " << format_number(rung.depth_scale)
       << ", budget " << format_number(rung.budget_s) << " s; reference "
       << (rung.reference
               ? "#" + std::to_string(*rung.reference) + " " + short_commit(rung.reference_commit)
               : "the base" + (rung.reference_commit.empty() ? "" : " " + short_commit(rung.reference_commit)))
       << "; σ at " << rung.name << " "
       << (rung.sigma ? "= " + format_fixed(rung.sigma->sigma, 6) + " (df " + std::to_string(rung.sigma->df) + ")"
                      : std::string("not measured yet"))
       << "\n";
  }
  if (ladder.changes.empty()) {
    os << "  kept changes: none yet\n";
    return os.str();
  }
  std::vector<std::string> words;
  size_t width = 0;
  for (const ChangeStanding& change : ladder.changes) {
    std::string w;
    for (size_t i = 0; i < change.labels.size(); ++i)
      w += (i ? ", " : "") + label_words(change.labels[i], ladder.rungs[i].name);
    width = std::max(width, w.size());
    words.push_back(std::move(w));
  }
  os << "  kept changes at larger scales:\n";
  for (size_t i = 0; i < ladder.changes.size(); ++i) {
    std::string id = "#" + std::to_string(ladder.changes[i].experiment_id);
    os << "  " << std::string(id.size() < 5 ? 5 - id.size() : 0, ' ') << id << "  "
       << short_commit(ladder.changes[i].commit) << "  " << words[i] << std::string(width - words[i].size(), ' ')
       << "  " << flatten_to_one_line(ladder.changes[i].description) << "\n";
  }
  return os.str();
}

std::string render_rung_standing(Store& store, const ExperimentRow& row, const LadderSettings& settings) {
  const std::vector<ChangeLabelRow> labels = store.change_labels(row.id);
  int top = static_cast<int>(settings.rungs.size()) - 1;
  for (const ChangeLabelRow& label : labels) top = std::max(top, label.rung);
  if (top < 1) return "";

  std::vector<TrialRow> at_rungs;  // its commit's runs above rung 0, whichever experiment they belong to
  if (!row.commit.empty())
    for (const TrialRow& t : store.trials(row.tag))
      if (t.rung > 0 && t.commit == row.commit) at_rungs.push_back(t);
  const bool kept_change = row.state == status::kKept && !row.is_baseline;
  if (!kept_change && labels.empty() && at_rungs.empty()) return "";

  std::ostringstream os;
  os << "at larger scales:\n";
  for (int rung = 1; rung <= top; ++rung) {
    const std::string title = rung_title(settings.rungs, rung);
    std::vector<const ChangeLabelRow*> at;
    for (const ChangeLabelRow& label : labels)
      if (label.rung == rung) at.push_back(&label);
    if (at.empty()) {
      if (kept_change)
        os << "  " << title << ": " << label_words(LabelKind::kUntested, rung_name(settings.rungs, rung))
           << ": never compared there\n";
    } else {
      const ChangeLabelRow& last = *at.back();
      os << "  " << title << ": " << label_words(kind_of(last), rung_name(settings.rungs, rung)) << ", decided "
         << format_time(last.decided_at).substr(0, 16) << ": " << evidence_words(last.evidence) << "\n";
      for (size_t i = 0; i + 1 < at.size(); ++i)
        os << "    earlier: " << label_words(kind_of(*at[i]), rung_name(settings.rungs, rung)) << ", decided "
           << format_time(at[i]->decided_at).substr(0, 16) << ": " << evidence_words(at[i]->evidence) << "\n";
    }
    std::vector<double> values;
    std::vector<int64_t> ids;
    for (const TrialRow& t : at_rungs)
      if (t.rung == rung) {
        ids.push_back(t.id);
        if (t.status == "ok" && t.val_bpb) values.push_back(*t.val_bpb);
      }
    if (ids.empty()) continue;
    const Spread s = spread_of(values);
    os << "    its runs at " << rung_name(settings.rungs, rung) << ": "
       << (s.n ? format_fixed(s.mean, 6) + " ± " + format_fixed(s.spread, 6) + " (" + std::to_string(s.n) + ")"
               : std::string("no result"))
       << "; trials " << id_list(ids) << "\n";
  }
  return os.str();
}

}  // namespace ard
