// The trainer's summary block: `key: value` lines after a line `---`
// (docs/CONTRACTS.md), checked before the daemon believes it. The harness prints
// it once, so a second block is a forgery (printed by an edit, before or after
// the real one); so are a key given twice, a value that is not a plain decimal
// number (`0x1p-3`) and a value outside its documented range (summary_range).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ard {

struct Summary {
  std::map<std::string, double> values;  ///< the wanted keys that were present, NaN included
  std::string to_json() const;           ///< {"key": value, ...}; NaN and inf as strings
};

/// What a measured run's trial and experiment record of its summary; each is
/// nullopt where its key is absent.
struct TrialFigures {
  std::optional<double> training_seconds;
  std::optional<double> peak_vram_mb;
  std::optional<long> steps;     ///< num_steps
  std::optional<double> tokens;  ///< total_tokens_M × 10⁶
};
TrialFigures trial_figures(const Summary& summary);

/// A key's documented range: low < v < high (or <= where inclusive), and a
/// whole number where whole. Keys without one take any finite number.
///   val_bpb (0, 20); training_seconds, total_seconds [0, 1e7]; peak_vram_mb
///   [0, 1e7]; mfu_percent [0, 100]; total_tokens_M [0, 1e9]; num_steps [0, 1e12]
///   whole; num_params_M [0, 1e7]; depth [0, 1e4] whole; budget_scale (0, 100].
struct SummaryRange {
  double low = 0, high = 0;
  bool low_inclusive = false, high_inclusive = false;
  bool whole = false;
};
std::optional<SummaryRange> summary_range(const std::string& key);

/// What the output's summary says, or why it cannot be believed.
struct SummaryParse {
  std::optional<Summary> summary;  ///< nullopt: no block, or `tampered` is set
  std::string tampered;            ///< one line: why the summary is a forgery; "" when it is not
};

/// The summary of output (the whole log of the last stage), keeping only keys.
/// A block is a line `---` and the lines up to the next `---`; it counts when
/// it holds a wanted key. No such block: no summary. More than one, a wanted
/// key twice in it, a value that is not a decimal number (nan and inf are
/// numbers: the run diverged), or a finite value outside summary_range: tampered.
SummaryParse parse_summary(const std::string& output, const std::vector<std::string>& keys);

/// The first line starting with "FAIL" (the trainer's failure line), or "".
std::string fail_line(const std::string& output);

/// For a FAIL line of the harness's integrity probes, "FAIL: tampered: <message>",
/// the message (the experiment is then tampered, not crashed); otherwise nullopt.
std::optional<std::string> tampered_reason(const std::string& fail_line);

}  // namespace ard
