// See report.h.
#include "daemon/cli/report.h"

#include <algorithm>
#include <array>
#include <map>
#include <cstdio>
#include <set>
#include <sstream>

#include "daemon/decide/decision_report.h"
#include "daemon/decide/memory.h"
#include "daemon/exec/process_runner.h"
#include "daemon/log.h"
#include "daemon/util/text.h"

namespace ard {
namespace {

/// Pads to width columns, counting UTF-8 characters (σ, ±), not bytes.
std::string pad(const std::string& s, size_t width, bool right = false) {
  size_t columns = 0;
  for (unsigned char c : s) columns += (c & 0xC0) != 0x80;
  if (columns >= width) return s;
  std::string fill(width - columns, ' ');
  return right ? fill + s : s + fill;
}

/// Running a stage, or measured and waiting for its decision: what status shows on a GPU's line.
bool on_a_gpu(const ExperimentRow& r) {
  const auto s = parse_experiment_state(r.state);
  return s == ExperimentState::kRunning || s == ExperimentState::kEvaluated;
}

std::string clean(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return out;
}

std::string clock_time(double t) { return format_time(t).substr(11); }

std::vector<std::string> split_gpus(const std::string& list) {
  std::vector<std::string> out;
  std::istringstream in(list);
  for (std::string g; std::getline(in, g, ',');) out.push_back(g);
  if (out.empty()) out.push_back("");
  return out;
}

/// The newest <id>-<stage>.log in logs_dir, or empty.
std::filesystem::path newest_log(const std::filesystem::path& logs_dir, int64_t id) {
  std::filesystem::path best;
  std::filesystem::file_time_type best_time{};
  std::error_code ec;
  if (logs_dir.empty()) return best;
  const std::string prefix = std::to_string(id) + "-";
  for (const auto& e : std::filesystem::directory_iterator(logs_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with(prefix) || !name.ends_with(".log")) continue;
    auto t = e.last_write_time(ec);
    if (ec) continue;
    if (best.empty() || t > best_time) {
      best = e.path();
      best_time = t;
    }
  }
  return best;
}

}  // namespace

EngineFigures engine_figures(Store& store, const std::string& tag, double now) {
  EngineFigures f;
  for (const auto& s : store.sessions(tag)) {
    double wall = s.ended_at.value_or(now) - s.started_at;
    if (wall <= 0) continue;
    int gpus = static_cast<int>(split_gpus(s.gpus).size());
    f.wall_s += wall;
    f.gpu_seconds += wall * gpus;
    f.gpus = std::max(f.gpus, gpus);
  }
  auto trials = store.trials(tag);
  for (const auto& t : trials) {
    f.busy_s += t.ended_at.value_or(now) - t.started_at;
    f.training_s += t.training_seconds.value_or(0);
  }
  if (trials.empty())  // a store written before trials were recorded
    for (const auto& r : store.experiments(tag)) f.training_s += r.training_seconds.value_or(0);
  return f;
}

std::string format_duration(double s) {
  if (s < 60) return format_fixed(s, 1) + "s";
  long total = static_cast<long>(s + 0.5);
  char buf[32];
  if (total < 3600) std::snprintf(buf, sizeof buf, "%ldm%02lds", total / 60, total % 60);
  else std::snprintf(buf, sizeof buf, "%ldh%02ldm", total / 3600, (total % 3600) / 60);
  return buf;
}

StatusFigures status_figures(Store& store, const std::string& tag, const std::vector<ExperimentRow>& rows,
                             bool daemon_running, double now) {
  StatusFigures f;
  for (const auto& r : rows)
    if (is_final_state(r.state) && r.state != status::kInterrupted) ++f.finished;
  EngineFigures e = engine_figures(store, tag, now);
  double capacity = e.gpu_seconds;
  if (e.wall_s > 0) {
    f.wall_s = e.wall_s;
    f.gpus = e.gpus;
  } else {
    // No session recorded (a store filled by hand): first start to now, or to
    // the last end when no daemon runs, on the GPUs the trials name.
    double first = rows.empty() ? now : rows.front().started_at;
    double last = now;
    if (!daemon_running && !rows.empty()) last = rows.back().ended_at.value_or(rows.back().started_at);
    f.wall_s = last > first ? last - first : 0;
    std::set<std::string> gpus;
    for (const auto& t : store.trials(tag)) gpus.insert(t.gpu);
    if (!gpus.empty()) f.gpus = static_cast<int>(gpus.size());
    capacity = f.wall_s * f.gpus;
  }
  if (f.wall_s > 0) f.per_hour = f.finished / (f.wall_s / 3600.0);
  if (capacity > 0) {
    // A trainer's clock can disagree with the daemon's (a fake trainer, a bad
    // report): a share above 1 is shown as 1, and said to be clamped.
    f.training_share = std::min(1.0, e.training_s / capacity);
    f.training_share_clamped = e.training_s > capacity;
    if (e.busy_s > 0) f.gpu_busy_share = e.busy_s / capacity;
  }
  f.llm = store.llm_totals(tag);
  return f;
}

namespace {
std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }
}  // namespace

