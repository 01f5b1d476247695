// See prompt.h.
#include "llm_client/prompt.h"

#include <algorithm>
#include <cstdio>

#include "llm_client/edit_format.h"
#include "proposers/text_lines.h"

namespace llm {
namespace {

constexpr size_t kFailureChars = 6000;  // compiler errors and log tails beyond this are cut in the middle
constexpr long kAskTokens = 40;         // the closing "Propose the next experiment" line
constexpr long kSectionTokens = 100;    // the history's and the failure's headings and fences
constexpr long kMinHistoryTokens = 80;  // the best row and the table's head: never cut
constexpr size_t kMinFailureChars = 600;   // the failure's first and last lines: never cut
constexpr size_t kMinProgramBytes = 1000;  // program.md's opening: never cut
constexpr long kReadSlackTokens = 50;      // the READ reply's wording around the files

/// The tried-before section's allowance: half the history's. Reserved whether
/// or not there is anything to show, so the stable part never depends on it.
long tried_allowance(const LlmConfig& config) { return config.history_tokens / 2; }

std::string bpb(const std::optional<double>& v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", *v);
  return buf;
}

std::string row(const ard::HistoryEntry& e) {
  std::string d = e.description;
  for (char& c : d)
    if (c == '\n' || c == '|') c = ' ';
  if (d.size() > 160) d = d.substr(0, 157) + "...";
  const std::string status = e.scale.empty() ? e.status : e.status + ", " + e.scale;
  return "| " + std::to_string(e.id) + " | " + bpb(e.val_bpb) + " | " + status + " | " + d + " |\n";
}

std::string cut_middle(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t half = max / 2;
  return s.substr(0, half) + "\n[... " + std::to_string(s.size() - 2 * half) + " characters cut ...]\n" +
         s.substr(s.size() - half);
}

std::string fence_for(const std::string& content) {
  std::string fence = "```";
  while (content.find(fence) != std::string::npos) fence += "`";
  return fence;
}

std::string fenced(const std::string& path, const std::string& content) {
  std::string fence = fence_for(content);
  std::string out = "\n## " + path + "\n\n" + fence + "\n" + content;
  if (!content.empty() && content.back() != '\n') out += "\n";
  return out + fence + "\n";
}

int depth(const std::string& path) { return static_cast<int>(std::count(path.begin(), path.end(), '/')); }

bool is_header(const std::string& path) {
  for (const char* ext : {".h", ".cuh", ".hpp", ".hh"}) {
    std::string e(ext);
    if (path.size() > e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0) return true;
  }
  return false;
}

/// The first line of a file's opening comment, for the map.
std::string opening_comment(const std::string& content) {
  for (const std::string& raw : ard::split_lines(content.substr(0, 2000))) {
    std::string line = ard::trim(raw);
    if (line.empty()) continue;
    for (const char* lead : {"///", "//", "/*", "*", "#"})
      if (line.rfind(lead, 0) == 0) {
        line = ard::trim(line.substr(std::string(lead).size()));
        break;
      }
    if (line.empty() || line.rfind("pragma", 0) == 0) continue;
    return line.size() > 90 ? line.substr(0, 87) + "..." : line;
  }
  return "";
}

/// A map line; without detail, no description (the first cut of the map).
std::string map_line(const ard::EditableFile& f, bool detail = true) {
  std::string line = "- " + f.path + " (" + std::to_string(f.content.size()) + " bytes)";
  if (detail) line += ": " + opening_comment(f.content);
  return line + "\n";
}

/// program.md under its heading, its first `keep` bytes (cut at a line end)
/// and a note when that is not all of it.
std::string program_section(const std::string& program, size_t keep) {
  std::string out = "\n# Research program\n\n";
  if (keep >= program.size()) {
    out += program;
    if (out.back() != '\n') out += "\n";
    return out;
  }
  size_t at = program.rfind('\n', keep);
  size_t shown = (at != std::string::npos && at >= keep / 2) ? at + 1 : keep;
  return out + program.substr(0, shown) + (shown > 0 && program[shown - 1] != '\n' ? "\n" : "") +
         "[program.md cut here: " + std::to_string(shown) + " of " + std::to_string(program.size()) +
         " bytes shown, to fit the prompt's limit]\n";
}

/// What one assembly keeps; the budget cuts it step by step (see prompt.h).
struct Plan {
  long tried = 0;             ///< tokens of the tried-before section
  long history = 0;           ///< tokens of the history table
  size_t failure_chars = 0;   ///< characters of the last failure
  bool detail = true;         ///< the map's descriptions
  size_t program_bytes = 0;   ///< bytes of program.md shown
  long reads = 0;             ///< tokens left free for a READ round
  bool surface = true;        ///< the research surface whole
};

/// The stable part of the user message: the files whole, the map, program.md.
std::string stable_text(const std::vector<const ard::EditableFile*>& whole,
                        const std::vector<const ard::EditableFile*>& mapped, bool detail, const std::string& program,
                        size_t program_bytes) {
  std::string u = "# Editable files\n\nThe current contents (the best version so far) of the files you may edit";
  u += mapped.empty() ? ".\n" : "; the others are in the map after them.\n";
  for (const auto* f : whole) u += fenced(f->path, f->content);
  if (!mapped.empty()) {
    u += "\n## Map of the other editable files (READ them to see them)\n\n";
    for (const auto* f : mapped) u += map_line(*f, detail);
  }
  return u + program_section(program, program_bytes);
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& s : parts) out += (out.empty() ? "" : sep) + s;
  return out;
}

}  // namespace

