// See slurm_client.h.
#include "daemon/slurm/slurm_client.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "daemon/exec/child_process.h"

namespace ard {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string job_script(const JobScriptSpec& spec) {
  std::ostringstream s;
  const std::string exit_file = shell_quote(spec.exit_file.string());
  const std::string exit_tmp = shell_quote(spec.exit_file.string() + ".tmp");
  s << "#!/bin/sh\n"
    << "# autoresearchd: " << spec.title << "\n"
    << "node=\"${SLURMD_NODENAME:-$(hostname)}\"\n"
    << "echo \"autoresearchd: job ${SLURM_JOB_ID:-?} on $node (restart ${SLURM_RESTART_COUNT:-0})\"\n"
    << "finish() { echo \"$1 $node\" > " << exit_tmp << " && mv " << exit_tmp << " " << exit_file << "; exit \"$1\"; }\n"
    // Each stage runs in a session of its own; a TERM (scancel, a time limit,
    // preemption) kills that whole session, and its first process by pid (it
    // may not have made its session yet), before the script exits, so nothing
    // of a stage that ignores TERM outlives the job, whatever Slurm's
    // proctrack. `starting` and `prev` cover a TERM that lands between the
    // fork of a stage and `stage_pid=$!`. A stage's session is killed when
    // its first process ends too (as a sandboxed local stage's is), and
    // `last` keeps the session of the stage that just ended, so a TERM that
    // lands while the script moves on from it still waits for it: the shell
    // may run the trap only after `wait` has returned (the same TERM ended
    // the stage's shell while a process of it that ignores TERM lives on).
    // The trap waits (at most 5 s) until no live process is left in the
    // session, then writes "signalled <node>" to the exit file: the daemon's
    // sign that the job left nothing behind.
    << "stage_pid= starting= prev= last=\n"
    << "stop_stage() {\n"
    << "  p=$stage_pid\n"
    << "  if [ -z \"$p\" ] && [ -n \"$starting\" ] && [ \"$!\" != \"$prev\" ]; then p=$!; fi\n"
    << "  if [ -n \"$p\" ]; then kill -9 \"-$p\" \"$p\" 2>/dev/null; wait \"$p\" 2>/dev/null; fi\n"
    << "  for s in $p $last; do\n"
    << "    n=0\n"
    << "    while [ $n -lt 50 ] && ps -o stat= -s \"$s\" 2>/dev/null | grep -qv '^Z'; do\n"
    << "      kill -9 \"-$s\" 2>/dev/null; sleep 0.1; n=$((n+1))\n"
    << "    done\n"
    << "  done\n"
    << "  echo \"autoresearchd: job signalled\"\n"
    << "  echo \"signalled $node\" > " << exit_tmp << " && mv " << exit_tmp << " " << exit_file << "\n"
    << "  exit 143\n"
    << "}\n"
    << "trap stop_stage TERM INT\n"
    << "rm -f " << exit_file << "\n"
    << "cd " << shell_quote(spec.worktree.string())
    << " || { echo 'autoresearchd: the worktree is not on this node (a shared filesystem is needed)'; finish 70; }\n";
  for (const auto& st : spec.stages) {
    s << "echo " << shell_quote("autoresearchd: stage " + st.name) << "\n"
      << "prev=$!; starting=1; setsid /bin/sh -c " << shell_quote(st.command) << " &\n"
      << "stage_pid=$!; starting=; wait \"$stage_pid\"; rc=$?\n"
      << "last=$stage_pid; stage_pid=; kill -9 \"-$last\" 2>/dev/null\n"
      << "if [ $rc -ne 0 ]; then echo \"autoresearchd: stage " << st.name
      << " exit $rc\"; finish $rc; fi\n";
  }
  s << "finish 0\n";
  return s.str();
}

std::string last_job_stage(const std::string& output) {
  static const std::string kMark = "autoresearchd: stage ";
  std::istringstream in(output);
  std::string last;
  for (std::string line; std::getline(in, line);)
    if (line.rfind(kMark, 0) == 0) last = line.substr(kMark.size(), line.find(' ', kMark.size()) - kMark.size());
  return last;
}

std::vector<std::string> sbatch_argv(const SubmitSpec& spec, const SlurmConfig& slurm) {
  std::vector<std::string> argv = {"sbatch", "--parsable", "--job-name=" + spec.name,
                                   "--output=" + spec.output.string(), "--open-mode=append",
                                   "--chdir=" + spec.workdir.string()};
  if (spec.time_minutes > 0) argv.push_back("--time=" + std::to_string(spec.time_minutes));
  if (!slurm.partition.empty()) argv.push_back("--partition=" + slurm.partition);
  if (!slurm.account.empty()) argv.push_back("--account=" + slurm.account);
  if (!slurm.gres.empty()) argv.push_back("--gres=" + slurm.gres);
  argv.insert(argv.end(), slurm.extra_args.begin(), slurm.extra_args.end());
  argv.push_back(spec.script.string());
  return argv;
}

int time_limit_minutes(double timeout_s) { return static_cast<int>(std::ceil(std::max(0.0, timeout_s) / 60)) + 1; }

std::string job_query_command(const std::vector<std::string>& ids) {
  std::string cmd;
  for (const auto& id : ids)
    cmd += "echo '@job " + id + "'; scontrol show job -o " + shell_quote(id) + " 2>&1; ";
  return cmd + "true";
}

JobQuery parse_job_query(const std::string& output) {
  JobQuery q;
  std::istringstream in(output);
  std::string current;  // a job whose section says neither: the controller did not answer
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("@job ", 0) == 0) {
      current = line.substr(5);
      continue;
    }
    if (current.empty()) continue;
    if (line.find("Invalid job id specified") != std::string::npos) {
      q.gone.insert(current);
      continue;
    }
    for (auto& [id, info] : parse_scontrol_jobs(line))
      if (id == current) q.known[id] = info;
  }
  return q;
}

