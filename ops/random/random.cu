// Random ops: rand (uniform [0, 1)), randn (standard normal), dropout (p = 0.5, kept values
// scaled by 1 / (1 - p), plus the keep mask).
// Baseline: cuRAND's Philox4_32_10 host API (generator created in prepare, bound to the stream),
// generating fp32; other output dtypes and dropout's masking take one extra conversion kernel.
// Candidate: own counter-based Philox4x32-10 kernel. It is safe to capture because it never
// touches device-side generator state: at launch the HOST reads the seed and reserves counters
// from ctx.default_generator() and passes (seed, offset) as kernel arguments. Known caveat: a
// captured graph replays the offset it was captured with, so every replay draws the same numbers
// (as torch's graph-safe generators do without their offset-increment bookkeeping); the timing is
// unaffected, and the harness's RNG guard restores the generator the capture advanced.
#include <curand.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include "common/check_kernels.cuh"
#include "common/cuda_common.cuh"
#include "common/philox.hpp"
#include "common/rowwise.cuh"

namespace caliber::ops::cuda::random {
namespace {

enum class Kind { rand, randn, dropout };

const char* kind_name(Kind k) {
  return k == Kind::rand ? "rand" : k == Kind::randn ? "randn" : "dropout";
}

constexpr float kDropP = 0.5f;

#define CALIBER_CURAND_CHECK(expr)                                           \
  do {                                                                       \
    const curandStatus_t st_ = (expr);                                       \
    if (st_ != CURAND_STATUS_SUCCESS) {                                      \
      throw NativeError(static_cast<int>(st_), #expr, "cuRAND call failed"); \
    }                                                                        \
  } while (0)

// The largest value of T below 1, so that rounding a uniform draw to T never yields 1.
template <class T>
__device__ __forceinline__ float below_one() {
  if constexpr (std::is_same_v<T, __half>) return 1.f - 0x1p-11f;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return 1.f - 0x1p-8f;
  return 1.f - 0x1p-24f;
}

// Dropout keeps an element when its uniform to_unit(r) < 1 - p. to_unit(r) is (r >> 8) * 2^-24
// exactly, so with (1 - p) * 2^24 an integer the test is r < ((1 - p) * 2^24) << 8 on the raw
// word: the same decisions without an int-to-float conversion.
constexpr std::uint32_t kKeepBelow = static_cast<std::uint32_t>((1.f - kDropP) * 0x1p24f) << 8;
static_assert(static_cast<float>(kKeepBelow >> 8) == (1.f - kDropP) * 0x1p24f,
              "(1 - p) * 2^24 must be an integer for the integer keep test");

template <Kind K, class T>
__device__ __forceinline__ void make4(philox::U32x4 r, float out[4], bool fast) {
  if constexpr (K == Kind::rand) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      // For fp32 below_one() is the largest to_unit value already: the clamp would be a no-op.
      out[k] = std::is_same_v<T, float> ? philox::to_unit(r.v[k])
                                        : fminf(philox::to_unit(r.v[k]), below_one<T>());
    }
  } else if constexpr (K == Kind::randn) {
#pragma unroll
    for (int k = 0; k < 4; k += 2) {
      const float rad = sqrtf(-2.f * logf(philox::to_unit_open0(r.v[k])));
      const float turn = philox::to_unit(r.v[k + 1]);
      float s, c;
      if (fast) {
        // cuRAND's choice for its Box-Muller: the hardware sin/cos (absolute error about 2^-21
        // over the turn); the radius keeps the accurate logf and sqrtf.
        __sincosf(turn * 6.28318530717958647692f, &s, &c);
      } else {
        sincospif(2.f * turn, &s, &c);
      }
      out[k] = rad * c;
      out[k + 1] = rad * s;
    }
  }
}

// Two floats into two adjacent T's, rounded to nearest even (one packed conversion for 16 bits).
template <class T>
__device__ __forceinline__ void put2(T* o, float a, float b) {
  if constexpr (std::is_same_v<T, __half>) {
    *reinterpret_cast<__half2*>(o) = __floats2half2_rn(a, b);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    *reinterpret_cast<__nv_bfloat162*>(o) = __floats2bfloat162_rn(a, b);
  } else {
    o[0] = a;
    o[1] = b;
  }
}

// dropout's mask bytes of one group: byte k is 1 where r.v[k] < kKeepBelow.
__device__ __forceinline__ std::uint32_t keep_bytes(const philox::U32x4& r) {
  if constexpr (kKeepBelow == 0x80000000u) {
    // Keep <=> top bit clear: gather the four top bytes, invert, move bit 7 of each to bit 0.
    const std::uint32_t top = __byte_perm(__byte_perm(r.v[0], r.v[1], 0x0073),
                                          __byte_perm(r.v[2], r.v[3], 0x0073), 0x5410);
    return (~top >> 7) & 0x01010101u;
  } else {
    std::uint32_t m = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) m |= static_cast<std::uint32_t>(r.v[k] < kKeepBelow) << (8 * k);
    return m;
  }
}

