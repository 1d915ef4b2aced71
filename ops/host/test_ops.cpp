#include "host/test_ops.hpp"

#include <chrono>
#include <cstdlib>
#include <thread>

#include "host/host_common.hpp"

namespace caliber::host {
namespace {

enum class Behaviour { abort, hang, fail, switch_env, cuda_guard };

struct TestOpSpec {
  const char* name;
  Behaviour behaviour;
  const char* description;
};

constexpr TestOpSpec kSpecs[] = {
    {"test_abort", Behaviour::abort, "launch calls std::abort(): a crashing kernel"},
    {"test_hang", Behaviour::hang, "launch never returns: a hung kernel"},
    {"test_fail", Behaviour::fail, "the candidate writes one wrong element: a failed check"},
    {"test_switch", Behaviour::switch_env,
     "the candidate does twice the work when CALIBER_TEST_SWITCH=slow: a live A/B switch"},
    {"test_cuda_guard", Behaviour::cuda_guard,
     "skipped by a guard that wrongly assumes one vendor: a compat rule target"},
};

// Each test op is an add whose candidate misbehaves as its spec says; the baseline is always a
// correct plain add, so only the candidate's behaviour is under test.
class TestWorkload final : public HostWorkload {
 public:
  TestWorkload(DeviceContext& ctx, const Case& c, Behaviour b)
      : b_(b), n_(static_cast<std::size_t>(c.numel())), a_(ctx, n_), x_(ctx, n_), out_(ctx, n_) {
    fill(ctx, a_, -1.0, 1.0, 0);
    fill(ctx, x_, -1.0, 1.0, 1);
    if (b_ == Behaviour::switch_env) {
      const char* v = std::getenv(kTestSwitchEnv);
      passes_ = v != nullptr && std::string_view(v) == "slow" ? 2 : 1;
    }
  }
  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    return {{"loop", Role::baseline, "1", kHostBaselineLabel, {}},
            {"misbehaving", Role::candidate, "1", "a test op's candidate", {}}};
  }
  void prepare(std::size_t, const Config&) override {}
  void launch(std::size_t p) override {
    if (p == 1) {
      if (b_ == Behaviour::abort) std::abort();
      if (b_ == Behaviour::hang) {
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
      }
    }
    const int passes = p == 1 ? passes_ : 1;
    for (int pass = 0; pass < passes; ++pass) {
      for (std::size_t i = 0; i < n_; ++i) out_[i] = a_[i] + x_[i];
      // Keeps the compiler from folding the repeated pass away: the slow side must really do it.
      asm volatile("" ::: "memory");
    }
    if (p == 1 && b_ == Behaviour::fail) out_[n_ / 2] += 1.0f;
  }
  [[nodiscard]] double flops() const override { return static_cast<double>(n_); }
  [[nodiscard]] double bytes() const override {
    return 3.0 * static_cast<double>(n_ * sizeof(float));
  }

  void poison_output() override { poison(out_); }
  [[nodiscard]] Accuracy verify() override {
    std::vector<double> ref(n_);
    for (std::size_t i = 0; i < n_; ++i)
      ref[i] = static_cast<double>(a_[i]) + static_cast<double>(x_[i]);
    return compare(out_.data(), ref, nullptr, 1.0, "add");
  }
  [[nodiscard]] void* output_data() const override { return out_.data(); }
  [[nodiscard]] std::size_t output_count() const override { return n_; }

 private:
  Behaviour b_;
  std::size_t n_;
  HostTensor<float> a_, x_, out_;
  int passes_ = 1;
};

class TestOp final : public Op {
 public:
  explicit TestOp(const TestOpSpec& s) : spec_(s) {}
  [[nodiscard]] OpInfo info() const override {
    return {spec_.name, "test", {DType::f32}, {}, false, false, spec_.description};
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    return 3 * static_cast<std::size_t>(c.numel()) * sizeof(float);
  }
  [[nodiscard]] std::optional<std::string> skip_reason(const Case&,
                                                       const DeviceContext&) const override {
    if (spec_.behaviour == Behaviour::cuda_guard) return std::string(kCudaGuardReason);
    return std::nullopt;
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    require_host(ctx, c);
    require_positive(c);
    if (c.dtype != DType::f32) {
      throw CaseSkipped(std::string(spec_.name) + ": only f32");
    }
    return std::make_unique<TestWorkload>(ctx, c, spec_.behaviour);
  }

 private:
  TestOpSpec spec_;
};

bool register_test_ops_if_enabled() {
  const char* v = std::getenv(kTestOpsEnv);
  if (v == nullptr || std::string_view(v) != "1") return false;
  for (const auto& s : kSpecs) {
    register_op("cpu", [&s] { return std::make_unique<TestOp>(s); });
  }
  return true;
}

[[maybe_unused]] const bool test_ops_registered = register_test_ops_if_enabled();

}  // namespace

std::vector<std::string> test_op_names() {
  std::vector<std::string> out;
  for (const auto& s : kSpecs) out.emplace_back(s.name);
  return out;
}

std::unique_ptr<Op> make_test_op(std::string_view name) {
  for (const auto& s : kSpecs) {
    if (name == s.name) return std::make_unique<TestOp>(s);
  }
  return nullptr;
}

}  // namespace caliber::host
