// Tests of the secret scan on what a stage might print from files it can read.
#include "daemon/secret_scan.h"

#include <gmock/gmock.h>

namespace ard {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(RedactSecrets, PrivateKeyBlocksGoWhole) {
  const std::string text =
      "step 3\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAMwAAAAtzc2gtZW\n"
      "-----END OPENSSH PRIVATE KEY-----\nSegmentation fault\n";
  const std::string out = redact_secrets(text);
  EXPECT_EQ(out, "step 3\n[redacted private key]\nSegmentation fault\n");
  // A tail cut inside the block: the rest of the text goes.
  EXPECT_EQ(redact_secrets("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n"), "[redacted private key]");
}

TEST(RedactSecrets, KeyLikeTokensAndSecretAssignmentsGo) {
  const std::string text =
      "export OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234\n"
      "anthropic sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUV here\n"
      "token ghp_0123456789abcdefghijABCDEFGHIJ0123\n"
      "aws AKIAIOSFODNN7EXAMPLE\n"
      "hf hf_abcdefghijklmnopqrstuvwx\n"
      "{\"password\": \"hunter2hunter2\"}\n"
      "DB_PASSWORD = correcthorse\n";
  const std::string out = redact_secrets(text);
  for (const char* secret : {"sk-proj-abcdefghijklmnop1234", "sk-ant-api03", "ghp_0123456789", "AKIAIOSFODNN7EXAMPLE",
                             "hf_abcdefghij", "hunter2hunter2", "correcthorse"})
    EXPECT_THAT(out, Not(HasSubstr(secret))) << out;
  EXPECT_THAT(out, HasSubstr("export OPENAI_API_KEY=[redacted]"));
  EXPECT_THAT(out, HasSubstr("DB_PASSWORD = [redacted]"));
}

TEST(RedactSecrets, OrdinaryTrainerOutputIsLeftAlone) {
  const std::string text =
      "step 120 | loss 3.2101 | lr 0.0006 | tokens/s 512000\n"
      "a.cu:3:1: error: 'task_key' was not declared in this scope\n"
      "FAIL: loss is NaN at step 12\n---\nval_bpb:          0.997900\nnum_steps:        953\n";
  EXPECT_EQ(redact_secrets(text), text);
}

TEST(RedactSecrets, AHugeTokenIsOneLinearScan) {
  const std::string huge = "x sk-" + std::string(4 << 20, 'a') + " y";
  EXPECT_EQ(redact_secrets(huge), "x [redacted] y");
}

}  // namespace
}  // namespace ard
