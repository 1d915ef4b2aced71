// The Backend interface: the only door through which anything above src/backends/ reaches a vendor.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "caliber/context.hpp"

namespace caliber::backends {

// The cluster size every device with thread-block clusters launches without opting in to more
// (CUDA's portable limit; sm_90 allows 16 only per kernel, by an attribute).
inline constexpr int kPortableMaxCluster = 8;

struct Capabilities {
  bool graph_capture = false;        // the device interface can capture and replay graphs
  bool graph_timer_default = false;  // --timer auto picks the graph timer
  bool clusters = false;             // thread-block clusters (cluster-fix stage applies)
  int max_cluster = 0;       // the largest cluster a launch may ask for where there are clusters
  bool default_rng = false;  // a default generator callers see (RNG capture guard applies)
  bool l2_known = false;     // the L2 size is known (cold-L2 flush can be sized)
  bool host = false;         // runs on the host (cpu): host clock, host memory
  // Events recorded during a capture become nodes of the graph whose timestamps a replay sets
  // (record_in_graph): the graph timer can then time each launch of a replay on its own.
  bool graph_event_nodes = false;
  // The stream can be held (hold_stream) so that what is enqueued meanwhile runs back to back.
  bool stream_hold = false;
  // The device can report its own activity records (trace_open ... trace_collect): the start and
  // end of every kernel, copy and memset, graph-launched ones included, on its own clock. Whether
  // a trace really opens is decided at run time (the tracer library, another subscriber).
  bool kernel_trace = false;
};

// One activity the device recorded while a trace was open (Device::trace_collect).
struct TraceRecord {
  enum class Kind { kernel, memcpy, memset };
  Kind kind = Kind::kernel;
  std::uint64_t start_ns = 0;  // the device's own timestamps
  std::uint64_t end_ns = 0;
  // The backend's own work (the L2 flush, the stream hold, a trace boundary): it separates the
  // timed launches in the records and is never part of one.
  bool own = false;
  // The graph whose replay ran it: nonzero for work of a graph launch, 0 for work launched
  // directly (and wherever the backend cannot tell). A graph replay's launcher may enqueue work
  // of its own before the graph (torch's RNG offsets, two fill kernels); split_launches leaves
  // that out of a replay's launches (docs/timing.md, "Work around a replay").
  std::uint64_t graph = 0;
};

// Whether a trace opened, and why not.
struct TraceOpen {
  bool ok = false;
  std::string why;  // when !ok: no tracer library, another activity subscriber active, ...
  // When ok: it opened beside another subscriber the caller vouched for as idle (TraceShare).
  bool beside_idle_subscriber = false;
};

// How a trace may open when the process already has another activity subscriber.
struct TraceShare {
  // The caller knows that subscriber is present but not collecting: a profiler that ran and
  // stopped keeps its subscription for the life of the process (torch.profiler's does), and no
  // trace could open after it otherwise. The trace then opens beside it with buffer callbacks of
  // its own, which the profiler registers over again when it next starts (docs/timing.md,
  // "Beside a profiler"). Never where the subscriber is a tool of the vendor's (a profiler or
  // debugger the process was started under): that one is always collecting.
  bool beside_idle_subscriber = false;
};

struct DeviceDesc {
  int index = 0;  // as the caller sees it (after the caller's visibility variable)
  std::string
      physical_id;  // what a child process is pinned to (index or UUID as the runtime sees it)
  std::string name;
  std::string uuid;
  std::uint64_t mem_total = 0;
  std::uint64_t mem_used = 0;
  std::string driver_version;
  std::string runtime_version;
  int sm_count = 0;
  std::uint64_t l2_bytes = 0;
  int sm_clock_mhz = 0;      // current, 0 when unknown
  int sm_clock_max_mhz = 0;  // 0 when unknown
  int mem_clock_mhz = 0;
  std::string compute_capability;
  std::map<std::string, std::string> extra;  // anything else worth recording (cores, notes)
};

// How an error from a vendor runtime is classified (docs/timing.md).
enum class Failure {
  ok,                // not an error
  refused_capture,   // the kernel refused capture: end capture, clear, fall back to direct
  fatal_on_device,   // the kernel is broken: the case fails, nothing more is timed in this process
  capture_poisoned,  // the capture attempt left the context unusable
  other,             // an ordinary error: the case fails, the process goes on
};
[[nodiscard]] const char* to_string(Failure f) noexcept;
// Whether a failure leaves the process's device context unusable: nothing more is timed in it.
[[nodiscard]] bool leaves_process_unusable(Failure f) noexcept;

// A compat rule lifts one op's skip for one exact reason, on its own backend only.
struct CompatRule {
  std::string op;      // a caliber op, or "flaggems:<file>" for a FlagGems benchmark file
  std::string reason;  // the exact skip reason it lifts
  std::string why;     // why the skip is wrong on this backend
};

struct ClockSample {
  int sm_mhz = 0;
  int sm_max_mhz = 0;
  std::uint64_t throttle_reasons = 0;  // vendor bit mask, 0 when none or unknown
  // The clock is held down only by the board's power limit, which the running work itself draws
  // against (a large GEMM on the H200 does): its sustained speed, not heat, a hardware slowdown
  // or an idle clock. The backend decodes its vendor's reasons into this.
  bool power_cap_only = false;
  double power_w = 0;        // board power now, 0 when unknown
  double power_limit_w = 0;  // the enforced power limit, 0 when unknown
  // Other processes with work on the device (not this one, nor its ancestors): their kernels
  // share the memory and the SMs with the timed ones (docs/timing.md, "Another process on the
  // device"). -1 when the backend cannot tell.
  int other_processes = -1;
  // The reasons the clock is held down, decoded into names the backend chooses ("power_cap",
  // "thermal", "idle", ...); empty when none or unknown.
  std::vector<std::string> reasons;
};

// A captured, instantiated graph of launches.
class Graph {
 public:
  virtual ~Graph() = default;
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  virtual void launch() = 0;  // on the device's stream
};

// An event pair's handle; opaque to the timers.
class Event {
 public:
  virtual ~Event() = default;
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

// The device interface the timers use, and the DeviceContext the ops see.
class Device : public caliber::DeviceContext {
 public:
  [[nodiscard]] virtual const DeviceDesc& desc() const = 0;
  [[nodiscard]] virtual Capabilities capabilities() const = 0;

