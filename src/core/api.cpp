// Implementation of the public API's value types (include/caliber/): dtype, case, config, op
// registry.
#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>

#include "caliber/caliber.hpp"
#include "caliber/size.hpp"

namespace caliber {

namespace {
struct DTypeRow {
  DType t;
  std::string_view name;
  std::size_t size;
  bool floating;
};
constexpr DTypeRow kDTypes[] = {
    {DType::f32, "f32", 4, true}, {DType::f16, "f16", 2, true},  {DType::bf16, "bf16", 2, true},
    {DType::f64, "f64", 8, true}, {DType::i32, "i32", 4, false}, {DType::i64, "i64", 8, false},
    {DType::c64, "c64", 8, true},
};
// Spellings users of the old runner type (torch names) map onto ours.
struct Alias {
  std::string_view alias;
  DType t;
};
constexpr Alias kAliases[] = {
    {"fp32", DType::f32},      {"float32", DType::f32}, {"float", DType::f32},
    {"fp16", DType::f16},      {"float16", DType::f16}, {"half", DType::f16},
    {"bfloat16", DType::bf16}, {"fp64", DType::f64},    {"float64", DType::f64},
    {"double", DType::f64},    {"int32", DType::i32},   {"int", DType::i32},
    {"int64", DType::i64},     {"long", DType::i64},    {"complex64", DType::c64},
    {"cfloat", DType::c64}};
const DTypeRow& row(DType t) {
  for (const auto& r : kDTypes)
    if (r.t == t) return r;
  return kDTypes[0];
}
}  // namespace

std::string_view to_string(DType t) noexcept {
  return row(t).name;
}
std::size_t size_of(DType t) noexcept {
  return row(t).size;
}
bool is_floating(DType t) noexcept {
  return row(t).floating;
}

std::optional<DType> parse_dtype(std::string_view s) noexcept {
  for (const auto& r : kDTypes)
    if (r.name == s) return r.t;
  for (const auto& a : kAliases)
    if (a.alias == s) return a.t;
  return std::nullopt;
}

std::vector<DType> all_dtypes() {
  std::vector<DType> v;
  for (const auto& r : kDTypes) v.push_back(r.t);
  return v;
}

std::string Case::size_detail() const {
  std::string out;
  if (!dim_names.empty() && dim_names.size() == shape.size()) {
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (i) out += '-';
      out += dim_names[i] + std::to_string(shape[i]);
    }
  } else {
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (i) out += 'x';
      out += std::to_string(shape[i]);
    }
  }
  for (const auto& [k, v] : params) out += "-" + k + v;
  return out;
}

std::string Case::node_id() const {
  return op + "[" + std::string(to_string(dtype)) + "-" + size_detail() + "]";
}

std::int64_t Case::numel() const {
  return count_of(shape);
}

namespace {
std::string dims_text(const std::vector<std::int64_t>& dims) {
  std::string out;
  for (auto d : dims) out += (out.empty() ? "" : " x ") + std::to_string(d);
  return out;
}
[[noreturn]] void overflow(const char* what, std::int64_t a, std::int64_t b) {
  throw SizeOverflow(std::string("too large: ") + std::to_string(a) + " " + what + " " +
                     std::to_string(b) + " is past the limit of 2^56");
}
}  // namespace

std::int64_t count_mul(std::int64_t a, std::int64_t b) {
  if (a < 0 || b < 0 || a > kMaxCount || b > kMaxCount) overflow("*", a, b);
  // Both fit 2^56, so a product past the limit is detected without wrapping: test by division.
  if (a != 0 && b > kMaxCount / a) overflow("*", a, b);
  return a * b;
}

std::int64_t count_add(std::int64_t a, std::int64_t b) {
  if (a < 0 || b < 0 || a > kMaxCount || b > kMaxCount || a + b > kMaxCount) overflow("+", a, b);
  return a + b;
}

