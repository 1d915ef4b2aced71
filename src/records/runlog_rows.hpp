// The rows of run.log as types: the header, one CaseRow per case (with a ProviderRow per
// provider) and the footer. docs/run-log.md is the schema; this file is its one spelling in code.
// Every writer builds these structs and every reader reads them; the JSON keys appear only in
// the conversions (runlog_rows.cpp), one to_json and one from_json per struct.
//
// Reading is faithful: a field that is absent stays absent (std::optional), a key this caliber
// does not know, or a known key holding null, is kept in `extra` and written back as it was, so a
// row read from an older or newer run.log loses nothing on a round trip. A known key holding a
// value of the wrong type, or a missing required key, is a RowError naming the row, the key and
// what is allowed; read_run_log counts such a line as unreadable, like a line that is not JSON.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace caliber::core {

// A run.log row that cannot be read as its type.
class RowError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A field a writer may write as null: absent (nullopt), null (an empty inner optional), or a
// value. The case row's speedup and accuracy are null when there is nothing to compare.
template <class T>
using Nullable = std::optional<std::optional<T>>;

// A provider's "tune" object: how its launch config was chosen.
struct TuneChoice {
  std::optional<std::string> source;  // default, tuned, cache, replay, replay-missing
  std::optional<int> tried;
  std::optional<int> rejected;
  std::optional<double> sweep_s;
  std::optional<std::string> key;
  std::optional<std::string> note;
  std::optional<std::string> evicted;   // the config that failed at launch and was evicted
  std::optional<std::string> swept_by;  // who swept when not caliber ("triton")
  nlohmann::json extra = nlohmann::json::object();
};

// One object of a case row's "providers".
struct ProviderRow {
  std::string name;                  // required
  std::optional<std::string> role;   // candidate | baseline (core::role)
  std::optional<std::string> label;  // a display label
  // How it was prepared.
  std::optional<std::string> config;
  std::optional<TuneChoice> tune;
  std::optional<std::vector<std::string>> tune_markers;
  // The correctness check (candidates).
  std::optional<bool> accuracy;
  std::optional<std::string> accuracy_detail;
  std::optional<double> rel_err;
  std::optional<double> max_abs_err;
  std::optional<std::string> check_method;  // check::method spellings
  std::optional<double> check_coverage;     // compared elements / output elements
  std::optional<std::int64_t> check_elements;
  // How it was timed.
  std::optional<std::string> timer;
  std::optional<std::vector<std::string>> markers;
  std::optional<double> noise;
  std::optional<std::string> stop_reason;
  std::optional<bool> converged;
  std::optional<int> throttled_discarded;
  std::optional<int> power_capped_samples;
  std::optional<int> repeat;
  std::optional<int> launches_per_sample;
  std::optional<std::string> l2_method;
  std::optional<std::string> sample_method;
  std::optional<double> timer_resolution_us;
  std::optional<double> event_latency_ms;  // the kernel trace's fields (docs/run-log.md)
  std::optional<int> kernel_count;
  std::optional<double> kernel_sum_ms;
  std::optional<double> record_resolution_us;
  std::optional<double> trace_host_us;
  std::optional<std::string> regime;
  std::optional<int> regime_discarded;
  std::optional<double> settle_s;
  std::optional<bool> settled;
  std::optional<std::string> settle;  // settled | carried
  std::optional<bool> clock_known;
  std::optional<double> sm_clock_mean_mhz;
  std::optional<int> sm_clock_min_mhz;
  std::optional<int> sm_clock_max_mhz;
  std::optional<double> power_w;
  std::optional<double> power_limit_w;
  std::optional<int> other_processes;  // the most other processes seen on the device
  std::optional<std::vector<std::string>> clock_reasons;
  std::optional<double> wall_s;
  std::optional<std::string> note;
  // What it measured, or why it failed.
  std::optional<double> latency_ms;
  std::optional<std::vector<double>> samples_ms;
  std::optional<int> samples_total;  // the samples latency_ms is the median of (samples_ms: <= 200)
  std::optional<std::vector<double>> quantiles_ms;
  std::optional<double> tflops;
  std::optional<double> gbps;
  std::optional<double> pct_peak_bw;
  std::optional<double> pct_peak_flops;
  std::optional<std::string> error;
  std::optional<std::string> failure;
  // One regime per row: the graph figures of a provider re-timed by the direct timer.
  Nullable<double> graph_latency_ms;
  std::optional<int> graph_launches_per_sample;
  // A --profile row's provider.
  std::optional<std::string> range;
  std::optional<int> launches;
  // A paired A/B's provider (docs/ab.md): one median per block, in time order; the block count.
  std::optional<std::vector<double>> block_medians_ms;
  std::optional<int> paired_blocks;
  std::optional<std::string> paired_method;  // interleaved (one graph) | blocks (ABBA)
  // The placement phases the blocks split into, equal and consecutive (2: the crossover).
  std::optional<int> paired_phases;
  // The host cost of one eager call in ms (docs/flaggems.md): what the device time leaves out.
  std::optional<double> host_ms;
  nlohmann::json extra = nlohmann::json::object();
};

