// The public API's value types: dtype names and torch aliases, cases and their node ids, configs,
// key bucketing and op registration. Node ids and tune keys are persisted (run.log, tune.db), so
// their exact spelling is pinned here.
#include <gtest/gtest.h>

#include "caliber/caliber.hpp"

using namespace caliber;

TEST(DType, CanonicalNamesRoundTrip) {
  const auto all = all_dtypes();
  EXPECT_EQ(all.size(), 7u);
  for (DType t : all) {
    const auto back = parse_dtype(to_string(t));
    ASSERT_TRUE(back.has_value()) << to_string(t);
    EXPECT_EQ(*back, t);
  }
  EXPECT_EQ(to_string(DType::bf16), "bf16");
  EXPECT_EQ(to_string(DType::c64), "c64");
}

TEST(DType, TorchAliases) {
  const std::vector<std::pair<const char*, DType>> aliases = {
      {"float32", DType::f32},   {"fp32", DType::f32},    {"float", DType::f32},
      {"float16", DType::f16},   {"half", DType::f16},    {"fp16", DType::f16},
      {"bfloat16", DType::bf16}, {"float64", DType::f64}, {"double", DType::f64},
      {"int32", DType::i32},     {"int64", DType::i64},   {"long", DType::i64},
      {"complex64", DType::c64}};
  for (const auto& [alias, t] : aliases) {
    const auto d = parse_dtype(alias);
    ASSERT_TRUE(d.has_value()) << alias;
    EXPECT_EQ(*d, t) << alias;
  }
}

TEST(DType, UnknownSpellingsAreRefused) {
  for (const char* s : {"", "f8", "F32", "float8", "bf", "int8", " f32", "f32 "})
    EXPECT_FALSE(parse_dtype(s).has_value()) << "'" << s << "'";
}

TEST(DType, SizesAndKinds) {
  EXPECT_EQ(size_of(DType::f32), 4u);
  EXPECT_EQ(size_of(DType::f16), 2u);
  EXPECT_EQ(size_of(DType::bf16), 2u);
  EXPECT_EQ(size_of(DType::f64), 8u);
  EXPECT_EQ(size_of(DType::i32), 4u);
  EXPECT_EQ(size_of(DType::i64), 8u);
  EXPECT_EQ(size_of(DType::c64), 8u);  // two f32
  EXPECT_TRUE(is_floating(DType::bf16));
  EXPECT_TRUE(is_floating(DType::c64));
  EXPECT_FALSE(is_floating(DType::i32));
  EXPECT_FALSE(is_floating(DType::i64));
}

TEST(CaseNodeId, FromNamedDimsAndParams) {
  Case c;
  c.op = "mm";
  c.dtype = DType::bf16;
  c.shape = {4096, 4096, 4096};
  c.dim_names = {"M", "N", "K"};
  c.params = {{"B", "col"}};
  EXPECT_EQ(c.size_detail(), "M4096-N4096-K4096-Bcol");
  EXPECT_EQ(c.node_id(), "mm[bf16-M4096-N4096-K4096-Bcol]");
  EXPECT_EQ(c.numel(), 4096LL * 4096 * 4096);
  EXPECT_EQ(c.param("B"), "col");
  EXPECT_EQ(c.param("A", "row"), "row");
}

TEST(CaseNodeId, AnonymousShape) {
  Case c;
  c.op = "add";
  c.dtype = DType::f16;
  c.shape = {1024, 1024};
  EXPECT_EQ(c.size_detail(), "1024x1024");
  EXPECT_EQ(c.node_id(), "add[f16-1024x1024]");
  EXPECT_EQ(c.numel(), 1024 * 1024);
  c.shape = {65536};
  EXPECT_EQ(c.node_id(), "add[f16-65536]");
}

TEST(CaseNodeId, ParamsAreOrderedByName) {
  // Two cases built with the same parameters in another order must share one node id.
  Case a;
  a.op = "op";
  a.shape = {8};
  a.params = {{"z", "1"}, {"a", "2"}};
  Case b = a;
  b.params.clear();
  b.params["a"] = "2";
  b.params["z"] = "1";
  EXPECT_EQ(a.node_id(), b.node_id());
  EXPECT_EQ(a.node_id(), "op[f32-8-a2-z1]");
}

TEST(CaseNodeId, DimNamesThatDoNotMatchTheRankFallBackToPlainShape) {
  Case c;
  c.op = "x";
  c.shape = {2, 3};
  c.dim_names = {"M"};
  EXPECT_EQ(c.size_detail(), "2x3");
}