// The own kernel. Group g of four outputs draws Philox counter (offset + g) (philox::draw's stream
// layout, which the host check recomputes); only the schedule below is tunable.
//  - Each iteration a block covers blockDim * ILP consecutive groups, as ILP / P units per thread
//    of P consecutive groups: unit s of thread t is groups base + (s * blockDim + t) * P + [0, P),
//    so every store instruction of a warp is contiguous. P = 2 for 16-bit types at ILP >= 2 (one
//    16-byte store of 8 values, an 8-byte mask store), else 1 (16-byte fp32 / 8-byte 16-bit
//    stores, a 4-byte mask store).
//  - All ILP draws are computed before any store (dropout's loads of x are issued before the
//    draws), so ILP independent Philox chains overlap and ILP stores are in flight together.
//  - I is the index type: 32-bit when the host saw that every index of the launch fits.
//  - The grid (host) either strides (capped at `waves` resident waves) or covers all groups.
template <Kind K, class T, int ILP, class I>
__global__ void philox_kernel(T* __restrict__ y, unsigned char* __restrict__ mask,
                              const T* __restrict__ x, I n, unsigned long long seed,
                              unsigned long long offset, bool fast) {
  constexpr int P = (sizeof(T) == 2 && ILP >= 2) ? 2 : 1;
  constexpr int S = ILP / P;
  constexpr int E = 4 * P;  // elements per unit
  using MaskWord = std::conditional_t<P == 2, uint2, std::uint32_t>;
  (void)fast;  // randn only
  const I groups = (n + 3) / 4;
  const I tile = static_cast<I>(blockDim.x) * ILP;
  const I stride = static_cast<I>(gridDim.x) * tile;
  for (I base = static_cast<I>(blockIdx.x) * tile; base < groups; base += stride) {
    I e[S];  // first element of each unit
    Vec<T, E> in[S];
#pragma unroll
    for (int s = 0; s < S; ++s) {
      e[s] = (base + (static_cast<I>(s) * blockDim.x + threadIdx.x) * P) * 4;
      if constexpr (K == Kind::dropout) {
        if (e[s] + E <= n) in[s] = load_vec<T, E>(x + e[s]);
      }
    }
    philox::U32x4 r[ILP];
#pragma unroll
    for (int s = 0; s < S; ++s) {
#pragma unroll
      for (int p = 0; p < P; ++p) {
        r[s * P + p] = philox::draw(seed, offset, static_cast<unsigned long long>(e[s] / 4 + p));
      }
    }
#pragma unroll
    for (int s = 0; s < S; ++s) {
      if (e[s] >= n) continue;
      float v[E];
      std::uint32_t keep[P];
#pragma unroll
      for (int p = 0; p < P; ++p) {
        if constexpr (K == Kind::dropout) {
          keep[p] = keep_bytes(r[s * P + p]);
        } else {
          make4<K, T>(r[s * P + p], v + 4 * p, fast);
        }
      }
      if (e[s] + E <= n) {
        Vec<T, E> o;
        if constexpr (K == Kind::dropout) {
#pragma unroll
          for (int k = 0; k < E; k += 2) {
            const bool k0 = (keep[k / 4] >> (8 * (k % 4))) & 1u;
            const bool k1 = (keep[k / 4] >> (8 * (k % 4 + 1))) & 1u;
            put2<T>(o.v + k, k0 ? to_float(in[s].v[k]) * (1.f / (1.f - kDropP)) : 0.f,
                    k1 ? to_float(in[s].v[k + 1]) * (1.f / (1.f - kDropP)) : 0.f);
          }
          MaskWord m;
          if constexpr (P == 2) {
            m = make_uint2(keep[0], keep[1]);
          } else {
            m = keep[0];
          }
          *reinterpret_cast<MaskWord*>(mask + e[s]) = m;
        } else {
#pragma unroll
          for (int k = 0; k < E; k += 2) put2<T>(o.v + k, v[k], v[k + 1]);
        }
        store_vec<T, E>(y + e[s], o);
      } else {
#pragma unroll
        for (int k = 0; k < E; ++k) {
          if (e[s] + k >= n) break;
          if constexpr (K == Kind::dropout) {
            const bool kk = (keep[k / 4] >> (8 * (k % 4))) & 1u;
            y[e[s] + k] = kk ? from_float<T>(to_float(x[e[s] + k]) * (1.f / (1.f - kDropP)))
                             : from_float<T>(0.f);
            mask[e[s] + k] = kk ? 1 : 0;
          } else {
            y[e[s] + k] = from_float<T>(v[k]);
          }
        }
      }
    }
  }
}