// Where wall time went, in seconds (a case row's, or the footer's sum over the run's cases).
struct Phases {
  std::optional<double> inputs_s;
  std::optional<double> prepare_s;
  std::optional<double> check_s;
  std::optional<double> settle_s;
  std::optional<double> timing_s;
  std::optional<double> host_s;  // the host cost runs of a FlagGems row (docs/flaggems.md)
  std::optional<double> other_s;
  std::optional<double> wall_s;
  // The sum of two (absent fields count as 0; absent stays absent when both are).
  void add(const Phases& o);
};

// A row of type "case".
struct CaseRow {
  std::string op;  // required
  std::optional<std::string> dtype;
  std::optional<std::string> shape;  // the size detail string
  std::optional<std::vector<std::int64_t>> dims;
  std::optional<std::string> node;
  std::optional<std::map<std::string, std::string>> params;
  std::optional<std::string> family;
  std::optional<bool> profile;
  std::optional<std::string> status;  // ok | failed | skipped (core::status); readers: ok if absent
  std::optional<std::string> timer;
  std::optional<std::vector<std::string>> markers;
  std::optional<int> repeat;
  std::optional<double> latency_ms;
  std::optional<double> latency_base_ms;
  Nullable<double> speedup;
  std::optional<double> tflops;
  std::optional<double> gbps;
  std::optional<double> noise;
  std::optional<double> pct_peak_bw;
  std::optional<double> pct_peak_flops;
  Nullable<bool> accuracy;
  std::optional<std::string> error;
  std::optional<std::string> reason;
  std::optional<std::vector<ProviderRow>> providers;
  Phases phases;  // flat on the row: inputs_s, prepare_s, ... wall_s
  // The host cost of one eager call: the candidate's and the baseline's (docs/flaggems.md).
  std::optional<double> host_ms;
  std::optional<double> host_base_ms;
  nlohmann::json extra = nlohmann::json::object();
};

// The header: the run's identity (run_identity.json as it was when the run started, its own
// format, read by core/identity) plus the number of cases selected.
struct RunLogHeader {
  nlohmann::json identity = nlohmann::json::object();
  std::optional<std::uint64_t> cases;
};

// The footer's "tune" object.
struct FooterTune {
  std::optional<std::string> mode;
  std::optional<long long> keys_tuned;
  std::optional<double> sweep_s;
  std::optional<std::string> cache;
  nlohmann::json extra = nlohmann::json::object();
};

// The footer: written when the run finished.
struct RunLogFooter {
  std::optional<int> ok;
  std::optional<int> failed;
  std::optional<int> skipped;
  std::optional<std::uint64_t> cases;
  std::optional<double> wall_s;
  std::optional<std::string> end_time;
  std::optional<std::vector<std::string>> warnings;
  std::optional<FooterTune> tune;
  // The parallel warmup's merge result (the identity's parallel_warmup_result) or null.
  std::optional<nlohmann::json> parallel_warmup;
  // A fed run's start-up before its first case, as the embedding measured it: an object of
  // named seconds (FlagGems: interpreter_s, flag_gems_import_s, collection_s, open_s), or absent
  // (docs/run-log.md).
  std::optional<nlohmann::json> startup;
  // The cases' phases summed (wall_s above is the whole run's; the phases' own sum is in
  // cases_wall_s), and the clock regime's settles and carries over the run.
  Phases phases;
  std::optional<double> cases_wall_s;
  std::optional<int> settles;
  std::optional<int> carries;
  nlohmann::json extra = nlohmann::json::object();
};

// The conversions, one each way per row type. from_json throws RowError; to_json writes "type".
[[nodiscard]] nlohmann::json to_json(const CaseRow& row);
[[nodiscard]] nlohmann::json to_json(const ProviderRow& row);
[[nodiscard]] nlohmann::json to_json(const TuneChoice& tune);
[[nodiscard]] nlohmann::json to_json(const RunLogHeader& header);
[[nodiscard]] nlohmann::json to_json(const RunLogFooter& footer);
[[nodiscard]] nlohmann::json to_json(const FooterTune& tune);
[[nodiscard]] CaseRow case_row_from_json(const nlohmann::json& j);
[[nodiscard]] ProviderRow provider_row_from_json(const nlohmann::json& j);
[[nodiscard]] TuneChoice tune_choice_from_json(const nlohmann::json& j);
[[nodiscard]] RunLogHeader header_from_json(const nlohmann::json& j);
[[nodiscard]] RunLogFooter footer_from_json(const nlohmann::json& j);

// Small accessors the readers share.
// The row's status, "ok" when absent (rows of early versions had none on success).
[[nodiscard]] std::string status_of(const CaseRow& row);
// The row's and its providers' markers, each once, in first-seen order.
[[nodiscard]] std::vector<std::string> all_markers(const CaseRow& row);
// Adds the markers `row` does not hold yet (creating the list).
void add_markers(std::vector<std::string>& list, const std::vector<std::string>& more);

}  // namespace caliber::core
