#include "backends/registry.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "backends/builtin.hpp"

namespace caliber::backends {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

const std::vector<const Backend*>& all_backends() {
  static const std::vector<const Backend*> list = {
      &cuda_backend(), &rocm_backend(), &musa_backend(), &ascend_backend(), &cpu_backend()};
  return list;
}

const Backend* find_backend(std::string_view name_or_alias) {
  for (const Backend* b : all_backends()) {
    if (iequals(b->name(), name_or_alias)) return b;
    for (const std::string& alias : b->aliases()) {
      if (iequals(alias, name_or_alias)) return b;
    }
  }
  return nullptr;
}

const Backend& resolve_backend(std::string_view requested) {
  if (requested.empty() || iequals(requested, "auto")) {
    for (const Backend* b : all_backends()) {
      if (!b->capabilities().host && !b->enumerate().empty()) return *b;
    }
    return cpu_backend();
  }
  if (const Backend* b = find_backend(requested)) return *b;
  throw std::invalid_argument("unknown backend '" + std::string(requested) + "'; valid: auto, " +
                              valid_backend_names());
}

std::string valid_backend_names() {
  std::string out;
  for (const Backend* b : all_backends()) {
    if (!out.empty()) out += ", ";
    out += b->name();
    const auto aliases = b->aliases();
    if (!aliases.empty()) {
      out += " (";
      for (std::size_t i = 0; i < aliases.size(); ++i) out += (i ? ", " : "") + aliases[i];
      out += ")";
    }
  }
  return out;
}

}  // namespace caliber::backends

namespace caliber::backends {

namespace {
DeviceDecorator& device_decorator() {
  static DeviceDecorator d;
  return d;
}
}  // namespace

void set_device_decorator(DeviceDecorator decorator) {
  device_decorator() = std::move(decorator);
}

std::unique_ptr<Device> open_device(const Backend& backend, int visible_index, std::uint64_t seed) {
  auto dev = backend.open(visible_index, seed);
  if (device_decorator() && dev) return device_decorator()(std::move(dev));
  return dev;
}

}  // namespace caliber::backends
