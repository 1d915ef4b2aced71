#include "settings/knobs.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "caliber/check.hpp"
#include "caliber/dtype.hpp"
#include "settings/library_file.hpp"
#include "settings/shapes.hpp"

namespace caliber::core {

namespace {

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

[[noreturn]] void refuse(const std::string& name, const std::string& value,
                         const std::string& why) {
  const KnobSpec* spec = find_knob(name);
  if (spec != nullptr) throw KnobError(knob_message(*spec, value, why));
  throw KnobError(name + ": '" + value + "' " + why);
}

long long parse_int(const std::string& name, const std::string& value, long long lo, long long hi) {
  long long v = 0;
  const std::string t = trim(value);
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size())
    refuse(name, value, "is not an integer");
  if (v < lo || v > hi)
    refuse(name, value,
           "is out of range (" + std::to_string(lo) + " to " + std::to_string(hi) + ")");
  return v;
}

double parse_real(const std::string& name, const std::string& value, double lo, double hi,
                  bool lo_open = false) {
  const std::string t = trim(value);
  // Decimal only: strtod also reads hexadecimal (0x10 seconds), "inf" and "nan".
  if (t.find_first_not_of("0123456789.eE+-") != std::string::npos)
    refuse(name, value, "is not a number (decimal digits, '.', an exponent)");
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(t.c_str(), &end);
  // An underflow (1e-320) is a tiny number, not an error; an overflow (1e999) is.
  const bool underflow = errno == ERANGE && std::isfinite(v) && std::fabs(v) < 1.0;
  if (t.empty() || end != t.c_str() + t.size() || (errno != 0 && !underflow) || !std::isfinite(v))
    refuse(name, value, "is not a number");
  if (v < lo || v > hi || (lo_open && v == lo)) {
    std::ostringstream os;
    os << "is out of range (" << (lo_open ? "above " : "") << lo << " to " << hi << ")";
    refuse(name, value, os.str());
  }
  return v;
}

// True when `file` begins with the 16 bytes every SQLite database begins with.
bool starts_with_sqlite_header(const std::string& file) {
  static constexpr char kHeader[] = "SQLite format 3";  // and its terminating NUL: 16 bytes
  std::FILE* f = std::fopen(file.c_str(), "rbe");
  if (f == nullptr) return true;  // unreadable: the cache reports it, read-only, untouched
  char buf[sizeof kHeader] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf, f);
  std::fclose(f);
  return n == sizeof buf && std::memcmp(buf, kHeader, sizeof buf) == 0;
}

// A path or name knob given explicitly: empty is a mistake, not "unset" (which runs everything).
std::string not_empty(const std::string& name, const std::string& value) {
  std::string t = trim(value);
  if (t.empty()) refuse(name, value, "is empty");
  return t;
}

// One of E's words (settings/settings.hpp), surrounding blanks ignored.
template <class E>
E one_word(const std::string& name, const std::string& value) {
  if (const auto e = parse_word<E>(trim(value))) return *e;
  refuse(name, value, "is not allowed");
}

