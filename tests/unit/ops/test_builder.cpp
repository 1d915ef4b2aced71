// The op builder (caliber/builder.hpp) on the real cpu device: what it registers (info, named
// providers, a Tunable's space and key, inline shapes), its checks pass a correct provider and
// fail a wrong or corrupted output, its declaration mistakes are refused at registration, and its
// helpers (dispatch, native_ok, stream_as, Config::get<T>) do what they say.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/cpu_device.hpp"
#include "caliber/builder.hpp"
#include "op_case.hpp"

namespace {

using caliber::Case;
using caliber::Config;
using caliber::DType;
using caliber::Run;
using caliber::test_support::case_of;

std::unique_ptr<caliber::backends::cpu::CpuDevice> make_device() {
  caliber::backends::DeviceDesc d;
  d.name = "test host";
  d.sm_count = 1;
  d.l2_bytes = 1 << 20;
  caliber::backends::Capabilities caps;
  caps.host = true;
  return std::make_unique<caliber::backends::cpu::CpuDevice>(d, caps, 99);
}

struct Twice {
  Twice(caliber::DeviceContext& ctx, const Case& c)
      : n(static_cast<std::size_t>(c.numel())), x(ctx, n * 8), out(ctx, n * 8) {
    caliber::check::fill_random(ctx, x.get(), DType::f64, n, -1, 1, 0);
  }
  std::size_t n;
  caliber::Buffer x, out;
};

void twice(Run<Twice>& r, double factor) {
  for (std::size_t i = 0; i < r.data.n; ++i)
    r.data.out.as<double>()[i] = factor * r.data.x.as<double>()[i];
}

caliber::op_builder<Twice> twice_op(const std::string& name) {
  return caliber::op_builder<Twice>(name)
      .family("pointwise")
      .dtypes({DType::f64})
      .shapes({{1000}, {10, 77}})
      .baseline("loop", [](Run<Twice>& r) { twice(r, 2.0); })
      .candidate("tiled", caliber::Tunable{{{"tile", {4, 8}}, {"lanes", {1, 2, 3}}}, {}, {}},
                 [](Run<Twice>& r) {
                   (void)r.config.get<int>("tile");  // a typo here would fail the case
                   twice(r, 2.0);
                 })
      .candidate("wrong", [](Run<Twice>& r) { twice(r, 2.001); })
      .reference(&Twice::out, [](Run<Twice>& r) {
        auto x = r.download(r.data.x);
        for (double& v : x) v *= 2.0;
        return x;
      });
}

std::unique_ptr<caliber::Op> registered(const std::string& name) {
  for (const auto& r : caliber::registered_ops())
    if (r.backend == "cpu") {
      auto op = r.factory();
      if (op->info().name == name) return op;
    }
  return nullptr;
}

TEST(OpBuilder, RegistersNamedProvidersAndTheirSpaces) {
  ASSERT_TRUE(twice_op("builder_twice").register_for("cpu"));
  auto op = registered("builder_twice");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->info().family, "pointwise");
  ASSERT_NE(caliber::registered_op_shapes("builder_twice"), nullptr);
  EXPECT_EQ(caliber::registered_op_shapes("builder_twice")->size(), 2u);
  auto dev = make_device();
  auto w = op->setup(*dev, case_of(*op, DType::f64, {1000}));
  const auto p = w->providers();
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].name, "loop");
  EXPECT_EQ(p[0].role, caliber::Role::baseline);
  EXPECT_EQ(p[1].name, "tiled");
  EXPECT_EQ(p[1].space.configs.size(), 6u);  // the axes' product
  EXPECT_EQ(p[1].space.default_config.str(), "tile=4,lanes=1");
  ASSERT_EQ(p[1].space.key.size(), 1u);
  EXPECT_EQ(p[1].space.key[0].name, "n");
  EXPECT_EQ(p[1].space.key[0].value, 1000);
  EXPECT_FALSE(p[2].space.tunable());
}

