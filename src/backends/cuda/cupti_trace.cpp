#include "backends/cuda/cupti_trace.hpp"

#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace caliber::backends::cuda {

// The CUPTI entry points caliber uses, resolved from the library loaded at run time.
struct CuptiTrace::Api {
  decltype(&cuptiSubscribe) subscribe = nullptr;
  // CUPTI 12.8 and later: names the subscriber already there when it refuses (optional).
  decltype(&cuptiSubscribe_v2) subscribe_v2 = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
};

namespace {

constexpr std::size_t kBufferBytes = 4u << 20;
constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};

// What the buffer callbacks (CUPTI may call them from a thread of its own) hand to collect().
struct Inbox {
  std::mutex mu;
  std::vector<std::pair<std::uint32_t, TraceRecord>> records;  // device id, record
  std::vector<std::uint8_t*> free_buffers;  // reused: a forced flush per sample returns one
  CuptiTrace::Api* api = nullptr;
};

Inbox& inbox() {
  static Inbox box;
  return box;
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  Inbox& box = inbox();
  std::uint8_t* b = nullptr;
  {
    std::lock_guard<std::mutex> lock(box.mu);
    if (!box.free_buffers.empty()) {
      b = box.free_buffers.back();
      box.free_buffers.pop_back();
    }
  }
  if (b == nullptr) b = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *buffer = b;
  *size = b != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

// CALIBER_TRACE_DUMP=FILE appends every record CUPTI hands over (kind, start, end, device,
// correlation id, name) and each collect's boundary to FILE: a diagnosis aid for the records
// themselves (docs/timing.md, "Beside a profiler"), off unless set.
std::FILE* dump_file() {
  static std::FILE* f = [] {
    const char* p = std::getenv("CALIBER_TRACE_DUMP");
    return p != nullptr && *p != '\0' ? std::fopen(p, "a") : nullptr;
  }();
  return f;
}

bool own_kernel(const char* name) {
  return name != nullptr && std::strstr(name, kOwnKernelMarker) != nullptr;
}

void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                               std::size_t valid) {
  Inbox& box = inbox();
  std::vector<std::pair<std::uint32_t, TraceRecord>> got;
  CUpti_Activity* rec = nullptr;
  while (box.api != nullptr && valid > 0 &&
         box.api->next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    TraceRecord r;
    std::uint32_t device = 0;
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
        rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      r = {TraceRecord::Kind::kernel, k->start, k->end, own_kernel(k->name), k->graphId};
      device = k->deviceId;
      if (std::FILE* f = dump_file())
        std::fprintf(f, "kernel kind=%d start=%llu end=%llu dev=%u corr=%u graph=%llu name=%s\n",
                     static_cast<int>(rec->kind), static_cast<unsigned long long>(k->start),
                     static_cast<unsigned long long>(k->end), k->deviceId, k->correlationId,
                     static_cast<unsigned long long>(k->graphId), k->name ? k->name : "?");
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      r = {TraceRecord::Kind::memcpy, m->start, m->end, false, m->graphId};
      device = m->deviceId;
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      r = {TraceRecord::Kind::memset, m->start, m->end, false, m->graphId};
      device = m->deviceId;
    } else {
      continue;
    }
    got.emplace_back(device, r);
  }
  std::lock_guard<std::mutex> lock(box.mu);
  box.records.insert(box.records.end(), got.begin(), got.end());
  if (buffer != nullptr) box.free_buffers.push_back(buffer);
}

void CUPTIAPI no_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// A subscriber CUPTI names as one of NVIDIA's tools (the process runs under Nsight Systems,
// Nsight Compute, cuda-gdb or the compute sanitizer): always collecting, never shared.
bool vendor_tool(const std::string& name) {
  for (const char* t : {"Nsight", "nsys", "ncu", "cuda-gdb", "sanitizer", "memcheck"})
    if (name.find(t) != std::string::npos) return true;
  return false;
}

template <class F>
bool resolve(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}

}  // namespace

CuptiTrace& CuptiTrace::get() {
  static CuptiTrace t;
  return t;
}