// Stays long: the knob table, one entry a knob (name, flag, env, default, help, parser) in --help's
// order; data, with no phases to split.
std::vector<KnobSpec> make_table() {
  std::vector<KnobSpec> t;
  auto add = [&](KnobSpec s) { t.push_back(std::move(s)); };
  // --- Selection: what runs, and where.
  add({"backend", "--backend", "ZL_BACKEND", "Selection", "auto",
       "auto, cuda, rocm, musa, ascend, cpu (or an alias: nvidia, amd, hip, mthreads, moore, npu, "
       "cann, huawei, host)",
       "Accelerator family. auto: the first of cuda, rocm, musa, ascend with a device, else cpu.",
       [](Knobs& k, const std::string& v) {
         std::string s = trim(v);
         std::transform(s.begin(), s.end(), s.begin(),
                        [](unsigned char c) { return std::tolower(c); });
         if (s.empty()) refuse("backend", v, "is empty");
         k.backend = s;
       }});
  add({"devices", "--devices", "", "Selection", "first device",
       "comma list of device indices as you see them (after your own visibility variable)",
       "Devices to use (alias --gpus). A run uses the first; batch and parallel warmup use all.",
       [](Knobs& k, const std::string& v) {
         k.devices.clear();
         for (const auto& item : split_list(v))
           k.devices.push_back(static_cast<int>(parse_int("devices", item, 0, 4095)));
         if (k.devices.empty()) refuse("devices", v, "names no device");
         auto sorted = k.devices;
         std::sort(sorted.begin(), sorted.end());
         if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
           refuse("devices", v, "names a device twice");
       }});
  add({"ops", "OP...", "OP", "Selection", "all ops",
       "op names (caliber list shows them), each at most 128 characters, at most 10000",
       "Ops to run (positional arguments, or OP as a comma or space separated list).",
       [](Knobs& k, const std::string& v) {
         k.ops = split_list(v);
         if (k.ops.size() > kMaxOps) refuse("ops", v, "names more than 10000 ops");
         for (const auto& op : k.ops)
           if (op.size() > kMaxNameChars)
             refuse("ops", op,
                    op.find("::") == std::string::npos
                        ? "is longer than 128 characters"
                        : "is longer than 128 characters; a pytest node id (--flaggems) that "
                          "long goes through --node (TEST_NODE), up to 1024 characters");
         // Given and empty ('' as an argument) is a mistake, not "every op".
         if (k.ops.empty()) refuse("ops", v, "names no op");
       }});
  add({"op_file", "--op-file", "OP_FILE", "Selection", "",
       "a readable file, one op per line, # comments", "Read the ops to run from a file.",
       [](Knobs& k, const std::string& v) { k.op_file = not_empty("op_file", v); }});
  add({"node", "--node", "TEST_NODE", "Selection", "",
       "a node id (mm[bf16-M4096-N4096-K4096]) or an op name; * and ? match any text and any "
       "one character (mm[bf16-*], *[f32-*]); at most 1024 characters. With --flaggems: a pytest "
       "node id (test_add.py::test_add, its file's path inside benchmark/ as pytest gives it)",
       "Run the cases whose node id matches (or one op), instead of OP/OP_FILE.",
       [](Knobs& k, const std::string& v) {
         k.node = not_empty("node", v);
         if (k.node.size() > 1024) refuse("node", v, "is longer than 1024 characters");
       }});
  add({"shape", "--shape", "", "Selection", "the shape file's",
       "DIMxDIM... of positive integers, as the shape file writes a shape (4096x4096; mm: "
       "MxNxK or BxMxNxK); repeat the flag or give a comma list",
       "Run the selected ops on these shapes instead of the shape file's.",
       [](Knobs& k, const std::string& v) {
         k.shapes.clear();
         for (const auto& item : split_list(v)) {
           std::vector<std::int64_t> shape;
           for (const auto& d : split_fields(item, 'x')) {
             const std::string t = trim(d);
             long long n = 0;
             auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
             if (t.empty() || ec != std::errc() || p != t.data() + t.size() || n < 1)
               refuse("shape", item, "is not a shape (positive integers joined by x)");
             shape.push_back(n);
           }
           if (shape.empty() || shape.size() > kMaxDims)  // a shape file's limit too
             refuse("shape", item, "is not a shape (1 to 16 dimensions joined by x)");
           if (std::find(k.shapes.begin(), k.shapes.end(), shape) == k.shapes.end())
             k.shapes.push_back(std::move(shape));
         }
         if (k.shapes.empty()) refuse("shape", v, "names no shape");
       }});
  add({"dtypes", "--dtypes", "", "Selection", "each op's own list",
       "f32, f16, bf16, f64, i32, i64, c64",
       "Restrict the dtypes (comma list; torch spellings like float16 are accepted).",
       [](Knobs& k, const std::string& v) {
         k.dtypes.clear();
         for (const auto& item : split_list(v)) {
           auto d = parse_dtype(item);
           if (!d) refuse("dtypes", item, "is not a dtype");
           k.dtypes.emplace_back(to_string(*d));
         }
         if (k.dtypes.empty()) refuse("dtypes", v, "names no dtype");
       }});
  add({"level", "--level", "BENCH_LEVEL", "Selection", "core", "core, comprehensive",
       "Shape level: core (each op's core list) or comprehensive (core plus the additions).",
       [](Knobs& k, const std::string& v) { k.level = one_word<Level>("level", v); }});
  add({"shape_mode", "--shape-mode", "SHAPE_MODE", "Selection", "file", "file, upstream",
       "file: caliber's shapes/; upstream: the provider library's own core shapes where it has "
       "them.",
       [](Knobs& k, const std::string& v) {
         k.shape_mode = one_word<ShapeMode>("shape_mode", v);
       }});
  add({"shapes_file", "--shapes", "", "Selection", "shapes/core.yaml (cpu: shapes/host/core.yaml)",
       "a readable shape YAML file of at most 16 MiB (100000 shapes a list, 1000000 in all, 16 "
       "dims a shape, includes 32 deep and 256 files; docs/limits.md)",
       "Use another shape file. A FlagGems run has no default: the file given overlays "
       "FlagGems' own shapes (--shape-mode file; docs/flaggems.md).",
       [](Knobs& k, const std::string& v) { k.shapes_file = not_empty("shapes_file", v); }});
  add({"ops_lib", "--ops-lib", "CALIBER_OPS_LIB", "Selection", "",
       "shared objects that register ops (comma list, or the flag repeated)",
       "Load op libraries (their ops join the corpus; docs/writing-ops.md). An op name already "
       "registered by the built-in corpus or another library is refused.",
       [](Knobs& k, const std::string& v) {
         k.ops_lib.clear();
         for (const auto& field : split_fields(v, ',')) {
           const std::string path = trim(field);
           if (path.empty()) refuse("ops_lib", v, "names an empty path");
           // A truncated library faults inside dlopen, a fifo blocks it: refused here, first.
           if (const auto why = shared_library_problem(path)) refuse("ops_lib", path, *why);
           k.ops_lib.emplace_back(path);
         }
       }});
  t.back().repeatable = true;
  add({"py_ops", "--py-ops", "", "Selection", "",
       "Python suite files (.py, existing; comma list, or the flag repeated)",
       "Run the ops of Python op suites (docs/python.md). run and list hand the command to "
       "Python (CALIBER_PYTHON, default python3 on PATH, with caliber's package); batch and ab "
       "pass it to their runs. Default ops: the suites' own.",
       [](Knobs& k, const std::string& v) {
         std::string joined;
         for (const auto& field : split_fields(v, ',')) {
           const std::string path = trim(field);
           if (path.empty()) refuse("py_ops", v, "names an empty path");
           struct stat st {};
           if (::stat(path.c_str(), &st) != 0) refuse("py_ops", path, "does not exist");
           if (!S_ISREG(st.st_mode)) refuse("py_ops", path, "is not a regular file");
           if (path.size() < 3 || path.compare(path.size() - 3, 3, ".py") != 0)
             refuse("py_ops", path, "is not a .py file");
           joined += (joined.empty() ? "" : ",") + path;
         }
         k.py_ops = joined;
       }});
  t.back().repeatable = true;
  add({"flaggems", "--flaggems", "", "Selection", "",
       "a FlagGems checkout (a directory with benchmark/conftest.py and benchmark/base.py)",
       "Run FlagGems' own benchmark suite (ROOT/benchmark/test_*.py) under pytest with caliber's "
       "timers: torch the baseline, gems the candidate (docs/flaggems.md). Positional arguments "
       "are ops (markers or test_<op>.py), test files or node ids.",
       [](Knobs& k, const std::string& v) {
         const std::string root = not_empty("flaggems", v);
         struct stat st {};
         if (::stat(root.c_str(), &st) != 0) refuse("flaggems", root, "does not exist");
         if (!S_ISDIR(st.st_mode)) refuse("flaggems", root, "is not a directory");
         for (const char* f : {"/benchmark/conftest.py", "/benchmark/base.py"})
           if (::stat((root + f).c_str(), &st) != 0 || !S_ISREG(st.st_mode))
             refuse("flaggems", root,
                    std::string("is not a FlagGems checkout (no ") + (f + 1) + ")");
         k.flaggems = root;
       }});
  add({"parallel", "--parallel", "", "Selection", "",
       "nothing: refused (use --parallel-warmup N, or caliber batch --flaggems)",
       "FlagGems' own --parallel, refused: it measures shards concurrently, so kernels share the "
       "device while timed, and names devices by bare indices past the visibility variable.",
       [](Knobs&, const std::string& v) {
         refuse("parallel", v,
                "is refused: FlagGems' --parallel times shapes on several devices at once "
                "(concurrent measurement) and sets CUDA_VISIBLE_DEVICES to a bare index");
       }});
  // --- Timing: how latencies are measured.
  add({"timer", "--timer", "", "Timing", "auto", "auto, graph, direct",
       "auto: graph where the backend's policy says so (cuda), direct elsewhere.",
       [](Knobs& k, const std::string& v) { k.timer = one_word<TimerKind>("timer", v); }});
  add({"sample_method", "--sample-method", "CALIBER_SAMPLE_METHOD", "Timing", "auto",
       "auto, trace, events",
       "auto: the device's own activity records (kernel trace) where the backend has them, else "
       "events; trace: the records (events, marked SAMPLE_METHOD_EVENTS_NO_TRACE, where they "
       "cannot be had); events: event pairs.",
       [](Knobs& k, const std::string& v) {
         k.sample_method = one_word<SampleMethod>("sample_method", v);
       }});
  add({"repeat", "--repeat", "ZL_DIRECT_REPEAT", "Timing", "1", "an integer from 1 to 1000",
       "Repeat the direct measurement N times and take the median of the call medians "
       "(direct runs and fallback rows; skipped with --quantiles or --return-mode all).",
       [](Knobs& k, const std::string& v) {
         k.repeat = static_cast<int>(parse_int("repeat", v, 1, 1000));
       }});
  add({"quantiles", "--quantiles", "", "Timing", "", "comma list of at most 100 numbers in [0, 1]",
       "Report these quantiles of the samples (repetition is then skipped).",
       [](Knobs& k, const std::string& v) {
         k.quantiles.clear();
         for (const auto& item : split_list(v))
           k.quantiles.push_back(parse_real("quantiles", item, 0, 1));
         if (k.quantiles.empty()) refuse("quantiles", v, "names no quantile");
         if (k.quantiles.size() > 100) refuse("quantiles", v, "names more than 100 quantiles");
       }});
  add({"return_mode", "--return-mode", "", "Timing", "median", "min, max, mean, median, all",
       "Which statistic of the samples is the latency (all keeps the sequence; repetition "
       "skipped).",
       [](Knobs& k, const std::string& v) {
         k.return_mode = one_word<ReturnMode>("return_mode", v);
       }});
  add({"l2", "--l2", "", "Timing", "cold", "cold, warm",
       "cold: evict the L2 before each sample (outside the timed region); warm: do not.",
       [](Knobs& k, const std::string& v) { k.l2 = one_word<L2Policy>("l2", v); }});
  add({"mode", "--mode", "", "Timing", "kernel", "kernel, cudagraph",
       "FlagGems' measurement mode (--flaggems): kernel times each launch between events of its "
       "own behind an L2 flush (do_bench's cold L2); cudagraph times replays of launches back "
       "to back with a warm L2 (do_bench_cudagraph). operator and wrapper (host wall clocks) "
       "are refused: the host cost of one eager call is on every row already.",
       [](Knobs& k, const std::string& v) {
         const std::string t = trim(v);
         if (t == "operator" || t == "wrapper")
           refuse("mode", v,
                  "is a host wall clock caliber does not time as a device time; every row "
                  "carries the host cost of one eager call (host_ms) instead");
         k.mode = one_word<MeasureMode>("mode", v);
       }});
  add({"min_samples", "--min-samples", "", "Timing", "10", "an integer from 1 to 100000",
       "Stopping rule: at least this many samples.", [](Knobs& k, const std::string& v) {
         k.min_samples = static_cast<int>(parse_int("min_samples", v, 1, 100000));
       }});
  add({"min_time", "--min-time", "", "Timing", "0.01", "seconds, 0 to 60, and less than --timeout",
       "Stopping rule: at least this much measured time.",
       [](Knobs& k, const std::string& v) { k.min_time_s = parse_real("min_time", v, 0, 60); }});
  add({"max_noise", "--max-noise", "", "Timing", "auto", "auto, or a fraction above 0, at most 1",
       "Stopping rule: stop once the relative noise (robust standard error of the median) is at "
       "most this. auto: 0.005 on a device, 0.02 on the cpu backend (docs/timing.md).",
       [](Knobs& k, const std::string& v) {
         k.max_noise = v == "auto" ? 0 : parse_real("max_noise", v, 0, 1, true);
       }});
  add({"timeout", "--timeout", "", "Timing", "1.0", "seconds above 0, at most 600",
       "Stopping rule: seconds of sampling per provider, counted from its first sample; warmup, "
       "settling and the case's other providers come on top (docs/timing.md). The row says which "
       "condition was missed.",
       [](Knobs& k, const std::string& v) {
         k.timeout_s = parse_real("timeout", v, 0, 600, true);
       }});
  add({"warmup", "--warmup", "", "Timing", "0.02", "seconds, 0 to 60",
       "Device-busy warmup before sampling, long enough for the SM clock to ramp from idle "
       "(docs/measurements.md).",
       [](Knobs& k, const std::string& v) { k.warmup_s = parse_real("warmup", v, 0, 60); }});
  add({"clock", "--clock", "CALIBER_CLOCK", "Timing", "sustained", "sustained, burst",
       "The clock regime every sample comes from. sustained: after the SM clock and board power "
       "settled under the work itself (0.1 s more per provider, up to 5 s for power-hungry "
       "kernels); burst: a rested device at its top clock (windows the power limit slows are "
       "dropped, the device rests). Runs of different regimes are not compared (docs/timing.md).",
       [](Knobs& k, const std::string& v) { k.clock = one_word<ClockRegime>("clock", v); }});
  add({"throttle_fraction", "--throttle-fraction", "", "Timing", "0.75",
       "a fraction above 0, at most 1",
       "Discard samples taken while the SM clock is below this fraction of its maximum, unless "
       "only the power limit holds it there (the work's own sustained speed: kept, marked "
       "CLOCK_POWER_CAPPED).",
       [](Knobs& k, const std::string& v) {
         k.throttle_fraction = parse_real("throttle_fraction", v, 0, 1, true);
       }});
  add({"capture_deny", "--capture-deny", "", "Timing", "the backend's built-in list",
       "comma list of at most 10000 ops, each at most 128 characters",
       "Ops never captured into a graph (their capture attempt is known to poison the context); "
       "each must be an op of the backend's corpus (a FlagGems run's names are FlagGems' own, "
       "unchecked).",
       [](Knobs& k, const std::string& v) {
         k.capture_deny = split_list(v);
         if (k.capture_deny.size() > kMaxOps)
           refuse("capture_deny", v, "names more than 10000 ops");
         for (const auto& op : k.capture_deny)
           if (op.size() > kMaxNameChars)
             refuse("capture_deny", op, "is longer than 128 characters");
       }});
  add({"peaks", "--peaks", "", "Timing", "on", "on, off, refresh",
       "The device's copy bandwidth, mm rate and timer floor (run_identity.json 'peaks'), so rows "
       "report percent of peak: measured once per device and timing policy and cached by device "
       "UUID under ~/.cache/caliber/peaks (on), measured again into the cache (refresh), or not "
       "at all (off).",
       [](Knobs& k, const std::string& v) {
         const PeaksMode w = one_word<PeaksMode>("peaks", v);
         k.peaks = w != PeaksMode::off;
         k.peaks_refresh = w == PeaksMode::refresh;
       }});
  add({"settle", "--settle", "", "Timing", "carry", "carry, each",
       "carry: a measurement keeps the clock regime the previous one left (at most 0.25 s "
       "before, 1 s for cool work) while the work's power class and clock hold, and settles again "
       "when they change "
       "(the row's settle: carried|settled); each: every measurement settles or rests on its own "
       "(docs/timing.md).",
       [](Knobs& k, const std::string& v) {
         k.settle_carry = one_word<SettleMode>("settle", v) == SettleMode::carry;
       }});
  // --- Autotune.
  add({"tune", "--tune", "", "Autotune", "live", "off, live, record, replay",
       "off: default configs; live: the shared cache, tuning missing keys; record: tune into this "
       "run's own tune.db (a FlagGems run: FlagGems' LibTuner into flaggems_tune.db); replay: "
       "only the configs recorded by --replay-from.",
       [](Knobs& k, const std::string& v) { k.tune = one_word<TuneMode>("tune", v); }});
  add({"replay_from", "--replay-from", "REPLAY_FROM", "Autotune", "",
       "a run directory that holds a tune.db (a FlagGems run's: a flaggems_tune.db)",
       "Replay the configs recorded by that run (implies --tune replay); with --tune record, "
       "resume its record: the run's own database starts as a copy of it and only the keys it "
       "lacks are tuned.",
       [](Knobs& k, const std::string& v) { k.replay_from = not_empty("replay_from", v); }});
  add({"tune_screen", "--tune-screen", "", "Autotune", "on", "on, off",
       "on: a sweep of 12 configs or more times each config briefly first and only the fastest "
       "quarter (at least 4) at the sweep's budget; off: every config at the sweep's budget "
       "(docs/timing.md).",
       [](Knobs& k, const std::string& v) {
         k.tune_screen = one_word<Switch>("tune_screen", v) == Switch::on;
       }});
  add({"parallel_warmup", "--parallel-warmup", "PARALLEL_WARMUP_GPUS", "Autotune", "unset",
       "an integer from 1 to the number of devices selected",
       "Shard the autotune sweep over N devices in child processes, then measure serially on one.",
       [](Knobs& k, const std::string& v) {
         k.parallel_warmup = static_cast<int>(parse_int("parallel_warmup", v, 1, 4096));
       }});
  add({"tune_compile_threads", "--tune-compile-threads", "", "Autotune", "0",
       "an integer from 0 to 256 (0 and 1: no compile ahead)",
       "FlagGems runs: before LibTuner sweeps a key, compile its configs N at a time (Triton's "
       "asynchronous compile) so the sweep times kernels compiled already; what is timed does not "
       "change (docs/flaggems.md).",
       [](Knobs& k, const std::string& v) {
         k.tune_compile_threads = static_cast<int>(parse_int("tune_compile_threads", v, 0, 256));
       }});
  add({"tune_cache", "--tune-cache", "CALIBER_TUNE_CACHE", "Autotune", "~/.cache/caliber/tune.db",
       "a regular file path (created if missing)", "The shared config cache used by --tune live.",
       [](Knobs& k, const std::string& v) {
         k.tune_cache = not_empty("tune_cache", v);
         // A run's recorded tune.db is that run's record (what --replay-from replays): live
         // tuning must not add to it.
         if (std::error_code ec;
             std::filesystem::path(k.tune_cache).filename() == "tune.db" &&
             std::filesystem::exists(std::filesystem::path(k.tune_cache).parent_path() / "run.log",
                                     ec))
           refuse("tune_cache", v,
                  "is the recorded tune.db of a run (its folder holds run.log); a record stays "
                  "as it was: replay it with --replay-from, or copy it to tune into");
         // SQLite would write <file>-journal / -wal next to a device such as /dev/null, and a
         // file that is no SQLite database would be set aside as corrupt: only a regular file
         // that is empty or starts with the SQLite header may be a tune cache.
         struct stat st {};
         if (::lstat(k.tune_cache.c_str(), &st) != 0) return;
         if (S_ISLNK(st.st_mode))
           refuse("tune_cache", v, "is a symbolic link; caliber never writes through one");
         if (!S_ISREG(st.st_mode)) refuse("tune_cache", v, "is not a regular file");
         if (st.st_size > 0 && !starts_with_sqlite_header(k.tune_cache))
           refuse("tune_cache", v,
                  "is not an SQLite database (its first bytes are not the SQLite header); "
                  "caliber neither moves nor replaces it");
       }});
  // --- Output.
  add({"out", "--out", "", "Output", "runs", "a directory (created if missing)",
       "Parent of run directories.", [](Knobs& k, const std::string& v) {
         if (trim(v).empty()) refuse("out", v, "is empty");
         k.out = trim(v);
       }});
  add({"name", "--name", "", "Output", "derived from the ops",
       "letters, digits, '.', '_' and '-', at most 128 characters",
       "Run directory name prefix (<out>/<name>-<YYYYmmdd-HHMMSS>).",
       [](Knobs& k, const std::string& v) {
         const std::string t = trim(v);
         if (t.empty() || t.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789._-") != std::string::npos)
           refuse("name", v, "is not allowed");
         if (t.size() > kMaxNameChars) refuse("name", v, "is longer than 128 characters");
         if (t.find_first_not_of('.') == std::string::npos)  // ".", "..": the name of a folder
           refuse("name", v, "is only dots; allowed: a name with a letter, digit, '_' or '-'");
         k.name = t;
       }});
  add({"profile", "--profile", "", "Timing", "off (--profile alone: 3)",
       "an integer from 1 to 1000 (launches per provider)",
       "Profile mode: launch each selected case and provider this many times inside a range "
       "named <node>/<provider> (NVTX on cuda, for ncu --nvtx and nsys), with no timing loop. "
       "The run is marked profile in run_identity.json and compare refuses it.",
       [](Knobs& k, const std::string& v) {
         k.profile = static_cast<int>(parse_int("profile", v, 1, 1000));
       }});
  add({"columns", "--columns", "", "Output",
       "op,dtype,shape,base_ms,cand_ms,speedup,speedup_ci,tflops,gbps,status",
       "a comma list of: op, dtype, shape, node, base_ms, cand_ms, speedup, speedup_ci, tflops, "
       "gbps, "
       "pct_peak_bw, pct_peak_flops, noise, samples, quantiles, stop, timer, markers, status",
       "Columns of the table printed at the end of a run (status shows a missed stopping rule "
       "as STOP_NOT_CONVERGED).",
       [](Knobs& k, const std::string& v) {
         k.columns.clear();
         for (const auto& item : split_list(v)) {
           const auto& all = run_table_columns();
           if (std::find(all.begin(), all.end(), item) == all.end())
             refuse("columns", item, "is not a column");
           if (std::find(k.columns.begin(), k.columns.end(), item) == k.columns.end())
             k.columns.push_back(item);
         }
         if (k.columns.empty()) refuse("columns", v, "names no column");
       }});
  // --- Environment only: no flag of run's; the first three keep the value as given (no refusal
  // here), check_threads is refused when bad.
  add({"python", "", "CALIBER_PYTHON", "Selection", "python3 on PATH",
       "a python3 with caliber's package (a path, or a name on PATH)",
       "The interpreter run and list hand --py-ops and --flaggems to (docs/python.md).",
       [](Knobs& k, const std::string& v) { k.python = v; }});
  add({"shapes_dir", "", "CALIBER_SHAPES_DIR", "Selection", "the installed share/caliber/shapes",
       "a directory holding core.yaml (and host/core.yaml)",
       "Where the default shape file is looked for first.",
       [](Knobs& k, const std::string& v) { k.shapes_dir = v; }});
  add({"scheduler", "", "CALIBER_SCHEDULER", "Selection", "local", "local, slurm",
       "batch's scheduler when --scheduler is not given (docs/cluster.md).",
       [](Knobs& k, const std::string& v) { k.scheduler = v; }});
  add({"check_threads", "", check::kCheckThreadsEnv, "Selection",
       "the host's threads, at most " + std::to_string(check::kMaxCheckThreads),
       "an integer from 1 to " + std::to_string(check::kCheckThreadsLimit),
       "Host threads of a correctness check: conversion, float64 reference, comparison "
       "(docs/writing-ops.md, \"The gate's cost\").",
       [](Knobs& k, const std::string& v) {
         k.check_threads = check::parse_check_threads(v);
         if (k.check_threads == 0)
           refuse("check_threads", v,
                  "is not an integer from 1 to " + std::to_string(check::kCheckThreadsLimit));
       }});
  add({"seed", "--seed", "CALIBER_SEED", "Output", "fresh per run",
       "an integer from 1 to 4611686018427387904 (2^62)",
       "Seed of the random inputs (recorded in run_identity.json).",
       [](Knobs& k, const std::string& v) {
         k.seed = static_cast<std::uint64_t>(parse_int("seed", v, 1, (1LL << 62)));
       }});
  return t;
}

}  // namespace

