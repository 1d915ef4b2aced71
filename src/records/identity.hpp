// run_identity.json: the caliber of a run. Two runs are comparable only when these agree.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace caliber::core {

// The file name inside a run directory.
inline constexpr const char* identity_file = "run_identity.json";

// The keys that make two runs comparable (docs/architecture.md): a difference in any is a caliber
// mismatch.
[[nodiscard]] const std::vector<std::string>& caliber_keys();  // level, timer, backend,
                                                               // device_model, tune, repeat, l2
struct IdentityDiff {
  std::string key;
  std::string a, b;
};
// Differences of the caliber keys between two identities (device_model read from device.name).
[[nodiscard]] std::vector<IdentityDiff> diff_identity(const nlohmann::json& a,
                                                      const nlohmann::json& b);
// Throws std::runtime_error when the file is missing, not a regular file, larger than
// kMaxIdentityBytes or not a JSON object; core::SchemaError (runlog.hpp) when its schema is newer.
inline constexpr std::uintmax_t kMaxIdentityBytes = 16u << 20;
[[nodiscard]] nlohmann::json read_identity(const std::filesystem::path& run_dir);
void write_identity(const std::filesystem::path& run_dir, const nlohmann::json& identity);
// The run header printed at start, one line from the identity: backend, device, timer, level,
// autotune mode, repeat and L2 policy ("?" where the identity lacks a key).
[[nodiscard]] std::string run_header_text(const nlohmann::json& identity);
// Keys a host program that embeds caliber adds to every run_identity.json it writes (the Python
// package: {"python": {"version", "torch", "triton", ...}}, docs/python.md). Set once, before runs.
void set_identity_extra(const std::string& key, nlohmann::json value);
[[nodiscard]] const nlohmann::json& identity_extra();  // an object, empty by default
// The build's version (CMake's project version) and commit (12 hex digits, "-dirty" when tracked
// files differed from it; "unknown" outside a git checkout), from the header the build generates
// (cmake/build_version.cmake). caliber_version_line() is what `caliber --version` prints:
// "caliber 0.1.0 (git <git describe>)", or "caliber 0.1.0" outside a git checkout.
[[nodiscard]] std::string caliber_version();
[[nodiscard]] std::string caliber_git_commit();
[[nodiscard]] std::string caliber_version_line();
[[nodiscard]] std::string host_name();

// Where a run ran inside a Slurm job (docs/cluster.md): {"node": SLURMD_NODENAME, "job_id":
// SLURM_JOB_ID, "array_job_id": SLURM_ARRAY_JOB_ID, "array_task_id": SLURM_ARRAY_TASK_ID,
// "cluster": SLURM_CLUSTER_NAME} from `env` (absent variables left out); null outside a job (no
// SLURM_JOB_ID).
[[nodiscard]] nlohmann::json slurm_identity(
    const std::function<std::optional<std::string>(const std::string&)>& env);
// The machine a run ran on: its Slurm node name, else its host name; "" when neither is recorded.
[[nodiscard]] std::string node_of(const nlohmann::json& identity);

// The host's load now: {"load1", "load5", "load15" (the kernel's load averages), "cores" (online
// processors)}; the load fields are null where the system gives none. A run records it at its
// start and end (run_identity.json "host_load": {"start": ..., "end": ...}).
[[nodiscard]] nlohmann::json host_load();
// A host was loaded when a recorded one-minute load average exceeded its core count. Returns one
// phrase per loaded reading ("start: load 3.10 on 2 cores"); empty when none was (or none was
// recorded: an older run).
[[nodiscard]] std::vector<std::string> loaded_host_readings(const nlohmann::json& identity);

}  // namespace caliber::core
