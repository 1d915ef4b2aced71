#include "records/repeats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

namespace caliber::core {

double RepeatPair::ratio() const {
  return std::max(first_ms, again_ms) / std::min(first_ms, again_ms);
}

double repeat_limit(double noise_a, double noise_b) {
  return std::max(0.05, 3.0 * std::hypot(noise_a, noise_b));
}

namespace {

// "4096x4096#2" -> "4096x4096"; a shape without a count as it is.
std::string without_count(const std::string& shape) {
  const auto hash = shape.rfind('#');
  if (hash == std::string::npos || hash + 1 == shape.size()) return shape;
  for (std::size_t i = hash + 1; i < shape.size(); ++i)
    if (shape[i] < '0' || shape[i] > '9') return shape;
  return shape.substr(0, hash);
}

std::string input_key(const CaseRow& row) {
  std::string key =
      row.op + '\x1f' + row.dtype.value_or("") + '\x1f' + without_count(row.shape.value_or(""));
  if (row.params)
    for (const auto& [k, v] : *row.params)
      if (k != "ordinal") key += '\x1f' + k + '=' + v;
  return key;
}

bool converged(const ProviderRow& p) {
  if (p.converged) return *p.converged;
  return !p.markers ||
         std::find(p.markers->begin(), p.markers->end(), "STOP_NOT_CONVERGED") == p.markers->end();
}

void compare_rows(const CaseRow& first, const CaseRow& again, RepeatCheck& c) {
  if (!first.providers || !again.providers) return;
  for (const auto& a : *first.providers) {
    const auto b = std::find_if(again.providers->begin(), again.providers->end(),
                                [&](const ProviderRow& p) { return p.name == a.name; });
    if (b == again.providers->end() || !a.latency_ms || !b->latency_ms || *a.latency_ms <= 0 ||
        *b->latency_ms <= 0)
      continue;
    ++c.pairs;
    RepeatPair p{first.op,
                 first.dtype.value_or(""),
                 without_count(first.shape.value_or("")),
                 a.name,
                 *a.latency_ms,
                 *b->latency_ms,
                 repeat_limit(a.noise.value_or(0), b->noise.value_or(0)),
                 converged(a),
                 converged(*b)};
    if (p.ratio() - 1.0 > p.limit) c.disagree.push_back(std::move(p));
  }
}

}  // namespace

void check_repeats(const std::vector<CaseRow>& rows, RepeatCheck& into) {
  std::map<std::string, const CaseRow*> first;
  for (const auto& row : rows) {
    if (row.status.value_or("ok") != "ok") continue;
    const auto [it, fresh] = first.emplace(input_key(row), &row);
    if (!fresh) compare_rows(*it->second, row, into);
  }
}

std::string repeats_note(const RepeatCheck& c, bool agreeing) {
  if (c.pairs == 0 || (c.disagree.empty() && !agreeing)) return "";
  const std::string what =
      " (the same inputs timed twice in one run, FlagGems' SHAPE#2 rows; "
      "docs/report.md#repeated-inputs)";
  if (c.disagree.empty())
    return std::to_string(c.pairs) + " figure(s) of repeated inputs agree within their noise" +
           what;
  const auto& d = c.disagree.front();
  char figures[160];
  std::snprintf(figures, sizeof figures, "%.4g vs %.4g ms (%.2fx, allowed %.1f%%", d.first_ms,
                d.again_ms, d.ratio(), 100.0 * d.limit);
  std::string first = d.provider + " " + d.op + " " + d.dtype + " " + d.shape + " " + figures;
  if (!d.first_converged || !d.again_converged)
    first += std::string("; the ") + (d.first_converged ? "second" : "first") +
             (d.first_converged == d.again_converged ? " and the second" : "") +
             " STOP_NOT_CONVERGED";
  first += ")";
  const std::size_t more = c.disagree.size() - 1;
  return std::to_string(c.disagree.size()) + " of " + std::to_string(c.pairs) +
         " figure(s) of repeated inputs disagree beyond their noise" + what + ": " + first +
         (more > 0 ? " and " + std::to_string(more) + " more" : "") +
         ". The device's state changed between them: figures timed in that stretch may be off "
         "by as much";
}

}  // namespace caliber::core
