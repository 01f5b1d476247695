// Secrets taken out of text the daemon sends to the LLM provider: a failed
// experiment's log tail goes into the next prompt, and a stage can print
// whatever it can read (a private key, a token in a dotfile). Key-like strings
// are replaced by a marker before the text leaves the daemon.
#pragma once

#include <string>

namespace ard {

/// text with every private key block (`-----BEGIN ... PRIVATE KEY-----` to its
/// END line, or to the end of the text) and every key-like token replaced by
/// "[redacted]": OpenAI and Anthropic keys (`sk-...`), GitHub tokens (`ghp_`,
/// `gho_`, `ghs_`, `github_pat_`), AWS access key ids (`AKIA...`), Slack tokens
/// (`xox?-`), Google API keys (`AIza...`), Hugging Face tokens (`hf_...`), JWTs,
/// and the value of an assignment whose name says key, secret, token or
/// password (`API_KEY=...`, `"password": "..."`).
std::string redact_secrets(const std::string& text);

}  // namespace ard
