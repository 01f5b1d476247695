// See git_repo.h. Every libgit2 return code goes through check(), which throws
// GitError with libgit2's own message; objects are owned by GitPtr.
#include "daemon/git_repo.h"

#include <algorithm>
#include <git2.h>

#include <fstream>
#include <sstream>

namespace ard {
namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
template <typename T, void (*Free)(T*)>
using GitPtr = std::unique_ptr<T, Deleter<T, Free>>;

using Object = GitPtr<git_object, git_object_free>;
using Commit = GitPtr<git_commit, git_commit_free>;
using Tree = GitPtr<git_tree, git_tree_free>;
using Reference = GitPtr<git_reference, git_reference_free>;
using Index = GitPtr<git_index, git_index_free>;
using Diff = GitPtr<git_diff, git_diff_free>;
using Signature = GitPtr<git_signature, git_signature_free>;
using Worktree = GitPtr<git_worktree, git_worktree_free>;
using Blob = GitPtr<git_blob, git_blob_free>;

void check(int rc, const std::string& what) {
  if (rc < 0) {
    const git_error* e = git_error_last();
    throw GitError(what + ": " + (e && e->message ? e->message : "libgit2 error " + std::to_string(rc)));
  }
}

std::string oid_str(const git_oid* oid) {
  char buf[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buf, sizeof buf, oid);
  return buf;
}

git_oid parse_oid(const std::string& id) {
  git_oid oid;
  check(git_oid_fromstr(&oid, id.c_str()), "bad commit id '" + id + "'");
  return oid;
}

Commit lookup_commit(git_repository* repo, const std::string& id) {
  git_oid oid = parse_oid(id);
  git_commit* c = nullptr;
  check(git_commit_lookup(&c, repo, &oid), "commit " + id);
  return Commit(c);
}

Signature default_signature(git_repository* repo) {
  git_signature* sig = nullptr;
  if (git_signature_default(&sig, repo) < 0)
    check(git_signature_now(&sig, "autoresearchd", "autoresearchd@localhost"), "signature");
  return Signature(sig);
}

/// A path a commit may hold: relative, '/'-separated, no empty, "." or ".."
/// component, no NUL or control character (C strings would cut it short).
void check_tree_path(const std::string& path) {
  for (unsigned char c : path)
    if (c < 0x20 || c == 0x7f) throw GitError("path '" + path.substr(0, path.find('\0')) + "...' holds a control character");
  if (path.empty() || path.front() == '/') throw GitError("path '" + path + "' is not relative");
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == ".." || part == ".git")
      throw GitError("path '" + path + "' has a '" + part + "' component");
    start = end + 1;
  }
}

Tree commit_tree(git_repository* repo, const std::string& id) {
  Commit c = lookup_commit(repo, id);
  git_tree* t = nullptr;
  check(git_commit_tree(&t, c.get()), "tree of " + id);
  return Tree(t);
}

}  // namespace

GitLibrary::GitLibrary() { git_libgit2_init(); }
GitLibrary::~GitLibrary() { git_libgit2_shutdown(); }

std::string blob_hash(const std::string& content) {
  git_oid oid;
  check(git_odb_hash(&oid, content.data(), content.size(), GIT_OBJECT_BLOB), "hash");
  return oid_str(&oid);
}

std::filesystem::path discover_repo(const std::filesystem::path& start) {
  git_buf buf = GIT_BUF_INIT;
  check(git_repository_discover(&buf, start.c_str(), 0, nullptr),
        "no git repository at " + start.string());
  std::string gitdir(buf.ptr, buf.size);
  git_buf_dispose(&buf);
  GitRepo repo(gitdir);
  return repo.workdir();
}

GitRepo::GitRepo(const std::filesystem::path& path) {
  check(git_repository_open(&repo_, path.c_str()), "cannot open git repository " + path.string());
}

GitRepo::~GitRepo() { git_repository_free(repo_); }