long estimate_tokens(const std::string& text) { return static_cast<long>((text.size() + 3) / 4); }

std::string history_table(const std::vector<ard::HistoryEntry>& history, long budget_tokens,
                          const std::string& metric, ard::MetricGoal goal) {
  if (history.empty()) return "No experiments yet: the first one measures the unmodified trainer.\n";
  const std::string head = "| id | " + metric + " | status | description |\n|---|---|---|---|\n";
  const ard::HistoryEntry* best = nullptr;
  for (const auto& e : history)
    if (e.val_bpb && e.status == "kept" && (!best || ard::is_better(goal, *e.val_bpb, *best->val_bpb))) best = &e;

  std::string out = head;
  for (const auto& e : history)
    if (e.scale.find("scale-bound") != std::string::npos) {
      // Said once, above the table: what the mark means and what to do about it.
      out = "Kept changes marked scale-bound helped this model but not the larger one a promotion round ran them on: "
            "do not build on them.\n\n" + head;
      break;
    }
  long used = estimate_tokens(out);
  if (best) {
    out = "Best so far: experiment " + std::to_string(best->id) + " with " + metric + " " + bpb(best->val_bpb) +
          ".\n\n" + out;
    out += row(*best);
    used = estimate_tokens(out);
  }
  std::vector<std::string> recent;  // newest first while filling
  for (auto it = history.rbegin(); it != history.rend(); ++it) {
    if (&*it == best) continue;
    std::string r = row(*it);
    if (used + estimate_tokens(r) > budget_tokens) break;
    used += estimate_tokens(r);
    recent.push_back(std::move(r));
  }
  size_t shown = recent.size() + (best ? 1 : 0);
  for (auto it = recent.rbegin(); it != recent.rend(); ++it) out += *it;
  if (shown < history.size())
    out += "(" + std::to_string(history.size() - shown) + " older experiments not shown)\n";
  return out;
}

std::string tried_section(const ard::TriedMemory& tried, long budget_tokens, const std::string& metric,
                          ard::MetricGoal goal) {
  if (tried.regions.empty()) return "";
  auto counts = [](const std::vector<ard::OutcomeCount>& outcomes) {
    std::string out;
    for (const auto& o : outcomes) out += (out.empty() ? "" : ", ") + std::to_string(o.count) + " " + o.status;
    return out;
  };
  int experiments = 0;
  for (const auto& t : tried.totals) experiments += t.count;
  const std::string head =
      "\n# Tried before, by region\n\nWhere earlier experiments changed the editable files (a file and the "
      "function, or the block of 50 lines, a change touched), the most tried first, with how they ended and the "
      "closest to a keep; Δσ is " +
      (goal == ard::MetricGoal::kMax ? "(its " + metric + " − best)" : "(best − its " + metric + ")") +
      " / σ, the noise: positive is better, a keep needs about +2.\n\n";
  const std::string totals = "Totals: " + std::to_string(experiments) + " experiment" + (experiments == 1 ? "" : "s") +
                             " with a change: " + counts(tried.totals) + ".\n";
  long used = estimate_tokens(head) + estimate_tokens(totals);
  std::string body;
  size_t shown = 0;
  for (const auto& region : tried.regions) {
    const std::string line = "- " + region.region + ": " + std::to_string(region.tries) + " tr" +
                             (region.tries == 1 ? "y" : "ies") + " (" + counts(region.outcomes) + ")\n";
    if (used + estimate_tokens(line) > budget_tokens) break;
    used += estimate_tokens(line);
    body += line;
    ++shown;
    for (const auto& r : region.closest) {
      std::string d = r.description;
      for (char& ch : d)
        if (ch == '\n' || ch == '\r') ch = ' ';
      if (d.size() > 120) d = d.substr(0, 117) + "...";
      char ds[32] = "Δσ unknown";
      if (r.delta_sigma) std::snprintf(ds, sizeof ds, "Δσ %+.1f", *r.delta_sigma);
      const std::string rec = "  - #" + std::to_string(r.id) + " " + r.status + ", " + ds + ", " + r.lines + ": " + d + "\n";
      if (used + estimate_tokens(rec) > budget_tokens) break;
      used += estimate_tokens(rec);
      body += rec;
    }
  }
  if (shown == 0) return "";
  std::string out = head + body;
  if (shown < tried.regions.size()) {
    const std::string more = "(" + std::to_string(tried.regions.size() - shown) + " less tried regions not shown)\n";
    if (used + estimate_tokens(more) <= budget_tokens) out += more;
  }
  return out + totals;
}

