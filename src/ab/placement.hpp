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
  // Allocations go to `dev`; what is held goes back to it when the pool ends.
  explicit PlacementPool(DeviceContext& dev);
  ~PlacementPool();
  PlacementPool(const PlacementPool&) = delete;
  PlacementPool& operator=(const PlacementPool&) = delete;

  // What side 0 (A) or 1 (B) sets its workload up on: the device, with alloc/free through the
  // pool.
  [[nodiscard]] DeviceContext& side(int s);

  // The first phase ends: what the workloads free from now on stays in the pool (their buffers;
  // a temporary freed before this went back to the device at once).
  void hold();
  // The second phase starts (after hold() and after both workloads are gone): side s's new
  // allocation of n bytes takes the other side's first untaken block of n bytes, in the order the
  // other side made them.
  void cross();

  // Blocks a side holds from the first phase.
  [[nodiscard]] std::size_t blocks(int s) const;
  // Whether the second phase so far took only the other side's blocks, and all of them.
  [[nodiscard]] bool crossed_all() const;

  // How a side's allocation is served; public for the side contexts.
  void* alloc(int s, std::size_t bytes);
  void free(void* p) noexcept;

 private:
  struct Block {
    void* p = nullptr;  // nullptr: given back to the device
    std::size_t bytes = 0;
    int maker = 0;  // the side that made it
    int owner = 0;  // the side that holds it in this phase; -1: untaken in the second phase
    bool in_use = true;
    bool fresh = false;  // made in the second phase (no block of the other side fitted)
  };
  class Side;
  DeviceContext& dev_;
  std::vector<Block> blocks_;  // every block, in the order it was made
  bool holding_ = false;
  bool crossed_ = false;
  bool mismatch_ = false;
  std::size_t taken_[2] = {0, 0};
  std::unique_ptr<Side> sides_[2];
};

}  // namespace caliber::run
