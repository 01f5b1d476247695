// Tests of the optimizer (optim.cu) against the fp64 CPU references of
// optim_ref.h on random inputs, plus its edge cases and contracts.
//
// Running it needs a CUDA GPU (sm_90 build). From the repository root:
//   cmake -S trainer -B build/trainer -G Ninja -DCMAKE_BUILD_TYPE=Release
//   cmake -S trainer -B build/trainer -DTRAINER_TESTS=ON && cmake --build build/trainer --target optim_test
//   build/trainer/optim_test        (or: ctest --test-dir build/trainer -L gpu --output-on-failure)
// Output: one line per check, "ok    <check>  <figure> (tol ...)" or
// "FAIL: <check>: <figure or cause>". Exit 0 when every check passes, 1 when
// any fails, 77 when there is no CUDA device (CTest reports it as skipped).
// It takes some seconds: the CPU fp64 reference of the Polar Express on the
// 2048 x 512 matrices dominates (one thread per matrix).
//
// Tolerances (why):
// - AdamW fp32: 1e-5 relative + 1e-6 of the tensor's rms (fp32 against fp64).
// - AdamW bf16 (parameter, moments and gradient in bf16): each of p, m, v within
//   one bf16 ulp of the exact result, plus 1e-6 of the terms' size (each step
//   starts from the GPU's own bf16 state).
// - Muon momentum buffer: as AdamW fp32.
// - Muon update u and NorMuon second moment: relative Frobenius error of the
//   bf16 Polar Express against the exact one. Measured on the CPU with bf16
//   rounding where the GPU rounds: about 1e-2 for min(rows, cols) >= 256,
//   3e-2 at 24, up to 0.13 at 4 (few singular values, steep polynomial).
//   Limits: u 0.04 / 0.1 / 0.3 and second moment 0.03 / 0.1 / 0.5 for
//   min(rows, cols) >= 256 / >= 16 / smaller.
// - Where the exact u is too close to 0 for its sign to be known at that
//   precision, either side of the weight-decay mask is accepted; the mask
//   itself is checked element by element in a case built to make it decisive.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "model/optim.cuh"
#include "tests/optim_ref.h"
#include "model/params.cuh"