std::string in_flight_list(const std::vector<ard::HistoryEntry>& in_flight, long budget_tokens) {
  if (in_flight.empty()) return "";
  const std::string head = "\nProposed and not measured yet (built, training or waiting for a decision; "
                           "do not propose these again):\n";
  std::string out = head;
  long used = estimate_tokens(head);
  size_t shown = 0;
  for (const auto& e : in_flight) {
    const std::string line = "- experiment " + std::to_string(e.id) + " (" + e.status + "): " + e.description + "\n";
    if (used + estimate_tokens(line) > budget_tokens) break;
    used += estimate_tokens(line);
    out += line;
    ++shown;
  }
  if (shown == 0) return "";
  if (shown < in_flight.size()) out += "(" + std::to_string(in_flight.size() - shown) + " more not shown)\n";
  return out;
}

Prompt build_prompt(const ard::ProposalContext& c, const LlmConfig& config, long limit) {
  if (limit <= 0 || limit > config.context_tokens) limit = config.context_tokens;
  Prompt p;
  p.limit = limit;
  p.conversation.system =
      "You are a research engineer improving a GPT pretraining program written in CUDA C++. "
      "Each experiment you propose is built and trained for a fixed wall-clock budget, and kept only if it " +
      std::string(ard::improve_verb(c.goal)) + " " + c.metric + ".\n\n" +
      edit_format_instructions(config.max_read_rounds, config.read_bytes);
  const long system = estimate_tokens(p.conversation.system);
  const std::string& program = c.program_md;

  // The research surface (the shallowest files), headers, the rest.
  int top = 1 << 30;
  for (const auto& f : c.files) top = std::min(top, depth(f.path));
  std::vector<const ard::EditableFile*> surface, headers, others;
  for (const auto& f : c.files) {
    if (depth(f.path) == top) surface.push_back(&f);
    else if (is_header(f.path)) headers.push_back(&f);
    else others.push_back(&f);
  }
  auto by_path = [](auto* a, auto* b) { return a->path < b->path; };
  auto lists = [&](const Plan& plan, const std::vector<const ard::EditableFile*>& extra) {
    std::vector<const ard::EditableFile*> whole = extra, mapped = headers;
    mapped.insert(mapped.end(), others.begin(), others.end());
    (plan.surface ? whole : mapped).insert((plan.surface ? whole : mapped).end(), surface.begin(), surface.end());
    for (const auto* f : extra) mapped.erase(std::find(mapped.begin(), mapped.end(), f));
    std::sort(whole.begin(), whole.end(), by_path);
    std::sort(mapped.begin(), mapped.end(), by_path);
    return std::make_pair(whole, mapped);
  };
  // The estimate of a whole first request and its reserves: the stable part
  // as it would be, the history and failure at their allowances.
  auto total = [&](const Plan& plan) {
    auto [whole, mapped] = lists(plan, {});
    return system + estimate_tokens(stable_text(whole, mapped, plan.detail, program, plan.program_bytes)) +
           plan.tried + plan.history + static_cast<long>(plan.failure_chars / 4) + kAskTokens + kSectionTokens +
           plan.reads;
  };

  // The allowances are the config's, not the history's or the failure's size,
  // so that the stable part is the same whether or not the last one failed.
  // Over the limit, each step cuts only what is needed, in this order.
  Plan plan;
  for (bool keep_surface : {true, false}) {
    if (!keep_surface && surface.empty()) break;
    plan = Plan{tried_allowance(config), config.history_tokens, kFailureChars, true, program.size(),
                config.read_reserve_tokens(), keep_surface};
    p.cuts.clear();
    if (!keep_surface) {
      std::string paths;
      for (const auto* f : surface) paths += (paths.empty() ? "" : ", ") + f->path;
      p.cuts.push_back(paths + " in the map");
    }
    long excess = total(plan) - limit;
    if (excess > 0 && plan.tried > 0) {
      plan.tried = std::max(0L, plan.tried - excess);
      p.cuts.push_back("the tried-before section (within " + std::to_string(plan.tried) + " tokens)");
      excess = total(plan) - limit;
    }
    if (excess > 0 && plan.history > kMinHistoryTokens) {
      plan.history = std::max(kMinHistoryTokens, plan.history - excess);
      p.cuts.push_back("older history rows (history within " + std::to_string(plan.history) + " tokens)");
      excess = total(plan) - limit;
    }
    if (excess > 0 && plan.failure_chars > kMinFailureChars) {
      plan.failure_chars = std::max<long>(kMinFailureChars, static_cast<long>(plan.failure_chars) - excess * 4);
      p.cuts.push_back("the last failure's log (" + std::to_string(plan.failure_chars) + " characters)");
      excess = total(plan) - limit;
    }
    if (excess > 0 && !(headers.empty() && others.empty() && plan.surface)) {
      plan.detail = false;
      p.cuts.push_back("the map's descriptions");
      excess = total(plan) - limit;
    }
    if (excess > 0 && plan.program_bytes > kMinProgramBytes) {
      // The note the cut adds is paid for too.
      plan.program_bytes = std::max<long>(kMinProgramBytes, static_cast<long>(plan.program_bytes) - excess * 4 - 400);
      p.cuts.push_back("program.md's tail (" + std::to_string(plan.program_bytes) + " of " +
                       std::to_string(program.size()) + " bytes shown)");
      excess = total(plan) - limit;
    }
    if (excess > 0 && plan.reads > 0) {
      plan.reads = std::max(0L, plan.reads - excess);
      p.cuts.push_back("the READ reserve (" + std::to_string(plan.reads) + " tokens left for a read)");
      excess = total(plan) - limit;
    }
    if (excess <= 0) break;
  }

  // The goal (first_request_tokens): the history and the failure give way to
  // it first, down to their minimums (the best row; the failure's first and
  // last lines); the usual assembly at today's tree, so not logged as a cut.
  // Then headers whole, smallest first, while it holds. The tried-before
  // section is outside the goal: the goal neither cuts it nor makes the
  // history give way to it; it gives way to the limit only (above), first.
  const long goal = std::min(config.first_request_tokens + plan.reads, limit);
  if (long excess = total(plan) - plan.tried - goal; excess > 0) {
    long h = std::max(std::min(plan.history, kMinHistoryTokens), plan.history - excess);
    excess -= plan.history - h;
    plan.history = h;
    size_t failure_floor = std::min(plan.failure_chars, kMinFailureChars);
    plan.failure_chars = std::max<long>(failure_floor, static_cast<long>(plan.failure_chars) - std::max(0L, excess) * 4);
  }
  std::vector<const ard::EditableFile*> extra;
  long used = total(plan) - plan.tried;
  std::vector<const ard::EditableFile*> by_size = headers;
  std::stable_sort(by_size.begin(), by_size.end(),
                   [](auto* a, auto* b) { return a->content.size() < b->content.size(); });
  for (const auto* f : by_size) {
    long cost = estimate_tokens(fenced(f->path, f->content)) - estimate_tokens(map_line(*f, plan.detail));
    if (used + cost > goal || used + plan.tried + cost > limit) break;
    extra.push_back(f);
    used += cost;
  }
  auto [whole, mapped] = lists(plan, extra);
  for (const auto* f : whole) p.whole.push_back(f->path);
  for (const auto* f : mapped) p.mapped.push_back(f->path);

  std::string u = stable_text(whole, mapped, plan.detail, program, plan.program_bytes);
  p.conversation.messages.push_back({"user", "", 0});
  const size_t stable = u.size();

  // A researcher's idea comes first: this proposal is asked to try it.
  if (!c.idea.empty())
    u += "\n# The researcher's idea to try now\n\n" + c.idea +
         "\n\nPut this idea into practice in this experiment; the DESCRIPTION says how.\n";
  // A profile's focus: where this proposer looks (the other profiles look elsewhere).
  if (!c.focus.empty()) u += "\n# Your focus\n\n" + c.focus + "\n";
  // 5. history, 6. failure: within their allowances and what is left.
  long left = limit - plan.reads - system - estimate_tokens(u) - kAskTokens;
  // The experiments in flight share the history's allowance, a quarter of it at most.
  const long history_budget = std::max(0L, std::min(plan.history, left - 60));
  const std::string flying = in_flight_list(c.in_flight, history_budget / 4);
  u += "\n# Past experiments\n\n" + history_table(c.history, history_budget - estimate_tokens(flying), c.metric, c.goal) + flying;
  if (!c.noise_note.empty()) u += c.noise_note + "\n";
  left = limit - plan.reads - system - estimate_tokens(u) - kAskTokens;
  // What was tried where, within its allowance and what the history left.
  u += tried_section(c.tried, std::max(0L, std::min(plan.tried, left - 60)), c.metric, c.goal);
  left = limit - plan.reads - system - estimate_tokens(u) - kAskTokens;
  if (c.last_failure) {
    size_t room = static_cast<size_t>(std::max(0L, left - 40) * 4);
    u += "\n# The last attempt failed (" + c.last_failure->kind + ")\n\nFix this, or try something else:\n\n" +
         std::string("```\n") + cut_middle(c.last_failure->detail, std::min(plan.failure_chars, room));
    if (u.back() != '\n') u += "\n";
    u += "```\n";
  }
  u += "\nPropose the next experiment (experiment " + std::to_string(c.experiment_id) + ").\n";
  p.conversation.messages[0].content = std::move(u);
  p.conversation.messages[0].cache_prefix = stable;
  return p;
}

