// caliber public API: the op builder. One op in one expression: its dtypes and shapes inline,
// providers by name, each a function, the check helpers bound in. It builds an Op and a Workload
// (op.hpp), which stay the low-level layer: an op library may use either, or both.
//
//   struct Vec {                              // what one case holds, made once per case
//     caliber::Buffer x, out;
//     std::size_t n;
//   };
//   [[maybe_unused]] const bool registered =
//       caliber::op_builder<Vec>("my_scale")
//           .family("pointwise").dtypes({caliber::DType::f32}).shapes({{65536}, {1048576}})
//           .inputs([](caliber::DeviceContext& ctx, const caliber::Case& c) { ... return Vec{...};
//           }) .baseline("loop", [](caliber::Run<Vec>& r) { ... }) .candidate("unrolled",
//           caliber::Tunable{{{"unroll", {1, 4, 8}}}}, [](auto& r) { ... }) .reference(&Vec::out,
//           [](caliber::Run<Vec>& r) { return std::vector<double>...; }) .bytes([](const
//           caliber::Case& c) { return 8.0 * c.numel(); }) .register_for("cpu");
//
// docs/writing-ops.md shows a whole op.
#pragma once

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "caliber/caliber.hpp"
#include "caliber/check.hpp"

namespace caliber {

// The context's native stream as the vendor's type: stream_as<cudaStream_t>(ctx).
template <class S>
[[nodiscard]] S stream_as(const DeviceContext& ctx) noexcept {
  static_assert(std::is_pointer_v<S>, "a native stream handle is a pointer type");
  return static_cast<S>(ctx.stream());
}

// Throws NativeError when a vendor call failed (a status other than 0):
//   native_ok(cudaGetLastError(), "my_kernel launch", cudaGetErrorString);
//   native_ok(cublasSaxpy(...), "cublasSaxpy", cublasGetStatusString);
// The backend classifies the code as it does its own (a sticky error stops the process's timing).
template <class Status, class MessageOf>
void native_ok(Status status, const char* api, MessageOf&& message_of) {
  if (static_cast<long long>(status) == 0) return;
  throw NativeError(static_cast<int>(status), api, std::string(message_of(status)));
}

// Host storage of the 16-bit float dtypes (their bits); check::half_to_float and bf16_to_float
// read them. A CUDA kernel reinterprets them as __half or __nv_bfloat16.
struct f16_bits {
  std::uint16_t bits;
};
struct bf16_bits {
  std::uint16_t bits;
};

template <DType T>
struct dtype_storage;
template <>
struct dtype_storage<DType::f32> {
  using type = float;
};
template <>
struct dtype_storage<DType::f64> {
  using type = double;
};
template <>
struct dtype_storage<DType::f16> {
  using type = f16_bits;
};
template <>
struct dtype_storage<DType::bf16> {
  using type = bf16_bits;
};
template <>
struct dtype_storage<DType::i32> {
  using type = std::int32_t;
};
template <>
struct dtype_storage<DType::i64> {
  using type = std::int64_t;
};
template <>
struct dtype_storage<DType::c64> {
  using type = std::complex<float>;
};
template <DType T>
using storage_t = typename dtype_storage<T>::type;

// Calls fn.template operator()<storage type>() for the dtype among the listed ones; another dtype
// skips the case (CaseSkipped names it). Only the listed dtypes are instantiated:
//   dispatch<DType::f32, DType::f64>(r.dtype(), [&]<class T>() { my_kernel<T>(...); });
template <DType... Ts, class F>
decltype(auto) dispatch(DType t, F&& fn) {
  static_assert(sizeof...(Ts) > 0, "dispatch<DType::f32, ...>: list the dtypes it handles");
  using First = std::tuple_element_t<0, std::tuple<storage_t<Ts>...>>;
  using R = decltype(fn.template operator()<First>());
  if constexpr (std::is_void_v<R>) {
    const bool done = ((t == Ts ? (fn.template operator()<storage_t<Ts>>(), true) : false) || ...);
    if (!done) throw CaseSkipped("dtype " + std::string(to_string(t)) + " is not dispatched here");
  } else {
    std::optional<R> out;
    const bool done =
        ((t == Ts ? (out.emplace(fn.template operator()<storage_t<Ts>>()), true) : false) || ...);
    if (!done) throw CaseSkipped("dtype " + std::string(to_string(t)) + " is not dispatched here");
    return static_cast<R>(std::move(*out));
  }
}

// What every function of a built op gets for one case: the context, the case, the case's data,
// the provider's config (empty without a Tunable) and the check helpers bound to the context.
template <class Data>
struct Run {
  DeviceContext& ctx;
  const Case& kase;
  Data& data;
  const Config& config;
  const std::function<void()>* launch_fn = nullptr;  // in a check: the provider under check

