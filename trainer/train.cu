// Single-GPU GPT pretraining: hyperparameters, the model's wiring (forward and
// backward over the kernels of model/), the optimizer set-up, the schedules
// and the training loop. The harness (harness/) owns the data, the time
// budget, the evaluation and the summary; this file is what experiments edit.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/constants.h"
#include "harness/dataset.h"
#include "harness/eval.h"
#include "harness/loader.h"
#include "harness/probe_model.h"
#include "harness/probes.h"
#include "harness/run_options.h"
#include "model/attention.cuh"
#include "model/batch_stager.cuh"
#include "model/layers.cuh"
#include "model/lm_head_ce.cuh"
#include "model/matmul.cuh"
#include "model/mlp_product.cuh"
#include "model/optim.cuh"
#include "model/params.cuh"
#include "model/qkv_product.cuh"
#include "model/twin_dump.cuh"
#include "model/gradcheck.cuh"

// ---- hyperparameters (one per line; the offline proposer edits these) ----
constexpr int DEPTH = 8;                      // transformer layers; model_dim derives from it
constexpr int ASPECT_RATIO = 64;              // model_dim = DEPTH * this, rounded up to HEAD_DIM
constexpr int HEAD_DIM = 128;                 // channels per attention head
constexpr int KV_HEAD_RATIO = 1;              // query heads per kv head (grouped-query attention)
constexpr int MLP_RATIO = 4;                  // MLP width over model_dim
constexpr int SHORT_WINDOW = 1024;            // keys before the query seen by an S layer
constexpr int VE_GATE_CHANNELS = 32;          // channels of x that drive the value-embedding gate
constexpr float SOFTCAP = 15.0f;              // logits = SOFTCAP * tanh(logits / SOFTCAP)
constexpr double ROPE_BASE = 10000.0;         // rotary embedding base
constexpr float X0_LAMBDA_INIT = 0.1f;        // initial weight of x0 in every layer's input
constexpr long TOTAL_BATCH_TOKENS = 524288;   // tokens per optimizer step (2^19)
constexpr int DEVICE_BATCH_ROWS = 128;        // rows of MAX_SEQ_LEN per forward/backward
constexpr float EMBEDDING_LR = 0.6f;          // AdamW lr of wte and value embeddings
constexpr float UNEMBEDDING_LR = 0.004f;      // AdamW lr of lm_head
constexpr float RESID_LAMBDA_LR = 0.005f;     // AdamW lr of resid_lambdas
constexpr float X0_LAMBDA_LR = 0.5f;          // AdamW lr of x0_lambdas
constexpr float ADAM_BETA1 = 0.8f;            // AdamW beta1
constexpr float ADAM_BETA2 = 0.95f;           // AdamW beta2
constexpr float X0_LAMBDA_BETA1 = 0.96f;      // AdamW beta1 of x0_lambdas
constexpr float ADAM_EPS = 1e-10f;            // AdamW epsilon
constexpr float MATRIX_LR = 0.04f;            // Muon lr (times sqrt(max(1, rows/cols)))
constexpr float MUON_MOMENTUM_START = 0.85f;  // Muon momentum at step 0
constexpr float MUON_MOMENTUM_END = 0.95f;    // Muon momentum after the ramp
constexpr int MUON_MOMENTUM_STEPS = 300;      // steps of the linear momentum ramp
constexpr float MUON_BETA2 = 0.95f;           // NorMuon second-moment EMA
constexpr float WEIGHT_DECAY = 0.2f;          // cautious weight decay of Muon, times (1 - progress)
constexpr double WARMUP_RATIO = 0.0;          // fraction of the budget with linear lr warm-up
constexpr double WARMDOWN_RATIO = 0.5;        // fraction of the budget with linear lr warm-down
constexpr double FINAL_LR_FRAC = 0.0;         // lr multiplier at the end of the warm-down

#define HYPERPARAMETER(x) {#x, double(x)}
const std::vector<std::pair<const char*, double>> HYPERPARAMETERS = {
    HYPERPARAMETER(DEPTH), HYPERPARAMETER(ASPECT_RATIO), HYPERPARAMETER(HEAD_DIM),
    HYPERPARAMETER(KV_HEAD_RATIO), HYPERPARAMETER(MLP_RATIO), HYPERPARAMETER(SHORT_WINDOW),
    HYPERPARAMETER(VE_GATE_CHANNELS), HYPERPARAMETER(SOFTCAP), HYPERPARAMETER(ROPE_BASE),
    HYPERPARAMETER(X0_LAMBDA_INIT), HYPERPARAMETER(TOTAL_BATCH_TOKENS),
    HYPERPARAMETER(DEVICE_BATCH_ROWS), HYPERPARAMETER(EMBEDDING_LR), HYPERPARAMETER(UNEMBEDDING_LR),
    HYPERPARAMETER(RESID_LAMBDA_LR), HYPERPARAMETER(X0_LAMBDA_LR), HYPERPARAMETER(ADAM_BETA1),
    HYPERPARAMETER(ADAM_BETA2), HYPERPARAMETER(X0_LAMBDA_BETA1), HYPERPARAMETER(ADAM_EPS),
    HYPERPARAMETER(MATRIX_LR), HYPERPARAMETER(MUON_MOMENTUM_START), HYPERPARAMETER(MUON_MOMENTUM_END),
    HYPERPARAMETER(MUON_MOMENTUM_STEPS), HYPERPARAMETER(MUON_BETA2), HYPERPARAMETER(WEIGHT_DECAY),
    HYPERPARAMETER(WARMUP_RATIO), HYPERPARAMETER(WARMDOWN_RATIO), HYPERPARAMETER(FINAL_LR_FRAC)};