std::string cut_note(const Prompt& prompt, const LlmConfig& config) {
  if (prompt.cuts.empty() && prompt.limit >= config.context_tokens) return "";
  std::string s = "prompt within " + std::to_string(prompt.limit) + " tokens";
  if (prompt.limit < config.context_tokens)
    s += " (lowered from llm.context_tokens " + std::to_string(config.context_tokens) + " by a server's refusal)";
  if (!prompt.cuts.empty()) s += ": cut " + join(prompt.cuts, ", ");
  return s;
}

size_t read_room(const Prompt& prompt, const LlmConfig& config, const std::string& answer) {
  long room = prompt.limit - estimate_tokens(render(prompt.conversation)) - estimate_tokens(answer) - kReadSlackTokens;
  return static_cast<size_t>(std::clamp<long>(room * 4, 0, config.read_bytes));
}

std::string retry_message(const std::string& error) {
  return "Your edit could not be used:\n\n" + error +
         "\n\nNothing was applied. Answer again with the DESCRIPTION line and the complete edit, in the same format, "
         "against the files as they were given.";
}

std::string read_reply(const std::vector<ReadRequest>& reads, const std::vector<ard::EditableFile>& files,
                       size_t max_chars) {
  std::string out = "The files you asked for, as they stand at the best commit:\n";
  size_t shown = 0;  // file text given so far
  for (const auto& r : reads) {
    auto it = std::find_if(files.begin(), files.end(), [&](const auto& f) { return f.path == r.path; });
    if (it == files.end()) {
      out += "\n## " + r.path + "\n\nNot an editable file; the map lists the ones you can read.\n";
      continue;
    }
    std::string text = it->content, label = r.path;
    if (r.first_line > 0) {
      std::vector<std::string> lines = ard::split_lines(it->content);
      long first = std::max(1L, r.first_line), last = std::min<long>(r.last_line, lines.size());
      text.clear();
      for (long i = first; i <= last; ++i) text += lines[i - 1] + "\n";
      label += " lines " + std::to_string(first) + "-" + std::to_string(last) + " of " + std::to_string(lines.size());
    }
    if (shown + text.size() > max_chars) {
      out += "\n## " + label + "\n\nNot shown: " + std::to_string(text.size()) +
             " bytes would pass this round's limit; ask for a line range.\n";
      continue;
    }
    shown += text.size();
    out += fenced(label, text);
  }
  return out + "\nNow answer with the DESCRIPTION line and the edit (or READ lines, if rounds are left).";
}

}  // namespace llm
