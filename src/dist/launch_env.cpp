// Reads the launcher's variables. Precedence torchrun > SLURM > Open MPI, so `srun torchrun ...` and
// `mpirun` under an allocation take the innermost launcher's view. Every number is parsed strictly and
// checked against the others; an error names the variable, since a wrong rank would otherwise hang the job.
//
// SLURM without MASTER_PORT: the port is 20000 + SLURM_JOB_ID % 10000 (below Linux's ephemeral range, the
// same on every node of the job); two concurrent steps of one job therefore need MASTER_PORT set.
#include "dist/launch_env.h"

#include <cstdlib>
#include <initializer_list>
#include <limits>

#include "core/error.h"
#include "dist/slurm_nodelist.h"

namespace vt::dist {
namespace {

using Getenv = std::function<std::optional<std::string>(const std::string&)>;

constexpr size_t kMaxTokenBytes = 256;  // the rendezvous's bound on the token (dist/rendezvous.cpp)

class Vars {
 public:
  explicit Vars(const Getenv& getenv) : getenv_(getenv) {}

  std::optional<std::string> str(const std::string& name) const {
    auto v = getenv_(name);
    if (v && v->empty()) return std::nullopt;  // an empty variable counts as unset (e.g. `RANK= cmd`)
    return v;
  }
  bool has(const std::string& name) const { return str(name).has_value(); }

  std::optional<int> integer(const std::string& name) const {
    auto v = str(name);
    if (!v) return std::nullopt;
    const std::string& s = *v;
    size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
    bool digits = i < s.size() && s.size() - i <= 10;
    for (size_t j = i; digits && j < s.size(); ++j) digits = s[j] >= '0' && s[j] <= '9';
    VT_CHECK(digits, "[launch] ", name, "='", s, "' is not an integer");
    const long long x = std::stoll(s);
    VT_CHECK(x >= std::numeric_limits<int>::min() && x <= std::numeric_limits<int>::max(), "[launch] ", name, "='", s,
             "' is out of range");
    return static_cast<int>(x);
  }
  int required_int(const std::string& name, const std::string& because) const {
    auto v = integer(name);
    VT_CHECK(v.has_value(), "[launch] ", name, " must be set (", because, ")");
    return *v;
  }

