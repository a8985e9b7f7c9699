// The one-shot rendezvous that starts a multi-process job: rank 0 listens on MASTER_PORT and hands a small
// payload (the NCCL unique id) to every other rank. Only well-formed hellos of this job (job token, world size,
// a rank in range and not seen before) get it; nothing else is read from the network.
#pragma once
#include <chrono>
#include <cstdint>
#include <vector>

#include "dist/launch_env.h"

namespace vt::dist {

/// Shares `payload` (rank 0's; ignored on other ranks, at most 4 KiB) with every rank over TCP on
/// env.master_addr:env.master_port: rank 0 listens and answers each of the world-1 other ranks once. Returns the
/// payload on every rank. Throws vt::Error naming the rank/address on timeout, a wrong job token, world size or
/// rank, a duplicate rank, or a malformed message.
std::vector<uint8_t> share_from_rank0(const LaunchEnv& env, const std::vector<uint8_t>& payload,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(300));

}  // namespace vt::dist
