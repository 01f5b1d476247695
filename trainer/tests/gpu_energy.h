// The benchmarks' energy meter: what a callable costs on the GPU under sustained load, in
// joules a call, read from the driver's cumulative energy counter (NVML).
//
// Why: training runs at the board's power limit (docs/LOG.md, run 31), where a step's time is
// its energy divided by the limit. A kernel that is faster in a short timed loop but costs as
// many joules does not shorten the step; joules a call under load are the figure that does.
//
// NVML is opened at run time (libnvidia-ml.so.1 ships with the driver), so nothing links it
// and the benchmarks still run where it is missing: they then say why they print no energy.
#pragma once

#include <dlfcn.h>

#include <chrono>
#include <cstdio>

#include "model/common.cuh"

/// The board of the current CUDA device, as NVML sees it; ok() false where NVML or the
/// counter is not available, and why() then says which.
class EnergyMeter {
 public:
  EnergyMeter() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);  // kept open for the process's life
    if (!lib) {
      why_ = "libnvidia-ml.so.1 (the driver's NVML) cannot be opened";
      return;
    }
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    auto by_bus = reinterpret_cast<int (*)(const char*, void**)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    energy_ = reinterpret_cast<int (*)(void*, unsigned long long*)>(dlsym(lib, "nvmlDeviceGetTotalEnergyConsumption"));
    clock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    if (!init || !by_bus || !energy_ || !clock_ || init() != 0) {
      why_ = "NVML lacks the energy counter or does not start";
      return;
    }
    int device = 0;
    char bus[32];
    unsigned long long mj = 0;
    ok_ = cudaGetDevice(&device) == cudaSuccess && cudaDeviceGetPCIBusId(bus, sizeof bus, device) == cudaSuccess &&
          by_bus(bus, &device_) == 0 && energy_(device_, &mj) == 0;
    if (!ok_) why_ = "NVML does not report this GPU's energy";
  }
  bool ok() const { return ok_; }
  const char* why() const { return why_; }
  /// Millijoules since the driver loaded.
  unsigned long long millijoules() const {
    unsigned long long mj = 0;
    energy_(device_, &mj);
    return mj;
  }
  /// The SM clock now, MHz.
  unsigned sm_mhz() const {
    unsigned mhz = 0;
    clock_(device_, /*NVML_CLOCK_SM*/ 1, &mhz);
    return mhz;
  }

 private:
  bool ok_ = false;
  const char* why_ = "";
  void* device_ = nullptr;
  int (*energy_)(void*, unsigned long long*) = nullptr;
  int (*clock_)(void*, int, unsigned*) = nullptr;
};

struct SustainedCost {
  double ms_per_call = 0, joules_per_call = 0, watts = 0;
  unsigned sm_mhz = 0;  // sampled while the last calls ran
  int calls = 0;
};

/// Runs f back to back for `warmup_s` seconds (the clock settles to the load), then for at least
/// `seconds` more, four calls between two sync()s, and returns the time and energy a call over
/// the second part. Meter: ok(), millijoules(), sm_mhz() (EnergyMeter; the test's fake). Empty
/// (calls 0) when the meter is not ok.
template <typename Meter, typename F, typename Sync>
SustainedCost sustained_cost(const Meter& meter, F&& f, Sync&& sync, double seconds, double warmup_s) {
  SustainedCost cost;
  if (!meter.ok()) return cost;
  using clock = std::chrono::steady_clock;
  auto elapsed_s = [](clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); };
  const auto w0 = clock::now();
  while (elapsed_s(w0) < warmup_s) {
    for (int i = 0; i < 4; i++) f();
    sync();
  }
  const unsigned long long e0 = meter.millijoules();
  const auto t0 = clock::now();
  while (elapsed_s(t0) < seconds) {
    for (int i = 0; i < 4; i++) f();
    cost.calls += 4;
    cost.sm_mhz = meter.sm_mhz();  // while those calls run
    sync();
  }
  const double s = elapsed_s(t0), joules = (meter.millijoules() - e0) / 1000.0;
  cost.ms_per_call = 1000.0 * s / cost.calls;
  cost.joules_per_call = joules / cost.calls;
  cost.watts = joules / s;
  return cost;
}

/// The benchmarks' use: 1.5 s of warm-up, then 4 s measured, on the GPU.
template <typename F>
SustainedCost sustained_cost(const EnergyMeter& meter, F&& f) {
  return sustained_cost(meter, f, [] { cudaCheck(cudaDeviceSynchronize()); }, 4.0, 1.5);
}

/// Prints `label`, then " | sustained: X ms, Y J a call at Z W, W MHz" and a newline.
inline void print_sustained(const char* label, const SustainedCost& c) {
  std::printf("%s | sustained: %.3f ms, %.3f J a call at %.0f W, %u MHz\n", label, c.ms_per_call, c.joules_per_call,
              c.watts, c.sm_mhz);
}
