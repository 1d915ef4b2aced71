// The memory of a paired case's two workloads, kept so that a second phase can set each side up
// in the other side's buffers: the placement crossover of a paired A/B (docs/ab.md). Two
// workloads of the same code, on the same data, can run 2-7% apart because of where their
// buffers landed in device memory; timing each side once in each side's memory cancels that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "caliber/context.hpp"

namespace caliber::run {

class PlacementPool {
 public:
  // Allocations go to `dev`; nothing is returned to it before the pool ends.
  explicit PlacementPool(DeviceContext& dev);
  ~PlacementPool();
  PlacementPool(const PlacementPool&) = delete;
  PlacementPool& operator=(const PlacementPool&) = delete;

  // What side 0 (A) or 1 (B) sets its workload up on: the device, with alloc/free through the
  // pool.
  [[nodiscard]] DeviceContext& side(int s);

  // Phase 2 starts: from now on, side s's k-th new block is the other side's k-th block of phase
  // 1 (when its size is the one asked for and it is free). Call after both workloads are gone.
  void cross();

  // Blocks a side allocated in phase 1.
  [[nodiscard]] std::size_t blocks(int s) const;
  // Whether every block of phase 2 so far was the other side's and both sides took all of them.
  [[nodiscard]] bool crossed_all() const;

  // How a side's allocation is served; public for the side contexts.
  void* alloc(int s, std::size_t bytes);
  void free(int s, void* p) noexcept;

 private:
  struct Block {
    void* p = nullptr;
    std::size_t bytes = 0;
    int owner = -1;  // the side that holds it in this phase; -1: none yet
    bool in_use = false;
  };
  class Side;
  DeviceContext& dev_;
  std::vector<Block> blocks_;          // every block, in the order it was made
  std::vector<std::size_t> first_[2];  // phase 1: indices of the blocks each side made
  std::size_t next_[2] = {0, 0};       // phase 2: the next donor block of the other side
  bool crossed_ = false;
  bool mismatch_ = false;
  std::unique_ptr<Side> sides_[2];
};

}  // namespace caliber::run