  [[nodiscard]] virtual std::unique_ptr<Event> create_event() = 0;
  virtual void record(Event& e) = 0;  // on the device's stream
  // Milliseconds between two recorded events (synchronizes on `end`).
  [[nodiscard]] virtual double elapsed_ms(Event& start, Event& end) = 0;

  // Graph capture on the device's stream. end_capture returns the instantiated graph; it throws
  // NativeError when the capture was refused or failed. abort_capture ends a capture in progress,
  // discards it and clears the error state where the runtime allows it.
  virtual void begin_capture() = 0;
  [[nodiscard]] virtual std::unique_ptr<Graph> end_capture() = 0;
  virtual void abort_capture() noexcept = 0;

  // Inside a capture: an event-record node that each replay executes, so that elapsed_ms between
  // two such events reads the time between those two points of the replay. Backends without
  // such nodes (capabilities().graph_event_nodes false) record as usual.
  virtual void record_in_graph(Event& e) { record(e); }

  // Evict the last-level cache: read a persistent buffer larger than the L2, on the stream. A read
  // leaves clean lines behind, so the work that follows pays no write-back of the flush's own
  // data (docs/timing.md).
  virtual void flush_l2() = 0;
  // Hold the stream: the device waits here until release_stream(), so that what is enqueued
  // meanwhile (a flush, an event, the launch, an event) runs back to back, without the host's
  // launch gap inside the event pair. The hold gives up by itself after a bounded time (a launch
  // that synchronizes with the device would otherwise wait on it forever). Returns false where
  // the backend cannot hold (capabilities().stream_hold false).
  virtual bool hold_stream() { return false; }
  virtual void release_stream() {}
  // After the work behind the last hold has completed: did the hold give up before release_stream
  // (so that the launch gap is inside that sample after all)?
  [[nodiscard]] virtual bool hold_gave_up() { return false; }
  // Enqueue an empty kernel on the stream: what the timers read for it is their floor.
  virtual void launch_empty() {}
  // The resolution of elapsed_ms, in microseconds (0 when unknown).
  [[nodiscard]] virtual double timer_resolution_us() const { return 0; }
  // Kernel trace (capabilities().kernel_trace). trace_open starts collecting the device's activity
  // records, or says why it cannot; trace_collect returns, ordered by start, the records of the
  // work that completed since the last collect (call it after synchronizing on that work);
  // trace_close stops collecting and lets other subscribers (a profiler) in. trace_boundary
  // enqueues, or captures into a graph, a tiny activity of the backend's own (TraceRecord::own)
  // that separates two launches in the records where nothing else of the backend's does.
  [[nodiscard]] virtual TraceOpen trace_open(const TraceShare& /*share*/) {
    return {false, "this backend has no kernel trace", false};
  }
  [[nodiscard]] virtual std::vector<TraceRecord> trace_collect() { return {}; }
  virtual void trace_close() {}
  virtual void trace_boundary() {}
  // The unit of the records' timestamps, in microseconds (0 when unknown).
  [[nodiscard]] virtual double trace_resolution_us() const { return 0; }
  // The SM clock now, when the backend can read it.
  [[nodiscard]] virtual std::optional<ClockSample> clocks() = 0;
  // Is the context still usable? (after a capture attempt, a cheap probe launch)
  [[nodiscard]] virtual bool healthy() noexcept = 0;
  // The last error the runtime holds, cleared (0 when none).
  [[nodiscard]] virtual int take_last_error() noexcept = 0;