std::string GitRepo::init_with_files(const std::filesystem::path& path, const std::string& message) {
  git_repository* found = nullptr;
  if (git_repository_open_ext(&found, path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr) == 0) {
    git_repository_free(found);
    throw GitError(path.string() + " is a git repository already");
  }
  git_repository_init_options opts = GIT_REPOSITORY_INIT_OPTIONS_INIT;
  opts.flags = GIT_REPOSITORY_INIT_MKPATH;
  opts.initial_head = "main";
  git_repository* raw = nullptr;
  check(git_repository_init_ext(&raw, path.c_str(), &opts), "cannot create a git repository in " + path.string());
  std::unique_ptr<git_repository, decltype(&git_repository_free)> repo(raw, git_repository_free);
  git_index* idx_raw = nullptr;
  check(git_repository_index(&idx_raw, repo.get()), "index of " + path.string());
  Index index(idx_raw);
  char everything[] = "*";
  git_strarray all = {nullptr, 0};
  char* patterns[] = {everything};
  all.strings = patterns;
  all.count = 1;
  check(git_index_add_all(index.get(), &all, GIT_INDEX_ADD_DEFAULT, nullptr, nullptr), "add the files of " + path.string());
  check(git_index_write(index.get()), "write the index of " + path.string());
  git_oid tree_id;
  check(git_index_write_tree(&tree_id, index.get()), "write tree");
  git_tree* tree_raw = nullptr;
  check(git_tree_lookup(&tree_raw, repo.get(), &tree_id), "tree");
  Tree tree(tree_raw);
  Signature sig = default_signature(repo.get());
  git_oid id;
  check(git_commit_create(&id, repo.get(), "HEAD", sig.get(), sig.get(), nullptr, message.c_str(), tree.get(), 0, nullptr),
        "first commit in " + path.string());
  return oid_str(&id);
}

std::vector<std::string> GitRepo::tracked_files() const {
  git_index* raw = nullptr;
  check(git_repository_index(&raw, repo_), "index of " + std::string(git_repository_path(repo_)));
  std::unique_ptr<git_index, decltype(&git_index_free)> index(raw, git_index_free);
  std::vector<std::string> out;
  for (size_t i = 0, n = git_index_entrycount(index.get()); i < n; ++i)
    out.emplace_back(git_index_get_byindex(index.get(), i)->path);
  return out;
}

std::filesystem::path GitRepo::workdir() const {
  const char* w = git_repository_workdir(repo_);
  if (!w) throw GitError("repository " + std::string(git_repository_path(repo_)) + " is bare");
  std::filesystem::path p(w);
  return p.has_filename() ? p : p.parent_path();
}

std::string GitRepo::head() const {
  git_oid oid;
  check(git_reference_name_to_id(&oid, repo_, "HEAD"), "HEAD");
  return oid_str(&oid);
}

bool GitRepo::has_commit(const std::string& id) const {
  git_oid oid;
  if (git_oid_fromstr(&oid, id.c_str()) < 0) return false;
  git_commit* c = nullptr;
  if (git_commit_lookup(&c, repo_, &oid) < 0) return false;
  git_commit_free(c);
  return true;
}

size_t GitRepo::commits_ahead(const std::string& from, const std::string& to) const {
  git_oid a = parse_oid(to), b = parse_oid(from);
  size_t ahead = 0, behind = 0;
  check(git_graph_ahead_behind(&ahead, &behind, repo_, &a, &b), "cannot compare " + from + " with " + to);
  return ahead;
}

std::optional<std::vector<std::string>> GitRepo::first_parent_path(const std::string& from,
                                                                   const std::string& to) const {
  std::vector<std::string> path;
  std::string at = to;
  while (at != from) {
    Commit c = lookup_commit(repo_, at);
    if (git_commit_parentcount(c.get()) == 0) return std::nullopt;  // the root: `from` was not on the way
    path.push_back(at);
    at = oid_str(git_commit_parent_id(c.get(), 0));
  }
  std::reverse(path.begin(), path.end());
  return path;
}

std::string GitRepo::summary(const std::string& commit) const {
  Commit c = lookup_commit(repo_, commit);
  const char* s = git_commit_summary(c.get());
  return s ? s : "";
}

