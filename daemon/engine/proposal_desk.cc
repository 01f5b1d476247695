// See proposal_desk.h.
#include "daemon/engine/proposal_desk.h"

#include <cmath>
#include <map>
#include <sstream>
#include <thread>

#include "daemon/log.h"
#include "daemon/secret_scan.h"
#include "daemon/store/experiment_state.h"
#include "daemon/util/text.h"

namespace ard {
namespace asio = boost::asio;

void LoopCallSink::record(const llm::CallRecord& call) {
  asio::post(io_, [store = &store_, call] { store->record(call); });
}

void LoopCallSink::call_started(const llm::CallRecord& call) {
  asio::post(io_, [store = &store_, call] { store->call_started(call); });
}

void LoopCallSink::learn_limit(const std::string& provider, long tokens, const std::string& reason) {
  asio::post(io_, [store = &store_, provider, tokens, reason] { store->learn_limit(provider, tokens, reason); });
}

double ask_again_after(double retry_wait_s, double retry_at, double now) {
  if (!std::isfinite(retry_at) || retry_at <= now + retry_wait_s) return retry_wait_s;
  return std::min(retry_at - now, std::max(retry_wait_s, kMaxAskWaitS));
}

std::string description_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  size_t a = line.find_first_not_of(" \t\r");
  size_t b = line.find_last_not_of(" \t\r");
  line = a == std::string::npos ? "" : line.substr(a, b - a + 1);
  if (line.size() > 200) line = line.substr(0, 197) + "...";
  return line.empty() ? "(no description)" : line;
}

std::vector<HistoryEntry> proposal_history(const std::vector<ExperimentRow>& rows,
                                           const std::vector<ChangeLabelRow>& labels,
                                           const std::vector<std::string>& rung_names) {
  std::map<int64_t, std::vector<std::string>> scale;  // by experiment, in rung order
  for (const ChangeLabelRow& l : labels) {
    if (l.label == "untested") continue;
    const std::string rung = l.rung >= 0 && static_cast<size_t>(l.rung) < rung_names.size()
                                 ? rung_names[static_cast<size_t>(l.rung)]
                                 : "rung " + std::to_string(l.rung);
    scale[l.experiment_id].push_back((l.label == "scale_bound" ? "scale-bound at " : "transfers at ") + rung);
  }
  std::vector<HistoryEntry> out;
  for (const auto& r : rows) {
    if (!is_final_state(r.state)) continue;
    HistoryEntry h;
    h.id = r.id;
    h.commit = short_commit(r.commit);
    h.description = display_description(r);  // a proposer error says so, never ""
    h.val_bpb = r.val_bpb;
    h.status = r.state;
    h.baseline = r.is_baseline;
    if (auto it = scale.find(r.id); it != scale.end() && r.state == "kept") h.scale = join_list(it->second, 4);
    out.push_back(std::move(h));
  }
  return out;
}

std::optional<DuplicateOf> duplicate_among(const std::vector<ExperimentRow>& rows, int64_t id,
                                           const std::string& diff, double threshold) {
  std::vector<EarlierChange> earlier;
  std::map<int64_t, std::optional<int64_t>> fix_of;
  for (const auto& r : rows) {
    fix_of[r.id] = r.fix_of;
    if (r.id == id || r.is_baseline || r.diff.empty()) continue;
    earlier.push_back({r.id, r.diff, r.state, r.description});
  }
  // A fix carries the failed change it repairs: the chain it fixes is not compared.
  std::vector<int64_t> fix_chain;
  for (auto of = fix_of[id]; of && fix_chain.size() < fix_of.size(); of = fix_of[*of]) fix_chain.push_back(*of);
  return find_duplicate(diff, earlier, threshold, fix_chain);
}

std::string noise_note(double z, const NoiseEstimate& noise) {
  std::ostringstream note;
  note << "Differences below " << z << "σ = " << z * noise.sigma << " are noise (σ = " << noise.sigma
       << (noise.from_prior ? ", the configured prior" : ", from repeated runs of the same commit") << ").";
  return note.str();
}

std::optional<Failure> failure_to_tell(const std::string& final_status, const std::string& error,
                                       const std::string& log_tail, const std::string& failure_detail) {
  if (final_status == status::kDiscarded || final_status == status::kInterrupted) return std::nullopt;
  // The next prompt carries it to the LLM provider: what a child printed is scanned for secrets first.
  return Failure{final_status, redact_secrets(failure_detail.empty() ? error + "\n" + log_tail : failure_detail)};
}

