// SLURM's compressed host and task lists, read the way `scontrol show hostnames` reads them:
// "gpu[01-04,07],cpu3" is gpu01 gpu02 gpu03 gpu04 gpu07 cpu3; "4(x2),3" is 4 4 3 tasks per node.
#pragma once
#include <string>
#include <vector>

namespace vt::dist {

/// The first host of a SLURM node list ("gpu[01-04,07],cpu3" → "gpu01"); throws vt::Error on an empty or
/// malformed list (unbalanced brackets, a range that is not digits).
std::string first_slurm_host(const std::string& nodelist);

/// Tasks per node from SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE ("4(x2),3" → {4, 4, 3}); throws
/// vt::Error naming `variable` when malformed.
std::vector<int> expand_slurm_tasks_per_node(const std::string& value, const std::string& variable);

}  // namespace vt::dist