  template <class S>
  [[nodiscard]] S stream() const noexcept {
    return stream_as<S>(ctx);
  }
  [[nodiscard]] DType dtype() const noexcept { return kase.dtype; }
  [[nodiscard]] std::size_t numel() const { return static_cast<std::size_t>(kase.numel()); }
  // In a check: one launch of the provider being checked (then synchronized).
  void launch() const {
    if (launch_fn == nullptr) throw std::logic_error("Run::launch() is for a check function");
    (*launch_fn)();
    ctx.synchronize();
  }
  // Fresh uniform values of the case's dtype in [lo, hi) for input number k (0, 1, ...).
  void fill_random(Buffer& b, double lo, double hi, std::uint64_t k) const {
    check::fill_random(ctx, b.get(), dtype(), b.bytes() / size_of(dtype()), lo, hi, k);
  }
  void poison(Buffer& b) const { check::poison(ctx, b.get(), b.bytes()); }
  // The buffer's elements (of the case's dtype) on the host as double.
  [[nodiscard]] std::vector<double> download(const Buffer& b) const {
    ctx.synchronize();
    return check::download(ctx, b.get(), dtype(), b.bytes() / size_of(dtype()));
  }
  // The output buffer against a float64 reference, with the pointwise tolerance of the dtype
  // unless one is given.
  [[nodiscard]] Accuracy compare(const Buffer& out, const std::vector<double>& ref,
                                 const std::string& what,
                                 std::optional<check::Tolerance> tol = std::nullopt,
                                 const std::vector<double>* scale = nullptr) const {
    const std::size_t n = out.bytes() / size_of(dtype());
    Accuracy a =
        check::compare_device(ctx, out.get(), dtype(), n, ref,
                              tol ? *tol : check::pointwise_tolerance(dtype()), what, scale);
    // Every element is compared: the row's check_method and check_coverage say so.
    const auto all = static_cast<std::int64_t>(n);
    return check::covered(a, check::method::host_full, all, all);
  }
};

// A candidate's configs as axes (their product), its default, and the arguments of its tune key
// (a dim name of the case, or "n" for its element count; default: "n" bucketed by log2).
struct Tunable {
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> axes;
  Config default_config;  // empty: the first config
  std::vector<std::pair<std::string, KeyStrategy>> key;

  [[nodiscard]] ConfigSpace space_for(const Case& c) const {
    ConfigSpace s;
    s.configs.push_back(Config{});
    for (const auto& [name, values] : axes) {
      std::vector<Config> next;
      for (const auto& partial : s.configs)
        for (std::int64_t v : values) {
          Config cfg = partial;
          cfg.values.emplace_back(name, v);
          next.push_back(std::move(cfg));
        }
      s.configs = std::move(next);
    }
    s.default_config = default_config.empty() ? s.configs.front() : default_config;
    const auto keys = key.empty() ? decltype(key){{"n", KeyStrategy::log2}} : key;
    for (const auto& [name, strategy] : keys) s.key.push_back({name, key_value(c, name), strategy});
    return s;
  }

