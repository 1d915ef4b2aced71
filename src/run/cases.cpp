#include "run/cases.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>

#include "records/output_path.hpp"
#include "run/py_ops.hpp"
#include "settings/library_file.hpp"

namespace caliber::run {

namespace fs = std::filesystem;

namespace {
constexpr off_t kMaxOpFileBytes = 16 << 20;
}  // namespace

namespace {
// Each loaded library's first index in registered_ops(), in load order: registrations before the
// first library are the built-in corpus (static registration runs before main).
struct LoadedLibrary {
  std::size_t first = 0;
  std::string path;
  bool paired = false;  // side B of a paired A/B: kept out of corpus() (docs/ab.md)
};
std::vector<LoadedLibrary>& loaded_libraries() {
  static std::vector<LoadedLibrary> libs;
  return libs;
}
}  // namespace

std::string op_source(std::size_t index) {
  std::string source = kBuiltinSource;
  for (const auto& lib : loaded_libraries())
    if (index >= lib.first) source = lib.path;
  return source;
}

namespace {
// Whether registered_ops()[index] came from the paired (side B) library.
bool from_paired_library(std::size_t index) {
  bool paired = false;
  for (const auto& lib : loaded_libraries())
    if (index >= lib.first) paired = lib.paired;
  return paired;
}
}  // namespace

namespace {
// dlopen of a library whose constructor aborts or faults kills this process, and nothing here can
// catch it: the library is loaded first in a child, which must come back alive. A constructor
// that crashes only sometimes, or one that hangs past the probe's limit, still reaches dlopen or
// is refused as hanging (docs/limits.md).
std::optional<std::string> probe_in_child(const std::string& abs) {
  constexpr double kProbeLimitS = 30;
  const pid_t pid = ::fork();
  if (pid < 0) return std::nullopt;  // no probe: dlopen decides
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) {
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
    }
    ::_exit(::dlopen(abs.c_str(), RTLD_NOW | RTLD_LOCAL) != nullptr ? 0 : 3);
  }
  int status = 0;
  for (double waited = 0;; waited += 0.01) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (waited > kProbeLimitS) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return "did not finish loading within 30 s in a probe process (a constructor that "
             "hangs?)";
    }
    ::usleep(10000);
  }
  if (WIFSIGNALED(status))
    return std::string("killed a probe process that loaded it (") + ::strsignal(WTERMSIG(status)) +
           " in a constructor of the library); it is not loaded";
  return std::nullopt;  // loaded, or failed with a message dlopen gives again below
}
}  // namespace

void check_loadable(const std::string& path, const std::string& knob) {
  if (const auto why = core::shared_library_problem(path))
    throw SelectionError(knob + ": '" + path + "' " + *why);
  if (const auto why = probe_in_child(fs::absolute(path).lexically_normal().string()))
    throw SelectionError(knob + ": '" + path + "' " + *why);
}

void load_ops_library(const std::string& path) {
  auto& libs = loaded_libraries();
  const std::string abs = fs::absolute(path).lexically_normal().string();
  if (path.empty() ||
      std::any_of(libs.begin(), libs.end(), [&](const LoadedLibrary& l) { return l.path == abs; }))
    return;
  check_loadable(path, "--ops-lib");
  const std::size_t first = registered_ops().size();
  // RTLD_LOCAL: one library's symbols never stand in for another's (two libraries may share
  // helper names); both still resolve the public API from the caliber binary.
  void* h = ::dlopen(abs.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* err = ::dlerror();
    throw SelectionError("--ops-lib: '" + path +
                         "' could not be loaded: " + (err ? err : "unknown"));
  }
  libs.push_back({first, abs});  // the handle stays open: its ops live as long as the process
  if (registered_ops().size() == first)
    throw SelectionError("--ops-lib: '" + path +
                         "' registers no op (CALIBER_REGISTER_OP at namespace scope registers one; "
                         "or the library was already loaded under another path)");
  check_unique_names(first, abs, "--ops-lib");
}

