// See prompt.h.
#include "llm_client/prompt.h"

#include <cstdio>
#include <set>

#include "llm_client/edit_format.h"

namespace llm {
namespace {

constexpr size_t kFailureChars = 16000;  // compiler errors and log tails beyond this are cut in the middle

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

std::string cut_middle(const std::string& s) {
  if (s.size() <= kFailureChars) return s;
  size_t half = kFailureChars / 2;
  return s.substr(0, half) + "\n[... " + std::to_string(s.size() - 2 * half) + " characters cut ...]\n" +
         s.substr(s.size() - half);
}

std::string fence_for(const std::string& content) {
  std::string fence = "```";
  while (content.find(fence) != std::string::npos) fence += "`";
  return fence;
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

Conversation build_prompt(const ard::ProposalContext& c, long history_tokens) {
  Conversation conv;
  conv.system =
      "You are a research engineer improving a GPT pretraining program written in CUDA C++. "
      "Each experiment you propose is built and trained for a fixed wall-clock budget, and kept only if it "
      "lowers val_bpb.\n\n" +
      edit_format_instructions();

  std::string u = "# Research program\n\n" + c.program_md;
  if (!u.empty() && u.back() != '\n') u += "\n";
  u += "\n# Editable files\n\nThese are the current contents (the best version so far) of every file you may edit.\n";
  for (const auto& f : c.files) {
    std::string fence = fence_for(f.content);
    u += "\n## " + f.path + "\n\n" + fence + "\n" + f.content;
    if (!f.content.empty() && f.content.back() != '\n') u += "\n";
    u += fence + "\n";
  }
  u += "\n# Past experiments\n\n" + history_table(c.history, history_tokens);
  if (c.last_failure) {
    u += "\n# The last attempt failed (" + c.last_failure->kind + ")\n\nFix this, or try something else:\n\n" +
         std::string("```\n") + cut_middle(c.last_failure->detail);
    if (u.back() != '\n') u += "\n";
    u += "```\n";
  }
  u += "\nPropose the next experiment (experiment " + std::to_string(c.experiment_id) + ").\n";
  conv.messages.push_back({"user", std::move(u)});
  return conv;
}

std::string retry_message(const std::string& error) {
  return "Your edit could not be used:\n\n" + error +
         "\n\nNothing was applied. Answer again with the DESCRIPTION line and the complete edit, in the same format, "
         "against the files as they were given.";
}

std::string render(const Conversation& conversation) {
  std::string out = "[system]\n" + conversation.system;
  for (const auto& m : conversation.messages) out += "\n[" + m.role + "]\n" + m.content;
  return out;
}

}  // namespace llm
