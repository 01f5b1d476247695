// Regions of a diff: where in the editable files a change landed, so that the
// research memory (memory.h) can say what was tried where.
//
// A unified diff (git's format, as GitRepo::diff writes it) is read file by
// file and hunk by hunk:
//   - a file's path is its new side's (`+++ b/<path>`); a deleted file's is
//     its old side's; a rename's or a copy's is the new path;
//   - each hunk is a region, its new side's lines: `@@ -a,b +c,d @@` covers
//     lines c to c+d-1, written "path:c-(c+d-1)" ("path:c" for one line); a
//     hunk that only removes lines (d = 0) is the line it removed them after
//     ("path:c"); a file with no hunk (a rename alone, a binary file) is one
//     region of the whole file, written "path";
//   - each region has a coarse key, for grouping changes of one place:
//       "path: name"            the top-level definition the change is in:
//                               the last one that begins (at column 0) in
//                               the hunk before or at its first changed
//                               line, else the one git's section header
//                               (the text after `@@ ... @@`) names, unless a
//                               `}` at column 0 before the change closed it;
//       "path: lines 51-100"    else the 50-line block of the first changed
//                               line (kRegionBlockLines);
//       "path (new file)", "path (deleted)", "path"  a new file, a deleted
//                               one, a file with no hunk.
//     A definition is a line that begins with a letter or `_`, holds a `(`
//     and does not end with `;` (its name: the identifier, `::` included,
//     before the first `(`; `if`, `for`, `while`, `switch`, `return` are not
//     names), or a `struct`, `class`, `union`, `enum` or `namespace` line (its
//     name: that word and the next).
// Pure functions of the text: no git, no store. An empty diff has no region.
#pragma once

#include <string>
#include <vector>

namespace ard {

/// The block of lines a change outside any definition is grouped by.
inline constexpr int kRegionBlockLines = 50;

/// One hunk of a diff (or one file without hunks), on its new side.
struct DiffRegion {
  std::string path;  ///< the file, new side's path
  int first = 0;     ///< the first new-side line; 0 for a file without hunks or a deleted file
  int last = 0;      ///< the last new-side line (first for a hunk that only removes)
  std::string key;   ///< the coarse region key (see the top of this file)
};

/// Every region of diff, in the diff's order.
std::vector<DiffRegion> diff_regions(const std::string& diff);

/// "path:first-last", "path:first" for one line, "path" without lines.
std::string region_text(const DiffRegion& region);

/// The distinct keys of regions, in the order they first appear.
std::vector<std::string> region_keys(const std::vector<DiffRegion>& regions);

/// The name of the top-level definition that line (without a diff prefix)
/// begins, "" when it begins none: "static void train_step(Model& m) {" is
/// "train_step", "struct Hyper {" is "struct Hyper", "  x = f(1);" is "".
std::string definition_name(const std::string& line);

}  // namespace ard
