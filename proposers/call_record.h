// What the LLM client reports about each API call, and the sink it reports to.
//
// The daemon's store implements CallSink and writes one row of the llm_calls
// table per call (results.db.schema). Nothing here ever holds the API key.
#pragma once

#include <string>

namespace llm {

struct CallRecord {
  long experiment_id = 0;   ///< 0 when not tied to an experiment
  int attempt = 0;          ///< 1-based round within the proposal
  std::string provider;     ///< "openai" or "anthropic"
  std::string model;
  double latency_s = 0;
  long input_tokens = 0;    ///< from the response's usage, 0 if absent
  long output_tokens = 0;
  std::string status;       ///< ok, http_429, http_500, timeout, connect_error, truncated, empty, bad_json, ...
  double cost_usd = 0;      ///< estimated from the config's price table
  std::string error;        ///< one line, empty when status is ok
};

class CallSink {
 public:
  virtual ~CallSink() = default;
  virtual void record(const CallRecord& call) = 0;
};

}  // namespace llm
