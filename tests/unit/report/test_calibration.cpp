// Calibration as data (report/calibration.hpp): the files load and are checked, a run's device
// picks its file (else its backend's, else the largest terms with a note), the user's terms win,
// and compare warns when a side's host was loaded.
#include <gtest/gtest.h>

#include <fstream>

#include <algorithm>

#include "report/calibration.hpp"
#include "report/compare.hpp"
#include "unit/report/fixtures.hpp"

namespace fs = std::filesystem;
using namespace caliber::report;
using namespace caliber::testing;

namespace {

const fs::path kShipped = fs::path(CALIBER_SOURCE_DIR) / "share/caliber/calibration";

// A calibration file with the given terms for all three sections.
std::string file_text(const std::string& model, const std::string& backend,
                      const std::string& terms) {
  std::string section;
  for (const char* name : {"run_noise", "paired_noise", "paired_noise_one_phase"})
    section += std::string(name) + ":\n  terms: \"" + terms +
               "\"\n  derivation:\n    date: 2026-12-01\n    machines: [m1]\n    pairs: 10\n"
               "    quantile: 1.0\n";
  return "schema: 1\ndevice_model: " + model + "\nbackend: " + backend + "\n" + section;
}

fs::path write(const fs::path& dir, const std::string& name, const std::string& text) {
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}

// An add row of n samples around 1 ms (candidate) and 2 ms (baseline).
json timed_row(std::uint32_t seed) {
  RowSpec s;
  s.op = "add";
  s.shape = "1";
  s.cand = samples(1.0, 0.005, 50, seed);
  s.base = samples(2.0, 0.005, 50, seed + 1000);
  return make_row(s);
}

std::string notes_of(const CompareResult& r) {
  std::string all;
  for (const auto& t : compare_report(r).tables)
    for (const auto& n : t.notes) all += n + "\n";
  return all;
}

}  // namespace

TEST(Calibration, ShippedFilesLoadAndNameTheirDevice) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(kShipped)) {
    const Calibration c = load_calibration(e.path());
    ++n;
    EXPECT_EQ(calibration_file_name(c.device_model) == e.path().filename().string() ||
                  c.backend + ".yaml" == e.path().filename().string(),
              true)
        << e.path() << ": named after neither its device model nor its backend";
    EXPECT_GT(c.run_noise.terms.pct, 0) << e.path();
    EXPECT_FALSE(c.paired.derivation.machines.empty()) << e.path();
  }
  EXPECT_GE(n, 2) << "the H200's file and the cpu backend's";
  const Calibration h = load_calibration(kShipped / "nvidia-h200.yaml");
  EXPECT_EQ(h.device_model, "NVIDIA H200");
  EXPECT_EQ(h.paired_one_phase.terms.classes.count("thrust"), 1u);
}

TEST(Calibration, FileNamesAreTheModelInLowerCase) {
  EXPECT_EQ(calibration_file_name("NVIDIA H200"), "nvidia-h200.yaml");
  EXPECT_EQ(calibration_file_name("  AMD Instinct MI300X (gfx942) "),
            "amd-instinct-mi300x-gfx942.yaml");
  EXPECT_EQ(calibration_file_name("../.."), "unknown.yaml");
}