  // A named range around work, for the vendor's profilers (NVTX on cuda, so `ncu --nvtx` and
  // `nsys` can aim at one case: caliber run --profile). Nested ranges pair up. A backend without
  // such a tool leaves these as they are: nothing happens.
  virtual void range_push(const std::string& name) { (void)name; }
  virtual void range_pop() {}

  // How many seeds seed() has handed out, and a rewind to such a count: a paired A/B sets side
  // B's workload up from the seeds side A's used, so both sides time the same inputs
  // (docs/ab.md). A backend whose seed() repeats one value needs neither.
  [[nodiscard]] virtual std::uint64_t seeds_drawn() const noexcept { return 0; }
  virtual void rewind_seeds(std::uint64_t drawn) noexcept { (void)drawn; }

  // The RNG capture guard uses default_generator() (DeviceContext): saved before a capture and
  // restored after it; skipped where it is nullptr (capabilities().default_rng == false).
};

struct Availability {
  bool runtime_found = false;
  std::string looked_for;  // "libcudart.so (CUDA runtime)"
  std::string detail;      // what was found, or why not
};

class Backend {
 public:
  virtual ~Backend() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual std::vector<std::string> aliases() const = 0;
  // Visibility variables, in the order the runtime applies them (ROCr before HIP).
  [[nodiscard]] virtual std::vector<std::string> visibility_vars() const = 0;
  [[nodiscard]] virtual Capabilities capabilities() const = 0;
  [[nodiscard]] virtual Availability availability() const = 0;
  // Devices as the caller sees them (after the caller's own visibility variable).
  [[nodiscard]] virtual std::vector<DeviceDesc> enumerate() const = 0;
  [[nodiscard]] virtual std::unique_ptr<Device> open(int visible_index,
                                                     std::uint64_t seed) const = 0;
  [[nodiscard]] virtual Failure classify(int native_code) const = 0;
  [[nodiscard]] virtual std::vector<CompatRule> compat_rules() const { return {}; }
  // Ops whose capture attempt is known to poison the context: never attempted.
  [[nodiscard]] virtual std::vector<std::string> capture_deny_ops() const { return {}; }
  // The environment a child process needs to run on the caller's visible device `index`
  // (pinned by its physical id, never by the bare index).
  [[nodiscard]] virtual std::map<std::string, std::string> child_env(int visible_index) const = 0;
  // Throws BackendUnavailable naming the backend, what was looked for and what is available.
  virtual void setup_guard() const;
};

class BackendUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Does a compat rule of `running` lift `op`'s skip for exactly this `reason`? Only the running
// backend's own rules count, and only on an exact match of op and reason (the case runner's
// admission; FlagGems' files are matched by the FlagGems plugin on the "flaggems:" rules).
[[nodiscard]] bool compat_lifts(const Backend& running, const std::string& op,
                                const std::string& reason);

}  // namespace caliber::backends