std::optional<std::string> op_name_problem(const std::string& name) {
  const auto ok = [](unsigned char c) { return std::isalnum(c) != 0 || c == '_'; };
  if (name.empty()) return "is empty";
  if (name.size() > 128) return "is longer than 128 characters";
  if (!ok(static_cast<unsigned char>(name[0])))
    return "does not start with a letter, a digit or '_' (a name such as '--help' would reach "
           "a batch child as a flag)";
  for (const unsigned char c : name)
    if (!ok(c) && c != '.' && c != '-' && c != '+')
      return "holds a character other than letters, digits, '_', '.', '-' and '+'";
  return std::nullopt;
}

void check_unique_names(std::size_t first, const std::string& source, const std::string& knob) {
  const auto& all = registered_ops();
  // Names are unique per backend across the built-in corpus and every library: a second
  // registration would otherwise shadow or be shadowed silently.
  std::map<std::pair<std::string, std::string>, std::size_t> seen;  // (backend, name) -> index
  // The paired library (side B) shares names with side A by design: each side is checked alone.
  const bool paired_side = first < all.size() && from_paired_library(first);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (from_paired_library(i) != paired_side) continue;
    std::string name;
    try {
      name = all[i].factory()->info().name;
    } catch (const std::exception& e) {
      throw SelectionError(knob + ": an op of '" + op_source(i) +
                           "' throws when it describes itself: " + e.what());
    }
    if (i >= first)
      if (const auto why = op_name_problem(name))
        throw SelectionError(knob + ": an op of '" + op_source(i) + "' is named '" +
                             core::shown_path(name) + "', which " + *why);
    auto [it, fresh] = seen.emplace(std::make_pair(all[i].backend, name), i);
    if (fresh || i < first) continue;
    const std::string earlier = op_source(it->second);
    throw SelectionError(knob + ": op '" + name + "' (backend " + all[i].backend + ") from " +
                         source + " is already registered by " +
                         (earlier == source           ? std::string("the same source")
                          : earlier == kBuiltinSource ? std::string("the built-in corpus")
                                                      : earlier) +
                         "; rename the op in one of them");
  }
}

void adopt_registered_ops(std::size_t first, const std::string& source) {
  loaded_libraries().push_back({first, source});
  check_unique_names(first, source, source);
}

namespace {
std::map<std::string, std::vector<core::Shape>>& own_shapes() {
  static std::map<std::string, std::vector<core::Shape>> shapes;
  return shapes;
}
}  // namespace

void set_op_shapes(const std::string& op, std::vector<core::Shape> shapes) {
  own_shapes()[op] = std::move(shapes);
}

void load_paired_library(const std::string& path) {
  auto& libs = loaded_libraries();
  const std::string abs = fs::absolute(path).lexically_normal().string();
  const std::string knob = "--ops-lib-b";
  if (std::any_of(libs.begin(), libs.end(), [&](const LoadedLibrary& l) { return l.path == abs; }))
    throw SelectionError(knob + ": '" + path +
                         "' is already loaded as side A's library; allowed: another file (a copy "
                         "of the same build is fine)");
  check_loadable(path, knob);
  const std::size_t first = registered_ops().size();
  void* h = ::dlopen(abs.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* err = ::dlerror();
    throw SelectionError(knob + ": '" + path + "' could not be loaded: " + (err ? err : "unknown"));
  }
  libs.push_back({first, abs, true});
  if (registered_ops().size() == first)
    throw SelectionError(knob + ": '" + path +
                         "' registers no op (a library loaded under another path, or the same "
                         "file as side A's: the dynamic loader opens one file once)");
  check_unique_names(first, abs, knob);
}

std::map<std::string, OpEntry> paired_ops(const std::string& backend) {
  std::map<std::string, OpEntry> out;
  const auto& all = registered_ops();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].backend != backend || !from_paired_library(i)) continue;
    auto op = all[i].factory();
    OpInfo info = op->info();
    const std::string name = info.name;
    out.try_emplace(name, OpEntry{std::move(op), std::move(info), op_source(i)});
  }
  return out;
}

void load_ops_libraries(const std::vector<fs::path>& paths) {
  for (const auto& path : paths) load_ops_library(path.string());
}

