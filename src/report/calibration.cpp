#include "report/calibration.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <set>
#include <system_error>

#include "core/format.hpp"
#include "settings/knobs.hpp"

namespace caliber::report {

namespace fs = std::filesystem;

NoiseTerms parse_noise_terms(const std::string& spec, const std::string& knob) {
  const std::string allowed =
      "a comma list of PCT (the default), CLASS=PCT (a family, a provider or fallback) and "
      "floor_us=US (microseconds), each from 0 to below 100, e.g. 1.5,blas=3,floor_us=0.2";
  NoiseTerms t;
  std::optional<double> def;
  for (const std::string& item : core::split_fields(spec, ',')) {
    const std::size_t eq = item.find('=');
    const std::string name = eq == std::string::npos ? "" : item.substr(0, eq);
    const std::string num = eq == std::string::npos ? item : item.substr(eq + 1);
    double v = 0;
    std::size_t used = 0;
    bool ok = !num.empty() && (eq == std::string::npos || !name.empty());
    for (const char ch : name)
      ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_');
    if (ok) {
      try {
        v = std::stod(num, &used);
      } catch (const std::exception&) {
        ok = false;
      }
    }
    ok = ok && used == num.size() && std::isfinite(v) && v >= 0 && v < 100;
    if (!ok)
      throw std::invalid_argument(knob + ": '" + spec + "' is not allowed (" + allowed + ")");
    if (name.empty())
      def = v / 100.0;
    else if (name == "floor_us")
      t.floor_us = v;
    else
      t.classes[name] = v / 100.0;
  }
  t.pct = def.value_or(0.0);
  t.pct_given = def.has_value();
  return t;
}

NoiseTerms max_terms(const NoiseTerms& a, const NoiseTerms& b) {
  NoiseTerms m = a;
  m.pct = std::max(a.pct, b.pct);
  m.floor_us = std::max(a.floor_us, b.floor_us);
  for (const auto& [c, v] : b.classes) m.classes[c] = std::max(m.classes[c], v);
  return m;
}

namespace {

// A required field of `node`, or a CalibrationError naming the file and the field.
YAML::Node field(const YAML::Node& node, const std::string& key, const std::string& where,
                 const fs::path& file) {
  const YAML::Node v = node[key];
  if (!v.IsDefined() || v.IsNull())
    throw CalibrationError(file.string() + ": " + where + key + " is missing");
  return v;
}

template <typename T>
T scalar(const YAML::Node& node, const std::string& key, const std::string& where,
         const fs::path& file, const char* what) {
  const YAML::Node v = field(node, key, where, file);
  try {
    if (!v.IsScalar()) throw YAML::Exception(YAML::Mark::null_mark(), "not a scalar");
    return v.as<T>();
  } catch (const YAML::Exception&) {
    throw CalibrationError(file.string() + ": " + where + key + " must be " + what);
  }
}

std::string optional_text(const YAML::Node& node, const std::string& key) {
  const YAML::Node v = node[key];
  return v.IsDefined() && v.IsScalar() ? v.as<std::string>() : std::string();
}

Derivation read_derivation(const YAML::Node& node, const std::string& where, const fs::path& file) {
  Derivation d;
  const std::string at = where + "derivation.";
  const YAML::Node n = field(node, "derivation", where, file);
  d.date = scalar<std::string>(n, "date", at, file, "a date (YYYY-MM-DD)");
  const bool date_ok = d.date.size() == 10 && d.date[4] == '-' && d.date[7] == '-' &&
                       std::all_of(d.date.begin(), d.date.end(), [](char c) {
                         return std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '-';
                       });
  if (!date_ok)
    throw CalibrationError(file.string() + ": " + at + "date '" + d.date +
                           "' is not a date (YYYY-MM-DD)");
  const YAML::Node m = field(n, "machines", at, file);
  if (!m.IsSequence() || m.size() == 0)
    throw CalibrationError(file.string() + ": " + at + "machines must be a non-empty list");
  for (const auto& x : m) {
    if (!x.IsScalar())
      throw CalibrationError(file.string() + ": " + at + "machines must be a list of text");
    d.machines.push_back(x.as<std::string>());
  }
  d.pairs = scalar<int>(n, "pairs", at, file, "an integer");
  if (d.pairs < 1) throw CalibrationError(file.string() + ": " + at + "pairs must be at least 1");
  d.quantile = scalar<double>(n, "quantile", at, file, "a number");
  if (!(d.quantile > 0 && d.quantile <= 1))
    throw CalibrationError(file.string() + ": " + at + "quantile must be in (0, 1]");
  d.method = optional_text(n, "method");
  d.bound_by = optional_text(n, "bound_by");
  d.verified = optional_text(n, "verified");
  return d;
}

CalibratedTerms read_section(const YAML::Node& root, const std::string& key, const fs::path& file) {
  const YAML::Node n = field(root, key, "", file);
  if (!n.IsMap()) throw CalibrationError(file.string() + ": " + key + " must be a mapping");
  CalibratedTerms t;
  t.spec = scalar<std::string>(n, "terms", key + ".", file, "a terms spec");
  try {
    t.terms = parse_noise_terms(t.spec, file.string() + ": " + key + ".terms");
  } catch (const std::invalid_argument& e) {
    throw CalibrationError(e.what());
  }
  t.derivation = read_derivation(n, key + ".", file);
  return t;
}

fs::path exe_dir() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(".") : p.parent_path();
}

}  // namespace

