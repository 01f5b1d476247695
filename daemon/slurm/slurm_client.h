// Slurm's commands run on the daemon's event loop: sbatch, scontrol, scancel,
// each a child process (child_process.h) whose output is captured and handed
// to a callback, never a blocking wait. Also the pieces of a submission that
// are pure values: sbatch's argument list, the job script that runs an
// experiment's stages in order in its worktree, the time limit.
#pragma once

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/slurm/slurm_job.h"

namespace ard {

/// One stage of a job script: its name and its command (substituted).
struct JobStage {
  std::string name;
  std::string command;
};

/// What the job script needs: the stages, where they run and where the job
/// writes its exit code ("<code> <node>", written last, by a rename).
struct JobScriptSpec {
  std::string title;  ///< a comment line: which experiment and trial
  std::filesystem::path worktree;
  std::vector<JobStage> stages;
  std::filesystem::path exit_file;
};

/// The /bin/sh job script: prints "autoresearchd: job <id> on <node>
/// (restart <n>)" first, then each stage as "autoresearchd: stage <name>",
/// runs the stages in order in the worktree and stops at the first that
/// fails ("autoresearchd: stage <name> exit <code>"); writes the exit file.
/// Each stage runs in a session of its own (setsid); a TERM or INT to the
/// script kills that stage's whole group at once, so a stage that ignores
/// TERM does not outlive a cancelled job.
std::string job_script(const JobScriptSpec& spec);

/// The stage a job's output says ran last ("autoresearchd: stage <name>"),
/// "" when none started.
std::string last_job_stage(const std::string& output);

/// One submission.
struct SubmitSpec {
  std::string name;                  ///< --job-name, unique per trial
  std::filesystem::path script;
  std::filesystem::path output;      ///< --output, opened in append mode (a requeued job adds to it)
  std::filesystem::path workdir;     ///< --chdir
  int time_minutes = 0;              ///< --time; <= 0: none
};

/// sbatch's argv: --parsable, the name, output in append mode, the time
/// limit, the [slurm] table's partition, account, gres and extra_args (last,
/// so they may override), then the script.
std::vector<std::string> sbatch_argv(const SubmitSpec& spec, const SlurmConfig& slurm);

/// Slurm's time limit for a job whose stages may run timeout_s in all: whole
/// minutes, rounded up, plus one minute of slack, so the daemon's own
/// timeout (which cancels the job) comes first.
int time_limit_minutes(double timeout_s);

/// `for id: echo "@job <id>"; scontrol show job -o <id>` read back: the jobs
/// Slurm knows, and the ones it says it does not ("Invalid job id"). A job in
/// neither (the controller did not answer) is not known either way.
struct JobQuery {
  std::map<std::string, SlurmJobInfo> known;
  std::set<std::string> gone;
};
JobQuery parse_job_query(const std::string& output);
/// The shell command whose output parse_job_query reads.
std::string job_query_command(const std::vector<std::string>& ids);

/// A command's result: whether it exited 0, and its output (stdout and
/// stderr together).
struct CommandReply {
  bool ok = false;
  std::string output;
  std::string describe;  ///< "exit code 1", ... (process_runner.h)
};

/// Runs Slurm's commands as children of the loop. env is their whole
/// environment (SLURM_CONF and PATH matter); scratch holds their output
/// files while they run.
class SlurmClient {
 public:
  using Done = std::function<void(const CommandReply&)>;
  SlurmClient(boost::asio::io_context& io, std::vector<std::string> env, std::filesystem::path scratch);
  ~SlurmClient();

  /// Runs argv (each word shell-quoted) or a shell command; done is called on
  /// the loop once it ends. stop_all() ends what still runs.
  void run(const std::vector<std::string>& argv, Done done, double timeout_s = 60);
  void run_shell(const std::string& command, Done done, double timeout_s = 60);
  /// sbatch: done gets the job id, or nullopt and sbatch's error line.
  void submit(const SubmitSpec& spec, const SlurmConfig& slurm,
              std::function<void(std::optional<std::string> id, const std::string& error)> done);
  void query(const std::vector<std::string>& ids, std::function<void(const JobQuery&, const CommandReply&)> done);
  void cancel(const std::vector<std::string>& ids, Done done);

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

/// The environment for Slurm's commands: env plus SLURM_CONF from this
/// process's environment when it is set.
std::vector<std::string> slurm_env(std::vector<std::string> env);

/// A shell word that /bin/sh reads back as s.
std::string shell_quote(const std::string& s);

}  // namespace ard
