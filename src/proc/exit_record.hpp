// The exit record a process caliber did not wait for writes at its end (a Slurm task's
// slurm/<op>.exit, a parallel-warmup shard's shard-<i>.exit): "rc=.. node=.. job=.. start_ns=..
// end_ns=..". Written by the job scripts of batch/slurm_job.cpp, read by batch and by the
// parallel warmup's merge.
#pragma once

#include <optional>
#include <string>

namespace caliber::run::slurm {

// The exit record a task wrote (slurm/<op>.exit).
struct ExitRecord {
  int rc = 0;
  std::string node, job_id;
  double duration_s = -1;
};
[[nodiscard]] std::optional<ExitRecord> parse_exit_record(const std::string& text);

}  // namespace caliber::run::slurm
