// See cli.h. Each subcommand resolves the repo (--repo, else the git repo
// around the current directory) and its config, then does one thing.
#include "daemon/cli/cli.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/asio/post.hpp>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "daemon/cli/demo.h"
#include "daemon/cli/demo_repo.h"
#include "daemon/cli/doctor.h"
#include "daemon/cli/plot.h"
#include "daemon/cli/preflight.h"
#include "daemon/cli/report.h"
#include "daemon/config.h"
#include "daemon/data/data_inputs.h"
#include "daemon/data/data_prep.h"
#include "daemon/engine/engine.h"
#include "daemon/exec/hardening.h"
#include "daemon/exec/log_retention.h"
#include "daemon/exec/process_runner.h"
#include "daemon/exec/sandbox.h"
#include "daemon/fatal_error.h"
#include "daemon/git_repo.h"
#include "daemon/gpus.h"
#include "daemon/log.h"
#include "daemon/proposer_factory.h"
#include "daemon/util/text.h"
#include "daemon/serve/dashboard_server.h"
#include "daemon/sim_trainer.h"
#include "daemon/slurm/slurm_doctor.h"
#include "daemon/slurm/slurm_executor.h"
#include "daemon/store/state_dir.h"
#include "daemon/store/store.h"
#include "daemon/util/clock.h"