// Baseline tail: cuRAND's fp32 draws to the output dtype, or to dropout's output and mask.
template <Kind K, class T>
__global__ void from_curand_kernel(const float* __restrict__ u, T* __restrict__ y,
                                   unsigned char* __restrict__ mask, const T* __restrict__ x,
                                   long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    if constexpr (K == Kind::dropout) {
      // cuRAND's uniform lies in (0, 1]; keep when u <= 1 - p keeps the same rate.
      const bool keep = u[i] <= 1.f - kDropP;
      y[i] = keep ? from_float<T>(to_float(x[i]) * (1.f / (1.f - kDropP))) : from_float<T>(0.f);
      mask[i] = keep;
    } else {
      y[i] = from_float<T>(u[i]);
    }
  }
}

// Per-block partials of the statistics check. rand/randn: count = elements non-finite or out of
// range, sum/sum2 over the rest. dropout: kept = elements whose mask is 1, count = elements whose
// mask is above 1 or whose output is not exactly round(x * 2) (kept) or 0 (dropped).
struct alignas(16) StatsAcc {
  double sum;
  double sum2;
  unsigned long long count;
  unsigned long long kept;
};

struct StatsCombine {
  __device__ __forceinline__ StatsAcc operator()(const StatsAcc& a, const StatsAcc& b) const {
    return StatsAcc{a.sum + b.sum, a.sum2 + b.sum2, a.count + b.count, a.kept + b.kept};
  }
};

constexpr int kStatsBlock = 256;

template <Kind K, class T>
__global__ void __launch_bounds__(kStatsBlock)
    stats_kernel(const T* __restrict__ y, const unsigned char* __restrict__ mask,
                 const T* __restrict__ x, long long n, StatsAcc* __restrict__ partial) {
  __shared__ StatsAcc scratch[33];
  StatsAcc a{0.0, 0.0, 0ull, 0ull};
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const float v = to_float(y[i]);
    if constexpr (K == Kind::dropout) {
      // Mirrors the host's round_to(x * 2, dtype): x * 2 is exact in float, then rounded to T.
      // Compared as values (not bits), like the host's double comparison: NaN never matches.
      const unsigned char m = mask[i];
      const bool keep = m == 1;
      a.kept += keep ? 1ull : 0ull;
      const float expect = keep ? to_float(from_float<T>(to_float(x[i]) * 2.f)) : 0.f;
      if (!(m <= 1) || !(v == expect)) ++a.count;
    } else {
      const bool ok = isfinite(v) && (K == Kind::randn || (v >= 0.f && v <= 1.f));
      if (!ok) {
        ++a.count;
        continue;
      }
      const double d = v;
      a.sum += d;
      a.sum2 += d * d;
    }
  }
  const StatsAcc r =
      rowwise::block_reduce(a, StatsCombine{}, StatsAcc{0.0, 0.0, 0ull, 0ull}, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = r;
}

