// Unified diffs from an answer, applied with libgit2 (git_diff_from_buffer and
// git_apply_to_tree) to a file held in an in-memory repository.
//
// LLMs often get hunk line numbers and counts wrong, so before libgit2 sees a
// hunk its header is rewritten from the hunk's own lines, at the one place in
// the file where its old lines occur. A hunk whose old lines occur nowhere is
// reported as such; libgit2 reports everything else.
#pragma once

#include <string>

namespace llm {

/// Applies the patch of one file to content. Returns the error, or "" with
/// content updated.
std::string apply_unified_diff(std::string& content, const std::string& path, const std::string& patch);

}  // namespace llm