// ---- model configuration: one dial (depth) drives the rest ----
struct Config {
  int depth, dim, n_head, n_kv_head, head_dim, vocab, seq_len, short_window;
  std::string window_pattern = "SSSL";
  int window(int layer) const {  // last layer always long
    bool is_long = layer == depth - 1 || window_pattern[layer % window_pattern.size()] == 'L';
    return is_long ? seq_len : short_window;
  }
  bool has_ve(int layer) const { return layer % 2 == (depth - 1) % 2; }
  int kv_dim() const { return n_kv_head * head_dim; }
};

Config config_for_depth(int depth) {
  int dim = (depth * ASPECT_RATIO + HEAD_DIM - 1) / HEAD_DIM * HEAD_DIM;
  int heads = dim / HEAD_DIM;
  return {depth, dim, heads, heads / KV_HEAD_RATIO, HEAD_DIM, harness::VOCAB_SIZE,
          harness::MAX_SEQ_LEN, SHORT_WINDOW};
}

// RMSNorm's eps: fp32's machine epsilon, which PyTorch's F.rms_norm adds even to a bf16
// input (its computation type's; measured on the GPU machine, tests/rmsnorm_eps_check.py).
constexpr float NORM_EPS = 1.1920929e-07f;

// ---- the model: parameters, saved activations, forward and backward ----
template <typename T>
struct GPT {
  struct Layer {
    int c_q, c_k, c_v, c_proj, ve_gate = -1, ve = -1, c_fc, mlp_proj;
    T *x, *n1, *qkv, *gate, *att, *xa, *n2, *a;  // saved for backward (a = relu(h)²; h is not kept)
    T* xm;  // the mixed residual: one buffer for all layers (the backward recomputes it from x, x0)
    float *rstd1, *rstd2, *qkrstd, *lse;
    // qkv (N, QKV): q (normalized, rotated), k (the same), v (gated) side by side in each row.
    bool fused_qkv = false;  // c_q, c_k, c_v lie one after another (weights and gradients): one product
  };
  Config c;
  int B;
  long N;  // tokens per micro-batch
  cudaStream_t st;
  Blas blas;
  DeviceArena arena;
  Params<T> p;
  int wte, lm_head, resid, x0l;
  std::vector<Layer> L;
  float* cos_sin;      // (T, D/2) cos, (T, D/2) sin
  T *emb, *x0, *xf;    // (N, C)
  float *rstd0, *rstdf, *losses, *partials, *embed_partials;
  void* attn_scratch;  // attention_backward's, sized for the largest window
  LmHeadCEBuffers<T> head;  // the logits, then their gradient; the cross-entropy's scratch
  LmHeadGrad<T> head_grad;  // what the last forward left for lm_head's backward
  T *dX, *dx0, *dn, *datt, *dqkv, *dve, *dgate, *dh;
  int qkv_width() const { return c.n_head * c.head_dim + 2 * c.kv_dim(); }  // QKV: a row of qkv

