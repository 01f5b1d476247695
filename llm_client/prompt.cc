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
  return "| " + std::to_string(e.id) + " | " + bpb(e.val_bpb) + " | " + e.status + " | " + d + " |\n";
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

std::string map_line(const ard::EditableFile& f) {
  return "- " + f.path + " (" + std::to_string(f.content.size()) + " bytes): " + opening_comment(f.content) + "\n";
}

}  // namespace

long estimate_tokens(const std::string& text) { return static_cast<long>((text.size() + 3) / 4); }

std::string history_table(const std::vector<ard::HistoryEntry>& history, long budget_tokens) {
  if (history.empty()) return "No experiments yet: the first one measures the unmodified trainer.\n";
  const std::string head = "| id | val_bpb | status | description |\n|---|---|---|---|\n";
  const ard::HistoryEntry* best = nullptr;
  for (const auto& e : history)
    if (e.val_bpb && e.status == "kept" && (!best || *e.val_bpb < *best->val_bpb)) best = &e;

  std::string out = head;
  long used = estimate_tokens(head);
  if (best) {
    out = "Best so far: experiment " + std::to_string(best->id) + " with val_bpb " + bpb(best->val_bpb) + ".\n\n" + head;
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

long context_limit(const LlmConfig& config, int shrink) {
  // Each level asks for a quarter less: the server's limit is below our estimate.
  return config.context_tokens * (4 - std::min(shrink, kMaxShrink)) / 4;
}

Prompt build_prompt(const ard::ProposalContext& c, const LlmConfig& config, int shrink) {
  Prompt p;
  const long limit = context_limit(config, shrink);
  const long history_tokens = shrink == 0 ? config.history_tokens : shrink == 1 ? config.history_tokens / 4 : 0;
  const size_t failure_chars = shrink == 0 ? kFailureChars : kFailureChars / (2 * shrink);
  const bool headers_whole = shrink < 2, surface_whole = shrink < 3;

  p.conversation.system =
      "You are a research engineer improving a GPT pretraining program written in CUDA C++. "
      "Each experiment you propose is built and trained for a fixed wall-clock budget, and kept only if it "
      "lowers val_bpb.\n\n" +
      edit_format_instructions(config.max_read_rounds, config.read_max_bytes);

  std::string program = "\n# Research program\n\n" + c.program_md;
  if (program.back() != '\n') program += "\n";

  // The failure's reserve is fixed, not its size, so that the stable part is
  // the same whether or not the last experiment failed.
  const long reserve = estimate_tokens(p.conversation.system) + estimate_tokens(program) + history_tokens +
                       static_cast<long>(failure_chars / 4) + kAskTokens + 50;
  const long files_budget = limit - reserve;

  // 1. the research surface, 2. headers smallest first while they fit, 3. the map.
  int top = 1 << 30;
  for (const auto& f : c.files) top = std::min(top, depth(f.path));
  std::vector<const ard::EditableFile*> whole, mapped, headers;
  for (const auto& f : c.files) {
    if (surface_whole && depth(f.path) == top) whole.push_back(&f);
    else if (headers_whole && is_header(f.path)) headers.push_back(&f);
    else mapped.push_back(&f);
  }
  long used = 0;
  for (const auto* f : whole) used += estimate_tokens(fenced(f->path, f->content));
  for (const auto* f : headers) used += estimate_tokens(map_line(*f));
  for (const auto* f : mapped) used += estimate_tokens(map_line(*f));
  std::stable_sort(headers.begin(), headers.end(),
                   [](auto* a, auto* b) { return a->content.size() < b->content.size(); });
  for (const auto* f : headers) {
    long cost = estimate_tokens(fenced(f->path, f->content)) - estimate_tokens(map_line(*f));
    if (used + cost <= files_budget) {
      whole.push_back(f);
      used += cost;
    } else {
      mapped.push_back(f);
    }
  }
  auto by_path = [](auto* a, auto* b) { return a->path < b->path; };
  std::sort(whole.begin(), whole.end(), by_path);
  std::sort(mapped.begin(), mapped.end(), by_path);

  std::string u = "# Editable files\n\nThe current contents (the best version so far) of the files you may edit";
  u += mapped.empty() ? ".\n" : "; the others are in the map after them.\n";
  for (const auto* f : whole) {
    u += fenced(f->path, f->content);
    p.whole.push_back(f->path);
  }
  if (!mapped.empty()) {
    u += "\n## Map of the other editable files (READ them to see them)\n\n";
    for (const auto* f : mapped) {
      u += map_line(*f);
      p.mapped.push_back(f->path);
    }
  }
  u += program;
  p.conversation.messages.push_back({"user", "", 0});
  const size_t stable = u.size();

  // 5. history, 6. failure: within what is left.
  long left = limit - estimate_tokens(p.conversation.system) - estimate_tokens(u) - kAskTokens;
  u += "\n# Past experiments\n\n" + history_table(c.history, std::max(0L, std::min(history_tokens, left - 60)));
  if (!c.noise_note.empty()) u += c.noise_note + "\n";
  left = limit - estimate_tokens(p.conversation.system) - estimate_tokens(u) - kAskTokens;
  if (c.last_failure) {
    size_t room = static_cast<size_t>(std::max(0L, left - 40) * 4);
    u += "\n# The last attempt failed (" + c.last_failure->kind + ")\n\nFix this, or try something else:\n\n" +
         std::string("```\n") + cut_middle(c.last_failure->detail, std::min(failure_chars, room));
    if (u.back() != '\n') u += "\n";
    u += "```\n";
  }
  u += "\nPropose the next experiment (experiment " + std::to_string(c.experiment_id) + ").\n";
  p.conversation.messages[0].content = std::move(u);
  p.conversation.messages[0].cache_prefix = stable;

  if (shrink > 0) {
    p.shrunk = "shrunk to " + std::to_string(limit) + " tokens: history " + std::to_string(history_tokens) +
               " tokens, failure " + std::to_string(failure_chars) + " characters";
    if (!headers_whole) p.shrunk += ", headers in the map";
    if (!surface_whole) p.shrunk += ", every file in the map";
  }
  return p;
}

std::string retry_message(const std::string& error) {
  return "Your edit could not be used:\n\n" + error +
         "\n\nNothing was applied. Answer again with the DESCRIPTION line and the complete edit, in the same format, "
         "against the files as they were given.";
}

std::string read_reply(const std::vector<ReadRequest>& reads, const std::vector<ard::EditableFile>& files,
                       size_t max_chars) {
  std::string out = "The files you asked for, as they stand at the best commit:\n";
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
    std::string block = fenced(label, text);
    if (out.size() + block.size() > max_chars) {
      out += "\n## " + label + "\n\nNot shown: " + std::to_string(text.size()) +
             " bytes would pass this round's limit; ask for a line range.\n";
      continue;
    }
    out += block;
  }
  return out + "\nNow answer with the DESCRIPTION line and the edit (or READ lines, if rounds are left).";
}

}  // namespace llm
