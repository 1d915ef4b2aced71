// PLACEHOLDER until the parallel-warmup implementation lands (being written now).
#include <stdexcept>

#include "run/warmup_runner.hpp"

namespace caliber::run {

WarmupOutcome run_parallel_warmup(const RunRequest&, const backends::Backend&, const Selection&,
                                  const std::filesystem::path&, const std::filesystem::path&, std::ostream&) {
  throw std::runtime_error("parallel warmup is not built yet");
}

int run_tune_shard(const RunRequest&, const backends::Backend&, const Selection&, std::uint64_t, std::ostream&,
                   std::ostream&) {
  throw std::runtime_error("parallel warmup is not built yet");
}

}  // namespace caliber::run
