// The job's scale told to UCX: what the launcher's environment says
// (jobScaleFromLauncher), the hints it becomes (ucxScaleHint), and what UCX
// itself reports it was told at ucp_init. The last runs with
// UCX_LOG_LEVEL=debug (set by CTest), where UCX 1.13 logs "estimated number
// of endpoints is N" and "... per node is N" to stdout.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "switchagg/ucx/transport.h"
#include "temp_dir.h"

namespace switchagg::ucx {
namespace {

JobScale scaleOf(const std::map<std::string, std::string>& vars) {
  return jobScaleFromLauncher([&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

void expectScale(const JobScale& s, int ranks, int per_node) {
  EXPECT_EQ(s.ranks, ranks);
  EXPECT_EQ(s.ranks_per_node, per_node);
}

TEST(JobScale, OpenMpiFirstThenMpichThenSlurm) {
  expectScale(scaleOf({{"OMPI_COMM_WORLD_SIZE", "512"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"},
                       {"PMI_SIZE", "3"},
                       {"SLURM_NTASKS", "2"}}),
              512, 8);
  expectScale(scaleOf({{"PMI_SIZE", "96"}, {"MPI_LOCALNRANKS", "12"}, {"SLURM_NTASKS", "2"}}), 96,
              12);
  expectScale(scaleOf({{"SLURM_NTASKS", "7"}, {"SLURM_TASKS_PER_NODE", "2(x3),1"}}), 7, 2);
  expectScale(scaleOf({{"SLURM_NTASKS", "9"}, {"SLURM_TASKS_PER_NODE", "1,4(x2)"}}), 9, 4);
  expectScale(scaleOf({}), 0, 0);
}

TEST(JobScale, WhatDoesNotParseStaysUnknown) {
  expectScale(scaleOf({{"OMPI_COMM_WORLD_SIZE", "64"}}), 64, 0);
  expectScale(scaleOf({{"OMPI_COMM_WORLD_SIZE", "x"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}), 0, 4);
  for (const char* bad : {"", "2(x)", "2(3)", "a", "2(x3", "2,,1", "-1", "0"})
    expectScale(scaleOf({{"SLURM_NTASKS", "8"}, {"SLURM_TASKS_PER_NODE", bad}}), 8, 0);
  expectScale(scaleOf({{"PMI_SIZE", "99999999999"}}), 0, 0);
}

TEST(JobScale, HintCountsOneEndpointPerLaneToEveryOtherRank) {
  UcxScaleHint h = ucxScaleHint(JobScale{1024, 8}, 4);
  EXPECT_EQ(h.num_eps, 1023u * 4u);
  EXPECT_EQ(h.num_ppn, 8u);
  h = ucxScaleHint(JobScale{1, 1}, 1);
  EXPECT_EQ(h.num_eps, 1u);
  EXPECT_EQ(h.num_ppn, 1u);
  h = ucxScaleHint(JobScale{}, 4);
  EXPECT_EQ(h.num_eps, 0u);
  EXPECT_EQ(h.num_ppn, 0u);
}

// Runs Context::create with stdout sent to a file; returns what UCX logged.
std::string ucxLogOfCreate(const TransportOptions& options, UcxScaleHint* hint) {
  switchagg::testing::TempDir dir("scale");
  const std::string path = dir.path() + "/stdout";
  std::fflush(stdout);
  const int saved = dup(1);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr || saved < 0) return "";
  dup2(fileno(f), 1);
  {
    auto ctx = Context::create(options);
    if (ctx.ok()) *hint = (*ctx)->scaleHint();
    std::fflush(stdout);
  }
  dup2(saved, 1);
  close(saved);
  std::fclose(f);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(JobScale, UcpInitIsToldTheScale) {
  ASSERT_NE(std::getenv("UCX_LOG_LEVEL"), nullptr) << "run by CTest with UCX_LOG_LEVEL=debug";
  TransportOptions o;
  o.roce.sysfs_root = "/nonexistent";  // no RoCE: lanes auto = 1
  o.scale = JobScale{2048, 16};
  UcxScaleHint hint;
  const std::string log = ucxLogOfCreate(o, &hint);
  EXPECT_EQ(hint.num_eps, 2047u);
  EXPECT_EQ(hint.num_ppn, 16u);
  EXPECT_NE(log.find("estimated number of endpoints is 2047"), std::string::npos) << log;
  EXPECT_NE(log.find("estimated number of endpoints per node is 16"), std::string::npos) << log;
  // Lanes multiply the endpoints.
  o.lanes = 4;
  ucxLogOfCreate(o, &hint);
  EXPECT_EQ(hint.num_eps, 2047u * 4u);
}

// Unknown scale: nothing passed, UCX keeps its own default (1 endpoint).
TEST(JobScale, UnknownScaleLeavesUcxDefault) {
  ASSERT_NE(std::getenv("UCX_LOG_LEVEL"), nullptr) << "run by CTest with UCX_LOG_LEVEL=debug";
  TransportOptions o;
  o.roce.sysfs_root = "/nonexistent";
  UcxScaleHint hint{9, 9};
  const std::string log = ucxLogOfCreate(o, &hint);
  EXPECT_EQ(hint.num_eps, 0u);
  EXPECT_EQ(hint.num_ppn, 0u);
  EXPECT_NE(log.find("estimated number of endpoints is 1\n"), std::string::npos) << log;
}

// The user's UCX_NUM_EPS beats the hint (UCX prefers its configuration).
TEST(JobScale, UsersNumEpsWins) {
  ASSERT_NE(std::getenv("UCX_LOG_LEVEL"), nullptr) << "run by CTest with UCX_LOG_LEVEL=debug";
  setenv("UCX_NUM_EPS", "77", 1);
  TransportOptions o;
  o.roce.sysfs_root = "/nonexistent";
  o.scale = JobScale{2048, 16};
  UcxScaleHint hint;
  const std::string log = ucxLogOfCreate(o, &hint);
  unsetenv("UCX_NUM_EPS");
  EXPECT_EQ(hint.num_eps, 2047u);
  EXPECT_NE(log.find("estimated number of endpoints is 77"), std::string::npos) << log;
}

}  // namespace
}  // namespace switchagg::ucx