class RandomWorkload final : public Workload {
 public:
  RandomWorkload(DeviceContext& ctx, const Case& c, Kind kind)
      : ctx_(ctx),
        case_(c),
        kind_(kind),
        n_(std::max<std::int64_t>(c.numel(), 1)),
        s_(stream_of(ctx)) {
    const std::size_t es = size_of(c.dtype);
    y_ = Buffer(ctx, static_cast<std::size_t>(n_) * es);
    if (kind == Kind::dropout) {
      x_ = Buffer(ctx, static_cast<std::size_t>(n_) * es);
      ctx.fill_uniform(x_.get(), c.dtype, static_cast<std::size_t>(n_), -1.0, 1.0, ctx.seed());
      mask_ = Buffer(ctx, static_cast<std::size_t>(n_));
    }
    own_state_.seed = ctx.seed() ^ 0x9e3779b97f4a7c15ull;
  }
  ~RandomWorkload() override {
    if (gen_ != nullptr) curandDestroyGenerator(gen_);
  }

  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    ProviderInfo base;
    base.name = "curand";
    base.role = Role::baseline;
    base.label = "cuRAND Philox4_32_10 host API (fp32)";
    if (kind_ == Kind::dropout) {
      base.label += " + masking kernel";
    } else if (case_.dtype != DType::f32) {
      base.label += " + conversion kernel";
    }
    ProviderInfo cand;
    cand.name = "caliber";
    cand.role = Role::candidate;
    cand.label = "own Philox4x32-10, (seed, offset) as kernel arguments: capture-safe";
    if (kind_ == Kind::randn) {
      cand.label += "; Box-Muller sin/cos by sincospif (fast=0) or __sincosf (fast=1)";
    }
    // Tune-cache generation: 2 since ilp, waves and fast joined block.
    cand.version = std::to_string(2);
    cand.space = own_space();
    return {base, cand};
  }

  void prepare(std::size_t p, const Config& c) override {
    if (p == 0) {
      if (gen_ == nullptr) {
        CALIBER_CURAND_CHECK(curandCreateGenerator(&gen_, CURAND_RNG_PSEUDO_PHILOX4_32_10));
      }
      CALIBER_CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen_, ctx_.seed()));
      CALIBER_CURAND_CHECK(curandSetStream(gen_, s_));
      // cuRAND's normal generator produces pairs: round the scratch up to an even count.
      const bool direct = kind_ != Kind::dropout && case_.dtype == DType::f32 && n_ % 2 == 0;
      if (!direct) scratch_ = Buffer(ctx_, static_cast<std::size_t>(n_ + 1) * sizeof(float));
      return;
    }
    block_ = rowwise::block_of(c);
    // Absent keys (a config tuned before they existed) mean the original schedule.
    ilp_ = static_cast<int>(c.get("ilp", 1));
    waves_ = static_cast<int>(c.get("waves", 2));
    const std::int64_t fast = c.get("fast", 0);
    if (ilp_ != 1 && ilp_ != 2 && ilp_ != 4) {
      throw ConfigRejected("philox_kernel: ilp=" + std::to_string(ilp_) + " is not 1, 2 or 4");
    }
    if (waves_ < 0) throw ConfigRejected("philox_kernel: waves must be 0 (no cap) or positive");
    if (fast != 0 && fast != 1) throw ConfigRejected("philox_kernel: fast must be 0 or 1");
    if (fast != 0 && kind_ != Kind::randn) {
      throw ConfigRejected("philox_kernel: fast applies to randn only");
    }
    fast_ = fast != 0;
    // 16-byte accesses of y (and x), 8-byte mask stores: the buffers come from the device
    // allocator, so this only guards against a future sub-allocation.
    if (!aligned_to(y_.get(), 16) ||
        (kind_ == Kind::dropout && (!aligned_to(x_.get(), 16) || !aligned_to(mask_.get(), 8)))) {
      throw ConfigRejected("philox_kernel: buffers not aligned for vector accesses");
    }
    grid_ = own_grid();
    // Every index of the launch (the last grid-stride step's overshoot included) in 32 bits?
    const std::uint64_t span = static_cast<std::uint64_t>(grid_) * block_ * ilp_;
    idx32_ = (static_cast<std::uint64_t>(philox::counters_for(static_cast<std::uint64_t>(n_))) +
              span) * 4 +
                 64 <
             (std::uint64_t{1} << 32);
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      with_own_kernel<T>(
          [&](auto kernel) { require_launchable(kernel, block_, 0, "philox_kernel"); });
    });
  }

  void launch(std::size_t p) override {
    if (p == 0) {
      launch_curand();
      return;
    }
    GeneratorState* g = ctx_.default_generator();
    GeneratorState& st = g != nullptr ? *g : own_state_;
    const std::uint64_t seed = st.seed;
    const std::uint64_t offset = st.advance(philox::counters_for(static_cast<std::uint64_t>(n_)));
    launch_own(seed, offset);
  }

  [[nodiscard]] Accuracy check(std::size_t p) override {
    const std::size_t out_bytes = y_.bytes();
    check::poison(ctx_, y_.get(), out_bytes);
    if (mask_.get() != nullptr) check::poison(ctx_, mask_.get(), mask_.bytes());
    // Determinism: the same seed and offset twice must give identical bits.
    std::uint64_t seed = 0, offset = 0;
    if (p == 0) {
      CALIBER_CURAND_CHECK(curandSetGeneratorOffset(gen_, 0));
      launch_curand();
    } else {
      GeneratorState* g = ctx_.default_generator();
      GeneratorState& st = g != nullptr ? *g : own_state_;
      seed = st.seed;
      offset = st.advance(philox::counters_for(static_cast<std::uint64_t>(n_)));
      launch_own(seed, offset);
    }
    sync(s_);
    Accuracy a = statistics(p);
    const std::size_t probe = std::min<std::size_t>(out_bytes, 1 << 20);
    std::vector<unsigned char> first(probe), second(probe);
    CALIBER_CUDA_CHECK(cudaMemcpy(first.data(), y_.get(), probe, cudaMemcpyDeviceToHost));
    check::poison(ctx_, y_.get(), out_bytes);
    if (p == 0) {
      CALIBER_CURAND_CHECK(curandSetGeneratorOffset(gen_, 0));
      launch_curand();
    } else {
      launch_own(seed, offset);
    }
    sync(s_);
    CALIBER_CUDA_CHECK(cudaMemcpy(second.data(), y_.get(), probe, cudaMemcpyDeviceToHost));
    const bool same = std::memcmp(first.data(), second.data(), probe) == 0;
    a.detail += same ? "; deterministic under one seed and offset"
                     : "; NOT deterministic under one seed and offset";
    if (!same) a.passed = false;
    if (p == 1 && kind_ == Kind::rand && case_.dtype == DType::f32) {
      // The own generator is bit-exact against the host Philox for fp32 uniforms.
      std::vector<float> got(std::min<std::int64_t>(n_, 4096));
      std::memcpy(got.data(), first.data(), std::min(probe, got.size() * sizeof(float)));
      std::size_t mism = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const auto r = philox::draw(seed, offset, i / 4);
        if (got[i] != std::min(philox::to_unit(r.v[i % 4]), 1.f - 0x1p-24f)) ++mism;
      }
      a.detail += "; " + std::to_string(mism) + " of the first " + std::to_string(got.size()) +
                  " values differ from the host Philox";
      if (mism > 0) a.passed = false;
    }
    return a;
  }

  [[nodiscard]] double bytes() const override {
    const double es = static_cast<double>(size_of(case_.dtype));
    const double n = static_cast<double>(n_);
    return kind_ == Kind::dropout ? n * (2 * es + 1) : n * es;
  }

 private:
  void launch_curand() {
    const bool direct = scratch_.get() == nullptr;
    float* u = direct ? y_.as<float>() : scratch_.as<float>();
    const auto count = static_cast<std::size_t>(n_ + (n_ % 2));
    if (kind_ == Kind::randn) {
      CALIBER_CURAND_CHECK(curandGenerateNormal(gen_, u, count, 0.f, 1.f));
    } else {
      CALIBER_CURAND_CHECK(
          curandGenerateUniform(gen_, u, direct ? static_cast<std::size_t>(n_) : count));
    }
    if (direct) return;
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      const unsigned grid = grid_for(n_, 256, ctx_.props());
      if (kind_ == Kind::dropout) {
        from_curand_kernel<Kind::dropout, T>
            <<<grid, 256, 0, s_>>>(u, y_.as<T>(), mask_.as<unsigned char>(), x_.as<const T>(), n_);
      } else {
        from_curand_kernel<Kind::rand, T>
            <<<grid, 256, 0, s_>>>(u, y_.as<T>(), nullptr, nullptr, n_);
      }
      CALIBER_LAUNCH_CHECK("from_curand_kernel");
    });
  }

  // The candidate's launch space: block x ilp (groups per thread per iteration) x waves (grid cap
  // in resident waves of blocks, 0 = one iteration per thread) x, for randn, fast (sin/cos). The
  // original schedule is block=256,ilp=1,waves=2 (fast=0).
  [[nodiscard]] ConfigSpace own_space() const {
    ConfigSpace s;
    const bool normal = kind_ == Kind::randn;
    for (std::int64_t block : {128, 256, 512}) {
      for (std::int64_t ilp : {1, 2, 4}) {
        for (std::int64_t waves : {1, 2, 8, 0}) {
          Config c{{{"block", block}, {"ilp", ilp}, {"waves", waves}}};
          if (!normal) {
            s.configs.push_back(c);
            continue;
          }
          for (std::int64_t fast : {0, 1}) {
            Config f = c;
            f.values.emplace_back("fast", fast);
            s.configs.push_back(f);
          }
        }
      }
    }
    s.default_config = Config{{{"block", 256}, {"ilp", 2}, {"waves", 2}}};
    if (normal) s.default_config.values.emplace_back("fast", 1);
    s.key = rowwise::block_space(rowwise::RowShape{1, n_}).key;
    return s;
  }

  // Blocks of the launch: capped at waves_ resident waves (grid-stride loop), or enough for every
  // group at ilp_ groups per thread (waves_ = 0).
  [[nodiscard]] unsigned own_grid() const {
    const std::int64_t per_block = static_cast<std::int64_t>(block_) * ilp_;
    const std::int64_t groups = ceil_div(n_, 4);
    if (waves_ == 0) {
      return static_cast<unsigned>(
          std::clamp<std::int64_t>(ceil_div(groups, per_block), 1, std::int64_t{2147483647}));
    }
    return grid_for(groups, per_block, ctx_.props(), waves_, std::max(1, 2048 / block_));
  }

  // Calls f(kernel) with the philox_kernel instance of this case and the prepared config.
  template <class T, class F>
  void with_own_kernel(F&& f) const {
    auto by_ilp = [&]<Kind K, class I>() {
      switch (ilp_) {
        case 1:
          return f(philox_kernel<K, T, 1, I>);
        case 2:
          return f(philox_kernel<K, T, 2, I>);
        default:
          return f(philox_kernel<K, T, 4, I>);
      }
    };
    auto by_index = [&]<Kind K>() {
      if (idx32_) {
        by_ilp.template operator()<K, unsigned>();
      } else {
        by_ilp.template operator()<K, long long>();
      }
    };
    switch (kind_) {
      case Kind::rand:
        by_index.template operator()<Kind::rand>();
        break;
      case Kind::randn:
        by_index.template operator()<Kind::randn>();
        break;
      case Kind::dropout:
        by_index.template operator()<Kind::dropout>();
        break;
    }
  }

  void launch_own(std::uint64_t seed, std::uint64_t offset) {
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* y = y_.as<T>();
      auto* m = kind_ == Kind::dropout ? mask_.as<unsigned char>() : nullptr;
      const T* x = kind_ == Kind::dropout ? x_.as<const T>() : nullptr;
      with_own_kernel<T>(
          [&]<class I>(void (*kernel)(T*, unsigned char*, const T*, I, unsigned long long,
                                      unsigned long long, bool)) {
            kernel<<<grid_, block_, 0, s_>>>(y, m, x, static_cast<I>(n_), seed, offset, fast_);
          });
      CALIBER_LAUNCH_CHECK("philox_kernel");
    });
  }

  // Every element finite and in range; mean and variance over all of it; a Kolmogorov-Smirnov
  // distance on a strided sample; dropout's keep rate and the exact scaling of kept values. The
  // pass over all n elements runs on the device (per-block partials in double, summed here in
  // block order, so the result is deterministic); only the partials and the strided sample
  // cross to the host.
  [[nodiscard]] Accuracy statistics(std::size_t p) {
    const std::int64_t want = std::min<std::int64_t>(n_, 1 << 16);
    const std::int64_t stride = std::max<std::int64_t>(1, n_ / want);
    const unsigned grid = grid_for(n_, kStatsBlock, ctx_.props(), 1, 2048 / kStatsBlock);
    if (partial_.get() == nullptr) {
      partial_ = Buffer(ctx_, static_cast<std::size_t>(grid) * sizeof(StatsAcc));
    }
    // Strided indices 0, stride, 2 * stride, ... below n (fewer than 2 * want of them).
    std::vector<std::int64_t> strided;
    if (kind_ != Kind::dropout) {
      for (std::int64_t i = 0; i < n_; i += stride) strided.push_back(i);
    }
    std::vector<double> got;  // the values there, gathered on the device
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      auto* part = partial_.as<StatsAcc>();
      switch (kind_) {
        case Kind::rand:
          stats_kernel<Kind::rand, T>
              <<<grid, kStatsBlock, 0, s_>>>(y_.as<const T>(), nullptr, nullptr, n_, part);
          break;
        case Kind::randn:
          stats_kernel<Kind::randn, T>
              <<<grid, kStatsBlock, 0, s_>>>(y_.as<const T>(), nullptr, nullptr, n_, part);
          break;
        case Kind::dropout:
          stats_kernel<Kind::dropout, T><<<grid, kStatsBlock, 0, s_>>>(
              y_.as<const T>(), mask_.as<const unsigned char>(), x_.as<const T>(), n_, part);
          break;
      }
      CALIBER_LAUNCH_CHECK("stats_kernel");
      got = gather_to_host(ctx_, y_.as<const T>(), strided);
    });
    std::vector<StatsAcc> parts(grid);
    CALIBER_CUDA_CHECK(cudaMemcpyAsync(
        parts.data(), partial_.get(), parts.size() * sizeof(StatsAcc), cudaMemcpyDeviceToHost, s_));
    sync(s_);  // partials are a raw struct: copied here, not through check::download
    double sum = 0, sum2 = 0;
    std::uint64_t bad = 0, kept = 0;
    for (const StatsAcc& q : parts) {
      sum += q.sum;
      sum2 += q.sum2;
      bad += q.count;
      kept += q.kept;
    }
    const std::uint64_t out_of_range = bad, bad_scale = bad;
    // The first `want` finite, in-range values at the strided indices, in index order.
    std::vector<double> sample;
    sample.reserve(static_cast<std::size_t>(want));
    for (const double v : got) {
      if (static_cast<std::int64_t>(sample.size()) >= want) break;
      const bool ok = std::isfinite(v) && (kind_ == Kind::randn || (v >= 0.0 && v <= 1.0));
      if (ok) sample.push_back(v);
    }
    std::string what = std::string(kind_name(kind_)) + " (" + (p == 0 ? "cuRAND" : "own Philox") +
                       "), all " + std::to_string(n_) + " elements: ";
    if (kind_ == Kind::dropout) {
      return check::check_keep_rate(kept, static_cast<std::uint64_t>(n_), 1.0 - kDropP, bad_scale,
                                    what);
    }
    return check::check_distribution(kind_ == Kind::randn ? check::Distribution::standard_normal
                                                          : check::Distribution::uniform01,
                                     sum, sum2, static_cast<std::uint64_t>(n_), out_of_range,
                                     std::move(sample), case_.dtype, what);
  }

  DeviceContext& ctx_;
  Case case_;
  Kind kind_;
  std::int64_t n_;
  cudaStream_t s_;
  Buffer y_, x_, mask_, scratch_;
  Buffer partial_;  // statistics(): per-block partials
  curandGenerator_t gen_ = nullptr;
  GeneratorState own_state_;  // where the backend has no default generator
  int block_ = 256;
  int ilp_ = 1;
  int waves_ = 2;
  bool fast_ = false;
  bool idx32_ = false;
  unsigned grid_ = 1;
};

class RandomOp : public Op {
 public:
  explicit RandomOp(Kind k) : kind_(k) {}
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = kind_name(kind_);
    i.family = "random";
    i.dtypes = {DType::f32, DType::f16, DType::bf16};
    i.rng = true;
    i.description = kind_ == Kind::rand    ? "uniform [0, 1)"
                    : kind_ == Kind::randn ? "standard normal"
                                           : "dropout p=0.5 with keep mask";
    return i;
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    const auto n = static_cast<std::size_t>(std::max<std::int64_t>(c.numel(), 1));
    return n * size_of(c.dtype) * 2 + n * 5 + (std::size_t{16} << 20);
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    return std::make_unique<RandomWorkload>(ctx, c, kind_);
  }

 private:
  Kind kind_;
};

struct RandOp final : RandomOp {
  RandOp() : RandomOp(Kind::rand) {}
};
struct RandnOp final : RandomOp {
  RandnOp() : RandomOp(Kind::randn) {}
};
struct DropoutOp final : RandomOp {
  DropoutOp() : RandomOp(Kind::dropout) {}
};

}  // namespace
}  // namespace caliber::ops::cuda::random

CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::random::RandOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::random::RandnOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::random::DropoutOp);
