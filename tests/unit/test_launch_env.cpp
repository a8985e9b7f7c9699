// dist::launch_env_from: torchrun, SLURM and Open MPI variables (with their precedence), strict parsing with
// errors naming the variable, and SLURM's compressed node/task lists.
#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "dist/launch_env.h"
#include "dist/slurm_nodelist.h"

namespace {

using vt::dist::LaunchEnv;
using Vars = std::map<std::string, std::string>;

LaunchEnv read(const Vars& vars) {
  return vt::dist::launch_env_from([&](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

// Expects vt::Error whose message names `needle`.
void expect_error(const Vars& vars, const std::string& needle) {
  try {
    read(vars);
    FAIL() << "no error; expected one naming " << needle;
  } catch (const vt::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(LaunchEnv, NoLauncherIsASingleProcess) {
  LaunchEnv e = read({});
  EXPECT_EQ(e.launcher, "single");
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.world, 1);
  EXPECT_FALSE(e.distributed());
}

TEST(LaunchEnv, Torchrun) {
  LaunchEnv e = read({{"RANK", "5"},
                      {"WORLD_SIZE", "8"},
                      {"LOCAL_RANK", "1"},
                      {"LOCAL_WORLD_SIZE", "4"},
                      {"MASTER_ADDR", "node0"},
                      {"MASTER_PORT", "29600"},
                      {"TORCHELASTIC_RUN_ID", "abc"}});
  EXPECT_EQ(e.launcher, "torchrun");
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.world, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world, 4);
  EXPECT_EQ(e.master_addr, "node0");
  EXPECT_EQ(e.master_port, 29600);
  EXPECT_EQ(e.job_token, "abc");
  EXPECT_TRUE(e.distributed());
}

TEST(LaunchEnv, TorchrunDefaultsAndVtJobTokenWins) {
  LaunchEnv e = read({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"VT_JOB_TOKEN", "t0k"}, {"TORCHELASTIC_RUN_ID", "x"}});
  EXPECT_EQ(e.local_rank, 1);  // one node assumed
  EXPECT_EQ(e.local_world, 2);
  EXPECT_EQ(e.master_addr, "127.0.0.1");
  EXPECT_EQ(e.master_port, 29500);
  EXPECT_EQ(e.job_token, "t0k");
}

TEST(LaunchEnv, TorchrunErrorsNameTheVariable) {
  expect_error({{"RANK", "2"}, {"WORLD_SIZE", "2"}}, "RANK=2");
  expect_error({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}, "RANK=-1");
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "0"}}, "WORLD_SIZE=0");
  expect_error({{"RANK", "one"}, {"WORLD_SIZE", "2"}}, "RANK='one'");
  expect_error({{"RANK", "1 "}, {"WORLD_SIZE", "2"}}, "RANK='1 '");
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "99999999999"}}, "WORLD_SIZE");
  expect_error({{"RANK", "0"}}, "WORLD_SIZE must be set");
  expect_error({{"WORLD_SIZE", "2"}}, "RANK must be set");
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}}, "LOCAL_RANK=2");
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}, "MASTER_PORT=70000");
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "x"}}, "MASTER_PORT='x'");
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "4"}}, "MASTER_ADDR");
}

TEST(LaunchEnv, Slurm) {
  LaunchEnv e = read({{"SLURM_PROCID", "6"},
                      {"SLURM_NTASKS", "8"},
                      {"SLURM_LOCALID", "2"},
                      {"SLURM_NODEID", "1"},
                      {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"},
                      {"SLURM_STEP_NODELIST", "gpu[01-04,07],cpu3"},
                      {"SLURM_JOB_NODELIST", "other1"},
                      {"SLURM_JOB_ID", "123456"},
                      {"SLURM_STEP_ID", "0"}});
  EXPECT_EQ(e.launcher, "slurm");
  EXPECT_EQ(e.rank, 6);
  EXPECT_EQ(e.world, 8);
  EXPECT_EQ(e.local_rank, 2);
  EXPECT_EQ(e.local_world, 4);
  EXPECT_EQ(e.master_addr, "gpu01");
  EXPECT_EQ(e.master_port, 20000 + 123456 % 10000);  // documented in launch_env.cpp
  EXPECT_EQ(e.job_token, "slurm:123456.0");
}

TEST(LaunchEnv, SlurmMasterVariablesAndJobNodelist) {
  LaunchEnv e = read({{"SLURM_PROCID", "0"},
                      {"SLURM_NTASKS", "2"},
                      {"SLURM_LOCALID", "0"},
                      {"SLURM_NTASKS_PER_NODE", "1"},
                      {"SLURM_JOB_NODELIST", "a-[3-4]"},
                      {"MASTER_PORT", "1234"}});
  EXPECT_EQ(e.master_addr, "a-3");
  EXPECT_EQ(e.master_port, 1234);
  EXPECT_EQ(e.local_world, 1);
  e = read({{"SLURM_PROCID", "0"},
            {"SLURM_NTASKS", "2"},
            {"SLURM_LOCALID", "0"},
            {"MASTER_ADDR", "10.0.0.1"},
            {"SLURM_JOB_NODELIST", "a[3-4]"}});
  EXPECT_EQ(e.master_addr, "10.0.0.1");
}

TEST(LaunchEnv, SlurmErrors) {
  expect_error({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "0"}, {"SLURM_NODELIST", "n1"}},
               "SLURM_PROCID=4");
  expect_error({{"SLURM_PROCID", "0"}}, "SLURM_NTASKS");
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "n1"}}, "SLURM_LOCALID");
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}}, "SLURM_STEP_NODELIST");
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}, {"SLURM_NODELIST", "n[1-"}},
               "n[1-");
  expect_error({{"SLURM_PROCID", "0"},
                {"SLURM_NTASKS", "2"},
                {"SLURM_LOCALID", "0"},
                {"SLURM_NODELIST", "n1"},
                {"SLURM_STEP_TASKS_PER_NODE", "2(x"}},
               "SLURM_STEP_TASKS_PER_NODE");
  expect_error({{"SLURM_PROCID", "0"},
                {"SLURM_NTASKS", "4"},
                {"SLURM_LOCALID", "2"},
                {"SLURM_NODELIST", "n1"},
                {"SLURM_NTASKS_PER_NODE", "2"}},
               "SLURM_LOCALID=2");
}