std::vector<std::string> split_fields(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = s.find(sep, start);
    out.emplace_back(s.substr(start, at == std::string_view::npos ? s.npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

const std::vector<KnobSpec>& knob_table() {
  static const std::vector<KnobSpec> table = make_table();
  return table;
}

const KnobSpec* find_knob(const std::string& name) {
  for (const auto& s : knob_table())
    if (s.name == name) return &s;
  return nullptr;
}

std::string knob_message(const KnobSpec& spec, const std::string& value, const std::string& why) {
  std::string who = spec.flag;
  if (!spec.env.empty()) who += who.empty() ? spec.env : " (" + spec.env + ")";
  // A hostile value (a 100 MB op name) is cut in the message: what was given is still clear.
  std::string shown;
  for (const unsigned char c : value.substr(0, kMaxEchoChars)) {
    if (c < 0x20 || c == 0x7f) {
      static constexpr char hex[] = "0123456789abcdef";
      shown += std::string("\\x") + hex[c >> 4] + hex[c & 15];
    } else {
      shown += static_cast<char>(c);
    }
  }
  if (value.size() > kMaxEchoChars) shown += "...(" + std::to_string(value.size()) + " bytes)";
  std::string msg = who + ": '" + shown + "' " + (why.empty() ? "is not allowed" : why);
  if (!spec.allowed.empty()) msg += "; allowed: " + spec.allowed;
  return msg;
}

std::optional<std::string> process_env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

Switch parse_switch(const std::string& flag, const std::string& value) {
  if (const auto s = parse_word<Switch>(value)) return *s;
  throw KnobError(flag + ": '" + value.substr(0, kMaxEchoChars) +
                  "' is not allowed; allowed: " + allowed_words<Switch>());
}

std::optional<std::string> knob_env(const std::string& name) {
  const KnobSpec* spec = find_knob(name);
  if (spec == nullptr || spec->env.empty()) return std::nullopt;
  auto v = process_env(spec->env);
  if (!v || trim(*v).empty()) return std::nullopt;
  return v;
}

const std::vector<std::string>& run_table_columns() {
  static const std::vector<std::string> cols = {
      "op",         "dtype",  "shape", "node",        "base_ms",        "cand_ms", "speedup",
      "speedup_ci", "tflops", "gbps",  "pct_peak_bw", "pct_peak_flops", "noise",   "samples",
      "quantiles",  "stop",   "timer", "markers",     "status"};
  return cols;
}

const std::vector<std::string>& default_run_table_columns() {
  static const std::vector<std::string> cols = {"op",      "dtype",   "shape",      "base_ms",
                                                "cand_ms", "speedup", "speedup_ci", "tflops",
                                                "gbps",    "status"};
  return cols;
}

Knobs resolve_knobs(const std::map<std::string, std::string>& flags,
                    const std::function<std::optional<std::string>(const std::string&)>& env) {
  for (const auto& [name, value] : flags)
    if (find_knob(name) == nullptr) throw KnobError("unknown knob '" + name + "'");
  Knobs k;
  bool tune_given = false;
  for (const auto& spec : knob_table()) {
    auto it = flags.find(spec.name);
    if (it != flags.end()) {
      // A newline or another control character in a value is a mistake (a path with a newline
      // once became two comma-separated items); every knob refuses it, here, once. --shape alone
      // takes line breaks: they separate the shapes of a repeated flag.
      const bool lines_ok = spec.name == "shape";
      if (std::any_of(it->second.begin(), it->second.end(), [&](unsigned char c) {
            return (c < 0x20 && c != '\t' && !(lines_ok && c == '\n')) || c == 0x7f;
          }))
        refuse(spec.name, it->second, "holds a newline or another control character");
      spec.apply(k, it->second);
      if (spec.name == "tune") tune_given = true;
      continue;
    }
    if (spec.env.empty()) continue;
    auto v = env(spec.env);
    // An empty environment variable counts as unset (PARALLEL_WARMUP_GPUS= is a silent no-op).
    if (v && !trim(*v).empty()) {
      if (std::any_of(v->begin(), v->end(),
                      [](unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }))
        refuse(spec.name, *v, "holds a newline or another control character");
      spec.apply(k, *v);
    }
  }
  // Cross-knob rules.
  if (!k.replay_from.empty() && !tune_given) k.tune = TuneMode::replay;
  if (k.tune == TuneMode::replay && k.replay_from.empty())
    throw KnobError(
        "--tune: 'replay' needs --replay-from DIR (or REPLAY_FROM): the run whose configs to "
        "replay");
  // With record, --replay-from resumes that run's record (README "Autotune"; docs/flaggems.md,
  // "A record longer than one sitting").
  if (k.tune != TuneMode::replay && k.tune != TuneMode::record && !k.replay_from.empty())
    throw KnobError("--replay-from: given with --tune " + std::string(to_string(k.tune)) +
                    "; allowed with --tune replay (replay its configs) or --tune record (resume "
                    "its record)");
  if (!k.node.empty() && (!k.ops.empty() || !k.op_file.empty()))
    throw KnobError("--node (TEST_NODE): give either a node id or ops (OP/--op-file), not both");
  if (k.parallel_warmup > 0 && k.tune == TuneMode::off)
    throw KnobError("--parallel-warmup (PARALLEL_WARMUP_GPUS): '" +
                    std::to_string(k.parallel_warmup) + "' needs tuning, but --tune is off");
  if (k.tune_compile_threads > 1) {
    const std::string given =
        "--tune-compile-threads: '" + std::to_string(k.tune_compile_threads) + "' compiles ";
    if (k.flaggems.empty())
      throw KnobError(given + "FlagGems' LibTuner configs ahead of a sweep; it needs --flaggems");
    if (k.tune == TuneMode::off || k.tune == TuneMode::replay)
      throw KnobError(given + "ahead of LibTuner's sweeps, and --tune " + to_string(k.tune) +
                      " sweeps nothing; allowed with --tune live or record");
  }
  if (flags.count("mode") && k.flaggems.empty())
    throw KnobError("--mode: '" + std::string(to_string(k.mode)) +
                    "' is FlagGems' measurement mode; it needs --flaggems");
  if (k.mode == MeasureMode::cudagraph) {
    // do_bench_cudagraph's regime: a warm L2 and replays of launches back to back.
    if (flags.count("l2") && k.l2 != L2Policy::warm)
      throw KnobError(
          "--mode: 'cudagraph' times with a warm L2; --l2 cold contradicts it "
          "(allowed: --mode kernel for a cold L2)");
    k.l2 = L2Policy::warm;
    k.per_launch = false;
  }
  check_min_time_fits(k);
  return k;
}

// docs/timing.md, Stopping.
void check_min_time_fits(const Knobs& k, const std::string& min_time_name,
                         const std::string& timeout_name) {
  if (k.min_time_s < k.timeout_s) return;
  const auto shortest = [](double v) {  // 0.01, not to_string's 0.010000
    std::ostringstream os;
    os << v;
    return os.str();
  };
  throw KnobError(min_time_name + ": '" + shortest(k.min_time_s) +
                  "' s of measured time cannot fit in " + timeout_name + " '" +
                  shortest(k.timeout_s) + "' s of sampling; give a " + min_time_name +
                  " below the " + timeout_name);
}

}  // namespace caliber::core
