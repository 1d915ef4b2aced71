// Tiny ops for the run room's unit tests, registered for the cpu backend by unit_ops.cpp: a
// correct one, one whose candidate throws, one that skips itself, one whose candidate fails its
// check, one too big for the device. Each is a host loop over n doubles, dtypes f32 and f64.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "caliber/op.hpp"
#include "settings/knobs.hpp"

namespace caliber::run::test {

enum class Behaviour { ok, raise, skip, wrong, huge };

inline constexpr const char* kPlantedError = "planted failure of the unit_raise candidate";
inline constexpr const char* kSkipReason = "unit_skip never runs";

class UnitWorkload final : public Workload {
 public:
  UnitWorkload(std::size_t n, Behaviour b) : x_(n, 1.0), y_(n, 0.0), b_(b) {}
  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    return {{"loop", Role::baseline, "1", "plain loop", {}},
            {"loop2", Role::candidate, "1", "the same loop", {}}};
  }
  void prepare(std::size_t, const Config&) override {}
  void launch(std::size_t p) override {
    if (p == 1 && b_ == Behaviour::raise) throw std::runtime_error(kPlantedError);
    for (std::size_t i = 0; i < x_.size(); ++i) y_[i] = x_[i] + 1.0;
    asm volatile("" ::: "memory");
  }
  [[nodiscard]] Accuracy check(std::size_t p) override {
    launch(p);
    if (p == 1 && b_ == Behaviour::wrong)
      return {false, 1.0, 1.0, "planted wrong element", "exact", 0, 0};
    return {true, 0, 0, "exact", "exact", 0, 0};
  }
  [[nodiscard]] double bytes() const override { return 16.0 * static_cast<double>(x_.size()); }

 private:
  std::vector<double> x_, y_;
  Behaviour b_;
};

template <Behaviour B>
class UnitOp final : public Op {
 public:
  [[nodiscard]] static std::string name() {
    switch (B) {
      case Behaviour::ok:
        return "unit_ok";
      case Behaviour::raise:
        return "unit_raise";
      case Behaviour::skip:
        return "unit_skip";
      case Behaviour::wrong:
        return "unit_wrong";
      case Behaviour::huge:
        return "unit_huge";
    }
    return "";
  }
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = name();
    i.family = "unit";
    i.dtypes = {DType::f32, DType::f64};
    i.dim_names = {"N"};
    return i;
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    return B == Behaviour::huge ? std::size_t{1} << 62 : static_cast<std::size_t>(c.numel()) * 16;
  }
  [[nodiscard]] std::optional<std::string> skip_reason(const Case&,
                                                       const DeviceContext&) const override {
    if (B == Behaviour::skip) return std::string(kSkipReason);
    return std::nullopt;
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext&, const Case& c) const override {
    return std::make_unique<UnitWorkload>(static_cast<std::size_t>(c.numel()), B);
  }
};

// Knobs for a fast run on the cpu backend: no tuning, no peaks, a stopping rule loose enough that
// a case takes milliseconds (these tests check rows and statuses, not latencies).
inline core::Knobs fast_cpu_knobs() {
  core::Knobs k;
  k.backend = "cpu";
  k.tune = core::TuneMode::off;
  k.peaks = false;
  k.min_samples = 3;
  k.min_time_s = 0;
  k.warmup_s = 0;
  k.max_noise = 1;
  k.timeout_s = 0.2;
  return k;
}

}  // namespace caliber::run::test
