// One result row per message size, and the three ways to print them: an
// OSU-like table, CSV (one header line) and JSON.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace switchagg::bench {

struct RunInfo {
  std::string label;  // path name for plots ("auto", "tuned", ...)
  int nranks = 0;
  std::string dtype, op;
  bool checked = false;
  std::string collective = "MPI_Allreduce";
};

struct SizeResult {
  size_t bytes = 0;
  size_t count = 0;
  int iters = 0;
  double avg_us = 0, min_us = 0, max_us = 0;  // per-rank averages, across ranks
  double p50_us = 0;  // per-rank median call time, averaged across ranks (robust to noise)
  double bytes_sent = -1;  // per rank per call on switchagg's paths, averaged; -1 unknown
  double algbw_gbs = 0, busbw_gbs = 0;
  std::string algorithm;  // path the component used ("n/a" if not loaded)
  std::string check;      // "ok", "FAILED", or "-" when not checked
};

// algbw = bytes / avg time; busbw = algbw * bus_factor (NCCL's convention:
// 2(p-1)/p for allreduce, bench_coll.h's busFactor).
void fillBandwidth(SizeResult* r, double bus_factor);

void printTableHeader(FILE* out, const RunInfo& run);
void printTableRow(FILE* out, const SizeResult& r);
std::string csvHeader();
std::string csvRow(const RunInfo& run, const SizeResult& r);
std::string toJson(const RunInfo& run, const std::vector<SizeResult>& rows);

}  // namespace switchagg::bench