 private:
  [[nodiscard]] static std::int64_t key_value(const Case& c, const std::string& name) {
    for (std::size_t i = 0; i < c.dim_names.size() && i < c.shape.size(); ++i)
      if (c.dim_names[i] == name) return c.shape[i];
    if (name == "n") return c.numel();
    throw std::invalid_argument("Tunable key '" + name + "' is not a dim of " + c.node_id() +
                                " (nor n, its element count)");
  }
};

// A built workload whose op declared .reference(out, ...): its output as it is now can be
// compared with the reference without a launch, so a test can corrupt an element of a correct
// output and see the check fail.
class ReferenceChecked {
 public:
  virtual ~ReferenceChecked() = default;
  [[nodiscard]] virtual Buffer& output() = 0;
  [[nodiscard]] virtual Accuracy verify() = 0;
};

template <class Data>
class op_builder {
 public:
  using RunFn = std::function<void(Run<Data>&)>;
  using CheckFn = std::function<Accuracy(Run<Data>&)>;
  using InputsFn = std::function<Data(DeviceContext&, const Case&)>;
  using SizeFn = std::function<double(const Case&)>;
  using SkipFn = std::function<std::optional<std::string>(const Case&, const DeviceContext&)>;

  explicit op_builder(std::string name) { s_->info.name = std::move(name); }

  op_builder& family(std::string f) { return set(s_->info.family, std::move(f)); }
  op_builder& dtypes(std::vector<DType> d) { return set(s_->info.dtypes, std::move(d)); }
  op_builder& dims(std::vector<std::string> names) {
    return set(s_->info.dim_names, std::move(names));
  }
  op_builder& description(std::string d) { return set(s_->info.description, std::move(d)); }
  // The op's shapes at every level; an entry for the op's name in the shape file still wins.
  op_builder& shapes(std::vector<std::vector<std::int64_t>> s) {
    return set(s_->shapes, std::move(s));
  }
  op_builder& inputs(InputsFn f) { return set(s_->inputs, std::move(f)); }
  op_builder& baseline(std::string name, RunFn launch) {
    return provider(std::move(name), Role::baseline, std::nullopt, std::move(launch));
  }
  op_builder& candidate(std::string name, RunFn launch) {
    return provider(std::move(name), Role::candidate, std::nullopt, std::move(launch));
  }
  op_builder& candidate(std::string name, Tunable space, RunFn launch) {
    return provider(std::move(name), Role::candidate, std::move(space), std::move(launch));
  }
  // Before any timing, with the provider's config: handles, plans, launch geometry. Throw
  // ConfigRejected for a config that cannot run here.
  op_builder& prepare(const std::string& provider, RunFn fn) {
    if (auto* p = find(provider, "prepare")) p->prepare = std::move(fn);
    return *this;
  }
  // What listings say of a provider ("plain loop"), and its version (part of the tune cache's
  // key: bump it when the kernel changes, so its tuned configs are not reused).
  op_builder& label(const std::string& provider, std::string text) {
    if (auto* p = find(provider, "label")) p->info.label = std::move(text);
    return *this;
  }
  op_builder& version(const std::string& provider, std::string v) {
    if (auto* p = find(provider, "version")) p->info.version = std::move(v);
    return *this;
  }
  // How a provider is checked: fn poisons the outputs, calls r.launch() and compares.
  op_builder& check(CheckFn fn) { return set(s_->check, std::move(fn)); }
  // The common check: `out` poisoned, one launch, compared with ref(r) (float64) at the dtype's
  // pointwise tolerance (or tol(case)).
  op_builder& reference(Buffer Data::*out, std::function<std::vector<double>(Run<Data>&)> ref,
                        std::function<check::Tolerance(const Case&)> tol = {}) {
    s_->output = out;
    s_->verify = [out, ref = std::move(ref), tol = std::move(tol)](Run<Data>& r) {
      std::optional<check::Tolerance> t;
      if (tol) t = tol(r.kase);
      return r.compare(r.data.*out, ref(r), r.kase.op + " vs float64 reference", t);
    };
    return check([out, verify = s_->verify](Run<Data>& r) {
      r.poison(r.data.*out);
      r.launch();
      return verify(r);
    });
  }
  op_builder& flops(SizeFn f) { return set(s_->flops, std::move(f)); }
  op_builder& bytes(SizeFn f) { return set(s_->bytes, std::move(f)); }
  // Device memory a case needs (default: bytes(case)).
  op_builder& bytes_needed(SizeFn f) { return set(s_->bytes_needed, std::move(f)); }
  op_builder& skip_if(SkipFn f) { return set(s_->skip, std::move(f)); }

