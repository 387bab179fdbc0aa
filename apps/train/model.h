// A small multilayer perceptron (ReLU hidden layers, softmax output) trained
// with plain SGD: just enough of a model that its gradients look like a real
// data-parallel job's (a few large weight buckets, a few small bias ones).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace switchagg::train {

struct ModelShape {
  int inputs = 256;
  std::vector<int> hidden = {512, 256};
  int classes = 10;
};

// One parameter tensor and its gradient, contiguous float32.
struct Tensor {
  int rows = 0, cols = 0;  // W: rows = fan-out, cols = fan-in; bias: cols = 1
  std::vector<float> value;
  std::vector<float> grad;
};

// Called by forwardBackward around each dense layer l (tensors 2l: W,
// 2l+1: b), from the calling thread, outside OpenMP regions.
struct LayerHooks {
  std::function<void(int layer)> before_forward;  // W and b are about to be read
  std::function<void(int layer)> after_backward;  // W's and b's gradients are final
};

class Mlp {
 public:
  // Weights drawn from `seed` (every rank uses the same seed: identical start).
  Mlp(const ModelShape& shape, uint64_t seed);

  // Forward + backward over a batch (row-major x: batch x inputs, labels in
  // [0, classes)). Fills every tensor's grad with the batch-mean gradient and
  // returns the mean cross-entropy loss.
  float forwardBackward(const std::vector<float>& x, const std::vector<int>& labels, int batch,
                        const LayerHooks* hooks = nullptr);
  void sgdStep(float learning_rate);

  std::vector<Tensor>& tensors() { return tensors_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }
  size_t parameterCount() const;
  // FNV-1a over every weight's bytes: equal on all ranks iff weights are
  // bitwise identical.
  uint64_t weightHash() const;

 private:
  ModelShape shape_;
  std::vector<Tensor> tensors_;  // W0, b0, W1, b1, ...
  std::vector<std::vector<float>> acts_;  // per layer activations (batch x width)
};

// Deterministic synthetic classification data: inputs ~ N(0,1) from
// (seed, rank, step), labels from a fixed random linear "teacher" that every
// rank derives from `seed`, so the task is learnable and identical run to run.
class SyntheticData {
 public:
  SyntheticData(int inputs, int classes, uint64_t seed);
  void batch(int rank, int step, int batch_size, std::vector<float>* x, std::vector<int>* labels) const;

 private:
  int inputs_, classes_;
  uint64_t seed_;
  std::vector<float> teacher_;  // classes x inputs
};

}  // namespace switchagg::train
