// See tag_base.h.
#include "daemon/engine/tag_base.h"

#include "daemon/fatal_error.h"
#include "daemon/util/text.h"

namespace ard {

std::vector<std::string> kept_chain(GitRepo& repo, const std::string& base, const std::string& best) {
  return repo.first_parent_path(base, best).value_or(std::vector<std::string>{});
}

std::string newer_head_note(GitRepo& repo, const std::string& tag, const std::string& base, const std::string& best) {
  const std::string head = repo.head();
  if (head == base || head == best) return "";
  const size_t ahead = repo.commits_ahead(best, head);  // HEAD's commits the tag does not have
  if (ahead == 0) return "";  // HEAD is on the research branch (checked out to look at it)
  return "note: your checkout's HEAD " + short_commit(head) + " has " + std::to_string(ahead) +
         " commit(s) that tag " + tag + " does not (it researches on " + short_commit(base) +
         "); `autoresearchd start --rebase` moves its " + std::to_string(kept_chain(repo, base, best).size()) +
         " kept change(s) onto HEAD and measures a new baseline there";
}

RebasedTag rebase_onto_head(GitRepo& repo, const std::string& tag, const std::string& base, const std::string& best) {
  RebasedTag r;
  r.head = repo.head();
  if (r.head == base) {
    r.log_line = "--rebase: HEAD " + short_commit(r.head) + " is the tag's base already: nothing to move";
    return r;
  }
  // HEAD that already holds the best (the research branch merged into it) needs none of the chain.
  std::vector<std::string> chain;
  if (repo.commits_ahead(r.head, best) > 0) chain = kept_chain(repo, base, best);
  r.onto = r.head;
  for (const auto& commit : chain) {  // objects only: no ref moves before every change applied
    GitRepo::CherryPick pick = repo.cherry_pick(commit, r.onto, "");
    if (pick.commit.empty())
      throw FatalError("--rebase: kept change " + short_commit(commit) + " (" + repo.summary(commit) +
                       ") does not apply onto " + short_commit(r.onto) + ": conflicts in " +
                       join_list(pick.conflicts, 5) + "; nothing was moved");
    r.onto = pick.commit;
  }
  r.moved = true;
  r.log_line = "--rebase: tag " + tag + " moved from " + short_commit(base) + " onto HEAD " + short_commit(r.head) +
               " with its " + std::to_string(chain.size()) + " kept change(s), now " + short_commit(r.onto) +
               "; a new baseline is measured there";
  return r;
}

TagChain settle_tag(GitRepo& repo, Store& store, const std::string& tag, bool rebase,
                    const std::function<void(const std::string&)>& log) {
  const std::string branch_ref = "refs/heads/autoresearch/" + tag;
  std::optional<std::string> tip = repo.ref_target(branch_ref);
  if (!tip) {
    tip = repo.head();
    repo.set_ref(branch_ref, *tip, "autoresearchd: new run");
  }
  TagChain chain;
  if (auto base = store.run_base(tag)) {
    chain.base = *base;
    if (!repo.has_commit(chain.base))
      throw FatalError("base commit " + chain.base + " of tag " + tag + " is not in the repo");
  } else {
    chain.base = *tip;
    store.add_run(tag, "autoresearch/" + tag, chain.base);
  }
  auto best = store.best(tag);
  chain.best = best ? best->commit : chain.base;
  chain.best_val = best ? best->val_bpb : std::nullopt;
  chain.best_id = best ? best->id : 0;
  if (!repo.has_commit(chain.best))
    throw FatalError("kept commit " + chain.best + " of #" + std::to_string(best->id) + " is not in the repo");
  if (rebase) {
    const RebasedTag r = rebase_onto_head(repo, tag, chain.base, chain.best);
    log(r.log_line);
    if (r.moved) {
      store.set_run_base(tag, r.head);
      chain = TagChain{r.head, r.onto, std::nullopt, 0, true};
    }
  } else if (std::string note = newer_head_note(repo, tag, chain.base, chain.best); !note.empty()) {
    log(note);
  }
  if (*tip != chain.best) {
    log("reconcile: autoresearch/" + tag + " tip " + short_commit(*tip) + " is not the best kept commit; reset to " +
        short_commit(chain.best));
    repo.set_ref(branch_ref, chain.best, "autoresearchd: reset to the best kept commit");
  }
  return chain;
}

bool baseline_due(const std::vector<ExperimentRow>& rows, bool rebased) {
  for (const auto& r : rows)
    if (r.is_baseline && r.state != status::kInterrupted) return rebased;
  return true;
}

int64_t record_baseline(GitRepo& repo, Store& store, const std::string& tag, const TagChain& chain,
                        const std::string& program_md) {
  const std::string hash = blob_hash(program_md);
  store.put_program(hash, program_md);
  const int64_t id = store.create_experiment(tag, true, chain.best, hash, "baseline", std::nullopt);
  store.set_proposal(id, chain.rebased ? "baseline on " + short_commit(chain.base) + " (--rebase)" : "baseline");
  store.set_commit(id, chain.best, "");
  repo.set_ref("refs/autoresearch/" + tag + "/exp/" + std::to_string(id), chain.best, "autoresearchd: baseline");
  return id;
}

}  // namespace ard
