// The exports of a run whose run.log is the input (a FlagGems run's rows among the seeds): every
// format renders from whatever rows the reader took, or export_dirs throws runtime_error (a file
// it cannot read) or invalid_argument (a run.log of which no line reads: the CLI's exit 2); never
// a crash, and nothing the reader kept is rendered as anything but text.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "fuzz_util.hpp"
#include "report/export.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto dir = caliber::fuzz::scratch_dir() / "export-run";
  std::filesystem::create_directories(dir);
  caliber::fuzz::write_file(dir / "run.log", data, size);
  using caliber::report::ExportFormat;
  for (const auto format :
       {ExportFormat::csv, ExportFormat::json, ExportFormat::gbench, ExportFormat::flaggems_log}) {
    try {
      const auto r = caliber::report::export_dirs({dir}, format);
      std::ostringstream text;
      r.write(text);  // gbench is written as it goes
      if (format == ExportFormat::flaggems_log && !r.text.empty() && r.text.rfind("[INFO] {", 0))
        std::abort();  // every line of FlagGems' log starts so
    } catch (const std::runtime_error&) {
    } catch (const std::invalid_argument&) {
    }
  }
  return 0;
}
