#include "run/cases.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>

namespace caliber::run {

namespace fs = std::filesystem;

void load_ops_library(const std::string& path) {
  static std::set<std::string> loaded;
  if (path.empty() || loaded.count(path)) return;
  if (!fs::exists(path)) throw SelectionError("--ops-lib: '" + path + "' does not exist");
  void* h = ::dlopen(fs::absolute(path).c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr) {
    const char* err = ::dlerror();
    throw SelectionError("--ops-lib: '" + path +
                         "' could not be loaded: " + (err ? err : "unknown"));
  }
  loaded.insert(path);  // the handle stays open: its ops live as long as the process
}

std::vector<OpEntry> corpus(const std::string& backend) {
  std::vector<OpEntry> out;
  std::set<std::string> seen;
  for (const auto& r : registered_ops()) {
    if (r.backend != backend) continue;
    auto op = r.factory();
    OpInfo info = op->info();
    if (!seen.insert(info.name).second) continue;  // first registration wins
    out.push_back({std::move(op), std::move(info)});
  }
  return out;
}

namespace {
fs::path exe_dir() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(".") : p.parent_path();
}
}  // namespace

fs::path default_shapes_file(bool host_backend) {
  const fs::path rel = host_backend ? fs::path("host/core.yaml") : fs::path("core.yaml");
  std::vector<fs::path> roots;
  if (const char* env = std::getenv("CALIBER_SHAPES_DIR")) roots.emplace_back(env);
  roots.push_back(exe_dir() / "../share/caliber/shapes");
#ifdef CALIBER_SOURCE_DIR
  roots.push_back(fs::path(CALIBER_SOURCE_DIR) / "shapes");
#endif
  roots.push_back(exe_dir() / "../shapes");
  for (const auto& r : roots) {
    std::error_code ec;
    if (fs::exists(r / rel, ec)) return fs::weakly_canonical(r / rel, ec);
  }
  return roots.front() / rel;  // does not exist: loading it reports the path
}

std::vector<std::string> read_op_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw SelectionError("--op-file (OP_FILE): '" + path + "' cannot be read");
  std::vector<std::string> ops;
  std::string line;
  while (std::getline(in, line)) {
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    for (auto& op : core::split_list(line)) ops.push_back(std::move(op));
  }
  if (ops.empty()) throw SelectionError("--op-file (OP_FILE): '" + path + "' names no op");
  return ops;
}

namespace {
std::string op_names(const std::vector<OpEntry>& ops) {
  std::string s;
  for (const auto& e : ops) s += (s.empty() ? "" : ", ") + e.info.name;
  return s.empty() ? "(none)" : s;
}
}  // namespace

Selection select_cases(const core::Knobs& k, const std::string& backend, bool host_backend) {
  load_ops_library(k.ops_lib);
  Selection sel;
  std::vector<OpEntry> all = corpus(backend);

  // Which ops: TEST_NODE, or OP/OP_FILE, or all.
  std::vector<std::string> wanted = k.ops;
  std::string node_filter;
  if (!k.op_file.empty()) {
    auto more = read_op_file(k.op_file);
    wanted.insert(wanted.end(), more.begin(), more.end());
  }
  if (!k.node.empty()) {
    auto br = k.node.find('[');
    wanted = {k.node.substr(0, br)};
    if (br != std::string::npos) node_filter = k.node;
  }
  if (wanted.empty()) {
    // Test ops exist only when CALIBER_TEST_OPS=1 registered them; then they are part of the
    // corpus.
    for (auto& e : all) sel.ops.push_back(std::move(e));
  } else {
    for (const auto& name : wanted) {
      auto it = std::find_if(all.begin(), all.end(),
                             [&](const OpEntry& e) { return e.op && e.info.name == name; });
      if (it == all.end()) {
        bool dup = std::any_of(sel.ops.begin(), sel.ops.end(),
                               [&](const OpEntry& e) { return e.info.name == name; });
        if (dup) continue;
        throw SelectionError("unknown op '" + name + "' for backend " + backend +
                             "; ops: " + op_names(corpus(backend)));
      }
      sel.ops.push_back(std::move(*it));
    }
  }
  if (sel.ops.empty()) throw SelectionError("no op is registered for backend " + backend);

  sel.level = *core::parse_level(k.level);
  sel.shapes_file =
      k.shapes_file.empty() ? default_shapes_file(host_backend) : fs::path(k.shapes_file);
  core::ShapeSet shapes = core::ShapeSet::load(sel.shapes_file);

  bool any_dtype = false;
  for (const auto& e : sel.ops) {
    std::vector<DType> dtypes;
    for (DType d : e.info.dtypes) {
      if (k.dtypes.empty() ||
          std::find(k.dtypes.begin(), k.dtypes.end(), std::string(to_string(d))) != k.dtypes.end())
        dtypes.push_back(d);
    }
    if (!dtypes.empty()) any_dtype = true;
    std::set<std::string> ids;
    auto& used = sel.used_shapes[e.info.name];
    std::set<core::Shape> used_set(used.begin(), used.end());  // linear scans made 40k shapes 11 s
    for (const auto& raw : shapes.shapes_for(e.info.name, e.info.family, sel.level)) {
      auto shape = e.op->canonical_shape(raw);
      if (used_set.insert(raw).second) used.push_back(raw);
      for (const auto& params : e.op->variants(sel.level == core::Level::comprehensive)) {
        for (DType d : dtypes) {
          Case c;
          c.op = e.info.name;
          c.dtype = d;
          c.shape = shape;
          c.dim_names = e.info.dim_names;
          c.params = params;
          if (!node_filter.empty() && c.node_id() != node_filter) continue;
          if (!ids.insert(c.node_id()).second) continue;  // shapes that collapse to one case
          sel.cases.push_back(std::move(c));
          sel.case_op.push_back(e.op.get());
        }
      }
    }
  }
  if (!wanted.empty() && node_filter.empty()) {
    for (const auto& e : sel.ops)
      if (std::none_of(sel.cases.begin(), sel.cases.end(),
                       [&](const Case& c) { return c.op == e.info.name; }) &&
          any_dtype)
        throw SelectionError("op '" + e.info.name + "' has no shapes at level " + k.level + " in " +
                             sel.shapes_file.string() + " (neither its own list nor family '" +
                             e.info.family + "')");
  }
  if (!k.dtypes.empty() && !any_dtype) {
    std::string list;
    for (const auto& d : k.dtypes) list += (list.empty() ? "" : ",") + d;
    throw SelectionError("--dtypes: '" + list + "' is not supported by any selected op");
  }
  if (!node_filter.empty() && sel.cases.empty())
    throw SelectionError("--node (TEST_NODE): '" + node_filter + "' matches no case at level " +
                         k.level + " (caliber list --cases shows the node ids)");
  return sel;
}

}  // namespace caliber::run