std::vector<std::string> slurm_env(std::vector<std::string> env) {
  if (const char* conf = std::getenv("SLURM_CONF")) {
    bool present = false;
    for (const auto& e : env) present = present || e.rfind("SLURM_CONF=", 0) == 0;
    if (!present) env.push_back(std::string("SLURM_CONF=") + conf);
  }
  return env;
}

struct SlurmClient::Impl {
  boost::asio::io_context& io;
  std::vector<std::string> env;
  std::filesystem::path scratch;
  uint64_t next = 0;
  std::map<uint64_t, std::shared_ptr<ChildProcess>> running;
  Impl(boost::asio::io_context& io, std::vector<std::string> env, std::filesystem::path scratch)
      : io(io), env(std::move(env)), scratch(std::move(scratch)) {}
};

SlurmClient::SlurmClient(boost::asio::io_context& io, std::vector<std::string> env, std::filesystem::path scratch)
    : impl_(std::make_shared<Impl>(io, std::move(env), std::move(scratch))) {
  std::filesystem::create_directories(impl_->scratch);
}

SlurmClient::~SlurmClient() {
  for (auto& [n, child] : impl_->running) child->stop();
}

void SlurmClient::run(const std::vector<std::string>& argv, Done done, double timeout_s) {
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + shell_quote(a);
  run_shell(cmd, std::move(done), timeout_s);
}

void SlurmClient::run_shell(const std::string& command, Done done, double timeout_s) {
  const uint64_t n = ++impl_->next;
  ChildSpec spec;
  spec.command = command;
  spec.cwd = impl_->scratch;
  spec.env = impl_->env;
  spec.log = impl_->scratch / ("cmd-" + std::to_string(n) + ".out");
  spec.timeout_s = timeout_s;
  std::weak_ptr<Impl> weak = impl_;
  auto child = ChildProcess::start(impl_->io, spec, nullptr, [weak, n, log = spec.log, done](const ProcessResult& r) {
    CommandReply reply;
    reply.ok = r.ok();
    reply.describe = r.end == ProcessResult::End::kSpawnFailed ? r.error : r.describe();
    std::ifstream in(log, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    reply.output = ss.str();
    std::error_code ec;
    std::filesystem::remove(log, ec);
    if (auto impl = weak.lock()) impl->running.erase(n);
    done(reply);
  });
  impl_->running[n] = child;
}

void SlurmClient::submit(const SubmitSpec& spec, const SlurmConfig& slurm,
                         std::function<void(std::optional<std::string>, const std::string&)> done) {
  run(sbatch_argv(spec, slurm), [done](const CommandReply& r) {
    auto id = r.ok ? parse_sbatch_output(r.output) : std::nullopt;
    if (id) return done(id, "");
    std::string line = r.output.substr(0, r.output.find('\n'));
    done(std::nullopt, "sbatch failed (" + r.describe + ")" + (line.empty() ? "" : ": " + line));
  });
}

void SlurmClient::query(const std::vector<std::string>& ids,
                        std::function<void(const JobQuery&, const CommandReply&)> done) {
  run_shell(job_query_command(ids), [done](const CommandReply& r) { done(parse_job_query(r.output), r); });
}

void SlurmClient::cancel(const std::vector<std::string>& ids, Done done) {
  std::vector<std::string> argv = {"scancel"};
  argv.insert(argv.end(), ids.begin(), ids.end());
  run(argv, std::move(done));
}

}  // namespace ard