  // Registers the op for a backend. A mistake in the declaration is printed (naming the op and
  // what is wrong) and the op is not registered: an exception here would end the process that
  // loads the library. Returns whether it was registered.
  bool register_for(const std::string& backend) const {
    const std::string why = problem();
    if (!why.empty()) {
      std::fprintf(stderr, "caliber: op '%s' is not registered: %s\n", s_->info.name.c_str(),
                   why.c_str());
      return false;
    }
    if (!s_->shapes.empty()) register_op_shapes(s_->info.name, s_->shapes);
    auto spec = s_;
    return register_op(backend, [spec] { return std::make_unique<BuiltOp>(spec); });
  }

 private:
  struct ProviderSpec {
    ProviderInfo info;
    std::optional<Tunable> space;
    RunFn launch, prepare;
  };
  struct Spec {
    OpInfo info;
    std::vector<std::vector<std::int64_t>> shapes;
    InputsFn inputs;
    std::vector<ProviderSpec> providers;
    CheckFn check;
    Buffer Data::*output = nullptr;  // .reference's output, and its comparison alone
    CheckFn verify;
    SizeFn flops, bytes, bytes_needed;
    SkipFn skip;
    std::string error;  // the first mistake a setter saw
  };

  template <class T, class V>
  op_builder& set(T& field, V&& value) {
    field = std::forward<V>(value);
    return *this;
  }
  op_builder& fail(std::string why) {
    if (s_->error.empty()) s_->error = std::move(why);
    return *this;
  }
  ProviderSpec* find(const std::string& provider, const char* what) {
    for (auto& p : s_->providers)
      if (p.info.name == provider) return &p;
    fail(std::string(what) + "('" + provider + "'): no provider of that name (declare it first)");
    return nullptr;
  }
  op_builder& provider(std::string name, Role role, std::optional<Tunable> space, RunFn launch) {
    for (const auto& p : s_->providers)
      if (p.info.name == name) return fail("provider '" + name + "' is declared twice");
    ProviderSpec p;
    p.info.name = std::move(name);
    p.info.role = role;
    p.space = std::move(space);
    p.launch = std::move(launch);
    s_->providers.push_back(std::move(p));
    return *this;
  }
  [[nodiscard]] std::string problem() const {
    if (!s_->error.empty()) return s_->error;
    if (s_->info.name.empty()) return "it has no name";
    if (s_->info.family.empty()) return "no .family(...) (it picks the family's shapes)";
    if (s_->info.dtypes.empty()) return "no .dtypes({...})";
    if (s_->providers.empty()) return "no provider (.baseline(...) or .candidate(...))";
    for (const auto& p : s_->providers)
      if (!p.launch) return "provider '" + p.info.name + "' has no launch function";
    for (const auto& sh : s_->shapes)
      if (sh.empty() || std::any_of(sh.begin(), sh.end(), [](std::int64_t d) { return d <= 0; }))
        return "a shape in .shapes(...) is empty or not positive";
    if (!s_->inputs && !std::is_constructible_v<Data, DeviceContext&, const Case&>)
      return "no .inputs(...) and Data is not constructible from (DeviceContext&, const Case&)";
    return "";
  }

