// run.log: the reader never throws for content (only for an unreadable file), and every line is
// a row, a counted bad line, or the truncated last line.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_util.hpp"
#include "records/runlog.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)caliber::core::repair_json_line(text);
  const auto file = caliber::fuzz::scratch_dir() / "run.log";
  caliber::fuzz::write_file(file, data, size);
  const auto log = caliber::core::read_run_log(file);
  if (log.bad_lines < 0 || log.repaired_lines < 0) std::abort();
  return 0;
}
