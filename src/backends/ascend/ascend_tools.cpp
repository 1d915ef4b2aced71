#include "backends/ascend/ascend_tools.hpp"

#include <cctype>
#include <charconv>
#include <sstream>

#include "backends/probe.hpp"

namespace caliber::backends::ascend {
namespace {

std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// "| a | b | c |" -> {"a", "b", "c"}
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool started = false;
  for (char c : line) {
    if (c == '|') {
      if (started) out.push_back(trim(cur));
      started = true;
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// "3339 / 65536" at `pos` in the words of a cell: the pair (used, total) in MB.
bool usage_pair(const std::vector<std::string>& w, std::size_t pos, std::uint64_t& used,
                std::uint64_t& total) {
  if (pos + 2 >= w.size() || w[pos + 1] != "/") return false;
  if (!is_number(w[pos]) || !is_number(w[pos + 2])) return false;
  // Digits past 64 bits threw std::out_of_range out of the parser (found by fuzz_smi).
  auto read = [](const std::string& s, std::uint64_t& v) {
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size();
  };
  return read(w[pos], used) && read(w[pos + 2], total);
}

// A chip row's usage cell ("0  0 / 0  3339 / 65536"): Memory-Usage then HBM-Usage in MB; cards
// without HBM report their DDR in Memory-Usage.
void set_memory(DeviceDesc& d, const std::string& cell) {
  // Wide values close up the spacing ("20480/ 65536"): separate the slashes first.
  std::string usage_text;
  for (char ch : cell) usage_text += ch == '/' ? std::string(" / ") : std::string(1, ch);
  const auto usage = words(usage_text);
  std::uint64_t mem_used = 0, mem_total = 0, hbm_used = 0, hbm_total = 0;
  std::size_t pos = 1;
  if (usage_pair(usage, pos, mem_used, mem_total)) pos += 3;
  usage_pair(usage, pos, hbm_used, hbm_total);
  const std::uint64_t mb = 1024ULL * 1024;
  if (hbm_total > 0) {
    d.mem_total = hbm_total * mb;
    d.mem_used = hbm_used * mb;
  } else {
    d.mem_total = mem_total * mb;
    d.mem_used = mem_used * mb;
  }
}

}  // namespace

std::vector<DeviceDesc> parse_npu_smi_info(const std::string& text) {
  std::istringstream in(text);
  std::vector<DeviceDesc> out;
  std::string version;
  std::string line;
  bool in_table = false;
  DeviceDesc* pending = nullptr;  // the device whose second row (chip, bus, memory) comes next
  std::string pending_npu, pending_name, pending_health;
  while (std::getline(in, line)) {
    if (line.find("npu-smi") != std::string::npos && line.find("Version:") != std::string::npos) {
      version = trim(line.substr(line.find("Version:") + 8));
      if (!version.empty() && version.back() == '|') version.pop_back();
      version = trim(version);
      continue;
    }
    if (line.find("Process id") != std::string::npos ||
        line.find("Process name") != std::string::npos) {
      break;  // the process table: no more devices
    }
    if (line.find("+===") != std::string::npos) {
      in_table = true;
      continue;
    }
    if (!in_table || line.empty() || line[0] != '|') continue;
    const auto c = cells(line);
    if (c.size() < 3) continue;
    const auto first = words(c[0]);
    if (first.empty() || !is_number(first[0])) continue;
    // Chip rows carry the PCI bus id in their second cell; NPU rows carry the health there.
    const bool chip_row = c[1].find(':') != std::string::npos;
    if (!chip_row && first.size() >= 2) {
      // "| 0     910B3 | OK | 93.2  37  0 / 0 |": NPU id, name, health
      pending_npu = first[0];
      pending_name = first[1];
      for (std::size_t i = 2; i < first.size(); ++i) pending_name += " " + first[i];
      pending_health = c[1];
      DeviceDesc d;
      d.index = static_cast<int>(out.size());
      d.physical_id = std::to_string(out.size());
      d.name = pending_name;
      d.driver_version = version;
      d.extra["npu_id"] = pending_npu;
      d.extra["health"] = pending_health;
      out.push_back(std::move(d));
      pending = &out.back();
    } else if (chip_row) {
      // "| 0 | 0000:C1:00.0 | 0  0 / 0  3339 / 65536 |": chip id, bus id, usage
      DeviceDesc* d = pending;
      if (d == nullptr) {
        // Another chip of the same card (310P duo cards list two chip rows under one NPU row).
        if (out.empty()) continue;
        out.push_back(out.back());
        d = &out.back();
        d->index = static_cast<int>(out.size() - 1);
        d->physical_id = std::to_string(out.size() - 1);
        d->mem_total = d->mem_used = 0;
      }
      d->extra["chip_id"] = first[0];
      d->extra["pci_bus_id"] = trim(c[1]);
      set_memory(*d, c[2]);
      pending = nullptr;
    }
  }
  return out;
}

}  // namespace caliber::backends::ascend
