// `train --dump-init DIR`: what tests/torch_twin.py needs to replay a run
// (format 1, see docs/CONTRACTS.md): the initial parameters in their storage
// dtype, every micro-batch of the N steps, and at the end manifest.json with
// the configuration, the per-step mean losses and lr multipliers.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/loader.h"
#include "model/params.cuh"

namespace twin {

inline void write_file(const std::filesystem::path& path, const void* data, size_t bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), std::streamsize(bytes));
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

/// DIR/params/<name>.bin, from the device values.
template <typename T>
void write_params(const std::string& dir, const Params<T>& p) {
  std::filesystem::create_directories(std::filesystem::path(dir) / "params");
  for (auto& t : p.info) {
    std::vector<char> buf(t.numel() * (t.embed ? sizeof(T) : sizeof(float)));
    const void* src = t.embed ? static_cast<const void*>(p.e(&t - p.info.data()))
                              : static_cast<const void*>(p.w(&t - p.info.data()));
    cudaCheck(cudaMemcpy(buf.data(), src, buf.size(), cudaMemcpyDeviceToHost));
    write_file(std::filesystem::path(dir) / "params" / (t.name + ".bin"), buf.data(), buf.size());
  }
}

/// DIR/batches.bin: (steps, grad_accum, B, T+1) uint16, from a fresh loader (the same
/// sequence the training loader will produce).
inline void write_batches(const std::string& dir, const harness::TokenShard& shard,
                          harness::LoaderOptions opt, long steps, int grad_accum) {
  harness::PackedLoader loader(shard, opt);
  std::ofstream f(std::filesystem::path(dir) / "batches.bin", std::ios::binary);
  for (long i = 0; i < steps * grad_accum; i++) {
    harness::Batch b = loader.next();
    f.write(reinterpret_cast<const char*>(b.rows), std::streamsize(sizeof(uint16_t) * b.batch_rows * (b.seq_len + 1)));
  }
  if (!f) throw std::runtime_error("cannot write " + dir + "/batches.bin");
}

inline std::string json_number(double v) {  // float precision: the constants are floats
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.7g", v);
  return buf;
}

inline std::string json_list(const std::vector<double>& v) {
  std::string s = "[";
  char buf[64];
  for (size_t i = 0; i < v.size(); i++) {
    std::snprintf(buf, sizeof buf, "%s%.9g", i ? ", " : "", v[i]);
    s += buf;
  }
  return s + "]";
}

/// DIR/manifest.json, atomically. config: (key, JSON value) pairs.
template <typename T>
void write_manifest(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& config,
                    const Params<T>& p, std::vector<long> batch_shape, const std::vector<double>& losses,
                    const std::vector<double>& lr_multipliers) {
  std::string s = "{\"format\": 1,\n \"config\": {";
  for (size_t i = 0; i < config.size(); i++)
    s += (i ? ", " : "") + std::string("\"") + config[i].first + "\": " + config[i].second;
  s += "},\n \"params\": [";
  for (size_t i = 0; i < p.info.size(); i++) {
    auto& t = p.info[i];
    std::vector<double> shape(t.shape.begin(), t.shape.end());
    s += std::string(i ? ",\n  " : "\n  ") + "{\"name\": \"" + t.name + "\", \"shape\": " + json_list(shape) +
         ", \"dtype\": \"" + (t.embed && sizeof(T) == 2 ? "bf16" : "f32") + "\", \"file\": \"params/" + t.name + ".bin\"}";
  }
  std::vector<double> bs(batch_shape.begin(), batch_shape.end());
  s += "],\n \"batches\": {\"file\": \"batches.bin\", \"shape\": " + json_list(bs) + "},\n";
  s += " \"losses\": " + json_list(losses) + ",\n \"lr_multipliers\": " + json_list(lr_multipliers) + "}\n";
  auto tmp = std::filesystem::path(dir) / "manifest.json.tmp";
  write_file(tmp, s.data(), s.size());
  std::filesystem::rename(tmp, std::filesystem::path(dir) / "manifest.json");
}

}  // namespace twin