std::optional<std::string> unknown_tag(Store& store, const std::string& tag) {
  if (store.run_base(tag)) return std::nullopt;
  std::set<std::string> tags;
  for (const auto& r : store.experiments()) tags.insert(r.tag);
  if (tags.count(tag)) return std::nullopt;
  std::string known;
  for (const auto& t : tags) known += (known.empty() ? "" : ", ") + t;
  return "no experiments with tag " + tag + " in this repo's results (" +
         (tags.empty() ? std::string("no tag has any yet") : (tags.size() == 1 ? "the tag: " : "tags: ") + known) + ")";
}

bool stage_under_way(const ExperimentRow& r) {
  const auto s = parse_experiment_state(r.state);
  return (s == ExperimentState::kBuilding || s == ExperimentState::kRunning) && r.stage_started_at.has_value();
}

std::optional<double> shown_expected_end(const ExperimentRow& r) {
  if (!stage_under_way(r) || !r.stage_expected) return std::nullopt;
  if (r.stage_deadline && *r.stage_expected >= *r.stage_deadline) return std::nullopt;
  return r.stage_expected;
}

std::optional<std::string> data_step_line(Store& store, double now) {
  for (const auto& g : store.live_process_groups()) {
    const std::string since = " (" + format_duration(now - g.started_at) + ")";
    if (g.what == "data-build") return "the data step: building the trainer at the branch tip" + since;
    if (g.what == "prepare") return "the data step: preparing the dataset (tokenizer, shards)" + since;
  }
  return std::nullopt;
}