namespace ard {
namespace {

/// The stop request of `prepare` (the daemon's engine takes its signals
/// through its own event loop instead).
StopFlag* g_prepare_stop = nullptr;

extern "C" void on_prepare_stop_signal(int) {
  if (g_prepare_stop) g_prepare_stop->request();
}

void install_prepare_signal_handlers(StopFlag& stop) {
  g_prepare_stop = &stop;
  struct sigaction sa {};
  sa.sa_handler = on_prepare_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
}

struct Options {
  std::string repo;
  std::string config;
  std::string tag;
  bool rebase = false;  ///< start --rebase
};

/// What a command does when the repo it finds is a worktree inside a state
/// directory (<repo>/.autoresearchd/worktrees/<tag>): the commands that only
/// read or signal act on the real repo; those that would start work refuse,
/// naming it, rather than nest a second daemon with the default config.
enum class InStateDir { use_owner, refuse };

Config resolve(const Options& o, InStateDir in_state_dir = InStateDir::use_owner) {
  std::filesystem::path repo =
      o.repo.empty() ? discover_repo(std::filesystem::current_path()) : discover_repo(std::filesystem::absolute(o.repo));
  if (auto owner = state_dir_owner(repo)) {
    if (in_state_dir == InStateDir::refuse)
      throw FatalError(repo.string() + " is inside the daemon's state directory of " + owner->string() +
                       "; run it in " + owner->string() + " (or pass --repo " + owner->string() + ")");
    repo = *owner;
  }
  Config c = load_config(repo, o.config);
  if (!o.tag.empty()) {
    validate_tag(o.tag);
    c.tag = o.tag;
  }
  return c;
}

/// Where a detached daemon reports that it is up (or why it is not).
class ReadyPipe {
 public:
  explicit ReadyPipe(int fd) : fd_(fd) {}
  void send(const std::string& message) {
    if (fd_ < 0) return;
    std::string line = message + "\n";
    (void)!write(fd_, line.data(), line.size());
    close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

/// The daemon proper, in the foreground or in a detached child.
int run_daemon(const Config& config, bool detached, ReadyPipe& ready, bool rebase = false) {
  // Before anything reads the API key: no core file, no /proc/<pid>/environ for the user's other processes.
  if (std::string why = harden_process(); !why.empty()) throw FatalError("cannot harden the daemon: " + why);
  StateDir state(config.repo);
  state.create();
  auto lock = DaemonLock::acquire(state.pid_file());
  if (!lock) {
    auto pid = running_daemon(state.pid_file());
    throw FatalError("a daemon already runs on " + config.repo.string() + " (pid " +
                     std::to_string(pid.value_or(0)) + ")");
  }
  Log log(state.log_file(), !detached);
  if (auto pruned = prune_logs(state.logs(), config.logs.keep_days); !pruned.empty())
    log("pruned " + std::to_string(pruned.size()) + " stage logs older than [logs] keep_days");
  Store store(state.db().string());
  // "started" means the store takes writes: a lock held elsewhere fails the start, naming the file.
  store.check_writable();
  boost::asio::io_context io;
  LoopCallSink calls(io, store);
  // Failed LLM calls and retries, from the proposal threads, logged on the loop.
  std::unique_ptr<Proposer> proposer =
      make_proposer(config, calls, [&io, &log](const std::string& line) { boost::asio::post(io, [&log, line] { log(line); }); });
  const char* visible = getenv("CUDA_VISIBLE_DEVICES");
  // With Slurm the workers are job slots ("slurm:1", ...): the scheduler picks the GPUs.
  std::vector<std::string> gpus =
      config.executor == ExecutorKind::kSlurm
          ? slurm_workers(config.slurm.max_jobs)
          : resolve_gpus(config.gpus, visible ? std::optional<std::string>(visible) : std::nullopt,
                         config.gpus.empty() && !visible ? nvidia_smi_list() : std::nullopt);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  Engine engine(io, config, state, store, *proposer, log, gpus);  // takes SIGTERM and SIGINT from here on
  if (rebase) engine.rebase_at_start();
  // serve.enabled: the dashboard on the engine's loop, gone when the engine stops.
  std::unique_ptr<DashboardActions> dashboard_actions;
  std::unique_ptr<DashboardServer> dashboard;
  if (config.serve.enabled) {
    if (config.serve.allow_actions) dashboard_actions = make_daemon_actions(config);
    dashboard = std::make_unique<DashboardServer>(io, dashboard_settings(config), dashboard_actions.get());
    log("dashboard at " + dashboard->url());
  }
  ready.send("ok " + std::to_string(getpid()));
  int abandoned = 0;
  try {
    abandoned = engine.run();
  } catch (const LoggedFatalError&) {
    throw;  // its line is in the log already: written once
  } catch (const std::exception& e) {
    log.file_only(std::string("error: ") + e.what());  // main prints it to the terminal
    throw;
  }
  if (abandoned > 0) {
    // A proposer ignored the stop: its thread still uses the proposer, which
    // must not be destroyed under it. Everything recorded is committed.
    log(std::to_string(abandoned) + " proposal thread(s) did not stop in time; exiting without them");
    std::_Exit(0);
  }
  return 0;
}

/// Downloads report on stderr: a bar on a terminal, plain lines otherwise.
FetchOptions terminal_fetch_options() {
  FetchOptions f;
  f.progress = &std::cerr;
  f.tty = isatty(STDERR_FILENO) == 1;
  return f;
}

int cmd_start(const Options& o, bool detach) {
  PosixProcessRunner probe_runner;
  // Before anything is built or detached: the doctor's checks and the fetch.
  Config config = preflight(resolve(o, InStateDir::refuse), probe_runner, terminal_fetch_options());
  if (auto why = sandbox_start_refusal(config.sandbox.mode)) throw FatalError(*why);
  if (!detach) {
    ReadyPipe none(-1);
    return run_daemon(config, false, none, o.rebase);
  }
  StateDir state(config.repo);
  state.create();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw FatalError("pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw FatalError("fork failed");
  if (pid == 0) {
    close(fds[0]);
    setsid();
    int null_fd = open("/dev/null", O_RDONLY);
    int log_fd = open_owner_only(state.log_file(), O_WRONLY | O_APPEND);
    if (null_fd >= 0) dup2(null_fd, 0);
    if (log_fd >= 0) {
      dup2(log_fd, 1);
      dup2(log_fd, 2);
    }
    ReadyPipe ready(fds[1]);
    int rc = 1;
    try {
      rc = run_daemon(config, true, ready, o.rebase);
    } catch (const std::exception& e) {
      ready.send(std::string("error: ") + e.what());
    }
    _exit(rc);
  }
  close(fds[1]);
  std::string message;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) message.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  if (message.rfind("ok ", 0) == 0) {
    std::cout << "autoresearchd: started, pid " << message.substr(3, message.find('\n') - 3) << ", log "
              << state.log_file().string() << "\n";
    return 0;
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (!message.empty() && message.back() == '\n') message.pop_back();
  std::cerr << "autoresearchd: " << (message.empty() ? "error: the daemon exited before it started" : message)
            << "\n";
  return 1;
}

struct DemoOptions {
  std::string dir;          ///< --dir: where the repo goes (default: a new temp dir)
  int port = 0;             ///< --port: the dashboard's (default: a free one)
  int stop_after_kept = 0;  ///< --stop-after-kept N: stop once N candidates are kept
  double timeout_s = 0;     ///< --timeout S: stop after S seconds
};

/// `demo`: a throwaway repo with the simulated trainer and a scripted night
/// (demo_repo.h), then the real daemon on it in the foreground, as `start`
/// runs it, with the dashboard; the watch (demo.h) reports and may stop it.
int cmd_demo(const DemoOptions& d) {
  const double started_at = now_seconds();
  std::error_code ec;
  const std::filesystem::path daemon = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw FatalError("cannot find this program's path (/proc/self/exe): " + ec.message());
  std::filesystem::path dir = d.dir;
  if (dir.empty()) {
    auto made = make_demo_dir();
    if (auto* why = std::get_if<std::string>(&made)) throw FatalError(*why);
    dir = std::get<std::filesystem::path>(made);
  }
  const int port = d.port > 0 ? d.port : free_loopback_port();
  if (port <= 0) throw FatalError("no free port on 127.0.0.1 for the dashboard");
  // The sandbox when bwrap works here; otherwise the demo still runs, and says why not.
  const std::optional<std::string> no_sandbox = sandbox_unavailable();
  auto made = make_demo_repo({dir, daemon, port, !no_sandbox});
  if (auto* why = std::get_if<std::string>(&made)) throw FatalError("demo: " + *why);
  const DemoRepo& repo = std::get<DemoRepo>(made);
  std::cout << demo_banner(repo, daemon, port, !no_sandbox, no_sandbox.value_or("")) << std::flush;

  Options o;
  o.repo = repo.root.string();
  PosixProcessRunner probe_runner;
  Config config = preflight(resolve(o, InStateDir::refuse), probe_runner, terminal_fetch_options());
  if (auto why = sandbox_start_refusal(config.sandbox.mode)) throw FatalError(*why);
  DemoWatch watch(repo, daemon, config.tag, started_at, d.stop_after_kept, d.timeout_s, std::cout);
  ReadyPipe none(-1);
  run_daemon(config, false, none);
  watch.finish();
  std::cout << demo_farewell(repo, daemon, watch.kept(), watch.first_keep_s()) << std::flush;
  if (d.stop_after_kept > 0 && watch.kept() < d.stop_after_kept)
    throw FatalError("demo: " + std::to_string(watch.kept()) + " candidates kept, not the " +
                     std::to_string(d.stop_after_kept) + " of --stop-after-kept" +
                     (watch.timed_out() ? " within --timeout " + std::to_string(static_cast<int64_t>(d.timeout_s)) + " s"
                                        : std::string()));
  return 0;
}

int cmd_stop(const Options& o, double timeout_s) {
  Config config = resolve(o);
  StateDir state(config.repo);
  auto pid = running_daemon(state.pid_file());
  if (!pid || *pid <= 0) {
    std::cerr << "autoresearchd: no daemon is running on " << config.repo.string() << "\n";
    return 1;
  }
  // What the daemon logs from now on is what it waits for: `stop` says so as it happens.
  std::error_code ec;
  std::uintmax_t log_at = std::filesystem::file_size(state.log_file(), ec);
  if (ec) log_at = 0;
  if (kill(*pid, SIGTERM) != 0) throw FatalError("cannot signal pid " + std::to_string(*pid));
  std::cout << "autoresearchd: stopping pid " << *pid << " (at most " << static_cast<int>(timeout_s) << " s)\n"
            << std::flush;
  auto echo_log = [&] {
    std::ifstream in(state.log_file(), std::ios::binary);
    if (!in || !in.seekg(static_cast<std::streamoff>(log_at))) return;
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t end = text.rfind('\n');
    if (end == std::string::npos) return;
    std::istringstream lines(text.substr(0, end + 1));
    for (std::string line; std::getline(lines, line);) std::cout << "autoresearchd: daemon: " << line << "\n";
    std::cout << std::flush;
    log_at += end + 1;
  };
  auto t0 = std::chrono::steady_clock::now();
  while (running_daemon(state.pid_file())) {
    echo_log();
    if (std::chrono::steady_clock::now() - t0 > std::chrono::duration<double>(timeout_s))
      throw FatalError("the daemon (pid " + std::to_string(*pid) + ") did not stop within " +
                       std::to_string(static_cast<int>(timeout_s)) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  echo_log();
  std::cout << "autoresearchd: stopped (pid " << *pid << ")\n";
  return 0;
}

int cmd_status(const Options& o) {
  Config config = resolve(o);
  StateDir state(config.repo);
  auto pid = running_daemon(state.pid_file());
  if (std::string warning = sandbox_off_warning(config.sandbox.mode); !warning.empty()) std::cout << warning << "\n";
  if (!std::filesystem::exists(state.db())) {
    std::cout << "autoresearchd: " << (pid ? "starting" : "not running") << "; no results yet in "
              << config.repo.string() << "\n";
    return 0;
  }
  Store store(state.db().string());
  // A daemon starting on its tag may not have recorded it yet: only then is an unknown tag no error.
  // Nor is a tag that has only the ideas or tries queued for its first start.
  if (!(pid && o.tag.empty()) && store.ideas(config.tag).empty() && store.tries(config.tag).empty())
    if (auto unknown = unknown_tag(store, config.tag)) throw FatalError(*unknown);
  std::cout << render_status(store, config.tag, pid, now_seconds(), {config.noise.prior_sigma, config.noise.z},
                             {config.metric, config.goal}, ladder_settings(config));
  return 0;
}

int cmd_show(const Options& o, int64_t id) {
  Config config = resolve(o);
  StateDir state(config.repo);
  if (!std::filesystem::exists(state.db())) throw FatalError("no results yet in " + config.repo.string());
  Store store(state.db().string());
  auto text = render_show(store, id, state.logs(), ladder_settings(config));
  if (!text) throw FatalError("no experiment #" + std::to_string(id));
  std::cout << *text;
  return 0;
}

int cmd_idea(const Options& o, const std::string& text) {
  Config config = resolve(o);
  const std::string idea = checked_idea_text(text);
  StateDir state(config.repo);
  state.create();
  Store store(state.db().string());
  const int64_t id = store.add_idea(config.tag, idea, "cli");
  std::cout << "idea " << id << " queued for tag " << config.tag
            << ": the next proposal is asked to try it (`autoresearchd status` shows what became of it)\n";
  return 0;
}

int cmd_try(const Options& o, const std::string& rev) {
  Config config = resolve(o);
  GitRepo repo(config.repo);
  const auto r = repo.resolve(rev);
  if (!r) throw FatalError("try: '" + rev + "' names no commit of " + config.repo.string());
  if (std::string why = try_refusal(repo, EditablePaths(config.editable), r->commit, r->parent); !why.empty())
    throw FatalError("try: " + short_commit(r->commit) + " cannot be tried: " + why);
  StateDir state(config.repo);
  state.create();
  Store store(state.db().string());
  for (const auto& t : store.tries(config.tag))
    if (t.commit == r->commit)
      throw FatalError("try: " + short_commit(r->commit) + " is try " + std::to_string(t.id) + " of tag " + config.tag +
                       " already");
  const std::string what = repo.summary(r->commit);
  const int64_t id = store.add_try(config.tag, r->commit, r->parent, what);
  std::cout << "try " << id << " queued for tag " << config.tag << ": " << short_commit(r->commit) << " " << what
            << "; the next experiment builds and measures it (`autoresearchd status` shows what became of it)\n";
  return 0;
}

int cmd_promote(const Options& o) {
  Config config = resolve(o);
  if (config.rungs.size() < 2) throw FatalError("promote: the config has no rung above 0 ([[rung]] tables) to promote to");
  if (config.promote.max_share <= 0) throw FatalError("promote: promote.max_share is 0, which turns promotion rounds off");
  StateDir state(config.repo);
  state.create();
  Store store(state.db().string());
  for (const auto& r : store.promotion_rounds(config.tag))
    if (!r.ended_at)
      throw FatalError("promote: round " + std::to_string(r.id) + " of tag " + config.tag +
                       (r.started_at ? " is in progress" : " is asked for already"));
  const int64_t id = store.request_promotion(config.tag);
  std::cout << "promotion round " << id << " asked for tag " << config.tag
            << ": it starts at the next run's end, once a kept change is not yet promoted and the GPU time at rungs "
               "above 0 is under promote.max_share (`autoresearchd status` shows it)\n";
  return 0;
}

int cmd_export(const Options& o) {
  Config config = resolve(o);
  StateDir state(config.repo);
  if (!std::filesystem::exists(state.db())) throw FatalError("no results yet in " + config.repo.string());
  Store store(state.db().string());
  if (auto unknown = unknown_tag(store, config.tag)) throw FatalError(*unknown);
  std::cout << render_tsv(store, config.tag);
  return 0;
}

int cmd_prepare(const Options& o) {
  Config config = fetch_missing_inputs(resolve(o, InStateDir::refuse), terminal_fetch_options());
  if (!config.data.enabled) throw ConfigError("data.enabled: the data step is disabled in this config");
  StateDir state(config.repo);
  state.create();
  auto lock = DaemonLock::acquire(state.pid_file());
  if (!lock) throw FatalError("a daemon runs on this repo; it prepares the data itself at start");
  Log log(state.log_file(), true);
  GitRepo repo(config.repo);
  repo.exclude("/.autoresearchd/");
  std::string tip = repo.ref_target("refs/heads/autoresearch/" + config.tag).value_or(repo.head());
  auto worktree = repo.open_detached_worktree(config.tag, state.worktree(config.tag), tip, SlotKeep{{config.build_dir}});
  StopFlag stop;
  install_prepare_signal_handlers(stop);
  PosixProcessRunner runner(&stop);
  std::cout << prepare_data(config, worktree->workdir(), state, runner, log) << "\n";
  return 0;
}

/// The dashboard in the foreground until SIGINT or SIGTERM.
int cmd_serve(const Options& o, const std::string& bind, int port) {
  Config config = resolve(o);
  if (!bind.empty()) config.serve.bind = bind;
  if (port >= 0) config.serve.port = port;
  std::unique_ptr<DashboardActions> actions;
  if (config.serve.allow_actions) actions = make_daemon_actions(config);
  boost::asio::io_context io;
  DashboardServer server(io, dashboard_settings(config), actions.get());
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) {
    server.close();
    io.stop();
  });
  signal(SIGPIPE, SIG_IGN);
  std::cout << "autoresearchd: serving tag " << config.tag << " at " << server.url() << std::endl;
  io.run();
  return 0;
}

/// plot's file when --out is not given: in the current directory.
constexpr const char* kDefaultPlot = "plot.svg";

int cmd_plot(const Options& o, const std::string& out, bool by_time) {
  Config config = resolve(o);
  StateDir state(config.repo);
  if (!std::filesystem::exists(state.db())) throw FatalError("no results yet in " + config.repo.string());
  auto store = Store::open_read_only(state.db().string());
  if (auto unknown = unknown_tag(*store, config.tag)) throw FatalError(*unknown);
  const std::string file = out.empty() ? kDefaultPlot : out;
  write_plot(*store, config.tag, file, by_time, MetricSpec{config.metric, config.goal});
  std::cout << "autoresearchd: wrote " << file
            << (out.empty() ? " in the current directory (the default; --out FILE.png or FILE.svg writes another)" : "")
            << "\n";
  return 0;
}

int cmd_doctor(const Options& o) {
  Config config = resolve(o);
  PosixProcessRunner runner;
  std::vector<Check> checks = run_checks(config, runner);
  Probe probe(config, runner);
  checks.push_back(check_slurm(config, probe));  // doctor's alone: it waits for a job
  return print_checks(checks, std::cout);
}

int cmd_data_fetch(const Options& o, int shards) {
  Config config = resolve(o);
  FetchPlan plan = data_fetch_plan(config, shards);
  fetch_plan(plan, terminal_fetch_options());
  std::cout << "data fetch: " << plan.train.size() << " train and " << plan.val.size() << " val files in "
            << plan.train.front().dest.parent_path().string() << "\n";
  return 0;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"autoresearchd: runs training experiments on a research repo around the clock and keeps the\n"
               "edits that improve its metric (summary.goal: lower val_bpb by default). State lives in\n"
               "<repo>/.autoresearchd/."};
  app.require_subcommand(1);
  Options o;
  auto common = [&](CLI::App* sub, bool with_tag) {
    sub->add_option("--repo", o.repo, "research repo (default: the git repo around the current directory)");
    sub->add_option("--config", o.config, "config file (default: <repo>/autoresearch.toml)");
    if (with_tag) sub->add_option("--tag", o.tag, "run tag: branch autoresearch/<tag> (default: the config's tag)");
  };
  bool detach = false;
  double stop_timeout = 120;
  int64_t show_id = 0;
  bool tsv = false;

  CLI::App* start = app.add_subcommand("start", "run the experiment loop until stopped");
  common(start, true);
  start->add_flag("--detach", detach, "run in the background (log in .autoresearchd/daemon.log)");
  start->add_flag("--rebase", o.rebase,
                  "move the tag's kept changes onto your checkout's HEAD (your newer commits) and measure a new baseline "
                  "there");
  CLI::App* stop = app.add_subcommand("stop", "stop the running daemon cleanly");
  common(stop, false);
  stop->add_option("--timeout", stop_timeout, "seconds to wait for it to exit")->check(CLI::PositiveNumber);
  CLI::App* status = app.add_subcommand("status", "history, best result, throughput and what runs now");
  common(status, true);
  CLI::App* show = app.add_subcommand("show", "one experiment in full");
  common(show, false);
  show->add_option("ID", show_id, "experiment id")->required()->check(CLI::PositiveNumber);
  std::string idea_text;
  std::string try_rev;
  CLI::App* try_cmd = app.add_subcommand(
      "try", "put a commit of your checkout through the keep rule as if it were a proposal (re-applied onto the best)");
  common(try_cmd, true);
  try_cmd->add_option("REV", try_rev, "the commit: an id, a branch, HEAD~1, ...")->required();
  CLI::App* idea = app.add_subcommand("idea", "queue an idea: the next proposal is asked to try it");
  common(idea, true);
  idea->add_option("TEXT", idea_text, "the idea, in a sentence or a paragraph")->required();
  CLI::App* promote = app.add_subcommand(
      "promote", "ask for a promotion round now: the best's kept changes run again at the next rung ([[rung]])");
  common(promote, true);
  CLI::App* exp = app.add_subcommand("export", "the history in results.tsv format");
  common(exp, true);
  // TSV is the only format: --tsv is accepted, not required.
  exp->add_flag("--tsv", tsv, "tab-separated: commit, val_bpb, memory_gb, status, description (the only format)");
  CLI::App* prepare = app.add_subcommand("prepare", "build the trainer and prepare the data; print its data_dir");
  common(prepare, true);
  std::string serve_bind;
  int serve_port = -1;
  CLI::App* serve = app.add_subcommand("serve", "the dashboard and its JSON API over HTTP, read-only on the store");
  common(serve, true);
  serve->add_option("--bind", serve_bind, "address to listen on (default: serve.bind, 127.0.0.1)");
  serve->add_option("--port", serve_port, "port (default: serve.port, 8765; 0 picks a free one)")->check(CLI::Range(0, 65535));
  std::string plot_out;
  bool plot_by_time = false;
  CLI::App* plot = app.add_subcommand("plot", "draw the progress chart into a PNG or SVG file (gnuplot)");
  common(plot, true);
  plot->add_option("--out", plot_out, "progress.png or progress.svg (default: plot.svg in the current directory)");
  plot->add_flag("--by-time", plot_by_time, "x by hours since the first experiment instead of its number");
  CLI::App* doctor = app.add_subcommand("doctor", "check the GPU, toolchain, disk, data, sandbox and LLM settings");
  common(doctor, false);
  int shards = 0;
  CLI::App* data = app.add_subcommand("data", "the training data");
  data->require_subcommand(1);
  CLI::App* fetch = data->add_subcommand("fetch", "download the data sources (data.sources) into the data cache");
  common(fetch, false);
  fetch->add_option("--shards", shards, "train files to fetch (default: data.shards)")->check(CLI::PositiveNumber);

  DemoOptions demo_options;
  CLI::App* demo = app.add_subcommand(
      "demo", "a night of research in a minute, no GPU needed: a throwaway repo with a simulated trainer and a "
              "scripted proposer, the daemon and its dashboard");
  demo->add_option("--dir", demo_options.dir, "where the demo's repo goes: absent or empty (default: a new temp dir)");
  demo->add_option("--port", demo_options.port, "the dashboard's port on 127.0.0.1 (default: a free one)")
      ->check(CLI::Range(1, 65535));
  demo->add_option("--stop-after-kept", demo_options.stop_after_kept,
                   "stop once N candidates are kept (exit 1 if the daemon stops before)")
      ->check(CLI::PositiveNumber);
  demo->add_option("--timeout", demo_options.timeout_s, "stop after S seconds")->check(CLI::PositiveNumber);

  // The simulated trainer (sim_trainer.h), which the demo's stages run: hidden,
  // and its words are its own, so it is dispatched before CLI11 sees them.
  if (argc >= 2 && std::string(argv[1]) == "sim-trainer")
    return sim_trainer_main(std::vector<std::string>(argv + 2, argv + argc), std::cout, std::cerr);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::string msg = e.what();
    for (char& c : msg)
      if (c == '\n') c = ' ';
    std::cerr << "autoresearchd: error: " << msg << " (see autoresearchd --help)\n";
    return 2;
  }

  GitLibrary git;
  try {
    if (*start) return cmd_start(o, detach);
    if (*stop) return cmd_stop(o, stop_timeout);
    if (*status) return cmd_status(o);
    if (*show) return cmd_show(o, show_id);
    if (*exp) return cmd_export(o);
    if (*idea) return cmd_idea(o, idea_text);
    if (*try_cmd) return cmd_try(o, try_rev);
    if (*promote) return cmd_promote(o);
    if (*prepare) return cmd_prepare(o);
    if (*serve) return cmd_serve(o, serve_bind, serve_port);
    if (*plot) return cmd_plot(o, plot_out, plot_by_time);
    if (*doctor) return cmd_doctor(o);
    if (*fetch) return cmd_data_fetch(o, shards);
    if (*demo) return cmd_demo(demo_options);
  } catch (const std::exception& e) {
    std::cerr << "autoresearchd: error: " << e.what() << "\n";
    return 1;
  }
  return 2;
}

}  // namespace ard