void GitRepo::exclude(const std::string& pattern) {
  std::filesystem::path info = std::filesystem::path(git_repository_commondir(repo_)) / "info";
  std::filesystem::create_directories(info);
  std::filesystem::path file = info / "exclude";
  std::string text;
  {
    std::ifstream in(file);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line == pattern) return;
  std::ofstream out(file, std::ios::app);
  if (!text.empty() && text.back() != '\n') out << '\n';
  out << pattern << '\n';
  if (!out) throw GitError("cannot write " + file.string());
}

std::unique_ptr<GitRepo> GitRepo::open_detached_worktree(const std::string& name, const std::filesystem::path& path,
                                                        const std::string& commit, const SlotKeep& keep) {
  git_worktree* wt_raw = nullptr;
  if (git_worktree_lookup(&wt_raw, repo_, name.c_str()) == 0) {
    Worktree wt(wt_raw);
    std::error_code ec;
    if (git_worktree_validate(wt.get()) == 0 && std::filesystem::symlink_status(path / ".git", ec).type() ==
                                                    std::filesystem::file_type::regular) {
      try {
        auto repo = std::make_unique<GitRepo>(path);
        repo->checkout_detached(commit, keep);
        return repo;
      } catch (const GitError&) {
        // Past repair in place: created again below.
      }
    }
  }
  return recreate_worktree(name, path, commit);
}

std::unique_ptr<GitRepo> GitRepo::recreate_worktree(const std::string& name, const std::filesystem::path& path,
                                                   const std::string& commit) {
  git_worktree* wt_raw = nullptr;
  if (git_worktree_lookup(&wt_raw, repo_, name.c_str()) == 0) {
    Worktree wt(wt_raw);
    git_worktree_prune_options popts = GIT_WORKTREE_PRUNE_OPTIONS_INIT;
    popts.flags = GIT_WORKTREE_PRUNE_VALID | GIT_WORKTREE_PRUNE_LOCKED;
    check(git_worktree_prune(wt.get(), &popts), "prune worktree " + name);
  }
  std::filesystem::create_directories(path.parent_path());
  if (std::string e = remove_tree_nofollow(path); !e.empty()) throw GitError("cannot delete worktree " + e);
  // libgit2 adds a worktree on a branch only; a scratch branch holds the
  // commit for the moment of the add, and goes once HEAD is detached.
  const std::string scratch = "autoresearchd-slot-" + name;
  Commit c = lookup_commit(repo_, commit);
  git_reference* ref_raw = nullptr;
  check(git_branch_create(&ref_raw, repo_, scratch.c_str(), c.get(), 1), "create branch " + scratch);
  Reference ref(ref_raw);
  git_worktree_add_options opts = GIT_WORKTREE_ADD_OPTIONS_INIT;
  opts.ref = ref.get();
  check(git_worktree_add(&wt_raw, repo_, name.c_str(), path.c_str(), &opts), "create worktree " + path.string());
  git_worktree_free(wt_raw);
  auto repo = std::make_unique<GitRepo>(path);
  repo->checkout_detached(commit);
  check(git_branch_delete(ref.get()), "delete branch " + scratch);
  return repo;
}

void GitRepo::checkout_detached(const std::string& commit, const SlotKeep& keep) {
  git_oid oid = parse_oid(commit);
  const std::filesystem::path root = workdir();
  if (std::string e = make_slot_equal(root, tree_entries(commit), keep, [this](const std::string& id) { return blob(id); });
      !e.empty())
    throw GitError("worktree " + root.string() + ": " + e);
  check(git_repository_set_head_detached(repo_, &oid), "detach HEAD at " + commit);
  // An index of the commit's tree with no stat data: git status, if anyone
  // runs it in the slot, compares the files by content.
  git_index* idx_raw = nullptr;
  check(git_repository_index(&idx_raw, repo_), "index");
  Index index(idx_raw);
  Tree tree = commit_tree(repo_, commit);
  check(git_index_clear(index.get()), "clear index");
  check(git_index_read_tree(index.get(), tree.get()), "read tree of " + commit);
  check(git_index_write(index.get()), "write index");
}

