// See unified_diff.h.
#include "llm_client/unified_diff.h"
#include "proposers/text_lines.h"

#include <git2.h>
#include <git2/sys/mempack.h>
#include <git2/sys/repository.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <regex>
#include <vector>

namespace llm {

using ard::split_lines;
using ard::trim;

namespace {

struct Hunk {
  long claimed_old_start = 0;
  std::string tail;                ///< text after the second "@@" (a function name)
  std::vector<std::string> body;   ///< each with its ' ', '+', '-' or '\' marker
};

/// Rewrites each hunk's header from its lines and where they occur in content.
std::string normalize(const std::string& content, const std::string& patch, std::string& error) {
  static const std::regex header(R"(^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@(.*)$)");
  std::vector<std::string> lines = split_lines(patch), file = split_lines(content);
  std::string out;
  std::vector<Hunk> hunks;
  size_t i = 0;
  for (; i < lines.size() && lines[i].rfind("@@", 0) != 0; ++i) out += lines[i] + "\n";
  for (; i < lines.size(); ++i) {
    std::smatch m;
    if (lines[i].rfind("@@", 0) == 0) {
      Hunk h;
      if (std::regex_match(lines[i], m, header)) {
        h.claimed_old_start = std::atol(m[1].str().c_str());
        h.tail = m[2].str();
      }
      hunks.push_back(h);
      continue;
    }
    // An empty line inside a hunk is an empty context line whose blank was lost.
    hunks.back().body.push_back(lines[i].empty() ? " " : lines[i]);
  }

  long shift = 0;  // new-file lines minus old-file lines of the hunks so far
  size_t search_from = 0;
  for (size_t n = 0; n < hunks.size(); ++n) {
    const Hunk& h = hunks[n];
    std::vector<std::string> old_lines;
    long new_count = 0;
    for (const auto& l : h.body) {
      if (l[0] == ' ' || l[0] == '-') old_lines.push_back(l.substr(1));
      if (l[0] == ' ' || l[0] == '+') ++new_count;
    }
    long old_start = 0;
    if (old_lines.empty()) {
      old_start = h.claimed_old_start;  // pure insertion: trust the header
    } else {
      std::vector<size_t> found;
      for (size_t s = search_from; s + old_lines.size() <= file.size(); ++s) {
        bool same = true;
        for (size_t k = 0; k < old_lines.size() && same; ++k) same = file[s + k] == old_lines[k];
        if (same) found.push_back(s);
      }
      if (found.empty()) {
        error = "hunk " + std::to_string(n + 1) + ": its context and '-' lines do not occur in the file as one block";
        for (const auto& l : old_lines) {
          bool present = false;
          for (const auto& f : file) present = present || f == l;
          if (!present) {
            error += "; this line is not in the file: '" + l.substr(0, 100) + "'";
            break;
          }
        }
        return "";
      }
      // Several places: the one nearest the line the header claims.
      size_t best = found[0];
      for (size_t s : found)
        if (std::labs(static_cast<long>(s) + 1 - h.claimed_old_start) <
            std::labs(static_cast<long>(best) + 1 - h.claimed_old_start))
          best = s;
      old_start = static_cast<long>(best) + 1;
      search_from = best + old_lines.size();
    }
    long old_count = static_cast<long>(old_lines.size());
    long new_start = old_count == 0 && new_count > 0 ? old_start + 1 + shift : old_start + shift;
    if (new_count == 0) new_start = old_start + shift - 1;
    out += "@@ -" + std::to_string(old_start) + "," + std::to_string(old_count) + " +" + std::to_string(new_start) +
           "," + std::to_string(new_count) + " @@" + h.tail + "\n";
    for (const auto& l : h.body) out += l + "\n";
    shift += new_count - old_count;
  }
  return out;
}

std::string git_message(const char* what) {
  const git_error* e = git_error_last();
  std::string msg = std::string(what) + ": " + (e && e->message ? e->message : "unknown libgit2 error");
  for (char& c : msg)
    if (c == '\n') c = ' ';
  return msg;
}

template <typename T, void (*Free)(T*)>
struct Owned {
  T* p = nullptr;
  ~Owned() {
    if (p) Free(p);
  }
};

}  // namespace

std::string apply_unified_diff(std::string& content, const std::string& path, const std::string& patch) {
  static std::once_flag once;
  std::call_once(once, [] { git_libgit2_init(); });

  if (patch.find("--- /dev/null\n") != std::string::npos || patch.find("+++ /dev/null\n") != std::string::npos)
    return "the diff must modify the existing file, not create, delete or rename one";
  std::string error;
  std::string text = normalize(content, patch, error);
  if (!error.empty()) return error;
  // libgit2 parses git-style patches: give it the "diff --git" line it expects.
  if (text.rfind("diff --git ", 0) != 0) text = "diff --git a/" + path + " b/" + path + "\n" + text;

  Owned<git_diff, git_diff_free> diff;
  if (git_diff_from_buffer(&diff.p, text.data(), text.size()) != 0) return git_message("the diff does not parse");
  size_t deltas = git_diff_num_deltas(diff.p);
  if (deltas != 1) return "the diff must change exactly this one file, it has " + std::to_string(deltas) + " parts";
  const git_diff_delta* delta = git_diff_get_delta(diff.p, 0);
  if (delta->status != GIT_DELTA_MODIFIED)
    return "the diff must modify the existing file, not create, delete or rename one";

  // An in-memory repository holding just this file.
  Owned<git_repository, git_repository_free> repo;
  Owned<git_odb, git_odb_free> odb;
  git_odb_backend* mempack = nullptr;
  if (git_repository_new(&repo.p) != 0 || git_odb_new(&odb.p) != 0 || git_mempack_new(&mempack) != 0)
    return git_message("in-memory repository");
  if (git_odb_add_backend(odb.p, mempack, 1) != 0) return git_message("in-memory repository");
  git_repository_set_odb(repo.p, odb.p);

  git_oid blob_id, tree_id;
  if (git_blob_create_from_buffer(&blob_id, repo.p, content.data(), content.size()) != 0)
    return git_message("storing the file");
  Owned<git_index, git_index_free> index;
  if (git_index_new(&index.p) != 0) return git_message("in-memory index");
  git_index_entry entry = {};
  entry.mode = GIT_FILEMODE_BLOB;
  entry.id = blob_id;
  entry.path = path.c_str();
  if (git_index_add(index.p, &entry) != 0 || git_index_write_tree_to(&tree_id, index.p, repo.p) != 0)
    return git_message("building the tree");
  Owned<git_tree, git_tree_free> tree;
  if (git_tree_lookup(&tree.p, repo.p, &tree_id) != 0) return git_message("reading the tree");

  if (std::string(delta->new_file.path) != path)
    return "the diff names " + std::string(delta->new_file.path) + ", not " + path;

  Owned<git_index, git_index_free> result;
  git_apply_options opts = GIT_APPLY_OPTIONS_INIT;
  if (git_apply_to_tree(&result.p, repo.p, tree.p, diff.p, &opts) != 0) return git_message("the diff does not apply");
  const git_index_entry* out = git_index_get_bypath(result.p, path.c_str(), 0);
  if (!out) return "the diff removes the file";
  Owned<git_blob, git_blob_free> blob;
  if (git_blob_lookup(&blob.p, repo.p, &out->id) != 0) return git_message("reading the result");
  content.assign(static_cast<const char*>(git_blob_rawcontent(blob.p)), git_blob_rawsize(blob.p));
  return "";
}

}  // namespace llm
