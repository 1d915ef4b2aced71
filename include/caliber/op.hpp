// caliber public API: ops, their providers, and registration.
//
// An op library (the built-in corpus in ops/, or a user's shared object loaded with --ops-lib)
// registers ops for a backend. For each case the harness calls Op::setup once, which makes the
// inputs from fresh random data, then for every provider: prepare (outside any timing), check
// (candidates, against a reference), and launch many times under a timer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "caliber/case.hpp"
#include "caliber/config.hpp"
#include "caliber/context.hpp"
#include "caliber/dtype.hpp"

namespace caliber {

enum class Role { baseline, candidate };

struct ProviderInfo {
  std::string name;  // "cublas", "lt-tuned", "naive", "blocked"
  Role role = Role::candidate;
  std::string version = "1";  // part of the tune cache key: bump when the kernel changes
  std::string label;  // free text shown in listings ("reference kernel, no vendor baseline")
  ConfigSpace space;  // empty: not tunable
};

struct Accuracy {
  bool passed = false;
  double max_abs_err = 0;
  double rel_err = 0;  // ||out - ref|| / ||ref|| where it applies
  std::string detail;  // what was compared and how; the reason when it failed
  // How much of the output was compared, and against what (docs/writing-ops.md, "What a check
  // says"): method is one of the check::method spellings (host-float64, host-float64-sampled,
  // device-float64, baseline, statistics, exact); checked of total output elements were
  // compared value by value (total 0: not stated). The run.log row carries them as
  // check_method and check_coverage.
  std::string method;
  std::int64_t checked = 0;
  std::int64_t total = 0;
};

struct OpInfo {
  std::string name;
  std::string family;         // blas, elementwise, reduce, norm, sort, random, fft, index, ...
  std::vector<DType> dtypes;  // the dtypes that make sense for it; the first is the default
  std::vector<std::string> dim_names;  // names of the shape's dimensions, empty for tensor shapes
  bool rng = false;                    // draws from a generator: the RNG capture guard applies
  bool refuses_capture = false;        // documented: its launch synchronizes or allocates
  std::string description;
};

class Workload {
 public:
  virtual ~Workload() = default;
  Workload() = default;
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  [[nodiscard]] virtual std::vector<ProviderInfo> providers() const = 0;
  // Make provider p ready to launch with config c: handles, plans, workspaces. Never timed.
  // Throws ConfigRejected when c cannot run here.
  virtual void prepare(std::size_t p, const Config& c) = 0;
  // Enqueue one execution of provider p on the context's stream. Only enqueues.
  virtual void launch(std::size_t p) = 0;
  // Run provider p once on freshly poisoned outputs and compare with the reference.
  [[nodiscard]] virtual Accuracy check(std::size_t p) = 0;
  // Floating-point operations of one execution (0 where it does not apply).
  [[nodiscard]] virtual double flops() const { return 0; }
  // The fewest bytes one execution must move through device memory.
  [[nodiscard]] virtual double bytes() const = 0;
};

class Op {
 public:
  virtual ~Op() = default;
  [[nodiscard]] virtual OpInfo info() const = 0;
  // Map a shape from the shape file to this op's case shape (e.g. mm drops the batch of (B,M,N,K)).
  [[nodiscard]] virtual std::vector<std::int64_t> canonical_shape(
      const std::vector<std::int64_t>& s) const {
    return s;
  }
  // Extra parameter variants of a shape at a level (e.g. BLAS yields {"B","col"} at comprehensive).
  [[nodiscard]] virtual std::vector<std::map<std::string, std::string>> variants(
      bool comprehensive) const {
    (void)comprehensive;
    return {{}};
  }
  // Device memory a case needs, so that cases beyond free memory are skipped, not crashed.
  [[nodiscard]] virtual std::size_t bytes_needed(const Case& c) const = 0;
  // A skip guard, as the old runner's tests had: a reason string, or nothing to run the case.
  // A backend's compat rule may lift one exact (op, reason) pair.
  [[nodiscard]] virtual std::optional<std::string> skip_reason(const Case& c,
                                                               const DeviceContext& ctx) const {
    (void)c;
    (void)ctx;
    return std::nullopt;
  }
  [[nodiscard]] virtual std::unique_ptr<Workload> setup(DeviceContext& ctx,
                                                        const Case& c) const = 0;
};

using OpFactory = std::function<std::unique_ptr<Op>()>;

// Register an op for a backend ("cpu", "cuda", ...). Returns true so it can seed a static.
bool register_op(const std::string& backend, OpFactory factory);

struct RegisteredOp {
  std::string backend;
  OpFactory factory;
};
// Every op registered so far, in registration order.
[[nodiscard]] const std::vector<RegisteredOp>& registered_ops();

// Shapes an op carries itself (the op builder's .shapes): used at every level where the shape
// file has no entry of the op's own name; --shape still wins. Returns true to seed a static.
bool register_op_shapes(const std::string& op, std::vector<std::vector<std::int64_t>> shapes);
// The shapes registered for `op`, or nullptr.
[[nodiscard]] const std::vector<std::vector<std::int64_t>>* registered_op_shapes(
    const std::string& op);

}  // namespace caliber

#define CALIBER_CAT_INNER(a, b) a##b
#define CALIBER_CAT(a, b) CALIBER_CAT_INNER(a, b)
// CALIBER_REGISTER_OP("cuda", MyOp) at namespace scope in an ops source file.
#define CALIBER_REGISTER_OP(backend, OpType)                                      \
  [[maybe_unused]] static const bool CALIBER_CAT(caliber_registered_, __LINE__) = \
      ::caliber::register_op(backend, [] { return std::make_unique<OpType>(); })