std::vector<OpEntry> corpus(const std::string& backend) {
  std::vector<OpEntry> out;
  std::set<std::string> seen;
  const auto& all = registered_ops();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& r = all[i];
    if (r.backend != backend || from_paired_library(i)) continue;
    auto op = r.factory();
    OpInfo info = op->info();
    // Libraries cannot collide (load_ops_library refuses them); should the built-in corpus ever
    // register a name twice for one backend, the first registration wins.
    if (!seen.insert(info.name).second) continue;
    out.push_back({std::move(op), std::move(info), op_source(i)});
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

fs::path default_shapes_file(bool host_backend, const std::string& shapes_dir) {
  const fs::path rel = host_backend ? fs::path("host/core.yaml") : fs::path("core.yaml");
  std::vector<fs::path> roots;
  if (!shapes_dir.empty()) roots.emplace_back(shapes_dir);
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
  const std::string knob = "--op-file (OP_FILE): '" + core::shown_path(path) + "' ";
  // A fifo would block the open forever, a directory reads as empty.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw SelectionError(knob + "cannot be read (" + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode))
    throw SelectionError(knob + "is a directory; allowed: a file of op names");
  if (!S_ISREG(st.st_mode))
    throw SelectionError(knob +
                         "is not a regular file (a fifo or device); allowed: a file of op "
                         "names");
  if (st.st_size > kMaxOpFileBytes)
    throw SelectionError(knob + "is larger than 16 MiB; allowed: a file of op names");
  std::ifstream in(path);
  if (!in) throw SelectionError(knob + "cannot be read");
  std::vector<std::string> ops;
  std::string line;
  while (std::getline(in, line)) {
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    for (auto& op : core::split_list(line)) ops.push_back(std::move(op));
  }
  if (ops.empty()) throw SelectionError(knob + "names no op");
  return ops;
}

namespace {
std::string op_names(const std::vector<OpEntry>& ops) {
  std::string s;
  for (const auto& e : ops) s += (s.empty() ? "" : ", ") + e.info.name;
  return s.empty() ? "(none)" : s;
}
}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) noexcept {
  // Iterative matching with one backtrack point: the last * seen.
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {
bool has_wildcard(std::string_view s) {
  return s.find_first_of("*?") != std::string_view::npos;
}
std::string shape_text(const core::Shape& s) {
  std::string out;
  for (auto d : s) out += (out.empty() ? "" : "x") + std::to_string(d);
  return out;
}
}  // namespace

namespace {

// The ops a run names and the node filter: TEST_NODE (an op, an op glob, or either with a case
// filter in brackets), else OP and OP_FILE; empty names = every op.
struct Wanted {
  std::vector<std::string> names;
  std::string node_filter;
};

// Python suites (docs/python.md) are registered by python/caliber before the CLI runs; their ops
// are the default list when nothing else names ops.
Wanted with_suite_ops(Wanted w, const core::Knobs& k, const std::vector<OpEntry>& all,
                      const std::string& backend) {
  if (k.py_ops.empty()) return w;
  auto suite_ops = py_suite_ops(k.py_ops, all);
  if (suite_ops.empty())
    throw SelectionError("--py-ops: '" + k.py_ops + "' registers no op for backend " + backend);
  if (w.names.empty()) w.names = std::move(suite_ops);
  return w;
}

Wanted wanted_ops(const core::Knobs& k, const std::vector<OpEntry>& all,
                  const std::string& backend) {
  Wanted w{k.ops, ""};
  if (!k.op_file.empty()) {
    auto more = read_op_file(k.op_file);
    w.names.insert(w.names.end(), more.begin(), more.end());
  }
  if (k.node.empty()) return with_suite_ops(std::move(w), k, all, backend);
  auto br = k.node.find('[');
  const std::string op_part = k.node.substr(0, br);
  if (op_part.empty())
    throw SelectionError("--node (TEST_NODE): '" + core::shown_path(k.node) +
                         "' names no op before its '['; allowed: OP or OP[ID], '*' and '?' "
                         "matching");
  if (has_wildcard(op_part)) {
    // An op glob (m*, *[f32-*]): every op of the corpus whose name matches.
    w.names.clear();
    for (const auto& e : all)
      if (e.op && glob_match(op_part, e.info.name)) w.names.push_back(e.info.name);
    if (w.names.empty())
      throw SelectionError("--node (TEST_NODE): '" + core::shown_path(k.node) +
                           "' matches no op for backend " + backend + "; ops: " + op_names(all));
  } else {
    w.names = {op_part};
  }
  if (br != std::string::npos) w.node_filter = k.node;
  return with_suite_ops(std::move(w), k, all, backend);
}

// The named ops out of the corpus, in the order named (a repeated name once); none named: all.
std::vector<OpEntry> pick_ops(std::vector<OpEntry> all, const std::vector<std::string>& wanted,
                              const std::string& backend) {
  if (wanted.empty()) return all;
  std::vector<OpEntry> ops;
  for (const auto& name : wanted) {
    auto it = std::find_if(all.begin(), all.end(),
                           [&](const OpEntry& e) { return e.op && e.info.name == name; });
    if (it == all.end()) {
      bool dup = std::any_of(ops.begin(), ops.end(),
                             [&](const OpEntry& e) { return e.info.name == name; });
      if (dup) continue;
      // `--profile 5`: the flag's value is optional (--profile alone: 3), so 5 became an op.
      const bool number =
          !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
      throw SelectionError("unknown op '" + core::shown_path(name) + "' for backend " + backend +
                           "; ops: " + op_names(corpus(backend)) +
                           (number ? " (a count meant for --profile is written --profile=" + name +
                                         ": its value is optional, so a separate one is an op)"
                                   : std::string()));
    }
    ops.push_back(std::move(*it));
  }
  return ops;
}

// The op's dtypes that --dtypes keeps (all without it).
std::vector<DType> kept_dtypes(const OpEntry& e, const core::Knobs& k) {
  std::vector<DType> dtypes;
  for (DType d : e.info.dtypes) {
    if (k.dtypes.empty() ||
        std::find(k.dtypes.begin(), k.dtypes.end(), std::string(to_string(d))) != k.dtypes.end())
      dtypes.push_back(d);
  }
  return dtypes;
}

// One op's cases into sel: its shapes (--shape, else the op's own list, else its family's at the
// level) x variants x kept dtypes, filtered by the node filter, one case per node id. Returns
// whether the op kept any dtype.
bool add_op_cases(Selection& sel, const OpEntry& e, const core::Knobs& k,
                  const core::ShapeSet& shapes, const std::string& node_filter) {
  const std::vector<DType> dtypes = kept_dtypes(e, k);
  std::set<std::string> ids;
  auto& used = sel.used_shapes[e.info.name];
  std::set<core::Shape> used_set(used.begin(), used.end());  // linear scans made 40k shapes 11 s
  const auto own = own_shapes().find(e.info.name);
  // An op builder's inline shapes: the shape file's list of the op's own name still wins.
  const auto* built = registered_op_shapes(e.info.name);
  const auto op_shapes = !k.shapes.empty()           ? k.shapes
                         : own != own_shapes().end() ? own->second
                         : built != nullptr && !shapes.names_op(e.info.name)
                             ? *built
                             : shapes.shapes_for(e.info.name, e.info.family, sel.level);
  // Shapes given for this op by name (--shape, or the shape file's `ops:` entry of the op) must
  // have its dimensions: a shape of another arity is the user's mistake, refused, never a run
  // of skipped cases. A family's shapes serve many ops and are left to the op.
  const bool named_for_op = !k.shapes.empty() || (own == own_shapes().end() && built == nullptr &&
                                                  shapes.names_op(e.info.name));
  for (const auto& raw : op_shapes) {
    auto shape = e.op->canonical_shape(raw);
    if (named_for_op && !e.info.dim_names.empty() && shape.size() != e.info.dim_names.size()) {
      std::string dims;
      for (const auto& d : e.info.dim_names) dims += (dims.empty() ? "" : "x") + d;
      const std::string where =
          !k.shapes.empty()
              ? "--shape: '" + shape_text(raw) + "'"
              : "--shapes: " +
                    core::shown_path(k.shapes_file.empty() ? std::string("the shape file")
                                                           : k.shapes_file) +
                    ": ops: " + e.info.name + ": '" + shape_text(raw) + "'";
      throw SelectionError(where + " does not fit op " + e.info.name + " (its shape is " + dims +
                           ")");
    }
    if (used_set.insert(raw).second) used.push_back(raw);
    for (const auto& params : e.op->variants(sel.level == core::Level::comprehensive)) {
      for (DType d : dtypes) {
        Case c;
        c.op = e.info.name;
        c.dtype = d;
        c.shape = shape;
        c.dim_names = e.info.dim_names;
        c.params = params;
        if (!node_filter.empty() && !glob_match(node_filter, c.node_id())) continue;
        if (!ids.insert(c.node_id()).second) continue;  // shapes that collapse to one case
        sel.cases.push_back(std::move(c));
        sel.case_op.push_back(e.op.get());
      }
    }
  }
  return !dtypes.empty();
}

// A selection that names something yet runs nothing is a mistake: say which knob selected what.
void refuse_empty_parts(const Selection& sel, const core::Knobs& k, const Wanted& w,
                        bool any_dtype) {
  if (w.node_filter.empty() && any_dtype) {
    for (const auto& e : sel.ops)
      // Named ops, and every op of a library or suite (the built-in corpus may leave an op
      // without shapes at a level): no shapes is a mistake, not 0 cases.
      if ((!w.names.empty() || e.source != kBuiltinSource) && !kept_dtypes(e, k).empty() &&
          std::none_of(sel.cases.begin(), sel.cases.end(),
                       [&](const Case& c) { return c.op == e.info.name; }))
        throw SelectionError("op '" + e.info.name + "' has no shapes at level " +
                             std::string(core::to_string(k.level)) + " in " +
                             sel.shapes_file.string() + " (neither its own list nor family '" +
                             e.info.family + "'; an op builder's .shapes(...) gives it its own)");
  }
  if (!k.dtypes.empty() && !any_dtype) {
    std::string list;
    for (const auto& d : k.dtypes) list += (list.empty() ? "" : ",") + d;
    throw SelectionError("--dtypes: '" + list + "' is not supported by any selected op");
  }
  if (!w.node_filter.empty() && sel.cases.empty())
    throw SelectionError("--node (TEST_NODE): '" + core::shown_path(w.node_filter) +
                         "' matches no case at level " + std::string(core::to_string(k.level)) +
                         " (caliber list --cases shows the node ids)");
}

}  // namespace

Selection select_cases(const core::Knobs& k, const std::string& backend, bool host_backend) {
  load_ops_libraries(k.ops_lib);
  Selection sel;
  std::vector<OpEntry> all = corpus(backend);
  // A misspelt --capture-deny would let the op it meant poison the context: refused. (FlagGems'
  // op names are known only once pytest collects: a fed run does not come here.)
  for (const auto& name : k.capture_deny)
    if (std::none_of(all.begin(), all.end(), [&](const OpEntry& e) { return e.info.name == name; }))
      throw SelectionError("--capture-deny: '" + core::shown_path(name) +
                           "' is not an op for backend " + backend + "; ops: " + op_names(all));
  const Wanted w = wanted_ops(k, all, backend);
  sel.ops = pick_ops(std::move(all), w.names, backend);
  if (sel.ops.empty()) throw SelectionError("no op is registered for backend " + backend);

  sel.level = k.level;
  sel.shapes_file = k.shapes_file.empty() ? default_shapes_file(host_backend, k.shapes_dir)
                                          : fs::path(k.shapes_file);
  const core::ShapeSet shapes = core::ShapeSet::load(sel.shapes_file);
  bool any_dtype = false;
  for (const auto& e : sel.ops)
    any_dtype = add_op_cases(sel, e, k, shapes, w.node_filter) || any_dtype;
  refuse_empty_parts(sel, k, w, any_dtype);
  return sel;
}

}  // namespace caliber::run
