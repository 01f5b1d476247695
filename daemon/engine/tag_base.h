// A tag researches on the commit it first started from, its base, while the
// user's checkout moves on. Whether HEAD has commits the tag lacks (a note
// at start), and `start --rebase`: the tag's kept changes, oldest first,
// re-applied onto HEAD, which becomes the base; the result is measured as a
// new baseline by the engine. A change that does not apply stops the start,
// naming it, with nothing moved (cherry-picks make objects only).
#pragma once

#include <string>
#include <vector>

#include "daemon/git_repo.h"

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

}  // namespace ard