bool CuptiTrace::load() {
  if (loaded_) return api_ != nullptr;
  loaded_ = true;
  std::vector<std::string> names;
  if (const char* v = std::getenv("CALIBER_CUPTI_LIB"); v != nullptr && *v != '\0') {
    names = {v};
  } else {
    names = {"libcupti.so.13", "libcupti.so", "/usr/local/cuda/lib64/libcupti.so.13",
             "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"};
  }
  void* lib = nullptr;
  for (const auto& n : names)
    if ((lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
  if (lib == nullptr) {
    load_error_ = "libcupti could not be loaded (tried";
    for (const auto& n : names) load_error_ += " " + n;
    load_error_ += ")";
    return false;
  }
  auto* a = new Api;
  const bool ok = resolve(lib, "cuptiSubscribe", a->subscribe) &&
                  resolve(lib, "cuptiUnsubscribe", a->unsubscribe) &&
                  resolve(lib, "cuptiActivityRegisterCallbacks", a->register_callbacks) &&
                  resolve(lib, "cuptiActivityEnable", a->enable) &&
                  resolve(lib, "cuptiActivityDisable", a->disable) &&
                  resolve(lib, "cuptiActivityFlushAll", a->flush_all) &&
                  resolve(lib, "cuptiActivityGetNextRecord", a->next_record) &&
                  resolve(lib, "cuptiGetResultString", a->result_string);
  (void)resolve(lib, "cuptiSubscribe_v2", a->subscribe_v2);
  if (!ok) {
    delete a;
    load_error_ = "libcupti lacks the activity API's entry points";
    return false;
  }
  api_ = a;
  inbox().api = a;
  return true;
}

TraceOpen CuptiTrace::open(int ordinal, const TraceShare& share) {
  if (open_) return {false, "a kernel trace is already open in this process", false};
  if (!load()) return {false, load_error_, false};
  auto why = [this](const char* what, CUptiResult r) {
    const char* s = nullptr;
    if (api_->result_string(r, &s) != CUPTI_SUCCESS || s == nullptr) s = "unknown CUPTI error";
    return std::string(what) + ": " + s + " (CUPTI " + std::to_string(static_cast<int>(r)) + ")";
  };
  CUpti_SubscriberHandle sub = nullptr;
  std::string other;  // the subscriber already there, as CUPTI names it (v2 only)
  CUptiResult sr = CUPTI_SUCCESS;
  if (api_->subscribe_v2 != nullptr) {
    char name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 64] = {};
    CUpti_SubscriberParams p{};
    p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    p.subscriberName = "caliber";
    p.oldSubscriberName = name;
    p.oldSubscriberSize = sizeof(name);
    sr = api_->subscribe_v2(&sub, no_callback, nullptr, &p);
    name[sizeof(name) - 1] = '\0';
    other = name;
  } else {
    sr = api_->subscribe(&sub, no_callback, nullptr);
  }
  bool beside = false;
  if (sr == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    const std::string named = other.empty() ? "" : " (CUPTI names it '" + other + "')";
    if (!share.beside_idle_subscriber || vendor_tool(other))
      return {
          false,
          "another CUPTI subscriber is active (a profiler: torch.profiler, nsys, ncu, ...)" + named,
          false};
    beside = true;  // the caller vouched for it as idle: open without a subscription
    sub = nullptr;
  } else if (sr != CUPTI_SUCCESS) {
    return {false, why("cuptiSubscribe", sr), false};
  }
  CUptiResult r = api_->register_callbacks(buffer_requested, buffer_completed);
  std::size_t enabled = 0;
  for (; r == CUPTI_SUCCESS && enabled < std::size(kKinds); ++enabled)
    r = api_->enable(kKinds[enabled]);
  if (r != CUPTI_SUCCESS) {
    for (std::size_t i = 0; i < enabled; ++i) (void)api_->disable(kKinds[i]);
    if (sub != nullptr) (void)api_->unsubscribe(sub);
    return {false, why("enabling CUPTI's activity records", r), false};
  }
  subscriber_ = sub;
  ordinal_ = ordinal;
  open_ = true;
  return {true, "", beside};
}

std::vector<TraceRecord> CuptiTrace::collect() {
  std::vector<TraceRecord> out;
  if (!open_) return out;
  (void)api_->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (std::FILE* f = dump_file()) {
    std::fprintf(f, "collect\n");
    std::fflush(f);
  }
  std::vector<std::pair<std::uint32_t, TraceRecord>> got;
  {
    Inbox& box = inbox();
    std::lock_guard<std::mutex> lock(box.mu);
    got.swap(box.records);
  }
  out.reserve(got.size());
  for (const auto& [device, r] : got)
    if (static_cast<int>(device) == ordinal_) out.push_back(r);
  std::stable_sort(out.begin(), out.end(), [](const TraceRecord& a, const TraceRecord& b) {
    return a.start_ns < b.start_ns;
  });
  return out;
}

void CuptiTrace::close() {
  if (!open_) return;
  (void)api_->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind k : kKinds) (void)api_->disable(k);
  if (subscriber_ != nullptr)
    (void)api_->unsubscribe(static_cast<CUpti_SubscriberHandle>(subscriber_));
  subscriber_ = nullptr;
  open_ = false;
  Inbox& box = inbox();
  std::lock_guard<std::mutex> lock(box.mu);
  box.records.clear();
}

}  // namespace caliber::backends::cuda