std::vector<SlotEntry> GitRepo::tree_entries(const std::string& commit) const {
  Tree tree = commit_tree(repo_, commit);
  std::vector<SlotEntry> out;
  auto cb = [](const char* root, const git_tree_entry* entry, void* payload) -> int {
    auto* entries = static_cast<std::vector<SlotEntry>*>(payload);
    SlotEntry e;
    switch (git_tree_entry_filemode(entry)) {
      case GIT_FILEMODE_TREE: return 0;
      case GIT_FILEMODE_BLOB_EXECUTABLE: e.kind = SlotEntry::Kind::kExecutable; break;
      case GIT_FILEMODE_LINK: e.kind = SlotEntry::Kind::kSymlink; break;
      case GIT_FILEMODE_COMMIT: e.kind = SlotEntry::Kind::kSubmodule; break;
      default: e.kind = SlotEntry::Kind::kFile; break;
    }
    e.path = std::string(root) + git_tree_entry_name(entry);
    e.id = oid_str(git_tree_entry_id(entry));
    entries->push_back(std::move(e));
    return 0;
  };
  check(git_tree_walk(tree.get(), GIT_TREEWALK_PRE, cb, &out), "walk tree of " + commit);
  return out;
}

std::string GitRepo::blob(const std::string& id) const {
  git_oid oid = parse_oid(id);
  git_blob* b = nullptr;
  check(git_blob_lookup(&b, repo_, &oid), "blob " + id);
  Blob blob(b);
  return std::string(static_cast<const char*>(git_blob_rawcontent(b)), static_cast<size_t>(git_blob_rawsize(b)));
}

std::vector<std::string> GitRepo::differences(const std::string& commit, const SlotKeep& keep) const {
  return slot_differences(workdir(), tree_entries(commit), keep);
}

std::string GitRepo::commit_writes(const std::string& parent_id, const std::vector<FileWrite>& writes,
                                   const std::string& message, const std::string& ref) {
  Commit parent = lookup_commit(repo_, parent_id);
  Tree parent_tree = commit_tree(repo_, parent_id);
  git_index* idx_raw = nullptr;
  check(git_index_new(&idx_raw), "new index");
  Index index(idx_raw);
  check(git_index_read_tree(index.get(), parent_tree.get()), "read tree of " + parent_id);
  for (const FileWrite& w : writes) {
    check_tree_path(w.path);
    // A file may not replace a directory, nor sit below a file.
    for (size_t slash = 0; slash != std::string::npos;) {
      slash = w.path.find('/', slash + 1);
      std::string prefix = w.path.substr(0, slash);
      git_tree_entry* e = nullptr;
      if (git_tree_entry_bypath(&e, parent_tree.get(), prefix.c_str()) != 0) break;
      git_object_t type = git_tree_entry_type(e);
      git_tree_entry_free(e);
      if (slash == std::string::npos && type == GIT_OBJECT_TREE)
        throw GitError("'" + w.path + "' is a directory in " + parent_id.substr(0, 7));
      if (slash != std::string::npos && type != GIT_OBJECT_TREE)
        throw GitError("'" + prefix + "' is a file in " + parent_id.substr(0, 7) + ", so '" + w.path + "' cannot be");
    }
    git_oid blob;
    check(git_blob_create_from_buffer(&blob, repo_, w.content.data(), w.content.size()), "write blob " + w.path);
    git_index_entry entry{};
    const git_index_entry* old = git_index_get_bypath(index.get(), w.path.c_str(), 0);
    entry.mode = old && old->mode == GIT_FILEMODE_BLOB_EXECUTABLE ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB;
    entry.id = blob;
    entry.path = w.path.c_str();
    entry.file_size = static_cast<uint32_t>(w.content.size());
    check(git_index_add(index.get(), &entry), "add " + w.path);
  }
  git_oid tree_id;
  check(git_index_write_tree_to(&tree_id, index.get(), repo_), "write tree");
  if (git_oid_equal(&tree_id, git_commit_tree_id(parent.get()))) return "";
  git_tree* tree_raw = nullptr;
  check(git_tree_lookup(&tree_raw, repo_, &tree_id), "tree");
  Tree tree(tree_raw);
  Signature sig = default_signature(repo_);
  const git_commit* parents[] = {parent.get()};
  git_oid id;
  check(git_commit_create(&id, repo_, nullptr, sig.get(), sig.get(), nullptr, message.c_str(), tree.get(), 1, parents),
        "commit");
  std::string out = oid_str(&id);
  if (!ref.empty()) set_ref(ref, out, "autoresearchd: candidate");
  return out;
}

