// See demo.h.
#include "daemon/cli/demo.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

#include "daemon/store/store.h"

namespace ard {
namespace {

namespace fs = std::filesystem;

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string fixed1(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  return buf;
}

std::string repo_flag(const DemoRepo& repo) { return " --repo " + repo.root.string(); }

}  // namespace

std::variant<fs::path, std::string> make_demo_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp ? tmp : "/tmp";
  std::string pattern = base + "/autoresearchd-demo-XXXXXX";
  if (!mkdtemp(pattern.data())) return "cannot make a directory under " + base;
  return fs::path(pattern);
}

int free_loopback_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

std::string demo_banner(const DemoRepo& repo, const fs::path& daemon, int port, bool sandbox,
                        const std::string& sandbox_off_why) {
  int gains = 0, none = 0, worse = 0, broken = 0;
  for (const auto& c : demo_candidates()) {
    if (c.build_error) ++broken;
    else if (c.effect > 0) ++gains;
    else if (c.effect < 0) ++worse;
    else ++none;
  }
  const std::string d = daemon.string();
  std::ostringstream s;
  s << "autoresearchd demo: a night of research on a simulated trainer, in about a minute\n"
    << "  repo:      " << repo.root.string() << " (a throwaway git repo: trainer/train.sim, night.json, autoresearch.toml)\n"
    << "  trainer:   simulated (" << d << " sim-trainer): no GPU, 0.3 s a run, val_bpb noise 0.0015\n"
    << "  proposer:  scripted, " << repo.candidates << " candidates with known true effects (" << gains << " gains, "
    << none << " without effect, " << worse << " regressions, " << broken << " that does not build)\n"
    << "  sandbox:   " << (sandbox ? "bwrap" : "off (" + sandbox_off_why + ")") << "\n"
    << "  dashboard: http://127.0.0.1:" << port << "/\n"
    << "\n"
    << "While it runs, in another terminal:\n"
    << "  " << d << " status" << repo_flag(repo) << "\n"
    << "  " << d << " show N" << repo_flag(repo) << "     (N: an experiment's id from status)\n"
    << "  " << d << " export" << repo_flag(repo) << "\n"
    << "Ctrl-C stops the daemon cleanly; the repo stays, for status, show and serve.\n"
    << "\n";
  return s.str();
}

std::string demo_farewell(const DemoRepo& repo, const fs::path& daemon, int kept, std::optional<double> first_keep_s) {
  const std::string d = daemon.string();
  std::ostringstream s;
  s << "\nautoresearchd demo: stopped; " << kept << " of the " << repo.candidates << " candidates kept";
  if (first_keep_s) s << " (the first after " << fixed1(*first_keep_s) << " s)";
  s << ".\n"
    << "  " << d << " status" << repo_flag(repo) << "\n"
    << "  " << d << " serve" << repo_flag(repo) << "     (the dashboard again)\n"
    << "  rm -rf " << repo.root.string() << "     (when you are done with it)\n";
  return s.str();
}

DemoWatch::DemoWatch(const DemoRepo& repo, fs::path daemon, std::string tag, double started_at, int stop_after_kept,
                     double timeout_s, std::ostream& out)
    : repo_(repo),
      daemon_(std::move(daemon)),
      tag_(std::move(tag)),
      started_at_(started_at),
      stop_after_kept_(stop_after_kept),
      timeout_s_(timeout_s),
      out_(out) {
  thread_ = std::thread([this] { loop(); });
}

DemoWatch::~DemoWatch() { finish(); }

void DemoWatch::finish() {
  done_ = true;
  if (thread_.joinable()) thread_.join();
}

void DemoWatch::loop() {
  while (!done_) {
    look();
    // Not before the engine has recorded something: until then its signal_set
    // may not be there to take the SIGTERM, which would kill the process outright.
    if (timeout_s_ > 0 && !stop_sent_ && engine_seen_ && wall_now() - started_at_ >= timeout_s_) {
      timed_out_ = true;
      stop_sent_ = true;
      out_ << "autoresearchd demo: --timeout " << fixed1(timeout_s_) << " s reached; stopping" << std::endl;
      kill(getpid(), SIGTERM);
    }
    for (int i = 0; i < 4 && !done_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  look();  // what the daemon recorded last
}

void DemoWatch::look() {
  const fs::path db = repo_.root / ".autoresearchd/results.db";
  std::error_code ec;
  if (!fs::exists(db, ec)) return;
  std::vector<ExperimentRow> rows;
  try {
    rows = Store::open_read_only(db.string())->experiments(tag_);
  } catch (const std::exception&) {
    return;  // busy or being created: the next look
  }
  if (!rows.empty()) engine_seen_ = true;
  int kept = 0;
  const ExperimentRow* first = nullptr;
  std::set<std::string> finished;
  for (const auto& r : rows) {
    if (r.is_baseline) continue;
    if (r.state == "kept") {
      ++kept;
      if (!first) first = &r;
    }
    if (is_final_state(r.state)) finished.insert(r.description);
  }
  if (first && first_keep_s_ < 0) {
    first_keep_s_ = first->ended_at.value_or(wall_now()) - started_at_;
    out_ << "autoresearchd demo: #" << first->id << " kept after " << fixed1(first_keep_s_) << " s: "
         << first->description << "\n  see it: " << daemon_.string() << " show " << first->id << repo_flag(repo_)
         << std::endl;
  }
  kept_ = kept;
  if (!night_over_) {
    size_t done = 0;
    for (const auto& c : demo_candidates())
      for (const auto& d : finished)
        if (d.rfind(c.knob + " ", 0) == 0) {
          ++done;
          break;
        }
    if (done == demo_candidates().size()) {
      night_over_ = true;
      out_ << "autoresearchd demo: the night is over: " << kept << " of " << repo_.candidates
           << " candidates kept; the dashboard stays up until Ctrl-C" << std::endl;
    }
  }
  if (stop_after_kept_ > 0 && kept >= stop_after_kept_ && !stop_sent_) {
    stop_sent_ = true;
    out_ << "autoresearchd demo: " << kept << " kept (--stop-after-kept " << stop_after_kept_ << "); stopping"
         << std::endl;
    kill(getpid(), SIGTERM);
  }
}

}  // namespace ard