 private:
  const Getenv& getenv_;
};

// Names of the variables a launcher's values came from, so checks can point at them.
struct Names {
  const char *rank, *world, *local_rank, *local_world;
};

void check_ranges(const LaunchEnv& e, const Names& n) {
  VT_CHECK(e.world >= 1, "[launch] ", n.world, "=", e.world, ": the world size must be at least 1");
  VT_CHECK(e.rank >= 0 && e.rank < e.world, "[launch] ", n.rank, "=", e.rank, " is outside [0, ", e.world, ") (",
           n.world, "=", e.world, ")");
  VT_CHECK(e.local_world >= 1 && e.local_world <= e.world, "[launch] ", n.local_world, "=", e.local_world,
           " must be in [1, ", e.world, "]");
  VT_CHECK(e.local_rank >= 0 && e.local_rank < e.local_world, "[launch] ", n.local_rank, "=", e.local_rank,
           " is outside [0, ", e.local_world, ")");
  VT_CHECK(e.master_port >= 1 && e.master_port <= 65535, "[launch] MASTER_PORT=", e.master_port, " is not a TCP port");
  VT_CHECK(!e.master_addr.empty(), "[launch] empty MASTER_ADDR");
  VT_CHECK(e.job_token.size() <= kMaxTokenBytes,
           "[launch] the job token (VT_JOB_TOKEN or the launcher's job id) "
           "is longer than ",
           kMaxTokenBytes, " bytes");
}

void read_master(const Vars& v, LaunchEnv& e) {
  if (auto a = v.str("MASTER_ADDR")) e.master_addr = *a;
  if (auto p = v.integer("MASTER_PORT")) e.master_port = *p;
}

LaunchEnv from_torchrun(const Vars& v) {
  LaunchEnv e;
  e.launcher = "torchrun";
  e.rank = v.required_int("RANK", "WORLD_SIZE is set");
  e.world = v.required_int("WORLD_SIZE", "RANK is set");
  e.local_world = v.integer("LOCAL_WORLD_SIZE").value_or(e.world);  // absent: one node
  e.local_rank = v.integer("LOCAL_RANK").value_or(e.local_world > 0 ? e.rank % e.local_world : 0);
  VT_CHECK(v.has("MASTER_ADDR") || e.local_world >= e.world,
           "[launch] MASTER_ADDR must be set when the job spans several nodes (WORLD_SIZE > LOCAL_WORLD_SIZE)");
  read_master(v, e);
  e.job_token = v.str("VT_JOB_TOKEN").value_or(v.str("TORCHELASTIC_RUN_ID").value_or(""));
  check_ranges(e, {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"});
  return e;
}

std::optional<std::string> first_set(const Vars& v, std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (auto s = v.str(name)) return s;
  return std::nullopt;
}

LaunchEnv from_slurm(const Vars& v) {
  LaunchEnv e;
  e.launcher = "slurm";
  e.rank = v.required_int("SLURM_PROCID", "SLURM");
  e.world = v.required_int("SLURM_NTASKS", "SLURM_PROCID is set");
  const char* local_world_name = "SLURM_STEP_TASKS_PER_NODE";
  const int node = v.integer("SLURM_NODEID").value_or(0);
  if (auto tasks = v.str("SLURM_STEP_TASKS_PER_NODE")) {
    const auto counts = expand_slurm_tasks_per_node(*tasks, "SLURM_STEP_TASKS_PER_NODE");
    VT_CHECK(node >= 0 && static_cast<size_t>(node) < counts.size(), "[launch] SLURM_NODEID=", node,
             " has no entry in SLURM_STEP_TASKS_PER_NODE='", *tasks, "'");
    e.local_world = counts[node];
  } else if (auto per_node = v.integer("SLURM_NTASKS_PER_NODE")) {
    local_world_name = "SLURM_NTASKS_PER_NODE";
    e.local_world = *per_node;
  } else {
    e.local_world = e.world;  // nothing says otherwise: one node
  }
  e.local_rank = e.world > 1 ? v.required_int("SLURM_LOCALID", "a SLURM job with several tasks")
                             : v.integer("SLURM_LOCALID").value_or(0);
  if (auto a = v.str("MASTER_ADDR")) {
    e.master_addr = *a;
  } else if (auto list = first_set(v, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"})) {
    e.master_addr = first_slurm_host(*list);
  } else {
    VT_CHECK(e.world == 1, "[launch] SLURM: neither MASTER_ADDR nor SLURM_STEP_NODELIST/SLURM_JOB_NODELIST is set");
  }
  const auto job_id = v.str("SLURM_JOB_ID");
  if (auto p = v.integer("MASTER_PORT")) {
    e.master_port = *p;
  } else if (job_id) {
    auto id = v.integer("SLURM_JOB_ID");
    e.master_port = 20000 + static_cast<int>(static_cast<unsigned>(*id) % 10000u);
  }
  if (auto t = v.str("VT_JOB_TOKEN")) {
    e.job_token = *t;
  } else if (job_id) {
    e.job_token = "slurm:" + *job_id + "." + v.str("SLURM_STEP_ID").value_or("");
  }
  check_ranges(e, {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", local_world_name});
  return e;
}

LaunchEnv from_mpirun(const Vars& v) {
  LaunchEnv e;
  e.launcher = "mpirun";
  e.rank = v.required_int("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE is set");
  e.world = v.required_int("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK is set");
  e.local_world = v.integer("OMPI_COMM_WORLD_LOCAL_SIZE").value_or(e.world);
  e.local_rank = v.integer("OMPI_COMM_WORLD_LOCAL_RANK").value_or(e.local_world > 0 ? e.rank % e.local_world : 0);
  if (e.world > 1) {
    // Open MPI has no notion of a rendezvous address: the user passes it, e.g. `mpirun -x MASTER_ADDR=node0`.
    for (const char* name : {"MASTER_ADDR", "MASTER_PORT"})
      VT_CHECK(v.has(name), "[launch] mpirun: ", name, " must be set for a job of ", e.world,
               " ranks (e.g. mpirun -x MASTER_ADDR=<first host> -x MASTER_PORT=29500 ...)");
  }
  read_master(v, e);
  e.job_token =
      v.str("VT_JOB_TOKEN").value_or(v.str("PMIX_NAMESPACE").value_or(v.str("OMPI_MCA_ess_base_jobid").value_or("")));
  check_ranges(
      e, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"});
  return e;
}

}  // namespace

LaunchEnv launch_env_from(const Getenv& getenv) {
  const Vars v(getenv);
  if (v.has("RANK") || v.has("WORLD_SIZE")) return from_torchrun(v);
  if (v.has("SLURM_PROCID")) return from_slurm(v);
  if (v.has("OMPI_COMM_WORLD_RANK") || v.has("OMPI_COMM_WORLD_SIZE")) return from_mpirun(v);
  LaunchEnv e;
  e.launcher = "single";
  return e;
}

LaunchEnv launch_env() {
  return launch_env_from([](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  });
}

}  // namespace vt::dist
