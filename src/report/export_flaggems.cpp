// caliber export --format flaggems-log: the lines FlagGems' `pytest --record log` writes, one
// per (op, dtype) of a run, so that FlagGems' own benchmark/summary_for_plot.py (and its
// --compare of two logs) reads caliber's figures (docs/run-log.md, "Exports").
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "report/export.hpp"

#include "core/torch_dtypes.hpp"
#include "records/runlog.hpp"

namespace caliber::report {

using nlohmann::json;
using ordered = nlohmann::ordered_json;  // FlagGems' field order, for a reader who diffs the two

namespace {

// The dtypes FlagGems' summary_for_plot gives a column of its own; it shows any other in its
// float16 column.
bool summary_has_column(const std::string& torch_dtype) {
  static const std::set<std::string> kColumns = {
      "torch.float16", "torch.float32", "torch.bfloat16", "torch.int16",
      "torch.int32",   "torch.bool",    "torch.complex64"};
  return kColumns.count(torch_dtype) > 0;
}

std::string torch_dtype(const core::CaseRow& row) {
  const json& own = json_member(json_member(row.extra, "flaggems"), "dtype");
  if (own.is_string()) return own.get<std::string>();
  // caliber's dtype names as torch prints its dtypes, which FlagGems writes. A FlagGems run's
  // rows carry torch's own text (the row's "flaggems" object), so only the corpus needs these.
  const std::string d = row.dtype.value_or("");
  for (const auto& [ours, torch] : core::kTorchDtypes)
    if (d == ours) return "torch." + std::string(torch);
  return d;
}

// FlagGems' shape detail as its record encodes it (a FlagGems run's row keeps that JSON value,
// and where it holds an object also its text in FlagGems' key order: FlagGems' --compare keys an
// input by the object's str(), so the order is part of the key); for the built-in corpus the
// case's dims, else its size text.
ordered shape_detail(const core::CaseRow& row) {
  const json& fg = json_member(row.extra, "flaggems");
  if (const json& text = json_member(fg, "shape_detail_json"); text.is_string()) {
    ordered in_order = ordered::parse(text.get<std::string>(), nullptr, false);
    if (!in_order.is_discarded()) return in_order;
  }
  const json& own = json_member(fg, "shape_detail");
  if (!own.is_null()) return ordered(own);
  if (row.dims) return ordered(*row.dims);
  return row.shape ? ordered(*row.shape) : ordered(nullptr);
}

json number(const std::optional<double>& v) {
  return positive_number(v) ? json(*v) : json(nullptr);
}

// The JSON text of `j`, compact, with a non-finite number written as Python's json writes it
// (`NaN`) instead of nlohmann's `null`: FlagGems' reader is Python's json module, which reads it.
std::string dump(const ordered& j) {
  const auto text = [](const ordered& v) {
    return v.dump(-1, ' ', false, ordered::error_handler_t::replace);
  };
  if (j.is_object()) {
    std::string out = "{";
    for (auto it = j.begin(); it != j.end(); ++it)
      out += (out.size() > 1 ? "," : "") + text(ordered(it.key())) + ":" + dump(it.value());
    return out + "}";
  }
  if (j.is_array()) {
    std::string out = "[";
    for (const auto& v : j) out += (out.size() > 1 ? "," : "") + dump(v);
    return out + "]";
  }
  if (j.is_number_float() && !std::isfinite(j.get<double>())) return "NaN";
  return text(j);
}

// One BenchmarkMetrics object of FlagGems' record: every field it writes, in its order.
ordered metrics(const core::CaseRow& row) {
  const core::ProviderRow* base = provider_with_role(row, core::role::baseline);
  const core::ProviderRow* cand = provider_with_role(row, core::role::candidate);
  json error = nullptr;
  if (row_status(row) == "failed") {
    std::string msg = row.error.value_or("");
    if (msg.empty()) msg = row.reason.value_or("failed");
    error = msg;
  }
  std::optional<double> speedup;
  if (row.speedup && *row.speedup) speedup = **row.speedup;
  // summary_for_plot's --compare divides by every input's latency: a failed input without one
  // gets NaN there (the quotient NaN, which its averages leave out with the error), not null.
  ordered latency = number(row.latency_ms);
  if (!error.is_null() && latency.is_null()) latency = std::numeric_limits<double>::quiet_NaN();
  return ordered{{"legacy_shape", nullptr},
                 {"shape_detail", shape_detail(row)},
                 {"latency_base", ordered(number(row.latency_base_ms))},
                 {"latency", latency},
                 {"gbps_base", ordered(base != nullptr ? number(base->gbps) : json(nullptr))},
                 {"gbps", ordered(cand != nullptr ? number(cand->gbps) : json(nullptr))},
                 {"speedup", ordered(number(speedup))},
                 {"accuracy", nullptr},
                 {"tflops", ordered(number(row.tflops))},
                 {"utilization", nullptr},
                 {"compared_speedup", nullptr},
                 {"error_msg", ordered(error)}};
}

// run_identity.json, else the copy the run.log header holds.
const json& identity_of(const RunData& r) {
  static const json none = json::object();
  if (r.identity.is_object()) return r.identity;
  return r.log.header ? r.log.header->identity : none;
}

// FlagGems' mode of the run (kernel, cudagraph, ...); the built-in corpus has none of its own.
std::string run_mode(const RunData& r) {
  const json& m = json_member(json_member(identity_of(r), "flaggems"), "mode");
  return m.is_string() ? m.get<std::string>() : "caliber";
}

std::string run_level(const RunData& r) {
  const json& own = json_member(json_member(identity_of(r), "flaggems"), "level");
  if (own.is_string()) return own.get<std::string>();
  const json& l = json_member(identity_of(r), "level");
  return l.is_string() ? l.get<std::string>() : "";
}

}  // namespace

ExportResult render_export_flaggems_log(const std::vector<RunData>& runs) {
  ExportResult out;
  int skipped = 0, failed = 0;
  std::set<std::string> no_column;
  for (const auto& run : runs) {
    // One record per (op, dtype) of the run, in first-seen order, as FlagGems writes one per
    // dtype of its loop: its summary_for_plot keeps the last record of an (op, dtype), so rows
    // of one (op, dtype) apart in the run (the built-in corpus alternates dtypes within a
    // shape) must still share one record.
    std::vector<ordered> records;
    std::map<std::pair<std::string, std::string>, std::size_t> at;
    std::map<std::string, std::size_t> op_last;  // the op's record in progress
    for (const auto& row : run.log.cases) {
      const std::string status = row_status(row);
      if (status == "skipped") {  // FlagGems records no skipped input
        ++skipped;
        continue;
      }
      if (status == "failed") ++failed;
      const std::string dtype = torch_dtype(row);
      // A row without a dtype (FlagGems' input loop broke before its input existed) belongs to
      // the loop in progress: the op's record being filled.
      std::size_t i = 0;
      if (const auto last = op_last.find(row.op); dtype.empty() && last != op_last.end()) {
        i = last->second;
      } else if (const auto it = at.find({row.op, dtype}); it != at.end()) {
        i = it->second;
      } else {
        i = records.size();
        at[{row.op, dtype}] = i;
        records.push_back(ordered{{"op_name", row.op},
                                  {"dtype", dtype},
                                  {"mode", run_mode(run)},
                                  {"level", run_level(run)},
                                  {"result", json::array()}});
        if (!dtype.empty() && !summary_has_column(dtype)) no_column.insert(dtype);
      }
      op_last[row.op] = i;
      records[i]["result"].push_back(metrics(row));
    }
    for (const auto& r : records) out.text += "[INFO] " + dump(r) + "\n";
  }
  if (!no_column.empty()) {
    std::string names;
    for (const auto& d : no_column) names += (names.empty() ? "" : ", ") + d;
    out.notes.push_back("FlagGems' summary_for_plot has no column for " + names +
                        ": it shows their speedups in its float16 column");
  }
  if (skipped > 0)
    out.notes.push_back(std::to_string(skipped) +
                        " skipped case(s) left out: FlagGems' log records no skipped input");
  if (failed > 0)
    out.notes.push_back(std::to_string(failed) +
                        " failed case(s) written with their error_msg and, where they have no "
                        "latency, NaN for it (FlagGems' own log loses the dtype of a failing "
                        "input; its summary_for_plot --compare divides by every latency)");
  return out;
}

}  // namespace caliber::report
