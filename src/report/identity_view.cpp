#include "report/identity_view.hpp"

#include "records/identity.hpp"

namespace caliber::report {

namespace {

std::string value_text(const nlohmann::json& v) {
  if (v.is_null()) return "(none)";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

const nlohmann::json& member(const nlohmann::json& j, const std::string& key) {
  static const nlohmann::json null_value;
  if (!j.is_object()) return null_value;
  const auto it = j.find(key);
  return it == j.end() ? null_value : *it;
}

const nlohmann::json& caliber_value(const nlohmann::json& identity, const std::string& key) {
  if (key == "device_model") return member(member(identity, "device"), "name");
  return member(identity, key);
}

}  // namespace

Report identity_report(const nlohmann::json& identity, const std::string& source) {
  Report r;
  Table cal;
  cal.id = "caliber";
  cal.title = "Caliber of " + source + " (two runs are comparable only when all of these agree)";
  cal.columns = {"key", "value"};
  for (const auto& key : core::caliber_keys())
    cal.rows.push_back({text_cell(key), Cell{value_text(caliber_value(identity, key)),
                                             caliber_value(identity, key)}});
  r.tables.push_back(std::move(cal));

  Table dev;
  dev.id = "device";
  dev.title = "Device";
  dev.columns = {"key", "value"};
  const auto& d = member(identity, "device");
  if (d.is_object())
    for (const auto& [k, v] : d.items()) dev.rows.push_back({text_cell(k), Cell{value_text(v), v}});
  r.tables.push_back(std::move(dev));

  Table rest;
  rest.id = "run";
  rest.title = "Run";
  rest.columns = {"key", "value"};
  if (identity.is_object())
    for (const auto& [k, v] : identity.items()) {
      if (k == "device") continue;
      bool is_caliber = false;
      for (const auto& key : core::caliber_keys()) is_caliber = is_caliber || key == k;
      if (!is_caliber) rest.rows.push_back({text_cell(k), Cell{value_text(v), v}});
    }
  r.tables.push_back(std::move(rest));
  return r;
}

Report identity_diff_report(const nlohmann::json& a, const std::string& source_a,
                            const nlohmann::json& b, const std::string& source_b) {
  Report r;
  Table t;
  t.id = "differences";
  t.title = "Caliber differences: " + source_a + " vs " + source_b;
  t.columns = {"key", "a", "b"};
  const auto diffs = core::diff_identity(a, b);
  for (const auto& d : diffs)
    t.rows.push_back({text_cell(d.key), text_cell(d.a.empty() ? "(none)" : d.a),
                      text_cell(d.b.empty() ? "(none)" : d.b)});
  t.notes.push_back(diffs.empty() ? "same caliber: the two runs are comparable"
                                  : std::to_string(diffs.size()) +
                                        " caliber difference(s): the two runs are not comparable");
  // Not part of the caliber, but a reader of a diff wants to know when the builds differ.
  for (const char* key : {"caliber_version", "git_commit", "shape_mode", "host"}) {
    const auto& va = member(a, key);
    const auto& vb = member(b, key);
    if (va != vb)
      t.notes.push_back(std::string("also differs (not caliber): ") + key + ": " + value_text(va) +
                        " vs " + value_text(vb));
  }
  r.tables.push_back(std::move(t));
  for (const auto& d : diffs)
    r.banners.push_back("CALIBER MISMATCH: " + d.key + ": " + (d.a.empty() ? "(none)" : d.a) +
                        " vs " + (d.b.empty() ? "(none)" : d.b));
  return r;
}

}  // namespace caliber::report
