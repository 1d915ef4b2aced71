#include "settings/library_file.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace caliber::core {

namespace {

constexpr unsigned long long kMaxLibraryBytes = 4ULL << 30;

#if defined(__x86_64__)
constexpr int kMachine = EM_X86_64;
constexpr const char* kMachineName = "x86-64";
#elif defined(__aarch64__)
constexpr int kMachine = EM_AARCH64;
constexpr const char* kMachineName = "aarch64";
#else
constexpr int kMachine = -1;  // not checked on other hosts
constexpr const char* kMachineName = "this host";
#endif

bool read_at(int fd, void* buf, std::size_t n, off_t at) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, at);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
    at += r;
  }
  return true;
}

std::optional<std::string> elf_problem(int fd, unsigned long long size) {
  Elf64_Ehdr eh{};
  if (size < sizeof eh || !read_at(fd, &eh, sizeof eh, 0)) return "is too short to be a library";
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return "is not an ELF shared library (its first bytes are not \\x7fELF)";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64)
    return std::string("is a 32-bit ELF file; this caliber loads 64-bit ") + kMachineName +
           " libraries";
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) return "is a big-endian ELF file; this host is not";
  if (kMachine >= 0 && eh.e_machine != kMachine)
    return "is built for another architecture (ELF machine " + std::to_string(eh.e_machine) +
           "); this caliber loads " + kMachineName + " libraries";
  if (eh.e_type != ET_DYN) return "is an ELF file but not a shared object (build it with -shared)";
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 4096 ||
      eh.e_phoff > size || eh.e_phnum * sizeof(Elf64_Phdr) > size - eh.e_phoff)
    return "is cut short or damaged: its program headers lie past its end";
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!read_at(fd, ph.data(), ph.size() * sizeof(Elf64_Phdr), static_cast<off_t>(eh.e_phoff)))
    return "cannot be read";
  for (const auto& p : ph)
    if (p.p_type == PT_LOAD && (p.p_offset > size || p.p_filesz > size - p.p_offset))
      return "is cut short (" + std::to_string(size) + " bytes; a loadable segment ends at byte " +
             std::to_string(p.p_offset + p.p_filesz) + "): loading it would crash";
  if (eh.e_shoff != 0 &&
      (eh.e_shoff > size ||
       static_cast<unsigned long long>(eh.e_shnum) * eh.e_shentsize > size - eh.e_shoff))
    return "is cut short or damaged: its section headers lie past its end";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> shared_library_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::string("cannot be used: ") + std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "is a directory; allowed: a shared library file";
  if (!S_ISREG(st.st_mode)) return "is not a regular file (a fifo, device or socket)";
  if (st.st_size == 0) return "is empty";
  if (static_cast<unsigned long long>(st.st_size) > kMaxLibraryBytes) return "is larger than 4 GiB";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::string("cannot be read: ") + std::strerror(errno);
  struct stat fst {};
  std::optional<std::string> why;
  if (::fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode))
    why = "is not a regular file";
  else
    why = elf_problem(fd, static_cast<unsigned long long>(fst.st_size));
  ::close(fd);
  return why;
}

}  // namespace caliber::core
