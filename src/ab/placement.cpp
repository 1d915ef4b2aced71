// The placement crossover's memory (docs/ab.md, "Placement crossover").
#include "ab/placement.hpp"

namespace caliber::run {

// Side s's view of the device: everything forwarded, alloc and free through the pool.
class PlacementPool::Side : public DeviceContext {
 public:
  Side(PlacementPool& pool, DeviceContext& dev, int s) : pool_(pool), dev_(dev), s_(s) {}
  [[nodiscard]] std::string_view backend() const override { return dev_.backend(); }
  [[nodiscard]] const DeviceProps& props() const override { return dev_.props(); }
  [[nodiscard]] void* stream() const override { return dev_.stream(); }
  [[nodiscard]] void* alloc(std::size_t bytes) override { return pool_.alloc(s_, bytes); }
  void free(void* p) noexcept override { pool_.free(p); }
  void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind) override {
    dev_.copy(dst, src, bytes, kind);
  }
  void memset(void* p, int value, std::size_t bytes) override { dev_.memset(p, value, bytes); }
  void fill_uniform(void* p, DType t, std::size_t n, double lo, double hi,
                    std::uint64_t seed) override {
    dev_.fill_uniform(p, t, n, lo, hi, seed);
  }
  void synchronize() override { dev_.synchronize(); }
  [[nodiscard]] std::size_t free_bytes() const override { return dev_.free_bytes(); }
  [[nodiscard]] std::uint64_t seed() const override { return dev_.seed(); }
  [[nodiscard]] bool capturing() const override { return dev_.capturing(); }
  [[nodiscard]] GeneratorState* default_generator() noexcept override {
    return dev_.default_generator();
  }

 private:
  PlacementPool& pool_;
  DeviceContext& dev_;
  int s_;
};

PlacementPool::PlacementPool(DeviceContext& dev) : dev_(dev) {
  for (int s = 0; s < 2; ++s) sides_[s] = std::make_unique<Side>(*this, dev, s);
}

PlacementPool::~PlacementPool() {
  for (const Block& b : blocks_)
    if (b.p != nullptr) dev_.free(b.p);
}

DeviceContext& PlacementPool::side(int s) {
  return *sides_[s & 1];
}

void PlacementPool::hold() {
  holding_ = true;
}

void PlacementPool::cross() {
  holding_ = crossed_ = true;
  for (Block& b : blocks_) {
    if (b.p == nullptr) continue;
    if (b.in_use)
      mismatch_ = true;  // a block a workload never gave back stays where it is
    else
      b.owner = -1;
  }
}

std::size_t PlacementPool::blocks(int s) const {
  std::size_t n = 0;
  for (const Block& b : blocks_) n += b.p != nullptr && !b.fresh && b.maker == (s & 1) ? 1 : 0;
  return n;
}

bool PlacementPool::crossed_all() const {
  return crossed_ && !mismatch_ && taken_[0] == blocks(1) && taken_[1] == blocks(0);
}

void* PlacementPool::alloc(int s, std::size_t bytes) {
  s &= 1;
  if (crossed_) {
    // A block this side took and gave back, of this size (an alloc-free-alloc in the set-up).
    for (Block& b : blocks_)
      if (b.p != nullptr && b.owner == s && !b.in_use && b.bytes == bytes) {
        b.in_use = true;
        return b.p;
      }
    for (Block& b : blocks_)
      if (b.p != nullptr && !b.fresh && b.maker != s && b.owner == -1 && b.bytes == bytes) {
        b.owner = s;
        b.in_use = true;
        ++taken_[s];
        return b.p;
      }
    mismatch_ = true;  // no block of the other side's of this size: a fresh one
  }
  void* p = dev_.alloc(bytes);
  Block b;
  b.p = p;
  b.bytes = bytes;
  b.maker = b.owner = s;
  b.fresh = crossed_;
  blocks_.push_back(b);
  return p;
}

void PlacementPool::free(void* p) noexcept {
  for (Block& b : blocks_)
    if (b.p == p) {
      // Before hold(): a temporary of a set-up; in the second phase: a block no one will swap.
      if (!holding_ || b.fresh) {
        dev_.free(p);
        b.p = nullptr;
      } else {
        b.in_use = false;
      }
      return;
    }
  dev_.free(p);  // not the pool's (cannot happen through Buffer): hand it back
}

}  // namespace caliber::run