  class BuiltWorkload final : public Workload, public ReferenceChecked {
   public:
    BuiltWorkload(std::shared_ptr<const Spec> spec, DeviceContext& ctx, const Case& c)
        : spec_(std::move(spec)), ctx_(ctx), case_(c), data_(make(ctx, c)) {
      configs_.resize(spec_->providers.size());
    }
    std::vector<ProviderInfo> providers() const override {
      std::vector<ProviderInfo> out;
      for (const auto& p : spec_->providers) {
        ProviderInfo i = p.info;
        if (p.space) i.space = p.space->space_for(case_);
        out.push_back(std::move(i));
      }
      return out;
    }
    void prepare(std::size_t p, const Config& c) override {
      configs_.at(p) = c;
      const auto& fn = spec_->providers.at(p).prepare;
      if (!fn) return;
      Run<Data> r{ctx_, case_, *data_, configs_[p]};
      fn(r);
    }
    void launch(std::size_t p) override {
      Run<Data> r{ctx_, case_, *data_, configs_[p]};
      spec_->providers[p].launch(r);
    }
    Accuracy check(std::size_t p) override {
      if (!spec_->check)
        return {true, 0, 0, "not checked: the op declares no .check or .reference", {}, 0, 0};
      const std::function<void()> once = [this, p] { launch(p); };
      Run<Data> r{ctx_, case_, *data_, configs_.at(p), &once};
      return spec_->check(r);
    }
    Buffer& output() override {
      if (spec_->output == nullptr)
        throw std::logic_error("op '" + spec_->info.name + "' declares no .reference output");
      return (*data_).*(spec_->output);
    }
    Accuracy verify() override {
      if (!spec_->verify)
        throw std::logic_error("op '" + spec_->info.name + "' declares no .reference");
      const Config none;
      Run<Data> r{ctx_, case_, *data_, none};
      return spec_->verify(r);
    }
    double flops() const override { return spec_->flops ? spec_->flops(case_) : 0.0; }
    double bytes() const override { return spec_->bytes ? spec_->bytes(case_) : 0.0; }

   private:
    std::unique_ptr<Data> make(DeviceContext& ctx, const Case& c) const {
      if constexpr (std::is_move_constructible_v<Data>)
        if (spec_->inputs) return std::make_unique<Data>(spec_->inputs(ctx, c));
      if constexpr (std::is_constructible_v<Data, DeviceContext&, const Case&>)
        return std::make_unique<Data>(ctx, c);
      throw std::logic_error("op '" + spec_->info.name + "' has no inputs function");
    }
    std::shared_ptr<const Spec> spec_;
    DeviceContext& ctx_;
    Case case_;
    std::unique_ptr<Data> data_;
    std::vector<Config> configs_;
  };

  class BuiltOp final : public Op {
   public:
    explicit BuiltOp(std::shared_ptr<const Spec> spec) : spec_(std::move(spec)) {}
    OpInfo info() const override { return spec_->info; }
    std::size_t bytes_needed(const Case& c) const override {
      const auto& f = spec_->bytes_needed ? spec_->bytes_needed : spec_->bytes;
      return f ? static_cast<std::size_t>(f(c)) : 0;
    }
    std::optional<std::string> skip_reason(const Case& c, const DeviceContext& ctx) const override {
      return spec_->skip ? spec_->skip(c, ctx) : std::nullopt;
    }
    std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
      if (spec_->skip)
        if (auto why = spec_->skip(c, ctx)) throw CaseSkipped(*why);
      return std::make_unique<BuiltWorkload>(spec_, ctx, c);
    }

   private:
    std::shared_ptr<const Spec> spec_;
  };

  std::shared_ptr<Spec> s_ = std::make_shared<Spec>();
};

}  // namespace caliber
