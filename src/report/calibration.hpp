// Calibration as data: the noise terms compare adds to an interval (the run-to-run term of a side,
// the residual of a paired pair) are measured per device model and kept in YAML files,
// share/caliber/calibration/<model>.yaml, each with its derivation (date, machines, pairs,
// quantile). This is the typed loader and the rule that picks a run's file (docs/ab.md,
// "Calibration files").
#pragma once

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace caliber::report {

// One set of terms, as --run-noise and --paired-noise spell them: "2.2,blas=4.5,floor_us=0.15".
struct NoiseTerms {
  double pct = 0;                         // the default term, a fraction
  std::map<std::string, double> classes;  // a family, a provider or "fallback" -> a fraction
  double floor_us = 0;                    // the timer floor's jitter, microseconds
  bool pct_given = false;                 // the spec named a default term
};
// Parses the spec; throws std::invalid_argument naming `knob`, the value and what is allowed.
[[nodiscard]] NoiseTerms parse_noise_terms(const std::string& spec, const std::string& knob);
// The largest of each term (a class in either is kept): the conservative union of two sets.
[[nodiscard]] NoiseTerms max_terms(const NoiseTerms& a, const NoiseTerms& b);

// How a set of terms was measured.
struct Derivation {
  std::string date;                        // YYYY-MM-DD
  std::vector<std::string> machines;       // the devices (or hosts) and when
  int pairs = 0;                           // same-code pairs fitted
  double quantile = 1.0;                   // of the widening the pairs needed
  std::string method, bound_by, verified;  // optional prose
};

struct CalibratedTerms {
  std::string spec;  // as written in the file
  NoiseTerms terms;
  Derivation derivation;
};

struct Calibration {
  std::filesystem::path file;
  std::string device_model;  // as the backend names the device (run_identity.json device.name)
  std::string backend;
  CalibratedTerms run_noise;         // --run-noise: a side's run-to-run term
  CalibratedTerms paired;            // --paired-noise: a paired pair timed in two phases
  CalibratedTerms paired_one_phase;  // a paired pair timed in one placement phase
};

class CalibrationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads and checks one file; throws CalibrationError naming the file and the field.
[[nodiscard]] Calibration load_calibration(const std::filesystem::path& file);
// A device model's file name: lower case, each run of other characters one '-' ("NVIDIA H200" ->
// "nvidia-h200.yaml"); scripts/ab-power --residual --write names its files the same way.
[[nodiscard]] std::string calibration_file_name(const std::string& device_model);

// Where the files are looked for: beside the binary (../share/caliber/calibration, the install
// layout), then the source tree's share/caliber/calibration.
[[nodiscard]] std::vector<std::filesystem::path> calibration_dirs();

// A run's device as its identity names it.
struct DeviceKey {
  std::string model, backend;
  bool operator<(const DeviceKey& o) const {
    return model != o.model ? model < o.model : backend < o.backend;
  }
};

// The terms for the devices of a comparison: each device's own file (<model>.yaml), else its
// backend's (<backend>.yaml: the cpu backend's host terms), else the largest terms of every
// accelerator's file with a note saying so; over several devices the largest of theirs.
struct ChosenTerms {
  NoiseTerms terms;
  std::string from;  // the file(s) and their derivation in one phrase, for compare's notes
};
struct CalibrationChoice {
  ChosenTerms run_noise, paired, paired_one_phase;
  std::vector<std::string> notes;  // one line per device without its own file
};
// Throws CalibrationError when no calibration file can be found at all or one is malformed.
[[nodiscard]] CalibrationChoice choose_calibration(
    const std::vector<DeviceKey>& devices,
    const std::vector<std::filesystem::path>& dirs = calibration_dirs());

}  // namespace caliber::report
