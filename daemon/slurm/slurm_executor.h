// Experiments' stages as Slurm jobs, followed on the event loop: a job is
// submitted (its script written first), its id handed back as soon as sbatch
// returns, and its state read every `slurm.poll_s` on a steady_timer until
// it ends. The daemon's own timeout starts when the job is first seen running
// and cancels it (scancel); stop() cancels too. A requeued job is followed
// through its new run; a job that ends preempted or on a failed node is
// submitted again (`slurm.max_resubmits`), then reported as the machine's
// fault. A stop waits for Slurm to confirm each cancelled job ended, for a
// minute at most, and then, for a job that had started (stopped or timed out), for the job script's
// "signalled" exit file (kExitFileWaitS at most): the script writes it once
// nothing of the stage is left alive, so a stop that returns leaves no
// process behind on the node. The exit code is read from the exit file the job script writes, so
// a job Slurm has already forgotten still has one.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/log.h"
#include "daemon/slurm/slurm_client.h"

namespace ard {

/// One experiment's stages to run as a job.
struct SlurmRun {
  int64_t key = 0;                  ///< the caller's id for it (the experiment)
  std::string name;                 ///< the job name, unique per trial
  std::filesystem::path worktree;
  std::vector<JobStage> stages;
  double timeout_s = 0;             ///< all stages together, from the start of the run
  std::filesystem::path log;        ///< the job's output (appended to)
  std::filesystem::path script;     ///< where the job script is written
  std::string title;                ///< the script's comment line
};

/// The engine's workers with Slurm: n job slots, "slurm:1" ... "slurm:<n>".
std::vector<std::string> slurm_workers(int n);

/// How long a stopped job that Slurm says ended may take to write its exit
/// file (the job script's clean-up is bounded by 5 s) before the stop gives it
/// up with a warning.
inline constexpr double kExitFileWaitS = 15;

/// The exit file of a job whose output goes to log.
std::filesystem::path exit_file_of(const std::filesystem::path& log);

/// How a followed job ended.
struct JobEnd {
  enum class Kind {
    kCompleted,     ///< every stage exited 0
    kFailed,        ///< a stage failed (exit_code)
    kTimedOut,      ///< the daemon's timeout or Slurm's time limit
    kStopped,       ///< stop() cancelled it
    kCancelled,     ///< cancelled by someone else
    kEnvironment,   ///< preempted or node failure past the resubmits, or lost: the machine's fault
    kSubmitFailed,  ///< sbatch refused it (error holds its line)
  };
  Kind kind = Kind::kEnvironment;
  std::string job_id;
  int exit_code = 0;
  std::string node;
  std::string error;  ///< one line for the store
};

class SlurmExecutor {
 public:
  /// on_job: a job id (and its node, once running) to record at once.
  using OnJob = std::function<void(int64_t key, const std::string& job_id, const std::string& node)>;
  using OnEnd = std::function<void(int64_t key, const JobEnd& end)>;

  SlurmExecutor(boost::asio::io_context& io, const SlurmConfig& config, SlurmClient& client, Log& log, OnJob on_job,
                OnEnd on_end);

  /// Writes the script and submits it; on_job comes with the id, on_end once.
  void submit(const SlurmRun& run);
  /// Follows a job submitted earlier (by a daemon that was killed).
  void adopt(const SlurmRun& run, const std::string& job_id);
  /// Cancels the run's job (or the job its sbatch is about to return); its
  /// on_end comes with kStopped once Slurm says it ended.
  void stop(int64_t key);
  void stop_all();
  /// How long a cancelled job may take to be confirmed ended (default 60 s).
  void set_stop_confirm_s(double s) { stop_confirm_s_ = s; }
  /// Runs submitted or followed, not yet ended.
  size_t active() const { return jobs_.size(); }

 private:
  struct Job {
    SlurmRun run;
    std::string id;            ///< "" while sbatch runs
    bool stop_requested = false;
    double stop_at = 0;        ///< when the stop was asked for
    bool timed_out = false;    ///< the daemon's timeout cancelled it
    bool cancel_sent = false;
    double running_since = 0;  ///< 0: not seen running (in this run of it)
    int restarts = 0;          ///< -1: an adopted job's, not read yet
    int resubmits = 0;
    std::string node;
    double ended_at = 0;       ///< a stopped job Slurm says ended, its exit file not yet written
  };
  void sbatch(int64_t key);
  void schedule_poll();
  void poll();
  void on_query(const JobQuery& q, const CommandReply& reply);
  void follow(Job& job, const SlurmJobInfo& info);
  void ended(Job& job, const std::optional<SlurmJobInfo>& info);
  void cancel(Job& job);
  void request_stop(Job& job);
  /// Jobs cancelled more than a minute ago that Slurm still lists, or whose
  /// state cannot be read (the controller is down): reported stopped, with a
  /// warning naming the job, so a stop never waits forever.
  void give_up_unconfirmed_stops();
  void finish(int64_t key, JobEnd end);

  boost::asio::io_context& io_;
  const SlurmConfig& config_;
  SlurmClient& client_;
  Log& log_;
  OnJob on_job_;
  OnEnd on_end_;
  std::map<int64_t, Job> jobs_;
  boost::asio::steady_timer timer_;
  bool poll_scheduled_ = false;
  bool polling_ = false;
  std::string last_query_error_;
  double stop_confirm_s_ = 60;
  double exit_file_wait_s_ = kExitFileWaitS;
};

}  // namespace ard