TEST(OpBuilder, ReferenceCheckPassesACorrectProviderAndFailsAWrongOne) {
  auto dev = make_device();
  auto op_ok = twice_op("builder_check");
  ASSERT_TRUE(op_ok.register_for("cpu"));
  auto op = registered("builder_check");
  auto w = op->setup(*dev, case_of(*op, DType::f64, {10, 77}));
  const auto p = w->providers();
  for (std::size_t i = 0; i < 2; ++i) {
    w->prepare(i, p[i].space.default_config);
    const auto acc = w->check(i);
    EXPECT_TRUE(acc.passed) << p[i].name << ": " << acc.detail;
  }
  w->prepare(2, {});
  EXPECT_FALSE(w->check(2).passed) << "a 0.05% error must fail the f64 gate";
  // A correct output corrupted by one element fails without another launch.
  ASSERT_TRUE(w->check(0).passed);
  auto* rc = dynamic_cast<caliber::ReferenceChecked*>(w.get());
  ASSERT_NE(rc, nullptr);
  EXPECT_TRUE(rc->verify().passed);
  rc->output().as<double>()[769] += 1.0;
  EXPECT_FALSE(rc->verify().passed);
}

TEST(OpBuilder, ATypoInAConfigKeyFailsInsteadOfFallingBack) {
  const Config c{{{"block", 256}, {"vec", 4}}};
  EXPECT_EQ(c.get<int>("block"), 256);
  try {
    (void)c.get<int>("blok");
    FAIL() << "an unknown key must throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'blok'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("block, vec"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c.get("blok", 7), 7);  // the low-level fallback form stays as it was
}

TEST(OpBuilder, DeclarationMistakesAreRefusedAtRegistration) {
  testing::internal::CaptureStderr();
  EXPECT_FALSE(caliber::op_builder<Twice>("builder_none")
                   .family("x")
                   .dtypes({DType::f64})
                   .register_for("cpu"));
  EXPECT_FALSE(
      twice_op("builder_dup").baseline("loop", [](caliber::Run<Twice>&) {}).register_for("cpu"));
  EXPECT_FALSE(
      twice_op("builder_prep").prepare("nope", [](caliber::Run<Twice>&) {}).register_for("cpu"));
  EXPECT_FALSE(twice_op("builder_shape").shapes({{0}}).register_for("cpu"));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("op 'builder_none' is not registered: no provider"), std::string::npos) << err;
  EXPECT_NE(err.find("provider 'loop' is declared twice"), std::string::npos) << err;
  EXPECT_NE(err.find("prepare('nope')"), std::string::npos) << err;
  EXPECT_NE(err.find("not positive"), std::string::npos) << err;
  EXPECT_EQ(registered("builder_none"), nullptr);
  EXPECT_EQ(registered("builder_dup"), nullptr);
}

TEST(OpBuilder, DispatchCallsTheStorageTypeAndSkipsTheRest) {
  std::string seen;
  caliber::dispatch<DType::f32, DType::f64>(
      DType::f64, [&]<class T>() { seen = std::is_same_v<T, double> ? "double" : "other"; });
  EXPECT_EQ(seen, "double");
  EXPECT_EQ(caliber::dispatch<DType::i32>(DType::i32, [&]<class T>() { return sizeof(T); }), 4u);
  EXPECT_THROW(caliber::dispatch<DType::f32>(DType::bf16, [&]<class T>() {}), caliber::CaseSkipped);
}

TEST(OpBuilder, NativeOkThrowsTheVendorsCodeAndStreamAsCasts) {
  const auto text = [](int) { return "boom"; };
  EXPECT_NO_THROW(caliber::native_ok(0, "api", text));
  try {
    caliber::native_ok(700, "myKernel launch", text);
    FAIL();
  } catch (const caliber::NativeError& e) {
    EXPECT_EQ(e.code(), 700);
    EXPECT_EQ(e.api(), "myKernel launch");
  }
  auto dev = make_device();
  EXPECT_EQ(caliber::stream_as<void*>(*dev), dev->stream());
}

}  // namespace