std::string render_status(Store& store, const std::string& tag, std::optional<pid_t> daemon_pid, double now,
                          const NoiseSettings& noise, const MetricSpec& metric, const LadderSettings& ladder) {
  std::ostringstream os;
  auto rows = store.experiments(tag);
  auto session = store.last_session();
  os << "autoresearchd: ";
  if (daemon_pid) {
    os << "running (pid " << *daemon_pid << ")";
    if (session) os << " since " << format_time(session->started_at);
  } else {
    os << "not running";
    if (session && session->ended_at)
      os << " (last stopped " << format_time(*session->ended_at) << ": " << session->end_reason << ")";
  }
  os << "\ntag " << tag << ", branch autoresearch/" << tag << "\n\n";

  const std::vector<TrialRow> trials = store.trials(tag);
  os << pad("id", 4, true) << "  " << pad("commit", 7) << "  " << pad(metric.name, 9, true) << "  "
     << pad("delta", 9, true) << "  " << pad("status", 14) << "  " << pad("duration", 8, true) << "  "
     << pad("mean ± spread (n)", 26) << "  " << pad("decided by", 17) << "  description\n";
  std::optional<double> best;
  const ExperimentRow* best_row = nullptr;
  for (const auto& r : rows) {
    std::string val = r.val_bpb ? format_fixed(*r.val_bpb, 6) : "-";
    std::string delta = r.val_bpb && best ? format_signed(*r.val_bpb - *best, 6) : "-";
    double end = r.ended_at ? *r.ended_at : now;
    os << pad(std::to_string(r.id), 4, true) << "  " << pad(r.commit.empty() ? "-" : r.commit.substr(0, 7), 7)
       << "  " << pad(val, 9, true) << "  " << pad(delta, 9, true) << "  " << pad(r.state, 14) << "  "
       << pad(format_duration(end - r.started_at), 8, true) << "  " << pad(mean_spread(trials, r), 26) << "  "
       << pad(or_dash(decision_rule(store.decision(r.id))), 17) << "  " << (r.fix_of ? "(fix of #" + std::to_string(*r.fix_of) + ") " : "") << clean(display_description(r)) << "\n";
    if (r.state == status::kKept && r.val_bpb) {
      best = r.val_bpb;
      best_row = &r;
    }
  }
  if (rows.empty()) os << "(no experiments yet)\n";
  os << "\n";
  if (best_row)
    os << "best: " << format_fixed(*best_row->val_bpb, 6) << " at " << best_row->commit.substr(0, 7) << " (#" << best_row->id
       << " " << clean(best_row->description) << ")"
       << (metric.goal == MetricGoal::kMax ? ", " + metric.name + ": higher is better" : "") << "\n";
  else
    os << "best: none yet\n";

  // Throughput over the sessions' wall time (start to end, or to now for the
  // running one) times the GPUs each session trained on.
  StatusFigures f = status_figures(store, tag, rows, daemon_pid.has_value(), now);
  os << "experiments: " << f.finished << " finished in " << format_duration(f.wall_s);
  if (f.wall_s > 0) {
    os << " (" << format_fixed(f.per_hour, 1) << " per hour";
    if (f.gpus > 1) os << ", " << format_fixed(f.per_hour / f.gpus, 1) << " per GPU-hour";
    os << ")";
  }
  os << "; training share of wall time: " << format_fixed(100.0 * f.training_share, 1) << "%";
  if (f.training_share_clamped) os << " (clamped: the trainers reported more training time than that)";
  if (f.gpu_busy_share)
    os << "; GPU busy share: " << format_fixed(100.0 * *f.gpu_busy_share, 1) << "% of " << f.gpus << " GPU"
       << (f.gpus == 1 ? "" : "s");
  os << "\n";
  os << render_noise_status(store, tag, now, noise);
  os << render_ladder(ladder_of(store, tag, ladder));
  os << llm_status_line(f.llm);
  if (std::string cut = store.last_prompt_cut(tag); !cut.empty()) os << "llm " << cut << "\n";
  for (const auto& l : store.learnt_limits())
    os << "llm limit: " << l.provider << ": prompts within " << l.tokens << " tokens since "
       << format_time(l.learnt_at).substr(0, 16) << " (" << l.reason << ")\n";
  if (daemon_pid && session && !session->paused.empty()) os << session->paused << "\n";

  const std::vector<IdeaRow> ideas = store.ideas(tag);
  if (!ideas.empty()) {
    os << "ideas (autoresearchd idea):\n";
    for (const auto& idea : ideas)
      os << "  " << idea.id << "  " << format_time(idea.created_at).substr(0, 16) << "  " << idea_outcome(idea) << "  "
         << clean(idea.text) << "\n";
  }

  const std::vector<TryRow> tries = store.tries(tag);
  if (!tries.empty()) {
    os << "tries (autoresearchd try):\n";
    for (const auto& t : tries) {
      std::string outcome = "waiting for the next experiment";
      if (t.experiment)
        if (auto e = store.experiment(*t.experiment)) outcome = "#" + std::to_string(e->id) + " " + e->state;
      os << "  " << t.id << "  " << format_time(t.created_at).substr(0, 16) << "  " << short_commit(t.commit) << "  "
         << outcome << "  " << clean(t.description) << "\n";
    }
  }

  // The swarm: what each proposer profile proposed, kept and cost.
  std::map<std::string, std::array<double, 4>> by_profile;  // proposals, keeps, duplicates, cost
  for (const auto& r : rows)
    if (!r.profile.empty()) {
      auto& p = by_profile[r.profile];
      p[0] += 1;
      p[1] += r.state == "kept";
      p[2] += r.state == "duplicate";
      for (const auto& call : store.llm_calls(r.id)) p[3] += call.cost_usd;
    }
  if (!by_profile.empty()) {
    os << "profiles (proposer.profile):  proposals  keeps  duplicates  cost\n";
    for (const auto& [name, p] : by_profile) {
      char line[160];
      std::snprintf(line, sizeof line, "  %-26s  %9.0f  %5.0f  %10.0f  $%.2f\n", name.c_str(), p[0], p[1], p[2], p[3]);
      os << line;
    }
  }

  // The research memory (decide/memory.h): where changes were tried most, and how often one was kept.
  const std::vector<TriedRegion> regions = tally_regions(rows);
  if (!regions.empty()) {
    os << "most tried regions (tries, kept, keep rate):\n";
    for (size_t i = 0; i < regions.size() && i < kTopRegions; ++i) {
      const int kept = kept_count(regions[i]);
      os << "  " << pad(std::to_string(regions[i].tries), 4, true) << "  " << pad(std::to_string(kept), 4, true) << "  "
         << pad(format_fixed(100.0 * kept / regions[i].tries, 0) + "%", 4, true) << "  " << clean(regions[i].region) << "\n";
    }
    if (const size_t more = regions.size() > kTopRegions ? regions.size() - kTopRegions : 0; more > 0)
      os << "  (" << more << " more region" << (more == 1 ? "" : "s") << ")\n";
  }

  std::vector<const ExperimentRow*> in_flight;
  for (const auto& r : rows)
    if (!is_final_state(r.state)) in_flight.push_back(&r);
  if (in_flight.empty()) {
    os << "now: " << (daemon_pid ? data_step_line(store, now).value_or("idle") : "nothing") << "\n";
    return os.str();
  }
  if (!daemon_pid) {
    for (const ExperimentRow* r : in_flight)
      os << "now: #" << r->id << " was " << r->state << " when the daemon died; the next start marks it interrupted"
         << (r->commit.empty() || r->is_baseline ? "" : " and runs it again from its commit") << "\n";
    return os.str();
  }
  auto stage_line = [&](const ExperimentRow& r) {
    std::ostringstream line;
    line << "#" << r.id << " " << r.state << " stage " << r.stage;
    for (const auto& t : store.experiment_trials(r.id))  // executor = "slurm": its job, and where it runs
      if (!t.ended_at && !t.slurm_job_id.empty())
        line << " (Slurm job " << t.slurm_job_id << (t.node.empty() ? ", not running yet" : " on " + t.node) << ")";
    if (!stage_under_way(r)) return line.str();  // waiting: no elapsed time, no ends
    line << ", " << format_duration(now - *r.stage_started_at) << " elapsed";
    if (auto end = shown_expected_end(r)) line << ", expected end " << clock_time(*end);
    if (r.stage_deadline) line << (shown_expected_end(r) ? " (timeout at " : ", timeout at ") << clock_time(*r.stage_deadline)
                               << (shown_expected_end(r) ? ")" : "");
    return line.str();
  };
  // One line per worker: the experiment training on its GPU, or idle.
  std::vector<std::string> gpus = session && session->ended_at == std::nullopt ? split_gpus(session->gpus)
                                                                              : std::vector<std::string>{};
  int proposing = 0, ready = 0, building = 0;
  for (const ExperimentRow* r : in_flight) {
    const auto s = parse_experiment_state(r->state);
    if (s == ExperimentState::kProposing) ++proposing;
    else if (s == ExperimentState::kBuilding) ++building;
    else if (s == ExperimentState::kApplied || s == ExperimentState::kCommitted || s == ExperimentState::kBuilt) ++ready;
  }
  if (gpus.size() <= 1) {
    const ExperimentRow* training = nullptr;
    for (const ExperimentRow* r : in_flight)
      if (on_a_gpu(*r)) training = r;
    if (training) os << "now: " << stage_line(*training) << "\n";
    else if (proposing && !building && !ready)
      os << "now: #" << in_flight.front()->id << " waiting for a proposal ("
         << format_duration(now - in_flight.front()->started_at) << ")\n";
    else os << "now: no training\n";
  } else {
    os << "now:\n";
    for (const auto& g : gpus) {
      const ExperimentRow* on = nullptr;
      for (const ExperimentRow* r : in_flight)
        if (r->gpu == g && on_a_gpu(*r)) on = r;
      os << "  gpu " << g << ": " << (on ? stage_line(*on) : "idle") << "\n";
    }
  }
  for (const ExperimentRow* r : in_flight)
    if (parse_experiment_state(r->state) == ExperimentState::kBuilding) os << "  build: " << stage_line(*r) << "\n";
  os << "proposals: " << proposing << " in flight, " << ready << " ready to train, " << building << " building\n";
  return os.str();
}

