// topk: see sort_common.cuh (baseline CUB radix sort, candidate own block radix sort per row).
// One op per file so the heavy CUB instantiations compile in parallel.
#include "sort/sort_common.cuh"

namespace caliber::ops::cuda::sort {
namespace {
using TopkOp = SortOp<Mode::topk>;
}  // namespace
}  // namespace caliber::ops::cuda::sort

CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::sort::TopkOp);
