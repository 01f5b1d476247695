// A tag researches on the commit it first started from, its base, while the
// user's checkout moves on. Whether HEAD has commits the tag lacks (a note
// at start), and `start --rebase`: the tag's kept changes, oldest first,
// re-applied onto HEAD, which becomes the base; the result is measured as a
// new baseline by the engine. A change that does not apply stops the start,
// naming it, with nothing moved (cherry-picks make objects only).
// settle_tag: where a start finds the tag's chain (base, best, branch), and
// the baseline that measures the chain's best as it is.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "daemon/git_repo.h"
#include "daemon/store/store.h"

namespace ard {

/// The kept changes, oldest first: the first-parent path from base to best.
std::vector<std::string> kept_chain(GitRepo& repo, const std::string& base, const std::string& best);

/// The `note:` line when the checkout's HEAD has commits the tag (base ..
/// best) lacks; "" when it has none, or HEAD is the research branch itself.
std::string newer_head_note(GitRepo& repo, const std::string& tag, const std::string& base, const std::string& best);

/// What rebase_onto_head did.
struct RebasedTag {
  bool moved = false;  ///< false: HEAD is the base already, nothing to do
  std::string head;    ///< the new base
  std::string onto;    ///< the new best: the kept chain on HEAD (HEAD itself without one)
  std::string log_line;
};

/// Re-applies the tag's kept changes onto HEAD. Throws FatalError naming the
/// first change that does not apply; no ref is moved either way (the engine
/// records the new base and best).
RebasedTag rebase_onto_head(GitRepo& repo, const std::string& tag, const std::string& base, const std::string& best);

/// Where a start finds the tag's chain.
struct TagChain {
  std::string base;               ///< the commit the tag researches on
  std::string best;               ///< its best kept commit (the base before any keep)
  std::optional<double> best_val; ///< the best's metric; unset before the baseline (or after a rebase)
  int64_t best_id = 0;            ///< the best's experiment; 0 before the baseline (or after a rebase)
  bool rebased = false;           ///< `--rebase` moved the chain onto HEAD: a new baseline is due
};

/// The tag's chain at start: its run recorded (base: HEAD) and its branch
/// made at the first start; with rebase, moved onto HEAD (rebase_onto_head,
/// the new base recorded); else HEAD's newer commits noted. The branch is
/// reset to the best when a killed daemon left it elsewhere. Throws
/// FatalError when the base or the best is not in the repo. log: one line each.
TagChain settle_tag(GitRepo& repo, Store& store, const std::string& tag, bool rebase,
                    const std::function<void(const std::string&)>& log);

/// Whether a start measures a baseline: none of rows' baselines ran (an
/// interrupted one does not count), or --rebase moved the chain.
bool baseline_due(const std::vector<ExperimentRow>& rows, bool rebased);

/// Records the baseline of chain: its row (the best as it is; program_md as
/// the file is, since no proposer is asked) and its experiment ref. Returns its id.
int64_t record_baseline(GitRepo& repo, Store& store, const std::string& tag, const TagChain& chain,
                        const std::string& program_md);

}  // namespace ard