std::string llm_status_line(const LlmTotals& llm) {
  std::ostringstream os;
  os << "llm: " << llm.calls << " calls, " << llm.input_tokens << " input + " << llm.cache_read_tokens
     << " cached + " << llm.cache_write_tokens << " cache-write + " << llm.output_tokens << " output tokens (cache hit "
     << format_fixed(100 * llm.cache_hit_rate(), 1) << "%), $" << format_fixed(llm.cost_usd, 4);
  if (llm.estimated_calls > 0)
    os << " (" << llm.estimated_calls << " call" << (llm.estimated_calls == 1 ? "" : "s")
       << " with estimated usage: the server sent none)";
  os << "\n";
  return os.str();
}

std::optional<std::string> render_show(Store& store, int64_t id, const std::filesystem::path& logs_dir,
                                       const LadderSettings& ladder) {
  auto r = store.experiment(id);
  if (!r) return std::nullopt;
  if (r->log_tail.empty()) {
    if (auto log = newest_log(logs_dir, id); !log.empty()) r->log_tail = file_tail(log);
  }
  std::ostringstream os;
  os << "experiment #" << r->id << " (tag " << r->tag << ")" << (r->is_baseline ? " baseline" : "") << "\n";
  os << "status:       " << r->state << (r->stage.empty() ? "" : " (stage " + r->stage + ")") << "\n";
  os << "description:  " << display_description(*r) << "\n";
  os << "commit:       " << (r->commit.empty() ? "-" : r->commit) << "\n";
  os << "parent:       " << r->parent_commit << "\n";
  if (r->fix_of) os << "fixes:        build failure of #" << *r->fix_of << "\n";
  if (!r->reapplied_from.empty())
    os << "re-applied:   its change was made on an older best as " << r->reapplied_from
       << "; commit is that change on the parent below\n";
  if (r->idea_id)
    for (const auto& idea : store.ideas(r->tag))
      if (idea.id == *r->idea_id) os << "idea:         " << idea.id << ", asked to try: " << clean(idea.text) << "\n";
  if (r->resumes > 0)
    os << "resumed:      " << r->resumes << (r->resumes == 1 ? " time" : " times")
       << " after a stop or restart interrupted it (its finished runs kept)\n";
  if (!r->gpu.empty()) os << "gpu:          " << r->gpu << "\n";
  for (const auto& t : store.experiment_trials(id))
    if (!t.slurm_job_id.empty())
      os << "slurm job:    " << t.slurm_job_id << (t.node.empty() ? "" : " on " + t.node)
         << (t.status.empty() ? "" : " (" + t.status + ")") << ", output " << t.slurm_log << "\n";
  os << "proposer:     " << r->proposer << "\n";
  os << "program.md:   " << (r->program_hash.empty() ? "-" : r->program_hash) << "\n";
  os << "started:      " << format_time(r->started_at);
  if (r->ended_at) os << ", took " << format_duration(*r->ended_at - r->started_at);
  os << "\n";
  if (r->val_bpb) os << "val_bpb:      " << format_fixed(*r->val_bpb, 6) << "\n";
  if (!r->summary_json.empty()) os << "summary:      " << r->summary_json << "\n";
  if (!r->error.empty()) os << "error:        " << r->error << "\n";
  os << render_runs(store, *r);
  os << render_rung_standing(store, *r, ladder);

  auto attempts = store.attempts(id);
  for (size_t i = 0; i < attempts.size(); ++i) {
    const auto& a = attempts[i];
    os << "\n--- proposer attempt " << i + 1 << (a.error.empty() ? "" : " (failed: " + a.error + ")") << "\n";
    if (!a.prompt.empty()) os << "prompt:\n" << a.prompt << (a.prompt.back() == '\n' ? "" : "\n");
    os << "response:\n" << a.response << (a.response.empty() || a.response.back() == '\n' ? "" : "\n");
  }
  os << render_llm_calls(store.llm_calls(id));
  if (!r->diff.empty()) os << "\n--- diff\n" << r->diff;
  if (!r->log_tail.empty()) os << "\n--- log tail\n" << r->log_tail << (r->log_tail.back() == '\n' ? "" : "\n");
  if (!r->program_hash.empty()) {
    if (auto p = store.program(r->program_hash))
      os << "\n--- program.md (" << r->program_hash.substr(0, 12) << ")\n" << *p
         << (p->empty() || p->back() == '\n' ? "" : "\n");
  }
  return os.str();
}