TEST(LaunchEnv, OpenMpi) {
  LaunchEnv e = read({{"OMPI_COMM_WORLD_RANK", "3"},
                      {"OMPI_COMM_WORLD_SIZE", "4"},
                      {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                      {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                      {"MASTER_ADDR", "h0"},
                      {"MASTER_PORT", "29501"},
                      {"PMIX_NAMESPACE", "prterun-h0-1@1"}});
  EXPECT_EQ(e.launcher, "mpirun");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world, 4);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world, 2);
  EXPECT_EQ(e.master_addr, "h0");
  EXPECT_EQ(e.master_port, 29501);
  EXPECT_EQ(e.job_token, "prterun-h0-1@1");
  // One rank needs no rendezvous address.
  EXPECT_EQ(read({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}}).world, 1);
}

TEST(LaunchEnv, OpenMpiErrors) {
  expect_error({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}, "MASTER_ADDR");
  expect_error({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}, "MASTER_PORT");
  expect_error(
      {{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}},
      "OMPI_COMM_WORLD_RANK=2");
  expect_error({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2.5"}}, "OMPI_COMM_WORLD_SIZE='2.5'");
}

TEST(LaunchEnv, PrecedenceTorchrunThenSlurmThenMpi) {
  const Vars slurm{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "1"}, {"SLURM_NODELIST", "n1"}};
  const Vars mpi{
      {"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "3"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}};
  Vars all = slurm;
  all.insert(mpi.begin(), mpi.end());
  EXPECT_EQ(read(all).launcher, "slurm");
  all["RANK"] = "3";
  all["WORLD_SIZE"] = "4";
  LaunchEnv e = read(all);
  EXPECT_EQ(e.launcher, "torchrun");
  EXPECT_EQ(e.rank, 3);
}

TEST(SlurmNodelist, FirstHost) {
  using vt::dist::first_slurm_host;
  EXPECT_EQ(first_slurm_host("gpu[01-04,07],cpu3"), "gpu01");
  EXPECT_EQ(first_slurm_host("cpu3,gpu[01-04]"), "cpu3");
  EXPECT_EQ(first_slurm_host("node17"), "node17");
  EXPECT_EQ(first_slurm_host("rack[2-3]-n[007,009]"), "rack2-n007");
  EXPECT_EQ(first_slurm_host("n[5]"), "n5");
  for (const char* bad : {"", "n[1-", "n]1[", "n[a-b]", "n[3-1]", "n[]", "a,,b", "n[[1]]", "n[1-2"})
    EXPECT_THROW(first_slurm_host(bad), vt::Error) << bad;
}

TEST(SlurmNodelist, TasksPerNode) {
  using vt::dist::expand_slurm_tasks_per_node;
  EXPECT_EQ(expand_slurm_tasks_per_node("4(x2),3", "V"), (std::vector<int>{4, 4, 3}));
  EXPECT_EQ(expand_slurm_tasks_per_node("8", "V"), (std::vector<int>{8}));
  for (const char* bad : {"", "4(x)", "4(2)", "x", "4,,2", "0", "4(x2"})
    EXPECT_THROW(expand_slurm_tasks_per_node(bad, "V"), vt::Error) << bad;
}

}  // namespace
