// SHA-256 against the FIPS 180-4 examples.
#include "harness/sha256.h"

#include <gtest/gtest.h>

#include "harness/input_error.h"
#include "harness/test_util.h"

namespace harness {
namespace {

std::string sha(std::string_view s) {
  Sha256 h;
  h.update(s);
  return h.hex();
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, ChunkedUpdatesAndFilesAgree) {
  std::string million(1000000, 'a');
  Sha256 h;
  for (size_t i = 0; i < million.size(); i += 777) h.update(std::string_view(million).substr(i, 777));
  EXPECT_EQ(h.hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  testing::TempDir dir;
  testing::write_text(dir.file("m"), million);
  EXPECT_EQ(sha256_file(dir.file("m")), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_THROW(sha256_file(dir.file("none")), InputError);
}

}  // namespace
}  // namespace harness