std::string render_llm_calls(const std::vector<LlmCallRow>& calls) {
  if (calls.empty()) return "";
  std::ostringstream os;
  os << "\n--- llm calls\n";
  for (const auto& c : calls) {
    os << "round " << c.attempt << " call " << c.retry + 1 << ": " << c.status << ", " << format_fixed(c.latency_s, 1) << "s, "
       << c.input_tokens << " in + " << c.cache_read_tokens << " cached + " << c.cache_write_tokens << " cache-write + "
       << c.output_tokens << " out" << (c.usage_estimated ? " (estimated: no usage sent)" : "") << ", $"
       << format_fixed(c.cost_usd, 4);
    if (!c.error.empty()) os << ": " << c.error;
    if (c.wait_s > 0) os << "; waited " << format_fixed(c.wait_s, 1) << "s before the next call";
    os << "\n";
    if (!c.partial_text.empty())
      os << "partial text (" << c.partial_text.size() << " bytes):\n" << c.partial_text
         << (c.partial_text.back() == '\n' ? "" : "\n");
  }
  return os.str();
}

std::string render_tsv(Store& store, const std::string& tag) {
  std::ostringstream os;
  os << "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n";
  for (const auto& r : store.experiments(tag)) {
    if (r.commit.empty() || !is_final_state(r.state) || r.state == status::kDuplicate) continue;  // never ran
    const char* st = r.state == status::kKept ? "keep" : r.state == status::kDiscarded ? "discard" : "crash";
    os << r.commit.substr(0, 7) << "\t" << format_fixed(r.val_bpb.value_or(0), 6) << "\t"
       << format_fixed(r.peak_vram_mb.value_or(0) / 1024.0, 1) << "\t" << st << "\t" << clean(r.description) << "\n";
  }
  return os.str();
}

}  // namespace ard