namespace {

/// A merged index (a cherry-pick's or a revert's) committed onto ours, or the
/// paths that conflict in it.
GitRepo::CherryPick commit_merged(git_repository* repo, git_index* index, const git_commit* ours,
                                  const git_signature* author, const char* message) {
  GitRepo::CherryPick out;
  if (git_index_has_conflicts(index)) {
    git_index_conflict_iterator* it_raw = nullptr;
    check(git_index_conflict_iterator_new(&it_raw, index), "conflicts");
    const git_index_entry *ancestor, *our, *their;
    while (git_index_conflict_next(&ancestor, &our, &their, it_raw) == 0) {
      const git_index_entry* any = our ? our : their ? their : ancestor;
      if (any) out.conflicts.emplace_back(any->path);
    }
    git_index_conflict_iterator_free(it_raw);
    return out;
  }
  git_oid tree_id;
  check(git_index_write_tree_to(&tree_id, index, repo), "write tree");
  git_tree* tree_raw = nullptr;
  check(git_tree_lookup(&tree_raw, repo, &tree_id), "tree");
  Tree tree(tree_raw);
  Signature committer = default_signature(repo);
  const git_commit* parents[] = {ours};
  git_oid id;
  check(git_commit_create(&id, repo, nullptr, author ? author : committer.get(), committer.get(), nullptr, message,
                          tree.get(), 1, parents),
        "commit");
  out.commit = oid_str(&id);
  return out;
}

}  // namespace

GitRepo::CherryPick GitRepo::cherry_pick(const std::string& commit, const std::string& onto, const std::string& ref) {
  Commit pick = lookup_commit(repo_, commit);
  Commit ours = lookup_commit(repo_, onto);
  git_merge_options mo = GIT_MERGE_OPTIONS_INIT;
  git_index* idx_raw = nullptr;
  check(git_cherrypick_commit(&idx_raw, repo_, pick.get(), ours.get(), 0, &mo), "re-apply " + commit + " onto " + onto);
  Index index(idx_raw);
  CherryPick out = commit_merged(repo_, index.get(), ours.get(), git_commit_author(pick.get()), git_commit_message(pick.get()));
  if (!out.commit.empty() && !ref.empty()) set_ref(ref, out.commit, "autoresearchd: re-applied");
  return out;
}

GitRepo::CherryPick GitRepo::revert(const std::string& commit, const std::string& onto, const std::string& message) {
  Commit undo = lookup_commit(repo_, commit);
  Commit ours = lookup_commit(repo_, onto);
  git_merge_options mo = GIT_MERGE_OPTIONS_INIT;
  git_index* idx_raw = nullptr;
  check(git_revert_commit(&idx_raw, repo_, undo.get(), ours.get(), 0, &mo), "revert " + commit + " onto " + onto);
  Index index(idx_raw);
  return commit_merged(repo_, index.get(), ours.get(), nullptr, message.c_str());
}

void GitRepo::set_ref(const std::string& name, const std::string& commit, const std::string& log_message) {
  git_oid oid = parse_oid(commit);
  git_reference* r = nullptr;
  check(git_reference_create(&r, repo_, name.c_str(), &oid, 1, log_message.c_str()), "set " + name);
  git_reference_free(r);
}

std::optional<std::string> GitRepo::ref_target(const std::string& name) const {
  git_oid oid;
  int rc = git_reference_name_to_id(&oid, repo_, name.c_str());
  if (rc == GIT_ENOTFOUND) return std::nullopt;
  check(rc, "reference " + name);
  return oid_str(&oid);
}