  GPT(Config cfg, int batch_rows, cudaStream_t stream)
      : c(cfg), B(batch_rows), N(long(batch_rows) * cfg.seq_len), st(stream), blas(stream) {
    const int C = c.dim, KV = c.kv_dim(), HD = c.n_head * c.head_dim, F = MLP_RATIO * c.dim;
    wte = p.add("wte", {c.vocab, C}, Group::Embedding);
    lm_head = p.add("lm_head", {c.vocab, C}, Group::LmHead);
    resid = p.add("resid_lambdas", {c.depth}, Group::ResidLambda);
    x0l = p.add("x0_lambdas", {c.depth}, Group::X0Lambda);
    L.resize(c.depth);
    for (int i = 0; i < c.depth; i++) {
      std::string b = "blocks." + std::to_string(i);
      if (c.has_ve(i)) L[i].ve = p.add("value_embeds." + std::to_string(i), {c.vocab, KV}, Group::Embedding);
      L[i].c_q = p.add(b + ".attn.c_q", {HD, C}, Group::Matrix);
      L[i].c_k = p.add(b + ".attn.c_k", {KV, C}, Group::Matrix);
      L[i].c_v = p.add(b + ".attn.c_v", {KV, C}, Group::Matrix);
      L[i].c_proj = p.add(b + ".attn.c_proj", {C, HD}, Group::Matrix);
      if (c.has_ve(i)) L[i].ve_gate = p.add(b + ".attn.ve_gate", {c.n_kv_head, VE_GATE_CHANNELS}, Group::Matrix);
      L[i].c_fc = p.add(b + ".mlp.c_fc", {F, C}, Group::Matrix);
      L[i].mlp_proj = p.add(b + ".mlp.c_proj", {C, F}, Group::Matrix);
    }
    p.allocate(arena);
    auto A = [&](long n) { return arena.alloc<T>(n); };
    auto Af = [&](long n) { return arena.alloc<float>(n); };
    for (int i = 0; i < c.depth; i++) {
      Layer& l = L[i];
      l.x = i == 0 ? nullptr : A(N * C);  // layer 0 reads x0
      l.xm = i == 0 ? A(N * C) : L[0].xm;
      l.n1 = A(N * C), l.qkv = A(N * qkv_width());
      l.gate = c.has_ve(i) ? A(N * c.n_kv_head) : nullptr;
      l.att = A(N * HD), l.xa = A(N * C), l.n2 = A(N * C), l.a = A(N * F);
      l.rstd1 = Af(N), l.rstd2 = Af(N), l.qkrstd = Af(N * (c.n_head + c.n_kv_head));
      l.lse = Af(N * c.n_head);
      const ParamInfo &q = p.info[l.c_q], &k = p.info[l.c_k], &v = p.info[l.c_v];
      l.fused_qkv = k.offset == q.offset + q.numel() && v.offset == k.offset + k.numel() &&
                    k.grad_offset == q.grad_offset + q.numel() && v.grad_offset == k.grad_offset + k.numel();
    }
    emb = A(N * C), x0 = A(N * C), xf = A(N * C);
    L[0].x = x0;
    xlast = A(N * C);
    rstd0 = Af(N), rstdf = Af(N), losses = Af(N), partials = Af(2048);
    head = {A(N * c.vocab), A(N * C), Af(N), Af(lm_head_ce_partials_size(N, c.vocab)), Af(N)};
    embed_partials = Af(max_embed_segments(N, c.vocab) * std::max(C, KV));
    size_t scratch_bytes = 0;
    for (int i = 0; i < c.depth; i++) scratch_bytes = std::max(scratch_bytes, attention_scratch_bytes<T>(attn_shape(i)));
    attn_scratch = arena.alloc<unsigned char>(scratch_bytes);
    dh = A(N * F);
    dX = A(N * C), dx0 = A(N * C), dn = A(N * C), datt = A(N * HD), dqkv = A(N * qkv_width());
    dve = A(N * KV), dgate = A(N * c.n_kv_head);
    // rotary tables
    std::vector<float> cs(size_t(c.seq_len) * c.head_dim);
    const int half = c.head_dim / 2;
    for (int t = 0; t < c.seq_len; t++)
      for (int f = 0; f < half; f++) {
        double ang = t / std::pow(ROPE_BASE, 2.0 * f / c.head_dim);
        cs[size_t(t) * half + f] = float(std::cos(ang));
        cs[size_t(c.seq_len) * half + size_t(t) * half + f] = float(std::sin(ang));
      }
    cos_sin = Af(cs.size());
    cudaCheck(cudaMemcpy(cos_sin, cs.data(), cs.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  T* xlast;  // (N, C) output of the last layer

  AttnShape attn_shape(int i) const {
    return {B, c.seq_len, c.n_head, c.n_kv_head, c.head_dim, c.window(i), qkv_width()};
  }
  // The q, k, v blocks of a row of qkv (or dqkv), and the matrices that make them.
  long qkv_col(int part) const { return part == 0 ? 0 : c.n_head * c.head_dim + (part - 1) * c.kv_dim(); }
  int qkv_rows(int part) const { return part == 0 ? c.n_head * c.head_dim : c.kv_dim(); }
  static int qkv_param(const Layer& l, int part) { return part == 0 ? l.c_q : part == 1 ? l.c_k : l.c_v; }

  /// The initial weights (issue: embedding N(0,1), lm_head N(0,0.001), q/k/v/c_fc and value
  /// embeddings uniform(±sqrt(3/dim)), output projections and gates zero, lambdas 1 and 0.1).
  void init(unsigned long seed) {
    std::mt19937_64 rng(seed);
    const float bound = std::sqrt(3.0f) / std::sqrt(float(c.dim));
    std::vector<float> master(p.n_master, 0.f), embed(p.n_embed);
    for (auto& t : p.info) {
      std::vector<float> v(t.numel(), 0.f);
      std::normal_distribution<float> normal(0.f, 1.f);
      std::uniform_real_distribution<float> uni(-bound, bound);
      if (t.name == "wte") for (auto& x : v) x = normal(rng);
      else if (t.name == "lm_head") for (auto& x : v) x = 0.001f * normal(rng);
      else if (t.name == "resid_lambdas") std::fill(v.begin(), v.end(), 1.0f);
      else if (t.name == "x0_lambdas") std::fill(v.begin(), v.end(), X0_LAMBDA_INIT);
      else if (t.name.find("c_proj") != std::string::npos || t.name.find("ve_gate") != std::string::npos) {}
      else for (auto& x : v) x = uni(rng);  // c_q, c_k, c_v, c_fc, value_embeds
      if (t.embed) std::copy(v.begin(), v.end(), embed.begin() + t.offset);
      else std::copy(v.begin(), v.end(), master.begin() + t.offset);
    }
    upload(master, embed);
  }
  /// Sets every weight from host values (embeddings rounded to T).
  void upload(const std::vector<float>& master, const std::vector<float>& embed) {
    cudaCheck(cudaMemcpy(p.master, master.data(), master.size() * 4, cudaMemcpyHostToDevice));
    std::vector<T> e(embed.size());
    for (size_t i = 0; i < e.size(); i++) {
      if constexpr (std::is_same_v<T, float>) e[i] = embed[i];
      else e[i] = __float2bfloat16(embed[i]);
    }
    cudaCheck(cudaMemcpy(p.embed, e.data(), e.size() * sizeof(T), cudaMemcpyHostToDevice));
    refresh_shadow();
  }
  void refresh_shadow() {
    if constexpr (!std::is_same_v<T, float>) cast_from_float(p.shadow, p.master, p.n_master, st);
  }
  void zero_grads() { cudaCheck(cudaMemsetAsync(p.grads, 0, p.count() * sizeof(float), st)); }

  /// Forward over one micro-batch; per-token losses into `losses`. With grad_scale > 0 also
  /// d(loss)/d(logits) * grad_scale (head_grad), ready for backward().
  void forward(const int* inp, const int* tgt, float grad_scale) {
    const int C = c.dim, HD = c.n_head * c.head_dim, F = MLP_RATIO * c.dim, QKV = qkv_width();
    embedding_forward(emb, inp, p.e(wte), N, C, st);
    rmsnorm_forward(x0, rstd0, emb, N, C, NORM_EPS, st);
    for (int i = 0; i < c.depth; i++) {
      Layer& l = L[i];
      T* x_out = i + 1 < c.depth ? L[i + 1].x : xlast;
      residual_mix_rmsnorm_forward(l.xm, l.n1, l.rstd1, l.x, x0, p.w(resid) + i, p.w(x0l) + i, N, C, NORM_EPS, st);
      // qkv = n1 · [W_q; W_k; W_v]ᵀ, then rope + QK-norm over the q and k heads in place (one
      // product with them in its epilogue where the three matrices lie together)
      if (l.fused_qkv) {
        linear_rope_qknorm_forward(blas, l.qkv, l.qkrstd, l.n1, p.wt(l.c_q), cos_sin, N, C, QKV, c.seq_len,
                                   c.n_head + c.n_kv_head, c.head_dim, NORM_EPS);
      } else {
        for (int part = 0; part < 3; part++)
          matmul<T, T>(blas, l.qkv + qkv_col(part), QKV, l.n1, C, false, p.wt(qkv_param(l, part)), C, true,
                       N, qkv_rows(part), C);
        rope_qknorm_forward(l.qkv, l.qkrstd, l.qkv, cos_sin, N, c.seq_len, c.n_head + c.n_kv_head, c.head_dim,
                            QKV, NORM_EPS, st);
      }
      T* v = l.qkv + qkv_col(2);
      if (l.ve >= 0) {  // gate logits (N, Hkv) = x[:, :32] · W_gateᵀ
        matmul<T, T>(blas, l.gate, c.n_kv_head, l.n1, C, false, p.wt(l.ve_gate), VE_GATE_CHANNELS,
                     true, N, c.n_kv_head, VE_GATE_CHANNELS);
        ve_gate_forward(v, l.gate, p.e(l.ve), inp, N, c.n_kv_head, c.head_dim, QKV, st);
      }
      attention_forward(l.att, l.lse, l.qkv, l.qkv + qkv_col(1), v, attn_shape(i), st);
      linear_forward_add(blas, l.xa, l.xm, l.att, p.wt(l.c_proj), N, HD, C);  // xa = xm + attn
      rmsnorm_forward(l.n2, l.rstd2, l.xa, N, C, NORM_EPS, st);
      linear_relu2_forward(blas, l.a, l.n2, p.wt(l.c_fc), N, C, F);  // a = relu(n2 · W_fcᵀ)²
      linear_forward_add(blas, x_out, l.xa, l.a, p.wt(l.mlp_proj), N, F, C);  // x = xa + mlp
    }
    rmsnorm_forward(xf, rstdf, xlast, N, C, NORM_EPS, st);
    // bf16 logits, as the reference, soft-capped in the cross-entropy
    head_grad = lm_head_softcap_ce(blas, head, losses, xf, p.wt(lm_head), tgt, N, C, c.vocab, SOFTCAP, grad_scale);
  }

  /// Backward of the last forward(); adds every parameter's gradient into p.grads.
  void backward(const int* inp, const TokenIndex& idx) {
    const int C = c.dim, KV = c.kv_dim(), HD = c.n_head * c.head_dim, F = MLP_RATIO * c.dim, QKV = qkv_width();
    const int Hkv = c.n_kv_head, G = VE_GATE_CHANNELS;
    // dlogits up to a factor a row (lm_head_ce.cuh): folded into x_scaled, and applied to dn by
    // the final norm's backward
    const LmHeadGrad<T>& g = head_grad;
    if (!g.dlogits) throw std::logic_error("GPT::backward: the last forward computed no gradient (grad_scale 0)");
    linear_backward_weight(blas, p.g(lm_head), g.dlogits, g.x_scaled, N, C, c.vocab);
    linear_backward_input(blas, dn, g.dlogits, p.wt(lm_head), N, C, c.vocab);
    rmsnorm_backward(dX, (const T*)nullptr, dn, xlast, rstdf, N, C, st, g.row_scale);
    for (int i = c.depth - 1; i >= 0; i--) {
      Layer& l = L[i];
      // x_out = xa + relu²(n2 · W_fcᵀ) · W_projᵀ
      linear_backward_weight(blas, p.g(l.mlp_proj), dX, l.a, N, F, C);
      linear_backward_input_relu2(blas, dh, dX, p.wt(l.mlp_proj), l.a, N, F, C);  // dh = d(a) * 2 sqrt(a)
      linear_backward_weight(blas, p.g(l.c_fc), dh, l.n2, N, C, F);
      linear_backward_input(blas, dn, dh, p.wt(l.c_fc), N, C, F);
      rmsnorm_backward(dX, dX, dn, l.xa, l.rstd2, N, C, st);  // dX = d xa
      // xa = xm + attention(q, k, v) · W_projᵀ
      linear_backward_weight(blas, p.g(l.c_proj), dX, l.att, N, HD, C);
      linear_backward_input(blas, datt, dX, p.wt(l.c_proj), N, HD, C);
      const T* v = l.qkv + qkv_col(2);
      T* dv = dqkv + qkv_col(2);
      // dq, dk come out through rope + QK-norm's backward: d(q, k before rope and norm)
      const RopeQkNorm rope{l.qkrstd, cos_sin};
      attention_backward(dqkv, dqkv + qkv_col(1), dv, attn_scratch, datt, l.att, l.lse, l.qkv,
                         l.qkv + qkv_col(1), v, attn_shape(i), st, &rope);
      if (l.ve >= 0) {
        ve_gate_backward(dgate, dve, dv, l.gate, p.e(l.ve), inp, N, Hkv, c.head_dim, QKV, st);
        embedding_backward(p.g(l.ve), dve, idx, KV, embed_partials, st);
        matmul<T, float>(blas, p.g(l.ve_gate), G, dgate, Hkv, true, l.n1, C, false, Hkv, G, N, 1.0f);
      }
      if (l.fused_qkv) {
        linear_backward_weight(blas, p.g(l.c_q), dqkv, l.n1, N, C, QKV);
        linear_backward_input(blas, dn, dqkv, p.wt(l.c_q), N, C, QKV);
      } else {
        for (int part = 0; part < 3; part++) {
          const int w = qkv_param(l, part);
          matmul<T, float>(blas, p.g(w), C, dqkv + qkv_col(part), QKV, true, l.n1, C, false, qkv_rows(part), C, N, 1.0f);
          matmul<T, T>(blas, dn, C, dqkv + qkv_col(part), QKV, false, p.wt(w), C, false, N, C, qkv_rows(part),
                       part == 0 ? 0.0f : 1.0f);
        }
      }
      if (l.ve >= 0)  // dn[:, :32] += d gate_logits · W_gate
        matmul<T, T>(blas, dn, C, dgate, Hkv, false, p.wt(l.ve_gate), G, false, N, G, Hkv, 1.0f);
      // dX = d x; the last layer of the backward starts dx0, and layer 0 (whose x is x0) folds
      // dx0 into its dX, x0's whole gradient
      const X0Grad x0_grad{i < c.depth - 1, l.x == x0};
      residual_mix_rmsnorm_backward(dX, dx0, p.g(resid) + i, p.g(x0l) + i, partials, dX, dn, l.rstd1, l.x, x0,
                                    p.w(resid) + i, p.w(x0l) + i, N, C, st, x0_grad);
    }
    rmsnorm_backward(dn, (const T*)nullptr, dX, emb, rstd0, N, C, st);
    embedding_backward(p.g(wte), dn, idx, C, embed_partials, st);
  }

  /// 6 * (matrix + lm_head parameters) + attention's 12 * heads * head_dim * window, per token.
  double flops_per_token() const {
    double n = 0, attn = 0;
    for (auto& t : p.info)
      if (t.group == Group::Matrix || t.group == Group::LmHead) n += t.numel();
    for (int i = 0; i < c.depth; i++) attn += 12.0 * c.n_head * c.head_dim * std::min(c.window(i), c.seq_len);
    return 6 * n + attn;
  }
};

// ---- optimizer: AdamW for embeddings, lm_head and lambdas; Muon per shape group ----
struct Optimizer {
  struct Adam {
    int param;
    float lr, beta1;
    float *m = nullptr, *v = nullptr;  // (numel,) moments of an fp32 parameter
    bf16 *mb = nullptr, *vb = nullptr;  // (numel,) moments of a bf16 table, kept in bf16
  };
  struct Muon {
    long offset;  // of the group's stack in master / grads / shadow
    MuonGroup group;
  };
  Params<bf16>& p;
  const Blas& blas;
  DeviceArena arena;
  std::vector<Adam> adam;
  std::vector<Muon> muon;
  int steps = 0;

  Optimizer(Params<bf16>& params, int model_dim, const Blas& b) : p(params), blas(b) {
    const float dmodel_scale = std::pow(model_dim / 768.0f, -0.5f);
    for (int i = 0; i < int(p.info.size()); i++) {
      const ParamInfo& t = p.info[i];
      float lr = 0, beta1 = ADAM_BETA1;
      switch (t.group) {
        case Group::LmHead: lr = UNEMBEDDING_LR * dmodel_scale; break;
        case Group::Embedding: lr = EMBEDDING_LR * dmodel_scale; break;
        case Group::ResidLambda: lr = RESID_LAMBDA_LR; break;
        case Group::X0Lambda: lr = X0_LAMBDA_LR, beta1 = X0_LAMBDA_BETA1; break;
        case Group::Matrix: {  // Params::allocate stacks same-shape matrices contiguously
          auto same_shape = [&](const ParamInfo& u) { return u.group == Group::Matrix && u.shape == t.shape; };
          if (std::none_of(p.info.begin(), p.info.begin() + i, same_shape))  // first of its stack
            muon.push_back({t.offset, MuonGroup(int(std::count_if(p.info.begin(), p.info.end(), same_shape)),
                                                t.rows(), t.cols())});
          continue;
        }
      }
      Adam a{i, lr, beta1};
      if (t.embed) a.mb = zeros<bf16>(t.numel()), a.vb = zeros<bf16>(t.numel());
      else a.m = zeros<float>(t.numel()), a.v = zeros<float>(t.numel());
      adam.push_back(a);
    }
  }
  template <typename M>
  M* zeros(long n) {
    M* x = arena.alloc<M>(n);
    cudaCheck(cudaMemset(x, 0, n * sizeof(M)));
    return x;
  }
  void step(float lr_mult, float momentum, float weight_decay) {
    steps++;
    for (const Adam& a : adam) {
      const ParamInfo& t = p.info[a.param];
      AdamWHyper h{a.lr * lr_mult, a.beta1, ADAM_BETA2, ADAM_EPS, 0.0f};
      if (t.embed) adamw_step(p.e(a.param), p.g(a.param), a.mb, a.vb, t.numel(), h, steps, blas.stream);
      else adamw_step(p.w(a.param), p.g(a.param), a.m, a.v, t.numel(), h, steps, blas.stream, p.shadow + t.offset);
    }
    MuonHyper h{MATRIX_LR * lr_mult, momentum, weight_decay, MUON_BETA2};
    for (Muon& m : muon) m.group.step(blas.handle, p.master + m.offset, p.grads + m.offset, h, p.shadow + m.offset);
  }
  size_t bytes() const {
    size_t n = arena.bytes;
    for (auto& m : muon) n += m.group.bytes();
    return n;
  }
};

// ---- schedules (progress in [0, 1]: counted time / budget, or step / --steps) ----
double lr_multiplier(double progress) {
  if (progress < WARMUP_RATIO) return progress / std::max(WARMUP_RATIO, 1e-12);
  if (progress < 1.0 - WARMDOWN_RATIO) return 1.0;
  double cooldown = (1.0 - progress) / WARMDOWN_RATIO;
  return cooldown + (1.0 - cooldown) * FINAL_LR_FRAC;
}
float muon_momentum(long step) {
  float f = std::min(1.0f, float(step) / MUON_MOMENTUM_STEPS);
  return (1 - f) * MUON_MOMENTUM_START + f * MUON_MOMENTUM_END;
}
float muon_weight_decay(double progress) { return WEIGHT_DECAY * float(1.0 - progress); }

// ---- --check: the tiny configuration's gradient and kernel self-test ----
int run_check(unsigned long seed) {
  cudaStream_t st;
  cudaCheck(cudaStreamCreate(&st));
  std::mt19937_64 rng(seed);
  bool ok = true;
  // GQA, windows S S L, value embeds on layers 0, 2 (q, k, v by three products); then as
  // many kv heads as query heads (one product for q, k, v, as the default model)
  const std::pair<Config, bool> models[] = {{Config{3, 256, 2, 1, 128, 512, 128, 48}, false},
                                            {Config{2, 256, 2, 2, 128, 512, 128, 48}, true}};
  for (const auto& [tiny, one_product] : models) {
    const int B = 2;
    GPT<float> mf(tiny, B, st);
    GPT<bf16> mb(tiny, B, st);
    std::printf("check: depth %d, %d/%d heads, q/k/v %s\n", tiny.depth, tiny.n_head, tiny.n_kv_head,
                mf.L[0].fused_qkv ? "in one product" : "in three products");
    if (mf.L[0].fused_qkv != one_product || mb.L[0].fused_qkv != one_product) {
      std::printf("FAIL: check: this model should compute q, k, v in %s (the parameter layout changed?)\n",
                  one_product ? "one product" : "three products");
      ok = false;
      continue;
    }
    BatchStager sf(mf.arena, B, tiny.seq_len, tiny.vocab), sb(mb.arena, B, tiny.seq_len, tiny.vocab);
    std::vector<uint16_t> rows(size_t(B) * (tiny.seq_len + 1));
    std::uniform_int_distribution<int> tok(0, tiny.vocab - 1);
    for (auto& r : rows) r = uint16_t(tok(rng));
    sf.upload(rows.data(), st);
    sb.upload(rows.data(), st);
    auto w = gradcheck::random_weights(mf, rng);
    ok = gradcheck::finite_differences(mf, sf, w, rng) && ok;
    ok = gradcheck::bf16_against_fp32(mf, mb, sf, sb, w) && ok;
  }
  for (AttnShape s : {AttnShape{2, 256, 4, 2, 128, 100}, AttnShape{1, 512, 2, 2, 128, 512},
                      AttnShape{1, 512, 2, 1, 128, 64}})
    ok = gradcheck::attention_kernels(s, rng, st) && ok;
  if (ok) std::printf("check: all gradients and kernels agree\n");
  return ok ? 0 : 1;
}

// ---- training ----
// ---- the integrity probes' view of the model (harness/probe_model.h) ----
__global__ void softcap_to_float(float* out, const bf16* logits, long n, float cap) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = cap * tanhf(__bfloat162float(logits[i]) / cap);
}

/// The model as the harness's probes and evaluation see it. Losses come from the
/// evaluation's own path (staging, forward, the loss buffer); logits are lm_head's
/// product of the final hidden state, in bf16 as the loss's product, soft-capped as
/// the cross-entropy caps them. Rows fewer than the model's batch are padded with
/// copies of the first row (rows do not see each other).
class ProbeAdapter final : public harness::ProbeModel {
 public:
  ProbeAdapter(GPT<bf16>& model, BatchStager& stager, cudaStream_t st)
      : model_(model), stager_(stager), st_(st), batch_(size_t(model.B) * (model.c.seq_len + 1)) {
    const size_t n = size_t(model.c.seq_len) * model.c.vocab;
    cudaCheck(cudaMalloc(&logits_bf16_, sizeof(bf16) * n));
    cudaCheck(cudaMalloc(&logits_f32_, sizeof(float) * n));
  }
  ~ProbeAdapter() override {
    cudaFree(logits_bf16_);
    cudaFree(logits_f32_);
  }
  ProbeAdapter(const ProbeAdapter&) = delete;
  ProbeAdapter& operator=(const ProbeAdapter&) = delete;

  int vocab_size() const override { return model_.c.vocab; }
  int max_probe_rows() const override { return model_.B; }
  std::vector<int> attention_windows() const override {
    std::vector<int> w;
    for (int i = 0; i < model_.c.depth; i++)
      if (std::find(w.begin(), w.end(), model_.c.window(i)) == w.end()) w.push_back(model_.c.window(i));
    return w;
  }

  void logits(const uint16_t* rows, int batch_rows, int seq_len, float* logits_out) override {
    forward(rows, batch_rows, seq_len);
    const int C = model_.c.dim, V = model_.c.vocab;
    const long n = long(seq_len) * V;
    for (int b = 0; b < batch_rows; b++) {
      matmul<bf16, bf16>(model_.blas, logits_bf16_, V, model_.xf + long(b) * seq_len * C, C, false,
                         model_.p.wt(model_.lm_head), C, true, seq_len, V, C);
      softcap_to_float<<<unsigned((n + 255) / 256), 256, 0, st_>>>(logits_f32_, logits_bf16_, n, SOFTCAP);
      cudaCheck(cudaGetLastError());
      cudaCheck(cudaMemcpyAsync(logits_out + b * n, logits_f32_, sizeof(float) * n, cudaMemcpyDeviceToHost, st_));
    }
    cudaCheck(cudaStreamSynchronize(st_));
  }

  void per_token_losses(const uint16_t* rows, int batch_rows, int seq_len, float* losses_out) override {
    forward(rows, batch_rows, seq_len);
    cudaCheck(cudaMemcpyAsync(losses_out, model_.losses, sizeof(float) * batch_rows * seq_len,
                              cudaMemcpyDeviceToHost, st_));
    cudaCheck(cudaStreamSynchronize(st_));
  }

 private:
  void forward(const uint16_t* rows, int batch_rows, int seq_len) {
    if (seq_len != model_.c.seq_len || batch_rows < 1 || batch_rows > model_.B)
      throw std::invalid_argument("probe batch of " + std::to_string(batch_rows) + " x " + std::to_string(seq_len) +
                                  " does not fit the model's " + std::to_string(model_.B) + " x " +
                                  std::to_string(model_.c.seq_len));
    const size_t row = size_t(seq_len) + 1;
    for (int b = 0; b < model_.B; b++)
      std::memcpy(batch_.data() + b * row, rows + (b < batch_rows ? b : 0) * row, sizeof(uint16_t) * row);
    stager_.upload(batch_.data(), st_);
    model_.forward(stager_.inputs, stager_.targets, 0.0f);
  }

  GPT<bf16>& model_;
  BatchStager& stager_;
  cudaStream_t st_;
  std::vector<uint16_t> batch_;
  bf16* logits_bf16_ = nullptr;
  float* logits_f32_ = nullptr;
};

int train(const harness::RunOptions& opt) {
  harness::TokenShard train_shard(opt.data_dir, "train"), val_shard(opt.data_dir, "val");
  const std::vector<int32_t> token_bytes = harness::load_token_bytes(opt.data_dir);
  const Config cfg = config_for_depth(DEPTH * opt.depth_scale);  // --depth-scale: the same model, larger
  // A row's activations grow with depth x width, so at depth scale s the micro-batch has
  // s^2 (rounded up to a power of 4) times fewer rows; grad accumulation keeps the tokens per step.
  int rows_divisor = 1;
  while (rows_divisor < opt.depth_scale * opt.depth_scale) rows_divisor *= 4;
  const int B = std::max(1, DEVICE_BATCH_ROWS / rows_divisor), T = cfg.seq_len;
  const long micro_tokens = long(B) * T;
  if (TOTAL_BATCH_TOKENS % micro_tokens != 0) throw std::runtime_error("TOTAL_BATCH_TOKENS is not a multiple of DEVICE_BATCH_ROWS * seq_len");
  const int grad_accum = int(TOTAL_BATCH_TOKENS / micro_tokens);
  cudaStream_t st;
  cudaCheck(cudaStreamCreate(&st));

  GPT<bf16> model(cfg, B, st);
  model.init(opt.seed);
  Optimizer optim(model.p, cfg.dim, model.blas);
  BatchStager stager(model.arena, B, T, cfg.vocab);
  harness::LoaderOptions lopt;
  lopt.batch_rows = B;
  lopt.seq_len = T;
  const bool dump = !opt.dump_init_dir.empty();
  if (dump) {
    if (opt.steps <= 0) throw std::runtime_error("--dump-init needs --steps");
    twin::write_params(opt.dump_init_dir, model.p);
    twin::write_batches(opt.dump_init_dir, train_shard, lopt, opt.steps, grad_accum);
  }
  harness::HostAllocator pinned{[](size_t n) {
                                  void* p = nullptr;
                                  cudaCheck(cudaMallocHost(&p, n));
                                  return p;
                                },
                                [](void* p) { cudaFreeHost(p); }};
  harness::PackedLoader loader(train_shard, lopt, pinned);
  float* d_loss = model.arena.alloc<float>(1);
  float* h_loss = nullptr;
  cudaCheck(cudaMallocHost(&h_loss, sizeof(float)));

  const double flops_per_token = model.flops_per_token(), peak_flops = 989.5e12;
  std::printf("model: depth %d, dim %d, heads %d/%d, params %.1fM, grad accum %d, %.1f GFLOP/token\n",
              cfg.depth, cfg.dim, cfg.n_head, cfg.n_kv_head, model.p.n_params / 1e6, grad_accum,
              flops_per_token / 1e9);
  harness::TrainingClock clock(opt);
  std::vector<double> losses, lrms;
  long step = 0;
  double tokens_counted = 0, smooth_loss = 0;
  // A micro-batch is staged (its token index built on the host, then copied) on the stream after
  // the kernels that read the previous one. The next step's first is staged before this step's
  // closing wait, while the GPU still runs the step, so that the GPU does not sit idle while the
  // host builds it. (One batch more than the run uses is staged at the end.)
  auto stage_next = [&] {
    const harness::Batch batch = loader.next();
    stager.upload(batch.rows, st);
    return batch.epoch;
  };
  int staged_epoch = stage_next();
  for (; !clock.done(step); step++) {
    auto t0 = std::chrono::steady_clock::now();
    const double progress = clock.progress(step), lrm = lr_multiplier(progress);
    model.zero_grads();
    cudaCheck(cudaMemsetAsync(d_loss, 0, sizeof(float), st));
    int epoch = 0;
    for (int micro = 0; micro < grad_accum; micro++) {
      epoch = micro == 0 ? staged_epoch : stage_next();
      model.forward(stager.inputs, stager.targets, 1.0f / float(micro_tokens * grad_accum));
      sum_into(d_loss, model.losses, micro_tokens, st);
      model.backward(stager.inputs, stager.index);
    }
    optim.step(float(lrm), muon_momentum(step), muon_weight_decay(progress));  // also writes the bf16 shadows
    cudaCheck(cudaMemcpyAsync(h_loss, d_loss, sizeof(float), cudaMemcpyDeviceToHost, st));
    staged_epoch = stage_next();
    cudaCheck(cudaStreamSynchronize(st));
    const double loss = *h_loss / double(micro_tokens * grad_accum);
    if (!std::isfinite(loss) || loss > 100) {
      std::printf("FAIL: loss is %s at step %ld\n", std::isfinite(loss) ? std::to_string(loss).c_str() : "NaN", step);
      return 1;
    }
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    clock.step_done(step, dt);
    if (step > 10) tokens_counted += double(TOTAL_BATCH_TOKENS);
    losses.push_back(loss);
    lrms.push_back(lrm);
    const double tps = TOTAL_BATCH_TOKENS / dt, left = clock.remaining_seconds();
    smooth_loss = 0.9 * smooth_loss + 0.1 * loss;  // debiased EMA, as the reference prints
    std::printf("step %05ld (%5.1f%%) | loss: %.6f | raw: %.6f | lrm: %.3f | dt: %.0fms | tok/sec: %.0f | mfu: %.1f%% | epoch: %d | remaining: %s\n",
                step, 100 * progress, smooth_loss / (1 - std::pow(0.9, step + 1)), loss, lrm, dt * 1e3, tps,
                100 * flops_per_token * tps / peak_flops, epoch,
                std::isfinite(left) ? (std::to_string(long(left)) + "s").c_str() : "-");
    std::fflush(stdout);
  }
  if (dump) {
    std::vector<std::pair<std::string, std::string>> conf = {
        {"depth", std::to_string(cfg.depth)}, {"model_dim", std::to_string(cfg.dim)},
        {"n_head", std::to_string(cfg.n_head)}, {"n_kv_head", std::to_string(cfg.n_kv_head)},
        {"head_dim", std::to_string(cfg.head_dim)}, {"vocab_size", std::to_string(cfg.vocab)},
        {"seq_len", std::to_string(T)}, {"batch_rows", std::to_string(B)},
        {"grad_accum", std::to_string(grad_accum)}, {"steps", std::to_string(opt.steps)},
        {"window_pattern", "\"" + cfg.window_pattern + "\""}, {"short_window", std::to_string(cfg.short_window)},
        {"softcap", twin::json_number(SOFTCAP)}, {"rope_base", twin::json_number(ROPE_BASE)},
        {"norm_eps", twin::json_number(NORM_EPS)}};
    for (auto& [name, value] : HYPERPARAMETERS) conf.push_back({name, twin::json_number(value)});
    twin::write_manifest(opt.dump_init_dir, conf, model.p, {opt.steps, grad_accum, B, T + 1}, losses, lrms);
  }

  // evaluation through the harness: the integrity probes, then per-token losses of fixed
  // validation batches, both through the same adapter (a failed probe throws: FAIL: tampered: ...)
  ProbeAdapter probe_model(model, stager, st);
  harness::ProbeSettings probe_settings;
  probe_settings.seed = std::random_device{}();
  const double val_bpb =
      harness::evaluate_bpb(val_shard, token_bytes, opt.eval_tokens, B, T, probe_model, probe_settings);
  harness::Summary s;
  s.val_bpb = val_bpb;
  s.training_seconds = clock.counted_seconds();
  s.total_seconds = clock.total_seconds();
  s.peak_vram_mb = double(model.arena.bytes + optim.bytes()) / (1024.0 * 1024.0);
  const double counted_tps = s.training_seconds > 0 ? tokens_counted / s.training_seconds : 0;
  s.mfu_percent = 100 * flops_per_token * counted_tps / peak_flops;
  s.total_tokens_m = double(step) * TOTAL_BATCH_TOKENS / 1e6;
  s.num_steps = step;
  s.num_params_m = model.p.n_params / 1e6;
  s.depth = cfg.depth;
  s.time_budget = opt.time_budget;
  s.budget_scale = opt.budget_scale;
  s.depth_scale = opt.depth_scale;
  s.fixed_steps = opt.steps;
  s.eval_tokens = opt.eval_tokens;
  harness::print_summary(s);
  return 0;
}

int main(int argc, char** argv) {
  harness::RunOptions opt;
  try {
    opt = harness::parse_run_options(argc, argv);
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 2;
  }
  try {
    return opt.check ? run_check(opt.seed) : train(opt);
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
