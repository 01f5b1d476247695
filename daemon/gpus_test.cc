// Tests for gpus.h: the configured list wins, then CUDA_VISIBLE_DEVICES, then
// nvidia-smi's list; nothing found means one worker without a device.
#include "daemon/gpus.h"

#include <gtest/gtest.h>

namespace ard {
namespace {

using V = std::vector<std::string>;

TEST(Gpus, ParsesVisibleDevicesAndNvidiaSmi) {
  EXPECT_EQ(parse_visible_devices("0, 2,GPU-3f2a"), (V{"0", "2", "GPU-3f2a"}));
  EXPECT_EQ(parse_visible_devices(""), V{});
  EXPECT_EQ(parse_nvidia_smi_list("GPU 0: NVIDIA H200 (UUID: GPU-a)\nGPU 1: NVIDIA H200 (UUID: GPU-b)\n"),
            (V{"0", "1"}));
  EXPECT_EQ(parse_nvidia_smi_list("No devices were found\n"), V{});
}

TEST(Gpus, ResolutionOrder) {
  const std::string smi = "GPU 0: A\nGPU 1: B\nGPU 2: C\n";
  EXPECT_EQ(resolve_gpus({"3"}, "0,1", smi), V{"3"});
  EXPECT_EQ(resolve_gpus({}, "1,0", smi), (V{"1", "0"}));
  EXPECT_EQ(resolve_gpus({}, "", smi), V{});  // set but empty: no GPU at all
  EXPECT_EQ(resolve_gpus({}, std::nullopt, smi), (V{"0", "1", "2"}));
  EXPECT_EQ(resolve_gpus({}, std::nullopt, std::nullopt), V{});
}

}  // namespace
}  // namespace ard
