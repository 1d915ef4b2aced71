// GPU tests of the blas, pointwise and index CUDA ops: every provider passes its correctness gate
// for every dtype on small and odd shapes, every tuned config either passes or is rejected at
// prepare, launches can be captured into a graph, and the metric formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "backends/registry.hpp"
#include "caliber/caliber.hpp"
#include "gpu/cuda_fixture.hpp"

namespace {

using caliber::Case;
using caliber::DType;

using caliber::gpu_test::case_of;
using caliber::gpu_test::cuda_device;
using caliber::gpu_test::cuda_op;

struct GateCase {
  std::string op;
  std::vector<std::int64_t> shape;
  std::map<std::string, std::string> params;
};

std::string describe(const GateCase& g, DType t) {
  std::string s = g.op + "[" + std::string(caliber::to_string(t));
  for (auto d : g.shape) s += "-" + std::to_string(d);
  for (const auto& [k, v] : g.params) s += "-" + k + v;
  return s + "]";
}

// How many output elements a gate compared, as its detail says ("n=999" from check::compare,
// "256 sampled elements" from the GEMM comparison); -1 when the detail does not say.
std::int64_t compared_elements(const std::string& detail) {
  std::smatch m;
  if (std::regex_search(detail, m, std::regex(R"(\bn=(\d+))"))) return std::stoll(m[1]);
  if (std::regex_search(detail, m, std::regex(R"((\d+) sampled elements)")))
    return std::stoll(m[1]);
  return -1;
}

// How many elements the gate must compare for a case: every element of a small output, the fixed
// sample of a large one (the sizes are the ops' check rules: elementwise.cu, index.cu, blas.cu).
std::int64_t expected_compared(const GateCase& g) {
  const auto& s = g.shape;
  constexpr std::int64_t full_limit = std::int64_t{1} << 24;
  if (g.op == "embedding" || g.op == "index_select") {  // {num_embeddings, dim, num_indices}
    const std::int64_t rows = s[2] * s[1] <= full_limit ? s[2] : std::min<std::int64_t>(s[2], 4096);
    return rows * s[1];
  }
  if (g.op == "mm" || g.op == "addmm" || g.op == "bmm") {  // {batch, M, N, K}: a grid per batch
    const std::int64_t batches = g.op == "bmm" ? std::min<std::int64_t>(s[0], 4) : 1;
    const std::int64_t per = batches > 1 ? 8 : 16;
    return batches * std::min(s[1], per) * std::min(s[2], per);
  }
  std::int64_t numel = 1;  // pointwise
  for (auto d : s) numel *= d;
  return numel <= full_limit ? numel : std::int64_t{1} << 16;
}

// Runs the gate of every provider with its default config; returns failures as text. A gate
// that passed must also have compared what its rule promises (expected_compared), so a check
// that compares nothing, or a sample where it promises every element, cannot pass quietly.
std::vector<std::string> run_gate(const GateCase& g, DType t) {
  std::vector<std::string> failures;
  auto op = cuda_op(g.op);
  if (!op) return {g.op + ": not registered for cuda"};
  const Case c = case_of(*op, t, g.shape, g.params);
  auto w = op->setup(*cuda_device(), c);
  const auto providers = w->providers();
  if (providers.size() < 2 || providers[0].role != caliber::Role::baseline ||
      providers[1].role != caliber::Role::candidate) {
    failures.push_back(describe(g, t) + ": providers must be baseline then candidate");
  }
  for (std::size_t p = 0; p < providers.size(); ++p) {
    try {
      w->prepare(p, providers[p].space.default_config);
      const auto acc = w->check(p);
      if (!acc.passed)
        failures.push_back(describe(g, t) + " " + providers[p].name + ": " + acc.detail);
      const std::int64_t compared = compared_elements(acc.detail);
      if (compared != expected_compared(g)) {
        failures.push_back(describe(g, t) + " " + providers[p].name + ": compared " +
                           std::to_string(compared) + " elements, not " +
                           std::to_string(expected_compared(g)) + " (" + acc.detail + ")");
      }
    } catch (const std::exception& e) {
      failures.push_back(describe(g, t) + " " + providers[p].name + " threw: " + e.what());
    }
  }
  return failures;
}

class BlasPointwiseIndexOps : public caliber::gpu_test::CudaTest {};

TEST_F(BlasPointwiseIndexOps, RegisteredWithFamiliesAndDtypes) {
  const std::map<std::string, std::string> expected{
      {"mm", "blas"},         {"addmm", "blas"},        {"bmm", "blas"},       {"add", "pointwise"},
      {"mul", "pointwise"},   {"gelu", "pointwise"},    {"silu", "pointwise"}, {"exp", "pointwise"},
      {"embedding", "index"}, {"index_select", "index"}};
  for (const auto& [name, family] : expected) {
    auto op = cuda_op(name);
    ASSERT_NE(op, nullptr) << name;
    const auto info = op->info();
    EXPECT_EQ(info.family, family) << name;
    const std::set<DType> dts(info.dtypes.begin(), info.dtypes.end());
    EXPECT_EQ(dts, (std::set<DType>{DType::f32, DType::f16, DType::bf16})) << name;
  }
  auto mm = cuda_op("mm");
  EXPECT_EQ(mm->canonical_shape({2, 384, 512, 640}), (std::vector<std::int64_t>{384, 512, 640}));
  EXPECT_EQ(cuda_op("bmm")->canonical_shape({2, 384, 512, 640}).size(), 4u);
  EXPECT_EQ(mm->variants(false).size(), 1u);
  ASSERT_EQ(mm->variants(true).size(), 2u);
  EXPECT_EQ(mm->variants(true)[1].at("B"), "col");
}

TEST_F(BlasPointwiseIndexOps, EveryProviderPassesItsGate) {
  const std::vector<GateCase> cases{
      {"add", {1}, {}},
      {"add", {3, 333}, {}},
      {"mul", {64, 64}, {}},
      {"gelu", {1000}, {}},
      {"silu", {4096, 4096}, {}},
      {"exp", {64, 512, 512}, {}},
      {"add", {(1 << 24) + 7}, {}},  // sampled path with a tail
      {"mm", {2, 384, 384, 384}, {}},
      {"mm", {1, 17, 33, 65}, {}},
      {"mm", {1, 256, 128, 512}, {{"B", "col"}}},
      {"mm", {1, 16, 16, 151936}, {}},  // large K: the K-aware tolerance
      {"addmm", {1, 384, 256, 128}, {}},
      {"addmm", {1, 64, 96, 128}, {{"B", "col"}}},
      {"bmm", {4, 128, 64, 96}, {}},
      {"bmm", {3, 64, 64, 64}, {{"B", "col"}}},
      {"embedding", {1000, 64, 513}, {}},
      {"embedding", {50, 7, 33}, {}},            // odd dim: scalar accesses
      {"index_select", {1024, 64, 300000}, {}},  // sampled rows
  };
  for (const auto& g : cases) {
    for (DType t : {DType::f32, DType::f16, DType::bf16}) {
      for (const auto& f : run_gate(g, t)) ADD_FAILURE() << f;
    }
  }
}

TEST_F(BlasPointwiseIndexOps, EveryTunedConfigPassesOrIsRejected) {
  const std::vector<GateCase> cases{{"gelu", {3, 1001}, {}},
                                    {"mul", {4096, 4096}, {}},
                                    {"embedding", {1000, 128, 999}, {}},
                                    {"mm", {1, 512, 384, 256}, {}},
                                    {"addmm", {1, 256, 256, 256}, {}},
                                    {"bmm", {2, 128, 256, 64}, {{"B", "col"}}}};
  for (const auto& g : cases) {
    for (DType t : {DType::f32, DType::bf16}) {
      auto op = cuda_op(g.op);
      ASSERT_NE(op, nullptr);
      auto w = op->setup(*cuda_device(), case_of(*op, t, g.shape, g.params));
      const auto providers = w->providers();
      ASSERT_GE(providers.size(), 2u);
      const auto& space = providers[1].space;
      EXPECT_TRUE(space.tunable()) << describe(g, t) << ": candidate should declare a space";
      EXPECT_FALSE(space.key.empty());
      int passed = 0;
      for (const auto& cfg : space.configs) {
        try {
          w->prepare(1, cfg);
        } catch (const caliber::ConfigRejected&) {
          continue;
        }
        const auto acc = w->check(1);
        EXPECT_TRUE(acc.passed) << describe(g, t) << " config " << cfg.str() << ": " << acc.detail;
        ++passed;
      }
      EXPECT_GT(passed, 0) << describe(g, t);
      // An index past the space is refused, not launched.
      if (g.op == "mm" || g.op == "addmm" || g.op == "bmm") {
        EXPECT_THROW(w->prepare(1, caliber::Config{{{"algo", 1000}}}), caliber::ConfigRejected);
      }
    }
  }
}

TEST_F(BlasPointwiseIndexOps, LaunchesCanBeCapturedAndReplayed) {
  const std::vector<GateCase> cases{
      {"add", {4096, 1024}, {}},          {"exp", {1000}, {}},
      {"mm", {1, 256, 256, 256}, {}},     {"addmm", {1, 128, 64, 256}, {}},
      {"bmm", {2, 64, 64, 64}, {}},       {"embedding", {500, 256, 1000}, {}},
      {"index_select", {500, 33, 77}, {}}};
  auto* dev = cuda_device();
  for (const auto& g : cases) {
    auto op = cuda_op(g.op);
    ASSERT_NE(op, nullptr);
    auto w = op->setup(*dev, case_of(*op, DType::bf16, g.shape, g.params));
    const auto providers = w->providers();
    for (std::size_t p = 0; p < providers.size(); ++p) {
      w->prepare(p, providers[p].space.default_config);
      w->launch(p);  // first launch outside capture: lazy library init must not happen inside
      dev->synchronize();
      dev->begin_capture();
      try {
        for (int i = 0; i < 3; ++i) w->launch(p);
        auto graph = dev->end_capture();
        graph->launch();
        dev->synchronize();
      } catch (const std::exception& e) {
        dev->abort_capture();
        ADD_FAILURE() << describe(g, DType::bf16) << " " << providers[p].name
                      << " refused capture: " << e.what();
      }
      EXPECT_TRUE(dev->healthy());
      const auto acc = w->check(p);
      EXPECT_TRUE(acc.passed) << describe(g, DType::bf16) << " after replay: " << acc.detail;
    }
  }
}

TEST_F(BlasPointwiseIndexOps, NoVecSwitchChangesTheCandidate) {
  auto op = cuda_op("add");
  ASSERT_NE(op, nullptr);
  const Case c = case_of(*op, DType::f16, {4096, 4096});
  auto w = op->setup(*cuda_device(), c);
  const std::string normal = w->providers()[1].label;
  ::setenv("CALIBER_EW_NOVEC", "1", 1);
  const std::string forced = w->providers()[1].label;
  w->prepare(1, caliber::Config{{{"block", 256}, {"vec", 8}, {"waves", 4}}});
  const auto acc = w->check(1);
  ::unsetenv("CALIBER_EW_NOVEC");
  EXPECT_NE(normal, forced);
  EXPECT_NE(forced.find("CALIBER_EW_NOVEC"), std::string::npos) << forced;
  EXPECT_TRUE(acc.passed) << acc.detail;
}

TEST_F(BlasPointwiseIndexOps, FlopAndByteFormulas) {
  auto mm = cuda_op("mm");
  auto addmm = cuda_op("addmm");
  auto bmm = cuda_op("bmm");
  auto add = cuda_op("add");
  auto gelu = cuda_op("gelu");
  auto emb = cuda_op("embedding");
  auto w_mm = mm->setup(*cuda_device(), case_of(*mm, DType::f16, {1, 64, 128, 256}));
  EXPECT_DOUBLE_EQ(w_mm->flops(), 2.0 * 64 * 128 * 256);
  EXPECT_DOUBLE_EQ(w_mm->bytes(), 2.0 * (64 * 256 + 256 * 128 + 64 * 128));
  auto w_addmm = addmm->setup(*cuda_device(), case_of(*addmm, DType::f32, {1, 64, 128, 256}));
  EXPECT_DOUBLE_EQ(w_addmm->flops(), 64.0 * 128 * (2 * 256 + 1));
  EXPECT_DOUBLE_EQ(w_addmm->bytes(), 4.0 * (64 * 256 + 256 * 128 + 64 * 128 + 128));
  auto w_bmm = bmm->setup(*cuda_device(), case_of(*bmm, DType::bf16, {3, 64, 128, 256}));
  EXPECT_DOUBLE_EQ(w_bmm->flops(), 2.0 * 3 * 64 * 128 * 256);
  auto w_add = add->setup(*cuda_device(), case_of(*add, DType::bf16, {1000, 10}));
  EXPECT_DOUBLE_EQ(w_add->bytes(), 3.0 * 2 * 10000);
  auto w_gelu = gelu->setup(*cuda_device(), case_of(*gelu, DType::f32, {1000, 10}));
  EXPECT_DOUBLE_EQ(w_gelu->bytes(), 2.0 * 4 * 10000);
  auto w_emb = emb->setup(*cuda_device(), case_of(*emb, DType::f32, {1000, 64, 500}));
  EXPECT_DOUBLE_EQ(w_emb->bytes(), 2.0 * 4 * 64 * 500 + 8.0 * 500);
  // bytes_needed covers the buffers, so the harness can skip what does not fit.
  EXPECT_GE(mm->bytes_needed(case_of(*mm, DType::f32, {1, 4096, 4096, 4096})),
            3u * 4096u * 4096u * 4u);
  EXPECT_GE(add->bytes_needed(case_of(*add, DType::f32, {1073741824})), 3ull * 4 * 1073741824ull);
}

}  // namespace
