// `train --check`: seconds-long self-test of the model on a tiny configuration.
//   1. every parameter's analytic gradient (fp32 model) against central finite
//      differences of the loss along two random directions;
//   2. the bf16 training model against the fp32 model on the same weights and
//      batch: the loss and every gradient, by relative error;
//   3. the bf16 attention kernels against the fp32 reference kernels.
// Works on any model type with the members GPT<T> of train.cu has. Prints one
// line per comparison; returns false after printing "FAIL: ..." naming the tensor.
#pragma once

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "model/attention.cuh"
#include "model/batch_stager.cuh"

namespace gradcheck {

struct HostWeights {
  std::vector<float> master, embed;
};

template <typename M>
HostWeights random_weights(const M& m, std::mt19937_64& rng) {
  HostWeights w{std::vector<float>(m.p.n_master), std::vector<float>(m.p.n_embed)};
  const float bound = std::sqrt(3.0f / float(m.c.dim));
  for (auto& t : m.p.info) {
    float* dst = (t.embed ? w.embed.data() : w.master.data()) + t.offset;
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (long i = 0; i < t.numel(); i++) {
      float r = u(rng);
      if (t.embed) dst[i] = host_bf16_round(r * 1.7f);  // representable in bf16: both models agree
      else if (t.group == Group::ResidLambda) dst[i] = 1.0f + 0.2f * r;
      else if (t.group == Group::X0Lambda) dst[i] = 0.1f + 0.1f * r;
      else if (t.name.find("ve_gate") != std::string::npos) dst[i] = 0.3f * r;
      else dst[i] = bound * r;
    }
  }
  return w;
}

template <typename M>
double mean_loss(M& m, const BatchStager& s) {
  m.forward(s.inputs, s.targets, 0.0f);
  std::vector<float> l(m.N);
  cudaCheck(cudaMemcpyAsync(l.data(), m.losses, m.N * sizeof(float), cudaMemcpyDeviceToHost, m.st));
  cudaCheck(cudaStreamSynchronize(m.st));
  double sum = 0;
  for (float x : l) sum += x;
  return sum / double(m.N);
}

template <typename M>
std::vector<float> gradients(M& m, const BatchStager& s) {
  m.zero_grads();
  m.forward(s.inputs, s.targets, 1.0f / float(m.N));
  m.backward(s.inputs, s.index);
  std::vector<float> g(m.p.count());
  cudaCheck(cudaMemcpyAsync(g.data(), m.p.grads, g.size() * sizeof(float), cudaMemcpyDeviceToHost, m.st));
  cudaCheck(cudaStreamSynchronize(m.st));
  return g;
}

/// 1. Finite differences on the fp32 model.
template <typename M>
bool finite_differences(M& m, const BatchStager& s, HostWeights w, std::mt19937_64& rng) {
  m.upload(w.master, w.embed);
  std::vector<float> g = gradients(m, s);
  const double h = 1e-3, rtol = 2e-2, atol = 2e-5;
  std::string first_failure;  // every tensor is checked; the first failure is named
  for (auto& t : m.p.info) {
    for (int trial = 0; trial < 2; trial++) {
      std::vector<float>& buf = t.embed ? w.embed : w.master;
      std::vector<float> saved(buf.begin() + t.offset, buf.begin() + t.offset + t.numel());
      std::vector<float> u(t.numel());
      std::bernoulli_distribution coin(0.5);
      double analytic = 0;
      for (long i = 0; i < t.numel(); i++) {
        u[i] = coin(rng) ? 1.f : -1.f;
        analytic += double(u[i]) * g[t.grad_offset + i];
      }
      double loss[2];
      for (int side = 0; side < 2; side++) {
        for (long i = 0; i < t.numel(); i++) buf[t.offset + i] = saved[i] + float((side ? -h : h) * u[i]);
        m.upload(w.master, w.embed);
        loss[side] = mean_loss(m, s);
      }
      std::copy(saved.begin(), saved.end(), buf.begin() + t.offset);
      double fd = (loss[0] - loss[1]) / (2 * h);
      double err = std::fabs(fd - analytic), scale = std::max(std::fabs(fd), std::fabs(analytic));
      bool ok = err <= rtol * scale + atol;
      std::printf("check grad %-28s finite-diff % .6e analytic % .6e  err %.2e %s\n", t.name.c_str(), fd,
                  analytic, err, ok ? "ok" : "WRONG");
      if (!ok && first_failure.empty()) first_failure = t.name;
    }
  }
  m.upload(w.master, w.embed);
  if (!first_failure.empty())
    std::printf("FAIL: gradient of %s disagrees with finite differences\n", first_failure.c_str());
  return first_failure.empty();
}

inline double rel_err(const float* a, const float* ref, long n) {
  double num = 0, den = 0;
  for (long i = 0; i < n; i++) {
    double d = double(a[i]) - ref[i];
    num += d * d;
    den += double(ref[i]) * ref[i];
    if (!std::isfinite(a[i])) return INFINITY;
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

/// 2. The bf16 model against the fp32 model on the same weights and batch.
template <typename MF, typename MB>
bool bf16_against_fp32(MF& mf, MB& mb, const BatchStager& sf, const BatchStager& sb,
                       const HostWeights& w) {
  mf.upload(w.master, w.embed);
  mb.upload(w.master, w.embed);
  double lf = mean_loss(mf, sf), lb = mean_loss(mb, sb);
  std::printf("check bf16 loss %.6f vs fp32 %.6f\n", lb, lf);
  std::vector<float> gf = gradients(mf, sf), gb = gradients(mb, sb);
  std::string first_failure;
  if (!(std::fabs(lb - lf) <= 2e-2 * std::fabs(lf))) first_failure = "loss";
  for (auto& t : mf.p.info) {
    double e = rel_err(gb.data() + t.grad_offset, gf.data() + t.grad_offset, t.numel());
    bool ok = e < 0.1;
    std::printf("check bf16 grad %-28s rel err %.3e %s\n", t.name.c_str(), e, ok ? "ok" : "WRONG");
    if (!ok && first_failure.empty()) first_failure = t.name;
  }
  if (!first_failure.empty())
    std::printf("FAIL: bf16 gradient of %s differs from the fp32 model's\n", first_failure.c_str());
  return first_failure.empty();
}

/// 3. bf16 flash attention against the fp32 reference kernels, forward and backward.
inline bool attention_kernels(AttnShape s, std::mt19937_64& rng, cudaStream_t st) {
  const long nq = long(s.B) * s.T * s.H * s.D, nk = long(s.B) * s.T * s.Hkv * s.D;
  const long nl = long(s.B) * s.H * s.T;
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> hq(nq), hk(nk), hv(nk), hdo(nq);
  // q, k unit-RMS rows (as after QK-norm), scaled up so the softmax is peaked
  for (auto* v : {&hq, &hk}) for (auto& x : *v) x = host_bf16_round(1.5f * normal(rng));
  for (auto& x : hv) x = host_bf16_round(normal(rng));
  for (auto& x : hdo) x = host_bf16_round(normal(rng));
  DeviceArena arena;
  auto upf = [&](const std::vector<float>& h) {
    float* d = arena.alloc<float>(h.size());
    cudaCheck(cudaMemcpy(d, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    return d;
  };
  auto upb = [&](const std::vector<float>& h) {
    std::vector<bf16> b(h.size());
    for (size_t i = 0; i < h.size(); i++) b[i] = __float2bfloat16(h[i]);
    bf16* d = arena.alloc<bf16>(h.size());
    cudaCheck(cudaMemcpy(d, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
    return d;
  };
  float *fq = upf(hq), *fk = upf(hk), *fv = upf(hv), *fdo = upf(hdo);
  bf16 *bq = upb(hq), *bk = upb(hk), *bv = upb(hv), *bdo = upb(hdo);
  float *fo = arena.alloc<float>(nq), *flse = arena.alloc<float>(nl);
  void* fscr = arena.alloc<unsigned char>(attention_scratch_bytes<float>(s));
  float *fdq = arena.alloc<float>(nq), *fdk = arena.alloc<float>(nk), *fdv = arena.alloc<float>(nk);
  bf16 *bo = arena.alloc<bf16>(nq), *bdq = arena.alloc<bf16>(nq), *bdk = arena.alloc<bf16>(nk),
       *bdv = arena.alloc<bf16>(nk);
  float* blse = arena.alloc<float>(nl);
  void* bscr = arena.alloc<unsigned char>(attention_scratch_bytes<bf16>(s));
  attention_forward<float>(fo, flse, fq, fk, fv, s, st);
  attention_backward<float>(fdq, fdk, fdv, fscr, fdo, fo, flse, fq, fk, fv, s, st);
  attention_forward<bf16>(bo, blse, bq, bk, bv, s, st);
  attention_backward<bf16>(bdq, bdk, bdv, bscr, bdo, bo, blse, bq, bk, bv, s, st);
  cudaCheck(cudaStreamSynchronize(st));
  auto down_f = [&](const float* d, long n) {
    std::vector<float> h(n);
    cudaCheck(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
    return h;
  };
  auto down_b = [&](const bf16* d, long n) {
    std::vector<bf16> b(n);
    cudaCheck(cudaMemcpy(b.data(), d, n * 2, cudaMemcpyDeviceToHost));
    std::vector<float> h(n);
    for (long i = 0; i < n; i++) h[i] = __bfloat162float(b[i]);
    return h;
  };
  struct Item { const char* name; std::vector<float> got, ref; double tol; };
  Item items[] = {{"attention.out", down_b(bo, nq), down_f(fo, nq), 2e-2},
                  {"attention.lse", down_f(blse, nl), down_f(flse, nl), 1e-3},
                  {"attention.dq", down_b(bdq, nq), down_f(fdq, nq), 3e-2},
                  {"attention.dk", down_b(bdk, nk), down_f(fdk, nk), 3e-2},
                  {"attention.dv", down_b(bdv, nk), down_f(fdv, nk), 3e-2}};
  bool failed = false;
  for (auto& it : items) {
    double e = rel_err(it.got.data(), it.ref.data(), long(it.got.size()));
    bool ok = e < it.tol;
    std::printf("check %-14s T=%d H=%d Hkv=%d window=%d: rel err %.3e %s\n", it.name, s.T, s.H, s.Hkv,
                s.window, e, ok ? "ok" : "WRONG");
    if (!ok && !failed) {
      std::printf("FAIL: bf16 %s differs from the fp32 reference (relative error %.3e, window %d)\n",
                  it.name, e, s.window);
      failed = true;
    }
  }
  return !failed;
}

}  // namespace gradcheck
