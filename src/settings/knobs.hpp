// The knob table: every knob of a run in one place, with its flag, its environment spelling
// (the old runner's, kept exactly), its default, its validation and its help group.
// Precedence: flag > environment > default. A bad value throws KnobError naming the knob,
// the value and what is allowed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/stats.hpp"
#include "settings/settings.hpp"
#include "settings/usage_error.hpp"

namespace caliber::core {

// Ceilings of the knobs whose values size work or output (docs/limits.md); past one a knob is
// refused. The numeric knobs carry theirs in their ranges.
inline constexpr std::size_t kMaxOps = 10000;      // op names in OP / --capture-deny
inline constexpr std::size_t kMaxNameChars = 128;  // one op name, --name
inline constexpr std::size_t kMaxEchoChars = 200;  // of a refused value, in the message

class KnobError : public UsageError {
 public:
  using UsageError::UsageError;
};

// --backend's word for "the first backend with a device" (backends::resolve_backend).
inline constexpr const char* kAutoBackend = "auto";

// The validated values of one run (or batch) invocation.
struct Knobs {
  // selection
  std::string backend = kAutoBackend;
  std::vector<int> devices;  // as the caller sees them; empty: the first device
  std::vector<std::string> ops;
  std::string op_file;
  std::string node;                               // a node id or op name; * and ? are wildcards
  std::vector<std::vector<std::int64_t>> shapes;  // --shape: replace the shape file's shapes
  std::vector<std::string> dtypes;                // empty: each op's own list
  Level level = Level::core;
  ShapeMode shape_mode = ShapeMode::file;
  std::string shapes_file;
  std::vector<std::filesystem::path> ops_lib;  // op library paths, in load order
  std::string py_ops;    // comma list of Python suite files (docs/python.md; "" none)
  std::string flaggems;  // a FlagGems checkout whose benchmark suite runs (docs/flaggems.md)
  // timing
  TimerKind timer = TimerKind::automatic;
  SampleMethod sample_method = SampleMethod::automatic;
  int repeat = 1;
  std::vector<double> quantiles;
  ReturnMode return_mode = ReturnMode::median;
  L2Policy l2 = L2Policy::cold;
  // --mode (FlagGems' measurement mode, --flaggems only): kernel is per-launch events with a cold
  // L2 (do_bench), cudagraph back-to-back replays with a warm L2 (do_bench_cudagraph).
  MeasureMode mode = MeasureMode::kernel;
  bool per_launch = true;  // the graph timer's events around each launch (false: around a replay)
  int min_samples = 10;
  double min_time_s = 0.01;
  double max_noise = 0;  // 0: auto (the backend's default: 0.005 on devices, 0.02 on the host)
  double timeout_s = 1.0;
  double warmup_s = 0.02;
  double throttle_fraction = 0.75;
  ClockRegime clock = ClockRegime::sustained;  // the clock regime (docs/timing.md)
  std::vector<std::string> capture_deny;
  bool peaks = true;  // measure the copy bandwidth and the mm rate once per run
  // --peaks refresh: measure them again even where the device's peaks cache holds them
  bool peaks_refresh = false;
  // --settle carry (default): a measurement keeps the clock regime the previous one left while
  // its power class holds; each: every measurement settles (rests) on its own (docs/timing.md)
  bool settle_carry = true;
  bool tune_screen = true;  // a sweep's screening pass (tune::Screen)
  int profile = 0;  // --profile: launches per provider inside NVTX ranges, no timing; 0: off
  // autotune
  TuneMode tune = TuneMode::live;
  std::string replay_from;
  int parallel_warmup = 0;       // 0: unset
  int tune_compile_threads = 0;  // FlagGems: configs compiled ahead of a sweep, N at a time
  std::string tune_cache;        // shared cache path; empty: the default location
  // output
  std::string out = "runs";
  std::string name;        // run directory name prefix; empty: derived from the ops
  std::uint64_t seed = 0;  // 0: fresh per run
  bool quiet = false;
  std::vector<std::string> columns;  // of the table printed at the end; empty: the default
  // environment only (no flag of run's): the interpreter a Python hand-off starts, the first
  // place default shape files are looked for, and batch's scheduler when --scheduler is not given
  // (each empty: unset). Read where they are used; run and list do not refuse them.
  std::string python;
  std::string shapes_dir;
  std::string scheduler;
  // CALIBER_CHECK_THREADS, refused here when bad; the check helpers read the environment
  // themselves (caliber/check.hpp), so an op library sees it too. 0: unset.
  unsigned check_threads = 0;
};

// The columns the run's closing table can show (--columns), and the default set.
[[nodiscard]] const std::vector<std::string>& run_table_columns();
[[nodiscard]] const std::vector<std::string>& default_run_table_columns();

struct KnobSpec {
  std::string name;   // "level"
  std::string flag;   // "--level"; empty: an environment-only knob (no flag, not in --help)
  std::string env;    // "BENCH_LEVEL" or empty
  std::string group;  // "Selection", "Timing", "Autotune", "Output"
  std::string default_text;
  std::string allowed;  // "core, comprehensive"
  std::string help;
  // Parse and validate `value` into `k`; throws KnobError.
  std::function<void(Knobs& k, const std::string& value)> apply;
  // The flag may be given several times; its values join into one comma list (--ops-lib).
  bool repeatable = false;
};

// The whole table, in help order.
[[nodiscard]] const std::vector<KnobSpec>& knob_table();
[[nodiscard]] const KnobSpec* find_knob(const std::string& name);

// Build Knobs from explicit flag values (knob name -> raw value, only those given) and the
// environment (a lookup function, so tests need not touch the process environment).
// Positional ops are passed as the "ops" knob. Throws KnobError on the first bad value.
[[nodiscard]] Knobs resolve_knobs(
    const std::map<std::string, std::string>& flags,
    const std::function<std::optional<std::string>(const std::string&)>& env);
[[nodiscard]] std::optional<std::string> process_env(const std::string& name);
// The stopping rule's fit: a measurement that must sample longer than its timeout allows never
// meets its rule (every row would stop on the timeout). Throws KnobError naming the two as the
// caller spells them (--min-time/--timeout; min_time_s/timeout_s in Python).
void check_min_time_fits(const Knobs& k, const std::string& min_time_name = "--min-time",
                         const std::string& timeout_name = "--timeout");
// The value of knob `name`'s environment spelling in the process environment, nullopt when it is
// unset or empty: for a caller that runs before the knobs are resolved (the Python hand-off).
[[nodiscard]] std::optional<std::string> knob_env(const std::string& name);

// "a, b c" -> {"a","b","c"}: the list syntax of OP, --devices, --dtypes, op files.
[[nodiscard]] std::vector<std::string> split_list(const std::string& s);
// "a,,b" -> {"a","","b"}: every field between separators, empty ones kept, nothing trimmed
// (for callers that must see an empty field, or keep spaces).
[[nodiscard]] std::vector<std::string> split_fields(std::string_view s, char sep);

// A switch flag outside the knob table (run's internal --paired-crossover, ab's --crossover): "on"
// or "off", exactly; anything else throws KnobError naming the flag, the value and the words.
[[nodiscard]] Switch parse_switch(const std::string& flag, const std::string& value);

// The message format of every refusal: "caliber: --level: 'bogus' is not allowed (core,
// comprehensive)".
[[nodiscard]] std::string knob_message(const KnobSpec& spec, const std::string& value,
                                       const std::string& why = "");

}  // namespace caliber::core
