#include "model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

namespace switchagg::train {
namespace {

// y (n x out) = x (n x in) * W^T + b
void denseForward(const std::vector<float>& x, int n, int in, const Tensor& w, const Tensor& b,
                  std::vector<float>* y) {
  const int out = w.rows;
  y->assign(static_cast<size_t>(n) * out, 0.f);
#pragma omp parallel for schedule(static)
  for (int r = 0; r < n; ++r) {
    const float* xr = &x[static_cast<size_t>(r) * in];
    float* yr = &(*y)[static_cast<size_t>(r) * out];
    for (int o = 0; o < out; ++o) {
      const float* wo = &w.value[static_cast<size_t>(o) * in];
      float acc = b.value[o];
      for (int i = 0; i < in; ++i) acc += wo[i] * xr[i];
      yr[o] = acc;
    }
  }
}

}  // namespace

Mlp::Mlp(const ModelShape& shape, uint64_t seed) : shape_(shape) {
  std::mt19937_64 rng(seed);
  int fan_in = shape.inputs;
  std::vector<int> widths = shape.hidden;
  widths.push_back(shape.classes);
  for (int width : widths) {
    Tensor w{width, fan_in, {}, {}}, b{width, 1, {}, {}};
    std::normal_distribution<float> dist(0.f, std::sqrt(2.f / static_cast<float>(fan_in)));
    w.value.resize(static_cast<size_t>(width) * fan_in);
    for (float& v : w.value) v = dist(rng);
    b.value.assign(width, 0.f);
    w.grad.assign(w.value.size(), 0.f);
    b.grad.assign(b.value.size(), 0.f);
    tensors_.push_back(std::move(w));
    tensors_.push_back(std::move(b));
    fan_in = width;
  }
}

size_t Mlp::parameterCount() const {
  size_t n = 0;
  for (const auto& t : tensors_) n += t.value.size();
  return n;
}

uint64_t Mlp::weightHash() const {
  uint64_t h = 1469598103934665603ull;
  for (const auto& t : tensors_) {
    const auto* p = reinterpret_cast<const unsigned char*>(t.value.data());
    for (size_t i = 0; i < t.value.size() * sizeof(float); ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

float Mlp::forwardBackward(const std::vector<float>& x, const std::vector<int>& labels, int n,
                           const LayerHooks* hooks) {
  const int layers = static_cast<int>(tensors_.size() / 2);
  acts_.assign(layers + 1, {});
  acts_[0] = x;
  int in = shape_.inputs;
  for (int l = 0; l < layers; ++l) {
    if (hooks && hooks->before_forward) hooks->before_forward(l);
    const Tensor& w = tensors_[2 * l];
    denseForward(acts_[l], n, in, w, tensors_[2 * l + 1], &acts_[l + 1]);
    if (l + 1 < layers)
      for (float& v : acts_[l + 1]) v = std::max(v, 0.f);
    in = w.rows;
  }
  // Softmax cross-entropy; delta = (softmax - onehot) / n.
  const int classes = shape_.classes;
  std::vector<float> delta(acts_[layers]);
  double loss = 0;
  for (int r = 0; r < n; ++r) {
    float* z = &delta[static_cast<size_t>(r) * classes];
    const float zmax = *std::max_element(z, z + classes);
    float sum = 0;
    for (int c = 0; c < classes; ++c) sum += (z[c] = std::exp(z[c] - zmax));
    for (int c = 0; c < classes; ++c) z[c] /= sum;
    loss -= std::log(std::max(z[labels[r]], 1e-30f));
    z[labels[r]] -= 1.f;
    for (int c = 0; c < classes; ++c) z[c] /= static_cast<float>(n);
  }
  // Backward through the dense layers.
  for (int l = layers - 1; l >= 0; --l) {
    Tensor& w = tensors_[2 * l];
    Tensor& b = tensors_[2 * l + 1];
    const int out = w.rows, fan_in = w.cols;
    std::fill(w.grad.begin(), w.grad.end(), 0.f);
    std::fill(b.grad.begin(), b.grad.end(), 0.f);
    std::vector<float> prev_delta(static_cast<size_t>(n) * fan_in, 0.f);
    // OpenMP threads own output units here and samples below: each sum
    // still runs in one thread in a fixed order (samples for a weight's
    // gradient, units for a sample's delta), so results do not depend on
    // the thread count.
#pragma omp parallel for schedule(static)
    for (int o = 0; o < out; ++o) {
      float* wg = &w.grad[static_cast<size_t>(o) * fan_in];
      for (int r = 0; r < n; ++r) {
        const float g = delta[static_cast<size_t>(r) * out + o];
        const float* a = &acts_[l][static_cast<size_t>(r) * fan_in];
        b.grad[o] += g;
        for (int i = 0; i < fan_in; ++i) wg[i] += g * a[i];
      }
    }
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; ++r) {
      const float* d = &delta[static_cast<size_t>(r) * out];
      float* pd = &prev_delta[static_cast<size_t>(r) * fan_in];
      for (int o = 0; o < out; ++o) {
        const float* wv = &w.value[static_cast<size_t>(o) * fan_in];
        for (int i = 0; i < fan_in; ++i) pd[i] += d[o] * wv[i];
      }
    }
    if (l > 0) {  // ReLU derivative of the layer below
#pragma omp parallel for schedule(static)
      for (size_t i = 0; i < prev_delta.size(); ++i)
        if (acts_[l][i] <= 0.f) prev_delta[i] = 0.f;
    }
    delta.swap(prev_delta);
    if (hooks && hooks->after_backward) hooks->after_backward(l);
  }
  return static_cast<float>(loss / n);
}

void Mlp::sgdStep(float learning_rate) {
  for (auto& t : tensors_) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < t.value.size(); ++i) t.value[i] -= learning_rate * t.grad[i];
  }
}

SyntheticData::SyntheticData(int inputs, int classes, uint64_t seed)
    : inputs_(inputs), classes_(classes), seed_(seed) {
  std::mt19937_64 rng(seed ^ 0x7e4c1e5ull);
  std::normal_distribution<float> dist(0.f, 1.f);
  teacher_.resize(static_cast<size_t>(classes) * inputs);
  for (float& v : teacher_) v = dist(rng);
}

void SyntheticData::batch(int rank, int step, int batch_size, std::vector<float>* x,
                          std::vector<int>* labels) const {
  std::mt19937_64 rng(seed_ * 1000003ull + static_cast<uint64_t>(rank) * 7919ull +
                      static_cast<uint64_t>(step) * 104729ull);
  std::normal_distribution<float> dist(0.f, 1.f);
  x->resize(static_cast<size_t>(batch_size) * inputs_);
  labels->resize(batch_size);
  for (int r = 0; r < batch_size; ++r) {
    float* xr = &(*x)[static_cast<size_t>(r) * inputs_];
    for (int i = 0; i < inputs_; ++i) xr[i] = dist(rng);
    int best = 0;
    float best_score = -1e30f;
    for (int c = 0; c < classes_; ++c) {
      float s = 0;
      for (int i = 0; i < inputs_; ++i) s += teacher_[static_cast<size_t>(c) * inputs_ + i] * xr[i];
      if (s > best_score) best_score = s, best = c;
    }
    (*labels)[r] = best;
  }
}

}  // namespace switchagg::train