std::map<std::string, std::string> GitRepo::refs_with_prefix(const std::string& prefix) const {
  std::map<std::string, std::string> out;
  git_reference_iterator* it = nullptr;
  check(git_reference_iterator_glob_new(&it, repo_, (prefix + "*").c_str()), "list " + prefix);
  git_reference* r = nullptr;
  while (git_reference_next(&r, it) == 0) {
    Reference ref(r);
    const git_oid* target = git_reference_target(r);
    out[git_reference_name(r)] = target ? oid_str(target) : std::string(git_reference_symbolic_target(r));
  }
  git_reference_iterator_free(it);
  return out;
}

std::vector<EditableFile> GitRepo::editable_files(const std::string& commit,
                                                  const EditablePaths& editable) const {
  Tree tree = commit_tree(repo_, commit);
  struct Walk {
    git_repository* repo;
    const EditablePaths* editable;
    std::vector<EditableFile> files;
    std::string error;
  } walk{repo_, &editable, {}, {}};
  auto cb = [](const char* root, const git_tree_entry* entry, void* payload) -> int {
    auto* w = static_cast<Walk*>(payload);
    if (git_tree_entry_type(entry) != GIT_OBJECT_BLOB) return 0;
    std::string path = std::string(root) + git_tree_entry_name(entry);
    if (!w->editable->contains(path)) return 0;
    git_blob* b = nullptr;
    if (git_blob_lookup(&b, w->repo, git_tree_entry_id(entry)) < 0) {
      w->error = path;
      return -1;
    }
    Blob blob(b);
    w->files.push_back({path, std::string(static_cast<const char*>(git_blob_rawcontent(b)),
                                          static_cast<size_t>(git_blob_rawsize(b)))});
    return 0;
  };
  int rc = git_tree_walk(tree.get(), GIT_TREEWALK_PRE, cb, &walk);
  if (!walk.error.empty()) throw GitError("cannot read " + walk.error + " in " + commit);
  check(rc, "walk tree of " + commit);
  return walk.files;
}

std::string GitRepo::diff(const std::string& parent, const std::string& commit) const {
  Tree a = commit_tree(repo_, parent);
  Tree b = commit_tree(repo_, commit);
  git_diff* d = nullptr;
  check(git_diff_tree_to_tree(&d, repo_, a.get(), b.get(), nullptr), "diff");
  Diff diff(d);
  git_buf buf = GIT_BUF_INIT;
  check(git_diff_to_buf(&buf, diff.get(), GIT_DIFF_FORMAT_PATCH), "format diff");
  std::string out(buf.ptr, buf.size);
  git_buf_dispose(&buf);
  return out;
}

std::vector<std::string> GitRepo::changed_paths(const std::string& parent, const std::string& commit) const {
  Tree a = commit_tree(repo_, parent);
  Tree b = commit_tree(repo_, commit);
  git_diff* d = nullptr;
  check(git_diff_tree_to_tree(&d, repo_, a.get(), b.get(), nullptr), "diff");
  Diff diff(d);
  check(git_diff_find_similar(diff.get(), nullptr), "find renames");
  std::vector<std::string> out;
  for (size_t i = 0; i < git_diff_num_deltas(diff.get()); ++i) {
    const git_diff_delta* delta = git_diff_get_delta(diff.get(), i);
    if (delta->old_file.path && delta->status != GIT_DELTA_ADDED) out.push_back(delta->old_file.path);
    if (delta->new_file.path && (out.empty() || out.back() != delta->new_file.path) &&
        delta->status != GIT_DELTA_DELETED)
      out.push_back(delta->new_file.path);
  }
  return out;
}

std::optional<GitRepo::Resolved> GitRepo::resolve(const std::string& rev) const {
  git_object* obj = nullptr;
  if (rev.empty() || git_revparse_single(&obj, repo_, rev.c_str()) < 0) return std::nullopt;
  Object object(obj);
  git_object* peeled = nullptr;
  if (git_object_peel(&peeled, object.get(), GIT_OBJECT_COMMIT) < 0) return std::nullopt;
  Commit c(reinterpret_cast<git_commit*>(peeled));
  Resolved r;
  r.commit = oid_str(git_commit_id(c.get()));
  if (git_commit_parentcount(c.get()) > 0) r.parent = oid_str(git_commit_parent_id(c.get(), 0));
  return r;
}

}  // namespace ard
