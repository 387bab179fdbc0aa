#include "bench_report.h"

#include <cstdarg>

namespace switchagg::bench {
namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

// Labels and algorithm names are ours (no quotes or control characters), but
// keep JSON valid whatever the user passes as --label.
std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

}  // namespace

void fillBandwidth(SizeResult* r, double bus_factor) {
  if (r->avg_us <= 0) return;
  r->algbw_gbs = double(r->bytes) / (r->avg_us * 1e3);  // bytes/ns == GB/s
  r->busbw_gbs = r->algbw_gbs * bus_factor;
}

void printTableHeader(FILE* out, const RunInfo& run) {
  fprintf(out, "# switchagg-bench: %s, %d ranks, dtype %s, op %s%s%s%s\n", run.collective.c_str(),
          run.nranks, run.dtype.c_str(), run.op.c_str(), run.checked ? ", checked" : "",
          run.label.empty() ? "" : ", label ", run.label.c_str());
  fprintf(out, "%12s %8s %12s %12s %12s %12s %10s %10s  %-18s %s\n", "# bytes", "iters",
          "avg_us", "min_us", "max_us", "p50_us", "algbw_GB/s", "busbw_GB/s", "algorithm", "check");
}

void printTableRow(FILE* out, const SizeResult& r) {
  fprintf(out, "%12zu %8d %12.2f %12.2f %12.2f %12.2f %10.3f %10.3f  %-18s %s\n", r.bytes,
          r.iters, r.avg_us, r.min_us, r.max_us, r.p50_us, r.algbw_gbs, r.busbw_gbs,
          r.algorithm.c_str(), r.check.c_str());
  fflush(out);
}

std::string csvHeader() {
  return "label,np,dtype,op,bytes,count,iters,avg_us,min_us,max_us,algbw_GBps,busbw_GBps,"
         "algorithm,check,p50_us,bytes_sent_per_rank\n";
}

std::string csvRow(const RunInfo& run, const SizeResult& r) {
  const std::string sent = r.bytes_sent < 0 ? "" : format("%.0f", r.bytes_sent);
  return format("%s,%d,%s,%s,%zu,%zu,%d,%.3f,%.3f,%.3f,%.4f,%.4f,%s,%s,%.3f,%s\n",
                run.label.c_str(), run.nranks, run.dtype.c_str(), run.op.c_str(), r.bytes, r.count,
                r.iters, r.avg_us, r.min_us, r.max_us, r.algbw_gbs, r.busbw_gbs,
                r.algorithm.c_str(), r.check.c_str(), r.p50_us, sent.c_str());
}

std::string toJson(const RunInfo& run, const std::vector<SizeResult>& rows) {
  std::string out = format("{\"label\": %s, \"np\": %d, \"dtype\": %s, \"op\": %s, ",
                           jsonString(run.label).c_str(), run.nranks,
                           jsonString(run.dtype).c_str(), jsonString(run.op).c_str());
  out += format("\"checked\": %s, \"results\": [", run.checked ? "true" : "false");
  for (size_t i = 0; i < rows.size(); ++i) {
    const SizeResult& r = rows[i];
    out += format(
        "%s\n  {\"bytes\": %zu, \"count\": %zu, \"iters\": %d, \"avg_us\": %.3f, "
        "\"min_us\": %.3f, \"max_us\": %.3f, \"p50_us\": %.3f, \"algbw_GBps\": %.4f, "
        "\"busbw_GBps\": %.4f, ",
        i ? "," : "", r.bytes, r.count, r.iters, r.avg_us, r.min_us, r.max_us, r.p50_us,
        r.algbw_gbs, r.busbw_gbs);
    out += "\"algorithm\": " + jsonString(r.algorithm) + ", \"check\": " + jsonString(r.check);
    out += r.bytes_sent < 0 ? std::string(", \"bytes_sent_per_rank\": null}")
                            : format(", \"bytes_sent_per_rank\": %.0f}", r.bytes_sent);
  }
  return out + "\n]}\n";
}

}  // namespace switchagg::bench