std::int64_t count_of(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (auto d : dims) {
    if (d < 0 || d > kMaxCount || (n != 0 && d > kMaxCount / n))
      throw SizeOverflow("too large: " + dims_text(dims) + " = " + real_count(dims) +
                         " elements, past the limit of 2^56");
    n *= d;
  }
  return n;
}

std::size_t bytes_of(std::int64_t count, DType t) {
  return static_cast<std::size_t>(count_mul(count, static_cast<std::int64_t>(size_of(t))));
}

std::string real_count(const std::vector<std::int64_t>& dims) {
  long double n = 1;
  for (auto d : dims) n *= static_cast<long double>(d);
  std::ostringstream os;
  if (n < 1e15L) {
    os << static_cast<long long>(n);
  } else {
    os.precision(3);
    os << n;
  }
  return os.str();
}

std::string Case::param(const std::string& key, const std::string& fallback) const {
  auto it = params.find(key);
  return it == params.end() ? fallback : it->second;
}

std::int64_t Config::get(std::string_view name, std::int64_t fallback) const {
  for (const auto& [k, v] : values)
    if (k == name) return v;
  return fallback;
}

bool Config::has(std::string_view name) const {
  return std::any_of(values.begin(), values.end(),
                     [&](const auto& kv) { return kv.first == name; });
}

std::string Config::str() const {
  std::string out;
  for (const auto& [k, v] : values) {
    if (!out.empty()) out += ',';
    out += k + "=" + std::to_string(v);
  }
  return out;
}

std::optional<Config> Config::parse(std::string_view s) {
  Config c;
  while (!s.empty()) {
    auto comma = s.find(',');
    auto item = s.substr(0, comma);
    auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) return std::nullopt;
    std::int64_t v = 0;
    auto num = item.substr(eq + 1);
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (ec != std::errc() || p != num.data() + num.size()) return std::nullopt;
    const std::string name(item.substr(0, eq));
    // One value a parameter: a text naming it twice (tm=16,tm=0) says two configs at once.
    for (const auto& [n, value] : c.values)
      if (n == name) return std::nullopt;
    c.values.emplace_back(name, v);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
    if (s.empty()) return std::nullopt;  // a trailing comma: a parameter missing
  }
  return c;
}

std::int64_t bucket(std::int64_t value, KeyStrategy s) noexcept {
  switch (s) {
    case KeyStrategy::exact:
      return value;
    case KeyStrategy::log2: {
      if (value <= 1) return 1;
      std::int64_t p = 1;
      while (p < value && p < (std::int64_t{1} << 62)) p <<= 1;
      return p;
    }
    case KeyStrategy::align32:
      if (value <= 0) return 0;
      return (value + 31) / 32 * 32;
  }
  return value;
}

std::string tune_key(const std::vector<KeyArg>& args) {
  std::string out;
  for (const auto& a : args) {
    if (!out.empty()) out += ',';
    out += a.name + "=" + std::to_string(bucket(a.value, a.strategy));
  }
  return out;
}

namespace {
std::vector<RegisteredOp>& op_list() {
  static std::vector<RegisteredOp> list;
  return list;
}
}  // namespace

bool register_op(const std::string& backend, OpFactory factory) {
  op_list().push_back({backend, std::move(factory)});
  return true;
}

const std::vector<RegisteredOp>& registered_ops() {
  return op_list();
}

namespace {
std::map<std::string, std::vector<std::vector<std::int64_t>>>& op_shape_lists() {
  static std::map<std::string, std::vector<std::vector<std::int64_t>>> shapes;
  return shapes;
}
}  // namespace

bool register_op_shapes(const std::string& op, std::vector<std::vector<std::int64_t>> shapes) {
  op_shape_lists()[op] = std::move(shapes);
  return true;
}

const std::vector<std::vector<std::int64_t>>* registered_op_shapes(const std::string& op) {
  const auto it = op_shape_lists().find(op);
  return it == op_shape_lists().end() ? nullptr : &it->second;
}

}  // namespace caliber
