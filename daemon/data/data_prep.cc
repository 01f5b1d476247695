// See data_prep.h.
#include "daemon/data/data_prep.h"

#include <sstream>
#include <thread>

#include "daemon/data/data_inputs.h"
#include "daemon/exec/process_groups.h"
#include "daemon/exec/sandbox.h"
#include "daemon/fatal_error.h"

namespace ard {
namespace {

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// The last line of text that starts with prefix, without the prefix.
std::string last_line_with(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string found;
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) found = line.substr(prefix.size());
  return found;
}

std::string last_nonempty_line(const std::string& text) {
  std::istringstream in(text);
  std::string found;
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t\r") != std::string::npos) found = line;
  return found;
}

}  // namespace

std::string prepare_command(const Config& config) {
  std::string cmd = quote(config.data.prepare);
  for (const auto& t : config.data.train) cmd += " --train " + quote(input_path(config, t));
  for (const auto& v : config.data.val) cmd += " --val " + quote(input_path(config, v));
  cmd += " --field " + quote(config.data.field);
  cmd += " --cache " + quote(expand_home(config.data.cache));
  return cmd;
}

std::string prepare_data(const Config& config, const std::filesystem::path& worktree, const StateDir& state,
                         ProcessRunner& runner, Log& log, Store* store) {
  auto env = scrubbed_env(config.env_pass);
  // Runs one child, its group recorded in the store while it runs.
  auto run = [&](const ProcessSpec& spec, const std::string& what) {
    if (!store) return runner.run(spec, nullptr);
    GroupRecord record(*store, what);
    return runner.run(spec, std::ref(record));
  };
  // Both children run in the sandbox, like every build and stage: the worktree writable, the
  // repository and its .git out of sight, no network (the fetch is the daemon's own, before
  // this); prepare may write its cache, and reads its inputs (bound read-only).
  SandboxSpec box;
  box.worktree = worktree;
  box.scratch = state.root / "scratch" / "data";
  for (const auto& p : config.sandbox.read_only) box.system_read_only.push_back(p);
  box.network = config.sandbox.network;
  box.tmp_bytes = static_cast<uint64_t>(config.sandbox.tmp_mb) << 20;
  box.scratch_bytes = static_cast<uint64_t>(config.sandbox.scratch_mb) << 20;
  const bool boxed = config.sandbox.mode == SandboxMode::kBwrap;
  if (boxed) std::filesystem::create_directories(box.scratch);

  log("data: building the trainer at the branch tip");
  ProcessSpec build{config.build_command, worktree, env, state.logs() / "data-build.log", config.build_timeout_s};
  if (boxed) build.wrapper = sandbox_wrapper(box, build.command);
  ProcessResult b = run(build, "data-build");
  if (b.end == ProcessResult::End::kStopped) throw FatalError("stopped while building for the data step");
  if (!b.ok())
    throw FatalError("data: the base trainer does not build (" + b.describe() + "): " +
                     last_nonempty_line(file_tail(build.log, 20)) + " [log " + build.log.string() + "]");

  std::string cmd = prepare_command(config);
  log("data: " + cmd);
  ProcessSpec prep{cmd, worktree, env, state.logs() / "data-prepare.log", config.data.timeout_s};
  if (boxed) {
    const std::filesystem::path cache = std::filesystem::absolute(expand_home(config.data.cache));
    std::filesystem::create_directories(cache);
    box.extra_rw = {cache};
    auto readable = [&](const std::string& p) {
      const std::filesystem::path path = std::filesystem::absolute(p);
      if (path != cache && std::filesystem::exists(path)) box.read_only.push_back(path);
    };
    for (const auto& t : config.data.train) readable(input_path(config, t));
    for (const auto& v : config.data.val) readable(input_path(config, v));
    if (std::filesystem::path(config.data.prepare).is_absolute()) readable(config.data.prepare);
    prep.wrapper = sandbox_wrapper(box, prep.command);
  }
  ProcessResult p = run(prep, "prepare");
  std::string out = file_tail(prep.log, 200, 65536);
  if (p.end == ProcessResult::End::kStopped) throw FatalError("stopped while preparing the data");
  if (!p.ok())
    throw FatalError("data: prepare failed (" + p.describe() + "): " + last_nonempty_line(out));
  std::string dir = last_line_with(out, "data_dir: ");
  if (dir.empty()) throw FatalError("data: prepare printed no 'data_dir:' line [log " + prep.log.string() + "]");
  log("data: data_dir " + dir);
  return dir;
}

void DataStep::start(const Config& config, const std::filesystem::path& worktree, const StateDir& state, Log& log,
                     Store& store, std::function<void(std::function<void()>)> post,
                     std::function<void(const std::string& dir, const std::string& error)> done) {
  running_ = true;
  stop_ = std::make_unique<StopFlag>();
  std::thread([this, &config, worktree, &state, &log, &store, stop = stop_.get(), post = std::move(post),
               done = std::move(done)] {
    std::string dir, error;
    try {
      PosixProcessRunner runner(stop);
      dir = prepare_data(config, worktree, state, runner, log, &store);
    } catch (const std::exception& e) {
      error = e.what();
    }
    post([this, done, dir, error] {
      running_ = false;
      done(dir, error);
    });
  }).detach();
}

void DataStep::stop() {
  if (stop_) stop_->request();
}

}  // namespace ard
