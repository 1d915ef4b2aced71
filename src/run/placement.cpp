// The placement crossover's memory (docs/ab.md, "Placement crossover").
#include "run/placement.hpp"

namespace caliber::run {

// Side s's view of the device: everything forwarded, alloc and free through the pool.
class PlacementPool::Side : public DeviceContext {
 public:
  Side(PlacementPool& pool, DeviceContext& dev, int s) : pool_(pool), dev_(dev), s_(s) {}
  [[nodiscard]] std::string_view backend() const override { return dev_.backend(); }
  [[nodiscard]] const DeviceProps& props() const override { return dev_.props(); }
  [[nodiscard]] void* stream() const override { return dev_.stream(); }
  [[nodiscard]] void* alloc(std::size_t bytes) override { return pool_.alloc(s_, bytes); }
  void free(void* p) noexcept override { pool_.free(s_, p); }
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
  for (const Block& b : blocks_) dev_.free(b.p);
}

DeviceContext& PlacementPool::side(int s) {
  return *sides_[s & 1];
}

void PlacementPool::cross() {
  crossed_ = true;
  for (Block& b : blocks_) {
    if (b.in_use) mismatch_ = true;  // a block a workload never gave back stays where it is
    b.owner = b.in_use ? b.owner : -1;
  }
  next_[0] = next_[1] = 0;
}

std::size_t PlacementPool::blocks(int s) const {
  return first_[s & 1].size();
}

bool PlacementPool::crossed_all() const {
  return crossed_ && !mismatch_ && next_[0] == first_[1].size() && next_[1] == first_[0].size();
}

void* PlacementPool::alloc(int s, std::size_t bytes) {
  s &= 1;
  // A block this side holds and gave back, of this size: reused in either phase, so that an
  // alloc-free-alloc sequence maps the same way in both.
  for (Block& b : blocks_)
    if (b.owner == s && !b.in_use && b.bytes == bytes) {
      b.in_use = true;
      return b.p;
    }
  if (crossed_) {
    const std::vector<std::size_t>& donor = first_[1 - s];
    if (next_[s] < donor.size()) {
      Block& b = blocks_[donor[next_[s]]];
      if (b.owner == -1 && !b.in_use && b.bytes == bytes) {
        ++next_[s];
        b.owner = s;
        b.in_use = true;
        return b.p;
      }
    }
    mismatch_ = true;  // a size the other side did not allocate here: a fresh block
  }
  void* p = dev_.alloc(bytes);
  blocks_.push_back(Block{p, bytes, s, true});
  if (!crossed_) first_[s].push_back(blocks_.size() - 1);
  return p;
}

void PlacementPool::free(int s, void* p) noexcept {
  (void)s;
  for (Block& b : blocks_)
    if (b.p == p) {
      b.in_use = false;
      return;
    }
  dev_.free(p);  // not the pool's (cannot happen through Buffer): hand it back
}

}  // namespace caliber::run