Calibration load_calibration(const fs::path& file) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(file.string());
  } catch (const YAML::BadFile&) {
    throw CalibrationError(file.string() + ": cannot be read");
  } catch (const YAML::Exception& e) {
    throw CalibrationError(file.string() + ": malformed YAML (" + e.msg + ")");
  }
  if (!root.IsMap()) throw CalibrationError(file.string() + ": not a YAML mapping");
  const int schema = scalar<int>(root, "schema", "", file, "an integer");
  if (schema != 1)
    throw CalibrationError(file.string() + ": schema " + std::to_string(schema) +
                           " is not known (this caliber reads schema 1)");
  Calibration c;
  c.file = file;
  c.device_model = scalar<std::string>(root, "device_model", "", file, "text");
  c.backend = scalar<std::string>(root, "backend", "", file, "text");
  c.run_noise = read_section(root, "run_noise", file);
  c.paired = read_section(root, "paired_noise", file);
  c.paired_one_phase = read_section(root, "paired_noise_one_phase", file);
  return c;
}

std::string calibration_file_name(const std::string& device_model) {
  std::string out;
  for (const char ch : device_model) {
    const auto u = static_cast<unsigned char>(ch);
    if (std::isalnum(u) != 0)
      out += static_cast<char>(std::tolower(u));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return (out.empty() ? std::string("unknown") : out) + ".yaml";
}

std::vector<fs::path> calibration_dirs() {
  std::vector<fs::path> dirs = {exe_dir() / "../share/caliber/calibration"};
#ifdef CALIBER_SOURCE_DIR
  dirs.push_back(fs::path(CALIBER_SOURCE_DIR) / "share/caliber/calibration");
#endif
  return dirs;
}

namespace {

// The first directory that holds a file of that name.
std::optional<fs::path> find_file(const std::vector<fs::path>& dirs, const std::string& name) {
  for (const auto& d : dirs) {
    std::error_code ec;
    if (fs::is_regular_file(d / name, ec)) return d / name;
  }
  return std::nullopt;
}

// Every file of the first directory that holds any (a later directory is a fallback, not more).
std::vector<Calibration> all_files(const std::vector<fs::path>& dirs) {
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(d, ec))
      if (e.path().extension() == ".yaml") files.push_back(e.path());
    if (files.empty()) continue;
    std::sort(files.begin(), files.end());
    std::vector<Calibration> out;
    for (const auto& f : files) out.push_back(load_calibration(f));
    return out;
  }
  return {};
}

// One file's section into the choice: the largest terms so far, and the file cited.
void take(ChosenTerms& into, const Calibration& c, const CalibratedTerms& t) {
  into.terms = max_terms(into.terms, t.terms);
  // Only the file is cited: its derivation (date, pairs, machines, quantile) stays in it.
  into.from += std::string(into.from.empty() ? "" : ", ") + "share/caliber/calibration/" +
               c.file.filename().string();
}

}  // namespace

CalibrationChoice choose_calibration(const std::vector<DeviceKey>& devices,
                                     const std::vector<fs::path>& dirs) {
  std::vector<Calibration> used;
  std::vector<std::string> notes;
  for (const DeviceKey& dev : std::set<DeviceKey>(devices.begin(), devices.end())) {
    auto file = find_file(dirs, calibration_file_name(dev.model));
    if (!file && !dev.backend.empty()) file = find_file(dirs, dev.backend + ".yaml");
    if (file) {
      used.push_back(load_calibration(*file));
      continue;
    }
    // No file of its own: the largest terms of every accelerator's file (a host's terms are
    // the operating system's noise, which a device's timer does not see), or of every file.
    std::vector<Calibration> all = all_files(dirs);
    std::vector<Calibration> acc;
    for (auto& c : all)
      if (c.backend != "cpu") acc.push_back(c);
    if (acc.empty()) acc = all;
    if (acc.empty()) {
      std::string where;
      for (const auto& d : dirs) where += (where.empty() ? "" : ", ") + d.string();
      throw CalibrationError("no calibration file (share/caliber/calibration/*.yaml) in " + where +
                             ": give --run-noise and --paired-noise");
    }
    std::string names;
    for (const auto& c : acc) names += (names.empty() ? "" : ", ") + c.file.filename().string();
    notes.push_back("no calibration file for device model '" + dev.model + "' (backend " +
                    dev.backend + "): it takes the largest terms of " + names +
                    ", the most conservative known (docs/ab.md#calibration-files)");
    used.insert(used.end(), acc.begin(), acc.end());
  }
  CalibrationChoice ch;
  std::set<fs::path> seen;
  for (const auto& c : used) {
    if (!seen.insert(c.file).second) continue;
    take(ch.run_noise, c, c.run_noise);
    take(ch.paired, c, c.paired);
    take(ch.paired_one_phase, c, c.paired_one_phase);
  }
  ch.notes = std::move(notes);
  return ch;
}

}  // namespace caliber::report
