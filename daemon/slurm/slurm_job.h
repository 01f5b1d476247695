// What Slurm's commands print, read into values: the job id `sbatch
// --parsable` prints, the job records of `scontrol show job -o` (one line a
// job), their states and exit codes, and what each state means for an
// experiment. Pure text in, values out; slurm_client.h runs the commands.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace ard {

/// A Slurm job state (JobState=...), as far as the daemon tells them apart.
enum class SlurmState {
  kPending,     ///< PENDING, REQUEUE_HOLD, REQUEUE_FED, RESV_DEL_HOLD, SPECIAL_EXIT held
  kRunning,     ///< RUNNING, CONFIGURING, COMPLETING, SUSPENDED, STOPPED, SIGNALING, STAGE_OUT, RESIZING
  kRequeued,    ///< REQUEUED: on its way back to the queue
  kCompleted,   ///< COMPLETED
  kFailed,      ///< FAILED, OUT_OF_MEMORY
  kTimeout,     ///< TIMEOUT (Slurm's time limit)
  kCancelled,   ///< CANCELLED
  kPreempted,   ///< PREEMPTED
  kNodeFail,    ///< NODE_FAIL, BOOT_FAIL
  kDeadline,    ///< DEADLINE
  kUnknown,     ///< any other word
};

/// The state named by Slurm's word (with or without a "+" suffix or a reason
/// in parentheses, as sacct and squeue may add).
SlurmState parse_slurm_state(const std::string& word);
const char* slurm_state_name(SlurmState s);
/// True for a state the job ends in (it will not run again by itself).
bool is_ended(SlurmState s);
/// True for an end that is the machine's fault, not the experiment's:
/// preemption, node or boot failure. The job may be submitted again.
bool is_environment_end(SlurmState s);

/// One job as `scontrol show job -o` prints it.
struct SlurmJobInfo {
  std::string id;
  std::string name;
  SlurmState state = SlurmState::kUnknown;
  std::string state_word;  ///< as Slurm printed it
  std::string reason;
  int exit_code = 0;       ///< ExitCode=<code>:<signal>
  int exit_signal = 0;
  std::string node;        ///< NodeList, "" while pending
  int restarts = 0;        ///< how often it was requeued
};

/// The job id `sbatch --parsable` printed ("<id>" or "<id>;<cluster>"), or
/// nullopt when the output holds none (sbatch's error text, say).
std::optional<std::string> parse_sbatch_output(const std::string& output);

/// The key=value fields of one record of `scontrol show job -o` (one line).
std::map<std::string, std::string> scontrol_fields(const std::string& line);

/// Every job record of `scontrol show job -o` output, by job id. Lines that
/// are not job records (an empty listing says "No jobs in the system") are
/// skipped; a record without JobId or JobState is skipped too.
std::map<std::string, SlurmJobInfo> parse_scontrol_jobs(const std::string& output);

/// What the job script wrote to its exit file: "<code> <node>" when its
/// stages ended by themselves, or "signalled <node>" once a TERM's clean-up
/// left no live process of the stage behind (code 143). nullopt when the text
/// is neither.
struct JobExitFile {
  int code = 0;
  std::string node;
  bool signalled = false;  ///< the job was signalled, and its stage is gone
};
std::optional<JobExitFile> parse_job_exit_file(const std::string& text);

}  // namespace ard
