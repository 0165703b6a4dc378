// examples/train_softmax.cc: data-parallel training the way the Horovod tutorials teach it,
// on a real (small) model: softmax regression on a generated 3-class dataset.
//   - rank 0's initial weights are broadcast to every rank;
//   - each step, each rank takes its shard of the global batch;
//   - gradients are averaged with allreduce; the learning rate is scaled by the size;
//   - loss and accuracy are averaged over ranks; only rank 0 prints and writes the checkpoint.
// With equal shards the averaged gradient is the global batch's, so N ranks follow the
// same loss curve as one rank with the same global batch and learning rate.
//   hvdrun -np 4 ./train_softmax [--epochs 5] [--batch-per-rank 32] [--lr 0.05]
//                                 [--checkpoint model.txt]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hvd/hvd.h"

namespace {

constexpr int kFeatures = 8, kClasses = 3, kSamples = 6144;

struct Sample {
  float x[kFeatures];
  int label;
};

// The same dataset on every rank, from a fixed seed: three Gaussian blobs.
std::vector<Sample> makeDataset() {
  uint64_t state = 42;
  auto uniform = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(state >> 11) + 0.5) / 9007199254740992.0;
  };
  auto gaussian = [&] { return std::sqrt(-2 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()); };
  std::vector<Sample> data(kSamples);
  for (int i = 0; i < kSamples; ++i) {
    data[static_cast<size_t>(i)].label = i % kClasses;
    for (int f = 0; f < kFeatures; ++f) {
      double centre = (f % kClasses == i % kClasses) ? 1.5 : -0.5;
      data[static_cast<size_t>(i)].x[f] = static_cast<float>(centre + gaussian());
    }
  }
  return data;
}

struct Model {
  std::vector<float> params = std::vector<float>(kFeatures * kClasses + kClasses);  // W then b
  float* w() { return params.data(); }
  float* b() { return params.data() + kFeatures * kClasses; }
};

// Mean cross-entropy and its gradient over samples [begin, end); returns correct predictions.
int lossAndGradient(Model& m, const std::vector<Sample>& data, size_t begin, size_t end, double& loss, std::vector<float>& grad) {
  std::fill(grad.begin(), grad.end(), 0.0f);
  loss = 0;
  int correct = 0;
  const double n = static_cast<double>(end - begin);
  for (size_t i = begin; i < end; ++i) {
    const Sample& s = data[i];
    double logits[kClasses], maxLogit = -1e30;
    for (int c = 0; c < kClasses; ++c) {
      logits[c] = m.b()[c];
      for (int f = 0; f < kFeatures; ++f) logits[c] += m.w()[f * kClasses + c] * s.x[f];
      maxLogit = std::max(maxLogit, logits[c]);
    }
    double total = 0, p[kClasses];
    for (int c = 0; c < kClasses; ++c) total += p[c] = std::exp(logits[c] - maxLogit);
    int best = 0;
    for (int c = 0; c < kClasses; ++c) {
      p[c] /= total;
      if (p[c] > p[best]) best = c;
    }
    correct += best == s.label;
    loss -= std::log(std::max(p[s.label], 1e-12)) / n;
    for (int c = 0; c < kClasses; ++c) {
      double d = (p[c] - (c == s.label ? 1.0 : 0.0)) / n;
      for (int f = 0; f < kFeatures; ++f) grad[static_cast<size_t>(f * kClasses + c)] += static_cast<float>(d * s.x[f]);
      grad[static_cast<size_t>(kFeatures * kClasses + c)] += static_cast<float>(d);
    }
  }
  return correct;
}

[[noreturn]] void die(const char* what, const hvd::Status& s) {
  std::fprintf(stderr, "train_softmax: %s: %s\n", what, s.message().c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  int epochs = 5, batchPerRank = 32;
  double baseLr = 0.05;
  std::string checkpoint;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--epochs") epochs = std::atoi(argv[i + 1]);
    else if (flag == "--batch-per-rank") batchPerRank = std::atoi(argv[i + 1]);
    else if (flag == "--lr") baseLr = std::atof(argv[i + 1]);
    else if (flag == "--checkpoint") checkpoint = argv[i + 1];
    else {
      std::fprintf(stderr, "train_softmax: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  if (auto s = hvd::init(); !s.isOk()) die("init", s);
  const int rank = hvd::rank(), size = hvd::size();
  const std::vector<Sample> data = makeDataset();
  const size_t globalBatch = static_cast<size_t>(batchPerRank) * static_cast<size_t>(size);
  const double lr = baseLr * size;  // Horovod's rule: the global batch grew by size

  Model model;
  // Only rank 0's initial weights count: the others start from garbage on purpose.
  uint64_t seed = rank == 0 ? 7 : 1000 + static_cast<uint64_t>(rank);
  for (float& p : model.params) {
    seed = seed * 6364136223846793005ULL + 1;
    p = static_cast<float>(static_cast<int>(seed >> 40) % 200 - 100) / 1000.0f;
  }
  if (auto s = hvd::broadcast(model.params.data(), model.params.size() * sizeof(float), 0); !s.isOk()) die("broadcast", s);

  std::vector<float> grad(model.params.size());
  const size_t steps = data.size() / globalBatch;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    double epochLoss = 0, epochCorrect = 0;
    for (size_t step = 0; step < steps; ++step) {
      size_t begin = step * globalBatch + static_cast<size_t>(rank) * static_cast<size_t>(batchPerRank);
      double loss = 0;
      int correct = lossAndGradient(model, data, begin, begin + static_cast<size_t>(batchPerRank), loss, grad);
      if (auto s = hvd::allreduce(grad.data(), grad.size(), hvd::DataType::kFloat32, hvd::ReduceOp::kAverage); !s.isOk()) die("allreduce", s);
      for (size_t k = 0; k < grad.size(); ++k) model.params[k] -= static_cast<float>(lr) * grad[k];
      double metrics[2] = {loss, static_cast<double>(correct) / batchPerRank};
      if (auto s = hvd::allreduce(metrics, 2, hvd::DataType::kFloat64, hvd::ReduceOp::kAverage); !s.isOk()) die("metrics", s);
      epochLoss += metrics[0] / static_cast<double>(steps);
      epochCorrect += metrics[1] / static_cast<double>(steps);
    }
    if (rank == 0) std::printf("epoch %d loss %.6f accuracy %.4f\n", epoch, epochLoss, epochCorrect);
  }
  if (rank == 0 && !checkpoint.empty()) {
    std::FILE* f = std::fopen(checkpoint.c_str(), "w");
    if (f == nullptr) {
      std::perror(checkpoint.c_str());
      return 1;
    }
    for (float p : model.params) std::fprintf(f, "%.9g\n", static_cast<double>(p));
    std::fclose(f);
  }
  hvd::shutdown();
  return 0;
}
