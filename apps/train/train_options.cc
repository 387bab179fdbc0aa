#include "train_options.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "switchagg/common/config.h"

namespace switchagg::train {
namespace {

const char kUsage[] =
    "usage: switchagg-train [options]\n"
    "  --steps N          SGD steps (default 40)\n"
    "  --batch N          samples per rank per step (default 32)\n"
    "  --hidden A,B,...   hidden layer widths (default 512,256)\n"
    "  --inputs N         input features (default 256)\n"
    "  --classes N        output classes (default 10)\n"
    "  --lr X             learning rate (default 0.1)\n"
    "  --seed N           data and weight seed (default 42)\n"
    "  --bucket-bytes S   gradient bucket cap, e.g. 512K (default 512K)\n"
    "  --print-every N    print every N steps (default 5)\n"
    "  --loss-file F      write the loss curve as CSV (rank 0)\n"
    "  --mode M           allreduce (default: DDP, gradients averaged with MPI_Allreduce) or\n"
    "                     fsdp (weights sharded: MPI_Allgather of parameters before the\n"
    "                     forward pass, MPI_Reduce_scatter_block of gradients after it)\n"
    "  --overlap          (fsdp) nonblocking MPI_Iallgather / MPI_Ireduce_scatter_block\n"
    "                     overlapped with the layers' compute (prefetch, per-bucket posting)\n"
    "  --check            fail unless the loss fell and all ranks' weights are identical\n";

bool parseWidths(const std::string& text, std::vector<int>* out, std::string* error) {
  out->clear();
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto v = parseInt("--hidden", item, 1, 1 << 16);
    if (!v.ok()) {
      *error = v.status().message();
      return false;
    }
    out->push_back(static_cast<int>(*v));
  }
  return true;
}

}  // namespace

bool parseTrainOptions(int argc, char** argv, TrainOptions* o, std::string* error) {
  error->clear();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= argc) {
        *error = a + " needs a value";
        return false;
      }
      *v = argv[++i];
      return true;
    };
    auto setInt = [&](int* target, int64_t lo, int64_t hi) {
      std::string v;
      if (!value(&v)) return false;
      auto r = parseInt(a, v, lo, hi);
      if (!r.ok()) {
        *error = r.status().message();
        return false;
      }
      *target = static_cast<int>(*r);
      return true;
    };
    std::string v;
    bool ok = true;
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return false;
    } else if (a == "--check") {
      o->check = true;
    } else if (a == "--overlap") {
      o->overlap = true;
    } else if (a == "--steps") {
      ok = setInt(&o->steps, 1, 1000000);
    } else if (a == "--batch") {
      ok = setInt(&o->batch, 1, 1 << 20);
    } else if (a == "--inputs") {
      ok = setInt(&o->shape.inputs, 1, 1 << 20);
    } else if (a == "--classes") {
      ok = setInt(&o->shape.classes, 2, 1 << 16);
    } else if (a == "--print-every") {
      ok = setInt(&o->print_every, 1, 1000000);
    } else if (a == "--hidden") {
      ok = value(&v) && parseWidths(v, &o->shape.hidden, error);
    } else if (a == "--lr") {
      ok = value(&v);
      if (ok) {
        char* end = nullptr;
        o->learning_rate = std::strtof(v.c_str(), &end);
        if (*end != '\0' || !(o->learning_rate > 0)) {
          *error = "--lr: invalid value '" + v + "' (expected a positive number)";
          ok = false;
        }
      }
    } else if (a == "--seed") {
      int seed = 0;
      ok = setInt(&seed, 0, INT32_MAX);
      o->seed = static_cast<uint64_t>(seed);
    } else if (a == "--bucket-bytes") {
      ok = value(&v);
      if (ok) {
        auto r = parseSize(a, v);
        if (!r.ok()) {
          *error = r.status().message();
          ok = false;
        } else if (*r < 4) {
          *error = "--bucket-bytes: at least 4 bytes";
          ok = false;
        } else {
          o->bucket_bytes = *r;
        }
      }
    } else if (a == "--loss-file") {
      ok = value(&o->loss_file);
    } else if (a == "--mode") {
      ok = value(&v);
      if (ok && v == "fsdp") {
        o->fsdp = true;
      } else if (ok && v == "allreduce") {
        o->fsdp = false;
      } else if (ok) {
        *error = "--mode: invalid value '" + v + "' (expected allreduce or fsdp)";
        ok = false;
      }
    } else {
      *error = "unknown option '" + a + "' (see --help)";
      return false;
    }
    if (!ok) return false;
  }
  if (o->overlap && !o->fsdp) {
    *error = "--overlap needs --mode fsdp (the allreduce mode has no nonblocking form here)";
    return false;
  }
  return true;
}

}  // namespace switchagg::train