// Every malformed file is refused with its name and the field at fault.
TEST(Calibration, MalformedFilesNameTheField) {
  TempDir t;
  const std::string good = file_text("X", "cuda", "1,floor_us=0.1");
  const std::pair<std::string, std::string> bad[] = {
      {"[1, 2]", "not a YAML mapping"},
      {"schema: 2\n", "schema 2"},
      {"schema: 1\nbackend: cuda\n", "device_model is missing"},
      {good.substr(0, good.find("paired_noise_one_phase")), "paired_noise_one_phase is missing"},
      {file_text("X", "cuda", "1,blas=abc"), "run_noise.terms"},
      {file_text("X", "cuda", "100"), "run_noise.terms"},
      {std::string(good).replace(good.find("2026-12-01"), 10, "yesterday"),
       "run_noise.derivation.date"},
      {std::string(good).replace(good.find("pairs: 10"), 9, "pairs: 0"),
       "run_noise.derivation.pairs"},
      {std::string(good).replace(good.find("quantile: 1.0"), 13, "quantile: 1.5"),
       "run_noise.derivation.quantile"},
      {std::string(good).replace(good.find("[m1]"), 4, "[]"), "run_noise.derivation.machines"},
      {"schema: 1\n  - : [", "malformed YAML"},
  };
  for (const auto& [text, what] : bad) {
    const fs::path f = write(t.path(), "bad.yaml", text);
    try {
      (void)load_calibration(f);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const CalibrationError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.yaml"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW((void)load_calibration(t.path() / "absent.yaml"), CalibrationError);
}

// Own file, else the backend's, else the largest terms of the accelerators' files and a note;
// nothing at all is refused.
TEST(Calibration, ADeviceTakesItsFileElseTheLargestTerms) {
  TempDir t;
  const fs::path d = t.path() / "cal";
  write(d, "gpu-a.yaml", file_text("GPU A", "cuda", "1,blas=4,floor_us=0.1"));
  write(d, "gpu-b.yaml", file_text("GPU B", "rocm", "2,norm=3,floor_us=0.05"));
  write(d, "cpu.yaml", file_text("any host", "cpu", "30,floor_us=5"));
  const auto own = choose_calibration({{"GPU A", "cuda"}}, {d});
  EXPECT_DOUBLE_EQ(own.run_noise.terms.pct, 0.01);
  EXPECT_TRUE(own.notes.empty());
  EXPECT_NE(own.run_noise.from.find("gpu-a.yaml"), std::string::npos) << own.run_noise.from;
  const auto host = choose_calibration({{"Some EPYC", "cpu"}}, {d});
  EXPECT_DOUBLE_EQ(host.run_noise.terms.pct, 0.30);
  EXPECT_TRUE(host.notes.empty());
  const auto unknown = choose_calibration({{"GPU C", "musa"}}, {d});
  EXPECT_DOUBLE_EQ(unknown.run_noise.terms.pct, 0.02);  // the larger default, not the host's
  EXPECT_DOUBLE_EQ(unknown.run_noise.terms.classes.at("blas"), 0.04);
  EXPECT_DOUBLE_EQ(unknown.run_noise.terms.classes.at("norm"), 0.03);
  EXPECT_DOUBLE_EQ(unknown.run_noise.terms.floor_us, 0.1);
  ASSERT_EQ(unknown.notes.size(), 1u);
  EXPECT_NE(unknown.notes[0].find("no calibration file for device model 'GPU C'"),
            std::string::npos)
      << unknown.notes[0];
  // Two devices (a cross-device comparison): the larger of their terms.
  const auto both = choose_calibration({{"GPU A", "cuda"}, {"GPU B", "rocm"}}, {d});
  EXPECT_DOUBLE_EQ(both.paired.terms.pct, 0.02);
  EXPECT_DOUBLE_EQ(both.paired.terms.classes.at("blas"), 0.04);
  EXPECT_THROW((void)choose_calibration({{"GPU C", "musa"}}, {t.path() / "none"}),
               CalibrationError);
}

// compare takes the H200's file for H200 runs, cites it instead of printing a derivation, and
// lets --run-noise win; a device without a file is noted; a spec without a default PCT keeps the
// file's default.
TEST(Calibration, CompareCitesTheFileAndTheUserWins) {
  TempDir t;
  const Calibration h = load_calibration(kShipped / "nvidia-h200.yaml");
  const auto a = write_run(t.path(), "a-20261201-101010", {timed_row(1)});
  const auto b = write_run(t.path(), "b-20261201-101010", {timed_row(2)});
  const auto r = compare_dirs({a}, {b});
  EXPECT_DOUBLE_EQ(r.noise.run_noise, h.run_noise.terms.pct);
  EXPECT_DOUBLE_EQ(r.noise.paired_one_phase, h.paired_one_phase.terms.pct);
  const std::string notes = notes_of(r);
  EXPECT_NE(notes.find("share/caliber/calibration/nvidia-h200.yaml (docs/ab.md#calibration-files)"),
            std::string::npos)
      << notes;
  // The derivation (its date, pairs, machines, quantile) stays in the file and the docs.
  EXPECT_EQ(notes.find("derived"), std::string::npos) << "no derivation prose: " << notes;
  EXPECT_EQ(notes.find(h.run_noise.derivation.date), std::string::npos) << notes;
  EXPECT_EQ(notes.find("pairs on"), std::string::npos) << notes;
  CompareOptions mine;
  parse_run_noise("7", mine);
  const auto rm = compare_dirs({a}, {b}, mine);
  EXPECT_DOUBLE_EQ(rm.noise.run_noise, 0.07);
  EXPECT_NE(notes_of(rm).find("as given"), std::string::npos);
  CompareOptions cls;
  parse_run_noise("pointwise=9", cls);
  const auto rc = compare_dirs({a}, {b}, cls);
  EXPECT_DOUBLE_EQ(rc.noise.run_noise, h.run_noise.terms.pct);
  EXPECT_DOUBLE_EQ(rc.noise.run_noise_class.at("pointwise"), 0.09);
  // An unknown accelerator: the largest known terms and a note naming the device.
  json other = identity();
  other["device"]["name"] = "Future GPU 9000";
  const auto c = write_run(t.path(), "c-20261201-101010", {timed_row(3)}, other);
  const auto d = write_run(t.path(), "d-20261201-101010", {timed_row(4)}, other);
  const auto ru = compare_dirs({c}, {d});
  EXPECT_GE(ru.noise.run_noise, h.run_noise.terms.pct);
  EXPECT_NE(notes_of(ru).find("no calibration file for device model 'Future GPU 9000'"),
            std::string::npos);
}

// A side whose identity recorded a load average above its cores gets one warning line; a quiet
// one (or an older run without host_load) gets none.
TEST(Calibration, CompareWarnsWhenASideHostWasLoaded) {
  TempDir t;
  auto with_load = [](double start, double end) {
    json id = identity();
    id["host_load"] = {{"start", {{"load1", start}, {"cores", 2}}},
                       {"end", {{"load1", end}, {"cores", 2}}}};
    return id;
  };
  const auto quiet = write_run(t.path(), "q-20261201-101010", {timed_row(1)}, with_load(0.5, 1.9));
  const auto old = write_run(t.path(), "o-20261201-101010", {timed_row(2)});
  const auto busy = write_run(t.path(), "b-20261201-101010", {timed_row(3)}, with_load(1.0, 7.5));
  EXPECT_EQ(compare_dirs({quiet}, {old}).loaded_host, "");
  const auto r = compare_dirs({quiet}, {busy});
  EXPECT_NE(r.loaded_host.find("side B in 1 of 1 run(s) (b-20261201-101010: end: load 7.50 on 2 "
                               "cores)"),
            std::string::npos)
      << r.loaded_host;
  EXPECT_EQ(r.loaded_host.find("side A"), std::string::npos) << r.loaded_host;
  const auto w = compare_report(r).warnings;
  EXPECT_EQ(std::count(w.begin(), w.end(), r.loaded_host), 1);
}