void propose_on_thread(Proposer& proposer, ProposalContext ctx, std::shared_ptr<std::atomic<bool>> cancel,
                       std::shared_ptr<std::atomic<int>> inside, std::shared_ptr<Mailbox> box,
                       std::function<void(ProposalResult)> done) {
  std::thread([&proposer, ctx = std::move(ctx), cancel = std::move(cancel), inside = std::move(inside),
               box = std::move(box), done = std::move(done)]() mutable {
    ++*inside;
    ctx.cancel = cancel.get();
    ProposalResult result;
    try {
      result = proposer.propose(ctx);
    } catch (const std::exception& e) {
      result.error = ProposalError{ProposalError::Kind::kFatal, std::string("proposer failed: ") + e.what(), {}};
    }
    --*inside;
    box->post([done = std::move(done), result = std::move(result)]() mutable { done(std::move(result)); });
  }).detach();
}

void record_attempts(Store& store, int64_t id, ProposalResult& result) {
  auto& attempts = result.ok() ? result.proposal->attempts : result.error->attempts;
  int n = static_cast<int>(store.attempts(id).size());
  for (const auto& a : attempts) store.add_attempt(id, ++n, a);
  attempts.clear();
}

std::optional<ProposerWait> proposer_wait(const ProposalError& e, double retry_wait_s, double now) {
  using Kind = ProposalError::Kind;
  if (e.kind == Kind::kFatal || e.kind == Kind::kBadEdit) return std::nullopt;
  ProposerWait w;
  w.message = std::string(e.kind == Kind::kExhausted ? "nothing to propose"
                          : e.kind == Kind::kPaused  ? "paused"
                                                     : "proposer unavailable") +
              ": " + e.message;
  w.wait_s = ask_again_after(retry_wait_s, e.retry_at, now);
  if (e.kind == Kind::kPaused) {  // a cap: asking again costs no call until it lifts
    // When the cap lifts, not when the next look at it is.
    w.message += std::isinf(e.retry_at) ? std::string(" (lifts when the config changes)")
                 : e.retry_at > 0       ? " (lifts at " + format_time(e.retry_at).substr(11, 8) + ")"
                                        : std::string();
    w.pauses = true;
  }
  w.log_line = w.message + (w.wait_s > retry_wait_s ? "; asking again at " + format_time(now + w.wait_s).substr(11, 8)
                                                    : "; asking again every " + format_number(retry_wait_s) + " s");
  return w;
}

ProposalCommit commit_proposal(GitRepo& repo, const EditablePaths& editable, const std::string& parent,
                               const std::vector<EditableFile>& base, const std::vector<FileWrite>& writes,
                               const std::string& description, const std::string& ref,
                               const std::filesystem::path& objects_dir) {
  ProposalCommit out;
  out.rejected = writes.empty() ? "the proposal writes no file" : "";
  for (const auto& w : writes)
    if (out.rejected.empty()) out.rejected = editable.check_write(w.path);
  if (!out.rejected.empty()) return out;
  std::vector<FileWrite> all;
  for (const auto& f : base) all.push_back({f.path, f.content});
  all.insert(all.end(), writes.begin(), writes.end());
  try {
    out.commit = repo.commit_writes(parent, all, description, ref);
  } catch (const GitError& e) {
    // A full disk under the repo's object store is the machine's fault, not the edit's.
    if ((out.fault = probe_write(objects_dir))) return out;
    // A path that cannot be a file (an existing directory, say) is a bad edit, not a reason to stop.
    out.rejected = std::string("the edit cannot be applied: ") + e.what();
    return out;
  }
  if (out.commit.empty()) out.rejected = "the edit changes nothing";
  return out;
}

std::string try_refusal(GitRepo& repo, const EditablePaths& editable, const std::string& commit,
                        const std::string& parent) {
  if (parent.empty()) return "it is a root commit: a try is measured against its parent";
  const std::vector<std::string> paths = repo.changed_paths(parent, commit);
  if (paths.empty()) return "it changes nothing";
  std::vector<std::string> fixed;
  for (const auto& path : paths)
    if (!editable.contains(path)) fixed.push_back(path);
  if (fixed.empty()) return "";
  return "it changes " + join_list(fixed, 3) + ", which the daemon may not edit (editable: " +
         join_list(editable.globs(), 10) + ")";
}

ProposalCommit commit_try(GitRepo& repo, const EditablePaths& editable, const std::string& commit,
                          const std::string& parent, const std::string& ref, const std::filesystem::path& objects_dir) {
  ProposalCommit out;
  out.rejected = try_refusal(repo, editable, commit, parent);
  if (!out.rejected.empty()) return out;
  try {
    repo.set_ref(ref, commit, "autoresearchd: try");
    out.commit = commit;
  } catch (const GitError& e) {
    if (!(out.fault = probe_write(objects_dir))) out.rejected = std::string("the commit cannot be taken: ") + e.what();
  }
  return out;
}

}  // namespace ard