TEST(CaseNodeId, EmptyShapeHasOneElement) {
  Case c;
  c.op = "scalar";
  EXPECT_EQ(c.numel(), 1);
}

TEST(Config, StrAndParseRoundTrip) {
  Config c;
  c.values = {{"block", 256}, {"vec", 4}, {"stages", -1}};
  EXPECT_EQ(c.str(), "block=256,vec=4,stages=-1");
  const auto back = Config::parse(c.str());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, c);
  // Order is part of the config: "vec=4,block=256" is another spelling, not the same string.
  const auto other = Config::parse("vec=4,block=256");
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->get("block"), 256);
  EXPECT_EQ(other->str(), "vec=4,block=256");
}

TEST(Config, EmptyConfig) {
  Config c;
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(c.str(), "");
  const auto back = Config::parse("");
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->empty());
}

TEST(Config, MalformedTextIsRefused) {
  // a parameter twice (which value?) and a trailing comma (a parameter missing) too
  for (const char* s : {"block", "=4", "block=", "block=x", "block=4x", "block=4,,vec=2", "a=1=2",
                        "block=4,block=0", "block=4,"})
    EXPECT_FALSE(Config::parse(s).has_value()) << s;
}

TEST(Config, GetHasAndClusters) {
  const auto c = Config::parse("block=128,cluster=2");
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->has("block"));
  EXPECT_FALSE(c->has("vec"));
  EXPECT_EQ(c->get("vec", 9), 9);
  EXPECT_TRUE(c->needs_clusters());
  EXPECT_FALSE(Config::parse("block=128,cluster=1")->needs_clusters());
  EXPECT_FALSE(Config::parse("block=128")->needs_clusters());
}

TEST(KeyBucket, Strategies) {
  EXPECT_EQ(bucket(4097, KeyStrategy::exact), 4097);
  EXPECT_EQ(bucket(3000, KeyStrategy::log2), 4096);
  EXPECT_EQ(bucket(4096, KeyStrategy::log2), 4096);
  EXPECT_EQ(bucket(4097, KeyStrategy::log2), 8192);
  EXPECT_EQ(bucket(2, KeyStrategy::log2), 2);
  EXPECT_EQ(bucket(3, KeyStrategy::log2), 4);
  EXPECT_EQ(bucket(0, KeyStrategy::log2), 1);
  EXPECT_EQ(bucket(1, KeyStrategy::align32), 32);
  EXPECT_EQ(bucket(32, KeyStrategy::align32), 32);
  EXPECT_EQ(bucket(33, KeyStrategy::align32), 64);
  EXPECT_EQ(bucket(152064, KeyStrategy::align32), 152064);
  EXPECT_EQ(bucket(152065, KeyStrategy::align32), 152096);
}

TEST(KeyBucket, TuneKeyBucketsEachArgument) {
  EXPECT_EQ(tune_key({{"M", 3000, KeyStrategy::log2},
                      {"N", 100, KeyStrategy::align32},
                      {"K", 77, KeyStrategy::exact}}),
            "M=4096,N=128,K=77");
  EXPECT_EQ(tune_key({}), "");
  // Nearby shapes share a key under log2, and differ under exact.
  EXPECT_EQ(tune_key({{"M", 3000, KeyStrategy::log2}}), tune_key({{"M", 3500, KeyStrategy::log2}}));
  EXPECT_NE(tune_key({{"M", 3000, KeyStrategy::exact}}),
            tune_key({{"M", 3500, KeyStrategy::exact}}));
}

TEST(ConfigSpace, TunableNeedsMoreThanOneConfig) {
  ConfigSpace s;
  EXPECT_FALSE(s.tunable());
  s.configs.push_back(*Config::parse("block=64"));
  EXPECT_FALSE(s.tunable());
  s.configs.push_back(*Config::parse("block=128"));
  EXPECT_TRUE(s.tunable());
}

namespace {
class NullOp : public Op {
 public:
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = "api_test_null";
    return i;
  }
  [[nodiscard]] std::size_t bytes_needed(const Case&) const override { return 0; }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext&, const Case&) const override {
    return nullptr;
  }
};
}  // namespace

TEST(OpRegistry, RegisterAppendsInOrder) {
  const std::size_t before = registered_ops().size();
  EXPECT_TRUE(register_op("api-test-backend", [] { return std::make_unique<NullOp>(); }));
  const auto& ops = registered_ops();
  ASSERT_EQ(ops.size(), before + 1);
  EXPECT_EQ(ops.back().backend, "api-test-backend");
  EXPECT_EQ(ops.back().factory()->info().name, "api_test_null");
}
