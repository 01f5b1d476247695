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

}  // namespace ard
