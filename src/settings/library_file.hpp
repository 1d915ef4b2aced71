// Checks on a shared library named by the user (--ops-lib, --ops-lib-a/-b) before the dynamic
// loader sees it: a truncated file is mapped and faults (SIGBUS) inside dlopen, a fifo blocks it
// forever, and a library of another architecture gets a misleading message. None of these can be
// caught once dlopen runs, so they are refused first, by reading the file's ELF headers.
#pragma once

#include <optional>
#include <string>

namespace caliber::core {

// Why `path` is not a shared library this process can load (it does not exist, is not a regular
// file, is empty or larger than 4 GiB, is no ELF file, is of another class, byte order or
// machine, is not a shared object, or is cut short: a header or loadable segment lies past its
// end); nullopt when it looks loadable. Never blocks (a fifo is refused from its stat).
[[nodiscard]] std::optional<std::string> shared_library_problem(const std::string& path);

}  // namespace caliber::core
