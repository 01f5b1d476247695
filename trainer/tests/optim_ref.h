// fp64 CPU references of the optimizer (optim.cuh), for optim_test: AdamW and
// one Muon step of a single matrix (Nesterov momentum, Polar Express without
// rounding, NorMuon, cautious weight decay). Plain loops, written for clarity
// (the products are tiled for cache, nothing more). Matrices are row-major.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace optim_ref {

/// One AdamW step in place (step is 1-based), the rule of optim.cuh.
inline void adamw_step(double* p, const double* g, double* m, double* v, long n, double lr,
                       double beta1, double beta2, double eps, double weight_decay, int step) {
  const double bias1 = 1.0 - std::pow(beta1, step), bias2 = 1.0 - std::pow(beta2, step);
  for (long i = 0; i < n; i++) {
    p[i] *= 1.0 - lr * weight_decay;
    m[i] = beta1 * m[i] + (1.0 - beta1) * g[i];
    v[i] = beta2 * v[i] + (1.0 - beta2) * g[i] * g[i];
    p[i] -= lr / bias1 * m[i] / (std::sqrt(v[i] / bias2) + eps);
  }
}

/// C(m, n) = A(m, k) · B(k, n). Tiled over rows of A and B so that a tile of
/// each stays in cache (the 2048 x 512 products are otherwise memory-bound).
inline std::vector<double> matmul(const std::vector<double>& A, const std::vector<double>& B,
                                  int m, int n, int k) {
  constexpr int TILE = 64;
  std::vector<double> C(size_t(m) * n, 0.0);
  for (int i0 = 0; i0 < m; i0 += TILE)
    for (int l0 = 0; l0 < k; l0 += TILE)
      for (int i = i0; i < std::min(m, i0 + TILE); i++)
        for (int l = l0; l < std::min(k, l0 + TILE); l++) {
          const double a = A[size_t(i) * k + l];
          const double* b = &B[size_t(l) * n];
          double* c = &C[size_t(i) * n];
          for (int j = 0; j < n; j++) c[j] += a * b[j];
        }
  return C;
}

inline std::vector<double> transpose(const std::vector<double>& A, int rows, int cols) {
  std::vector<double> T(A.size());
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j++) T[size_t(j) * rows + i] = A[size_t(i) * cols + j];
  return T;
}

/// The 5 Polar Express iterations on X (rows, cols), after X / (||X||_F * 1.02 + 1e-6).
inline std::vector<double> polar_express(std::vector<double> X, int rows, int cols) {
  static const double COEFFS[5][3] = {
      {8.156554524902461, -22.48329292557795, 15.878769915207462},
      {4.042929935166739, -2.808917465908714, 0.5000178451051316},
      {3.8916678022926607, -2.772484153217685, 0.5060648178503393},
      {3.285753657755655, -2.3681294933425376, 0.46449024233003106},
      {2.3465413258596377, -1.7097828382687081, 0.42323551169305323},
  };
  double ss = 0.0;
  for (double x : X) ss += x * x;
  const double denom = std::sqrt(ss) * 1.02 + 1e-6;
  for (double& x : X) x /= denom;
  const bool tall = rows > cols;
  const int s = tall ? cols : rows;
  for (const auto& abc : COEFFS) {
    const std::vector<double> Xt = transpose(X, rows, cols);
    const std::vector<double> A = tall ? matmul(Xt, X, s, s, rows) : matmul(X, Xt, s, s, cols);
    const std::vector<double> AA = matmul(A, A, s, s, s);
    std::vector<double> P(A.size());
    for (size_t i = 0; i < P.size(); i++) P[i] = abc[1] * A[i] + abc[2] * AA[i];
    const std::vector<double> Q = tall ? matmul(X, P, rows, cols, cols) : matmul(P, X, rows, cols, rows);
    for (size_t i = 0; i < X.size(); i++) X[i] = abc[0] * X[i] + Q[i];
  }
  return X;
}

/// One matrix's Muon state.
struct MuonMatrix {
  int rows, cols;
  std::vector<double> p;    // (rows, cols)
  std::vector<double> buf;  // (rows, cols) momentum
  std::vector<double> V;    // (rows,) if rows >= cols, else (cols,): NorMuon second moment
};

/// One Muon step in place; lr is before the shape scale sqrt(max(1, rows/cols)).
/// Returns the update u (rows, cols), so that p_new = p - lr'(u + wd p [u p >= 0]).
inline std::vector<double> muon_step(MuonMatrix& s, const std::vector<double>& g, double mu,
                                     double lr, double weight_decay, double beta2) {
  const int R = s.rows, C = s.cols;
  std::vector<double> x(g.size());
  for (size_t i = 0; i < g.size(); i++) {
    s.buf[i] = mu * s.buf[i] + (1.0 - mu) * g[i];
    x[i] = (1.0 - mu) * g[i] + mu * s.buf[i];
  }
  std::vector<double> X = polar_express(std::move(x), R, C);

  const bool per_row = R >= C;
  const int len = per_row ? R : C, reduced = per_row ? C : R;
  std::vector<double> ms(len, 0.0);
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) ms[per_row ? i : j] += X[size_t(i) * C + j] * X[size_t(i) * C + j];
  double norm_sq = 0.0, new_norm_sq = 0.0;
  std::vector<double> q(len);
  for (int j = 0; j < len; j++) {
    ms[j] /= reduced;
    s.V[j] = beta2 * s.V[j] + (1.0 - beta2) * ms[j];
    q[j] = 1.0 / std::sqrt(std::max(s.V[j], 1e-10));
    norm_sq += ms[j] * reduced;
    new_norm_sq += ms[j] * reduced * q[j] * q[j];
  }
  const double ratio = std::sqrt(norm_sq) / std::max(std::sqrt(new_norm_sq), 1e-10);

  const double lr_eff = lr * std::sqrt(std::max(1.0, double(R) / C));
  std::vector<double> u(X.size());
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      const size_t at = size_t(i) * C + j;
      u[at] = X[at] * q[per_row ? i : j] * ratio;
      const double decay = u[at] * s.p[at] >= 0.0 ? weight_decay * s.p[at] : 0.0;
      s.p[at] -= lr_eff * (u[at] + decay);
    }
  return u;
}

}  // namespace optim_ref
