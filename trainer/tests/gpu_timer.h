// The benchmarks' timer: the median of a callable's GPU time over repeated runs on the
// default stream (CUDA events), after warm-up runs that are not counted.
#pragma once

#include <algorithm>
#include <vector>

#include "model/common.cuh"

template <typename F>
float median_gpu_ms(F&& f, int warmups = 2, int runs = 5) {
  cudaEvent_t e0, e1;
  cudaCheck(cudaEventCreate(&e0));
  cudaCheck(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int i = 0; i < warmups + runs; i++) {
    cudaCheck(cudaEventRecord(e0));
    f();
    cudaCheck(cudaEventRecord(e1));
    cudaCheck(cudaEventSynchronize(e1));
    float t = 0;
    cudaCheck(cudaEventElapsedTime(&t, e0, e1));
    if (i >= warmups) ms.push_back(t);
  }
  cudaCheck(cudaEventDestroy(e0));
  cudaCheck(cudaEventDestroy(e1));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}
