// Which GPUs the daemon trains on: the `gpus` key, or "auto" resolved from
// CUDA_VISIBLE_DEVICES or `nvidia-smi -L`. Each becomes one worker, whose
// children see only it (CUDA_VISIBLE_DEVICES=<id>).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ard {

/// The device ids in a CUDA_VISIBLE_DEVICES value ("0,1", "GPU-uuid,...");
/// empty for an empty value.
std::vector<std::string> parse_visible_devices(const std::string& value);

/// The GPU indices in `nvidia-smi -L` output ("GPU 0: NVIDIA H200 (UUID: ...)").
std::vector<std::string> parse_nvidia_smi_list(const std::string& output);

/// The workers' GPU ids: configured when not empty; else the devices of
/// visible_devices when set; else those nvidia_smi_output lists. An empty
/// result means no GPU was found: the daemon then runs one worker that sets
/// no device (a CPU-only trainer, or the tests' fake trainer).
std::vector<std::string> resolve_gpus(const std::vector<std::string>& configured,
                                      const std::optional<std::string>& visible_devices,
                                      const std::optional<std::string>& nvidia_smi_output);

/// Runs `nvidia-smi -L` (blocking, a few hundred ms); nothing when it is
/// missing or fails.
std::optional<std::string> nvidia_smi_list();

}  // namespace ard
