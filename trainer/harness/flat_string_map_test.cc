// FlatStringMap: insertion, lookup across growth, iteration, clearing.
#include "harness/flat_string_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace harness {
namespace {

TEST(FlatStringMap, AgreesWithStdMapAcrossGrowth) {
  FlatStringMap<uint64_t> flat;
  std::map<std::string, uint64_t> ref;
  std::mt19937 rng(3);
  for (int i = 0; i < 50000; ++i) {
    std::string key(rng() % 20, 'x');
    for (char& c : key) c = static_cast<char>(rng() % 8);  // includes "" and NUL bytes
    ++flat[key];
    ++ref[key];
  }
  EXPECT_EQ(flat.size(), ref.size());
  for (auto& [k, v] : ref) {
    const uint64_t* got = flat.find(k);
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(*got, v);
  }
  EXPECT_EQ(flat.find(std::string(25, 'x')), nullptr);
  std::map<std::string, uint64_t> seen;
  flat.for_each([&](std::string_view k, uint64_t v) { seen[std::string(k)] = v; });
  EXPECT_EQ(seen, ref);
  flat.clear();
  EXPECT_EQ(flat.size(), 0u);
  EXPECT_EQ(flat.find(ref.begin()->first), nullptr);
}

}  // namespace
}  // namespace harness