namespace {

std::mt19937_64 rng(20240605);
int failures = 0;

void report(bool ok, const std::string& check, const std::string& figure) {
  if (ok) std::printf("ok    %-52s %s\n", check.c_str(), figure.c_str());
  else std::printf("FAIL: %s: %s\n", check.c_str(), figure.c_str());
  if (!ok) failures++;
}

std::string fmt(const char* f, double a, double b = 0.0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

float bf16_bits_to_float(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// A device array with host copies in and out.
template <typename T>
struct DeviceArray {
  T* ptr = nullptr;
  size_t n;
  explicit DeviceArray(size_t count) : n(count) {
    cudaCheck(cudaMalloc(&ptr, std::max<size_t>(n, 1) * sizeof(T)));
    cudaCheck(cudaMemset(ptr, 0, std::max<size_t>(n, 1) * sizeof(T)));
  }
  explicit DeviceArray(const std::vector<T>& h) : DeviceArray(h.size()) { put(h); }
  ~DeviceArray() { cudaFree(ptr); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  void put(const std::vector<T>& h) {
    cudaCheck(cudaMemcpy(ptr, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> get() const { return copy_out(ptr, n); }
  static std::vector<T> copy_out(const T* p, size_t count) {
    std::vector<T> h(count);
    cudaCheck(cudaDeviceSynchronize());
    cudaCheck(cudaMemcpy(h.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  bf16* as_bf16() const { return reinterpret_cast<bf16*>(ptr); }  // for T = uint16_t
};

std::vector<float> normal(size_t n, double scale) {
  std::normal_distribution<double> d(0.0, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = float(d(rng));
  return v;
}
std::vector<float> uniform(size_t n, double bound) {
  std::uniform_real_distribution<double> d(-bound, bound);
  std::vector<float> v(n);
  for (auto& x : v) x = float(d(rng));
  return v;
}
template <typename T>
std::vector<double> widen(const T* p, size_t n) {
  return std::vector<double>(p, p + n);
}
template <typename T>
std::vector<double> widen(const std::vector<T>& v) {
  return widen(v.data(), v.size());
}

double rms(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x * x;
  return std::sqrt(s / std::max<size_t>(v.size(), 1));
}

bool all_finite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

/// max_i |got - ref| / (rtol |ref| + atol_rms * rms(ref)); <= 1 passes.
double scaled_error(const std::vector<double>& got, const std::vector<double>& ref, double rtol,
                    double atol_rms) {
  const double atol = atol_rms * rms(ref) + 1e-30;
  double worst = 0.0;
  for (size_t i = 0; i < ref.size(); i++) {
    const double e = std::fabs(got[i] - ref[i]) / (rtol * std::fabs(ref[i]) + atol);
    worst = std::isfinite(e) ? std::max(worst, e) : INFINITY;
  }
  return worst;
}

double rel_frobenius(const std::vector<double>& got, const std::vector<double>& ref) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < ref.size(); i++) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  const double e = std::sqrt(num / std::max(den, 1e-300));
  return std::isfinite(e) ? e : INFINITY;
}

void check_bf16_copy(const std::string& name, const std::vector<float>& p,
                     const std::vector<uint16_t>& copy) {
  size_t bad = 0;
  for (size_t i = 0; i < p.size(); i++) bad += copy[i] != host_bf16_bits(p[i]);
  report(bad == 0, name + ": bf16 copy == bf16(param)", fmt("%.0f mismatches", double(bad)));
}

// ---------------------------------------------------------------------------
// AdamW

void test_adamw_fp32() {
  const long n = 10007;  // not a multiple of the block size
  const AdamWHyper h{0.01f, 0.8f, 0.95f, 1e-10f, 0.1f};
  std::vector<float> p = normal(n, 0.5);
  std::vector<double> rp = widen(p), rm(n, 0.0), rv(n, 0.0);
  DeviceArray<float> dp(p), dg(n), dm(n), dv(n);
  DeviceArray<uint16_t> dcopy(n);
  for (int step = 1; step <= 3; step++) {
    std::vector<float> g = normal(n, std::pow(10.0, -step));  // gradients shrinking 10x a step
    dg.put(g);
    adamw_step(dp.ptr, dg.ptr, dm.ptr, dv.ptr, n, h, step, 0, dcopy.as_bf16());
    optim_ref::adamw_step(rp.data(), widen(g).data(), rm.data(), rv.data(), n, h.lr, h.beta1,
                          h.beta2, h.eps, h.weight_decay, step);
    const std::string name = "adamw fp32 step " + std::to_string(step);
    const std::vector<float> gp = dp.get();
    double e = scaled_error(widen(gp), rp, 1e-5, 1e-6);
    report(all_finite(gp) && e <= 1.0, name + ": param", fmt("scaled err %.3f (tol 1)", e));
    e = scaled_error(widen(dm.get()), rm, 1e-5, 1e-6);
    report(e <= 1.0, name + ": first moment", fmt("scaled err %.3f (tol 1)", e));
    e = scaled_error(widen(dv.get()), rv, 1e-5, 1e-6);
    report(e <= 1.0, name + ": second moment", fmt("scaled err %.3f (tol 1)", e));
    check_bf16_copy(name, gp, dcopy.get());
  }
}

// Within one bf16 ulp of the exact value x, plus 1e-6 of `size` for the fp32 math's
// own rounding, which matters only where terms cancel to near zero.
double bf16_ulps(double got, double x, double size) {
  const double ulp = (x == 0.0 ? 0.0 : std::ldexp(1.0, std::ilogb(x) - 7)) + 1e-6 * size + 1e-30;
  return std::isfinite(got) ? std::fabs(got - x) / ulp : INFINITY;
}

void test_adamw_bf16() {
  const long n = 4099;
  const AdamWHyper h{0.05f, 0.8f, 0.95f, 1e-10f, 0.0f};
  std::vector<uint16_t> bits;
  for (float x : normal(n, 1.0)) bits.push_back(host_bf16_bits(x));
  DeviceArray<uint16_t> dp(bits), dm(n), dv(n);
  DeviceArray<float> dg(n);
  for (int step = 1; step <= 3; step++) {
    // The reference starts from the GPU's bf16 state, so each step is checked alone;
    // its gradient is bf16, as the reference's gradient of a bf16 table is.
    const std::vector<uint16_t> p0 = dp.get(), m0 = dm.get(), v0 = dv.get();
    std::vector<double> rp(n), rm(n), rv(n), rg(n);
    for (long i = 0; i < n; i++)
      rp[i] = bf16_bits_to_float(p0[i]), rm[i] = bf16_bits_to_float(m0[i]), rv[i] = bf16_bits_to_float(v0[i]);
    std::vector<float> g = normal(n, 1e-2);
    for (long i = 0; i < n; i++) rg[i] = bf16_bits_to_float(host_bf16_bits(g[i]));
    dg.put(g);
    adamw_step(dp.as_bf16(), dg.ptr, dm.as_bf16(), dv.as_bf16(), n, h, step, 0);
    // m and v as the GPU rounded them feed the update: the reference takes them back.
    std::vector<double> em = rm, ev = rv, ep = rp;
    optim_ref::adamw_step(ep.data(), rg.data(), em.data(), ev.data(), n, h.lr, h.beta1, h.beta2,
                          h.eps, h.weight_decay, step);
    const std::vector<uint16_t> p1 = dp.get(), m1 = dm.get(), v1 = dv.get();
    std::vector<double> gm(n), gv(n);
    for (long i = 0; i < n; i++) gm[i] = bf16_bits_to_float(m1[i]), gv[i] = bf16_bits_to_float(v1[i]);
    double worst_m = 0, worst_v = 0, worst_p = 0;
    const double bias1 = 1.0 - std::pow(double(h.beta1), step), bias2 = 1.0 - std::pow(double(h.beta2), step);
    for (long i = 0; i < n; i++) {
      worst_m = std::max(worst_m, bf16_ulps(gm[i], em[i], std::fabs(rm[i]) + std::fabs(rg[i])));
      worst_v = std::max(worst_v, bf16_ulps(gv[i], ev[i], rv[i] + rg[i] * rg[i]));
      const double p_exact = rp[i] - h.lr / bias1 * gm[i] / (std::sqrt(gv[i] / bias2) + h.eps);
      worst_p = std::max(worst_p, bf16_ulps(bf16_bits_to_float(p1[i]), p_exact, std::fabs(rp[i]) + h.lr));
    }
    const std::string name = "adamw bf16 step " + std::to_string(step);
    report(worst_p <= 1.0, name + ": param within 1 bf16 ulp", fmt("worst %.3f ulp", worst_p));
    report(worst_m <= 1.0, name + ": bf16 first moment within 1 ulp", fmt("worst %.3f ulp", worst_m));
    report(worst_v <= 1.0, name + ": bf16 second moment within 1 ulp", fmt("worst %.3f ulp", worst_v));
  }
}

void test_adamw_contract() {
  const AdamWHyper h{0.01f, 0.8f, 0.95f, 1e-10f, 0.0f};
  adamw_step(static_cast<float*>(nullptr), nullptr, nullptr, nullptr, 0, h, 1, 0);
  cudaCheck(cudaDeviceSynchronize());
  report(true, "adamw: n = 0 is a no-op", "");
  bool threw = false;
  try {
    DeviceArray<float> a(4), b(4), c(4), d(4);
    adamw_step(a.ptr, b.ptr, c.ptr, d.ptr, 4, h, 0, 0);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  report(threw, "adamw: step 0 is rejected (1-based)", "");
}

// ---------------------------------------------------------------------------
// Muon

double tol_u(int s) { return s >= 256 ? 0.04 : s >= 16 ? 0.1 : 0.3; }
double tol_v(int s) { return s >= 256 ? 0.03 : s >= 16 ? 0.1 : 0.5; }

/// Host copies of what one Muon step of a group left on the device.
struct MuonResult {
  std::vector<float> before, after;  // (count, rows, cols) params around the step
  std::vector<float> momentum;       // (count, rows, cols)
  std::vector<float> second_moment;  // (count, moment_len)
  std::vector<uint16_t> copy;        // (count, rows, cols) the bf16 params
};

/// Checks a step of `ref.size()` matrices (rows, cols) against the reference
/// steps that started from the same state (ref after the step, u their updates).
void check_muon_step(const std::string& name, int rows, int cols, const MuonHyper& h,
                     const MuonResult& got, const std::vector<optim_ref::MuonMatrix>& ref,
                     const std::vector<std::vector<double>>& u) {
  const int s = std::min(rows, cols);
  const size_t numel = size_t(rows) * cols;
  const double lr = h.lr * std::sqrt(std::max(1.0, double(rows) / cols));
  double mom_err = 0.0, v_err = 0.0, r_err = 0.0;
  for (size_t i = 0; i < ref.size(); i++) {
    const size_t off = i * numel, len = ref[i].V.size();
    mom_err = std::max(mom_err, scaled_error(widen(got.momentum.data() + off, numel), ref[i].buf, 1e-5, 1e-6));
    v_err = std::max(v_err, rel_frobenius(widen(got.second_moment.data() + i * len, len), ref[i].V));
    // r = (p - p_new) / lr' = u + wd p [u p >= 0]; either mask where u's sign is uncertain.
    const double ambiguous = 4.0 * tol_u(s) * rms(u[i]);
    std::vector<double> r_got(numel), r_ref(numel);
    for (size_t j = 0; j < numel; j++) {
      const double p = got.before[off + j], uj = u[i][j];
      r_got[j] = (p - double(got.after[off + j])) / lr;
      const double on = uj + h.weight_decay * p, off_mask = uj;
      if (std::fabs(uj) < ambiguous)
        r_ref[j] = std::fabs(r_got[j] - on) < std::fabs(r_got[j] - off_mask) ? on : off_mask;
      else
        r_ref[j] = uj * p >= 0.0 ? on : off_mask;
    }
    r_err = std::max(r_err, rel_frobenius(r_got, r_ref));
  }
  report(mom_err <= 1.0, name + ": momentum buffer", fmt("scaled err %.3f (tol 1)", mom_err));
  report(v_err <= tol_v(s), name + ": NorMuon second moment", fmt("rel err %.4f (tol %.2f)", v_err, tol_v(s)));
  report(all_finite(got.after) && r_err <= tol_u(s), name + ": update",
         fmt("rel err %.4f (tol %.2f)", r_err, tol_u(s)));
  check_bf16_copy(name, got.after, got.copy);
}

/// One group on the GPU and its per-matrix references.
struct MuonCase {
  int count, rows, cols;
  MuonGroup group;
  DeviceArray<float> params, grads;
  DeviceArray<uint16_t> copy;
  std::vector<optim_ref::MuonMatrix> ref;
  std::vector<std::vector<double>> u;  // reference updates of the last step
  MuonResult got;

  MuonCase(int n, int r, int c, const std::vector<float>& p0)
      : count(n), rows(r), cols(c), group(n, r, c), params(p0), grads(p0.size()), copy(p0.size()),
        ref(n), u(n) {}
  std::string name() const {
    return "muon " + std::to_string(count) + "x(" + std::to_string(rows) + "," + std::to_string(cols) + ")";
  }
  size_t numel() const { return size_t(rows) * cols; }
  std::vector<float> momentum() const { return DeviceArray<float>::copy_out(group.momentum_buffer(), count * numel()); }
  std::vector<float> second_moment() const {
    return DeviceArray<float>::copy_out(group.second_moment(), size_t(count) * group.moment_len());
  }

  /// Uploads g, copies the GPU's state into the references, runs the GPU step.
  void gpu_step(cublasHandle_t blas, const std::vector<float>& g, const MuonHyper& h) {
    grads.put(g);
    got.before = params.get();
    const std::vector<float> mom = momentum(), v = second_moment();
    for (int i = 0; i < count; i++) {
      ref[i].rows = rows, ref[i].cols = cols;
      ref[i].p = widen(got.before.data() + i * numel(), numel());
      ref[i].buf = widen(mom.data() + i * numel(), numel());
      ref[i].V = widen(v.data() + size_t(i) * group.moment_len(), group.moment_len());
    }
    group.step(blas, params.ptr, grads.ptr, h, copy.as_bf16());
    got.after = params.get();
    got.momentum = momentum();
    got.second_moment = second_moment();
    got.copy = copy.get();
  }
};

/// Runs every (case, matrix) reference step on its own thread.
void reference_steps(std::vector<MuonCase*>& cases, const std::vector<std::vector<float>>& grads,
                     const MuonHyper& h) {
  std::vector<std::thread> threads;
  for (size_t c = 0; c < cases.size(); c++)
    for (int i = 0; i < cases[c]->count; i++)
      threads.emplace_back([&, c, i] {
        MuonCase& k = *cases[c];
        const std::vector<double> g = widen(grads[c].data() + i * k.numel(), k.numel());
        k.u[i] = optim_ref::muon_step(k.ref[i], g, h.momentum, h.lr, h.weight_decay, h.beta2);
      });
  for (auto& t : threads) t.join();
}

void test_muon_matches_reference(cublasHandle_t blas) {
  // square, tall, wide (the depth-8 model's shapes), and small odd ones of each kind
  const int shapes[][3] = {{2, 512, 512}, {2, 2048, 512}, {2, 512, 2048},
                           {3, 4, 32},    {3, 40, 24},    {3, 24, 40}};
  std::vector<std::unique_ptr<MuonCase>> storage;
  std::vector<MuonCase*> cases;
  for (const auto& sh : shapes) {
    const std::vector<float> p0 = uniform(size_t(sh[0]) * sh[1] * sh[2], std::sqrt(3.0 / sh[2]));
    storage.push_back(std::make_unique<MuonCase>(sh[0], sh[1], sh[2], p0));
    cases.push_back(storage.back().get());
  }
  // Two steps: the second starts from non-zero momentum and second moment.
  const MuonHyper hypers[2] = {{0.04f, 0.85f, 0.2f, 0.95f}, {0.03f, 0.9f, 0.15f, 0.95f}};
  for (int step = 0; step < 2; step++) {
    std::vector<std::vector<float>> grads;
    for (auto* k : cases) {
      grads.push_back(normal(k->count * k->numel(), 1e-3));
      k->gpu_step(blas, grads.back(), hypers[step]);
    }
    reference_steps(cases, grads, hypers[step]);
    for (auto* k : cases)
      check_muon_step(k->name() + " step " + std::to_string(step + 1), k->rows, k->cols, hypers[step], k->got, k->ref, k->u);
  }
}

/// Weights of magnitude 0.5..1 and wd = 1: wd*|p| dwarfs any error in u, so
/// every element whose u has a clear sign shows whether it was decayed.
void test_muon_cautious_mask(cublasHandle_t blas) {
  for (const auto& sh : {std::pair{64, 256}, std::pair{256, 64}}) {
    const int rows = sh.first, cols = sh.second;
    const size_t n = size_t(rows) * cols;
    std::vector<float> p = uniform(n, 1.0);
    for (auto& x : p) x = std::copysign(0.5f + 0.5f * std::fabs(x), x);
    const std::vector<float> g = normal(n, 1.0);
    const MuonHyper h{0.01f, 0.9f, 1.0f, 0.95f};
    MuonGroup group(1, rows, cols);
    DeviceArray<float> dp(p), dg(g);
    group.step(blas, dp.ptr, dg.ptr, h);
    const std::vector<float> after = dp.get();
    optim_ref::MuonMatrix ref{rows, cols, widen(p), std::vector<double>(n, 0.0),
                              std::vector<double>(group.moment_len(), 0.0)};
    const std::vector<double> u = optim_ref::muon_step(ref, widen(g), h.momentum, h.lr, h.weight_decay, h.beta2);
    const double lr = double(h.lr) * group.lr_scale(), clear = 0.5 * rms(u);
    size_t checked = 0, decayed = 0, wrong = 0;
    for (size_t j = 0; j < n; j++) {
      if (std::fabs(u[j]) < clear) continue;
      const bool mask = u[j] * p[j] >= 0.0;
      const double r = (double(p[j]) - after[j]) / lr;
      checked++;
      decayed += mask;
      wrong += std::fabs(r - (u[j] + (mask ? h.weight_decay * p[j] : 0.0))) > 0.5 * h.weight_decay * std::fabs(p[j]);
    }
    const std::string name = "muon cautious mask (" + std::to_string(rows) + "," + std::to_string(cols) + ")";
    report(wrong == 0 && checked > n / 3 && decayed > checked / 4 && decayed < checked * 3 / 4, name,
           fmt("%.0f of %.0f clear-sign elements wrong", double(wrong), double(checked)));
  }
}

/// Zero gradients: no NaN (0/0 is guarded), u = 0, so the mask holds everywhere
/// and p becomes p - lr*wd*p; the state stays zero.
void test_muon_zero_gradient(cublasHandle_t blas) {
  const int count = 2, rows = 48, cols = 80;
  const size_t n = size_t(count) * rows * cols;
  const std::vector<float> p = uniform(n, 0.2);
  const MuonHyper h{0.04f, 0.95f, 0.2f, 0.95f};
  MuonGroup group(count, rows, cols);
  DeviceArray<float> dp(p), dg(n);
  group.step(blas, dp.ptr, dg.ptr, h);
  const std::vector<float> after = dp.get();
  const float lr = float(double(h.lr) * group.lr_scale());
  double worst = 0.0;
  for (size_t i = 0; i < n; i++) {
    const double want = double(p[i]) - double(lr) * h.weight_decay * p[i];
    worst = std::max(worst, std::isfinite(after[i]) ? std::fabs(after[i] - want) / (std::fabs(want) + 1e-30) : INFINITY);
  }
  report(worst <= 1e-6, "muon zero gradient: pure weight decay", fmt("worst rel err %.2e (tol 1e-6)", worst));
  double state = 0.0;
  for (float x : DeviceArray<float>::copy_out(group.momentum_buffer(), n)) state = std::max(state, double(std::fabs(x)));
  for (float x : DeviceArray<float>::copy_out(group.second_moment(), size_t(count) * group.moment_len()))
    state = std::max(state, std::isfinite(x) ? double(std::fabs(x)) : INFINITY);
  report(state == 0.0, "muon zero gradient: state stays zero", fmt("max |state| %.2e", state));
}

/// Two groups fed the same inputs give bitwise the same parameters and state.
void test_muon_deterministic(cublasHandle_t blas) {
  const int count = 2, rows = 256, cols = 768;
  const size_t n = size_t(count) * rows * cols;
  const std::vector<float> p = uniform(n, 0.05);
  const std::vector<float> g1 = normal(n, 1e-3), g2 = normal(n, 1e-3);
  std::vector<float> results[2], moments[2];
  bool grads_kept = true;
  for (int run = 0; run < 2; run++) {
    MuonGroup group(count, rows, cols);
    DeviceArray<float> dp(p), dg(g1);
    group.step(blas, dp.ptr, dg.ptr, {0.04f, 0.85f, 0.2f, 0.95f});
    grads_kept = grads_kept && dg.get() == g1;
    dg.put(g2);
    group.step(blas, dp.ptr, dg.ptr, {0.04f, 0.86f, 0.2f, 0.95f});
    results[run] = dp.get();
    moments[run] = DeviceArray<float>::copy_out(group.second_moment(), size_t(count) * group.moment_len());
  }
  const bool same = std::memcmp(results[0].data(), results[1].data(), n * sizeof(float)) == 0 &&
                    std::memcmp(moments[0].data(), moments[1].data(), moments[0].size() * sizeof(float)) == 0;
  report(same,
         "muon: two identical runs are bitwise equal", "");
  report(grads_kept, "muon: gradients are left unchanged", "");
}

void test_muon_shapes(cublasHandle_t blas) {
  auto rejects = [](int c, int r, int k) {
    try {
      MuonGroup g(c, r, k);
    } catch (const std::invalid_argument&) {
      return true;
    }
    return false;
  };
  report(rejects(0, 4, 4) && rejects(1, -1, 4) && rejects(1, 4, 0), "muon: non-positive shapes rejected", "");
  MuonGroup tall(1, 2048, 512), wide(1, 512, 2048), square(1, 64, 64);
  report(tall.lr_scale() == 2.0 && wide.lr_scale() == 1.0 && square.lr_scale() == 1.0,
         "muon: lr scale sqrt(max(1, rows/cols))", fmt("tall %.3f, wide %.3f", tall.lr_scale(), wide.lr_scale()));
  report(tall.moment_len() == 2048 && wide.moment_len() == 2048 && square.moment_len() == 64,
         "muon: second moment per row (rows >= cols) or per column", "");
  // A moved-from group holds nothing; the moved-to one works.
  MuonGroup moved = std::move(square);
  const std::vector<float> p = uniform(64 * 64, 0.1);
  DeviceArray<float> dp(p), dg(normal(64 * 64, 1e-3));
  moved.step(blas, dp.ptr, dg.ptr, {0.04f, 0.85f, 0.2f, 0.95f});
  const std::vector<float> after = dp.get();
  report(square.bytes() == 0 && moved.bytes() > 0 && all_finite(after) && after != p,
         "muon: a moved group keeps its buffers", fmt("%.0f bytes", double(moved.bytes())));
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: optimizer tests skipped\n");
    return 77;
  }
  cublasHandle_t blas;
  cublasCheck(cublasCreate(&blas));
  test_adamw_fp32();
  test_adamw_bf16();
  test_adamw_contract();
  test_muon_shapes(blas);
  test_muon_zero_gradient(blas);
  test_muon_cautious_mask(blas);
  test_muon_deterministic(blas);
  test_muon_matches_reference(blas);
  cublasCheck(cublasDestroy(blas));
  std::printf(failures ? "%d optimizer checks FAILED\n" : "all optimizer checks passed\n", failures);
  return failures ? 1 : 0;
}
