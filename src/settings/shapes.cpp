#include "settings/shapes.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace caliber::core {

namespace {

std::string where(const std::string& source, const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.is_null() || m.line < 0) return source;
  return source + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

// A value of the file quoted in a message only where it looks like a shape file's own word (a
// name or a number); anything else (the line of a file that is no shape file, /etc/shadow) is
// described, never echoed.
std::string quoted(const std::string& v) {
  const bool plain = !v.empty() && v.size() <= 64 && std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
  });
  return plain ? "'" + v + "'" : "(a value of " + std::to_string(v.size()) + " bytes, not shown)";
}

[[noreturn]] void fail(const std::string& source, const YAML::Node& n, const std::string& what) {
  throw ShapeError(where(source, n) + ": " + what);
}

std::string key_of(const YAML::Node& k, const std::string& source) {
  if (!k.IsScalar()) fail(source, k, "a key must be a plain name");
  return k.Scalar();
}

std::string read_text(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    throw ShapeError(file.string() + ": cannot read shape file: " +
                     (std::filesystem::exists(file, ec) ? "not a regular file" : "no such file"));
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ShapeError(file.string() + ": cannot read shape file: " + std::strerror(errno));
  const auto size = std::filesystem::file_size(file, ec);
  if (!ec && size > kMaxShapeFileBytes)
    throw ShapeError(file.string() + ": shape file of " + std::to_string(size) +
                     " bytes is too large (at most " + std::to_string(kMaxShapeFileBytes) + ")");
  std::stringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw ShapeError(file.string() + ": cannot read shape file");
  return buf.str();
}

YAML::Node parse_yaml(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw ShapeError(source + ": malformed YAML at line " + std::to_string(e.mark.line + 1) +
                     ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  } catch (const YAML::Exception& e) {
    throw ShapeError(source + ": malformed YAML: " + e.what());
  }
}

std::int64_t parse_dim(const YAML::Node& n, const std::string& source) {
  if (!n.IsScalar()) fail(source, n, "a dimension must be a positive integer");
  const std::string& s = n.Scalar();
  const bool digits =
      !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) {
    fail(source, n, "dimension " + quoted(s) + " is not a positive integer");
  }
  std::int64_t v = 0;
  for (char c : s) {
    const int d = c - '0';
    if (v > (std::numeric_limits<std::int64_t>::max() - d) / 10) {
      fail(source, n, "dimension " + quoted(s) + " is too large");
    }
    v = v * 10 + d;
  }
  if (v <= 0) fail(source, n, "dimension " + quoted(s) + " is not positive");
  return v;
}

// `total`: the shapes the file and its includes have given so far (kMaxShapesPerFile), counted
// before a list is expanded, so an alias repeated many times costs no more than the ceiling.
std::vector<Shape> parse_shape_list(const YAML::Node& n, const std::string& source,
                                    const std::string& what, std::size_t& total) {
  if (!n.IsSequence()) fail(source, n, what + ": expected a list of shapes like [[64, 64]]");
  if (n.size() > kMaxShapesPerList)
    fail(source, n,
         what + ": " + std::to_string(n.size()) + " shapes are too many (at most " +
             std::to_string(kMaxShapesPerList) + " per list)");
  if (n.size() > kMaxShapesPerFile - total)
    fail(source, n,
         what + ": its " + std::to_string(n.size()) + " shapes take the shape file past " +
             std::to_string(kMaxShapesPerFile) +
             " shapes in all (a list counts each time it is used, a YAML alias included; " +
             std::to_string(total) + " before it)");
  total += n.size();
  std::vector<Shape> out;
  for (const auto& s : n) {
    if (!s.IsSequence() || s.size() == 0) {
      fail(source, s, what + ": a shape must be a non-empty list of dimensions like [64, 64]");
    }
    if (s.size() > kMaxDims)
      fail(source, s,
           what + ": a shape of " + std::to_string(s.size()) +
               " dimensions has too many (at most " + std::to_string(kMaxDims) + ")");
    Shape shape;
    for (const auto& d : s) shape.push_back(parse_dim(d, source));
    out.push_back(std::move(shape));
  }
  return out;
}

// In order, without duplicates; a set keeps it O(n log n) (40k shapes took 11.6 s quadratic).
void append_unique(std::vector<Shape>& into, const std::vector<Shape>& from) {
  std::set<Shape> seen(into.begin(), into.end());
  for (const auto& s : from) {
    if (seen.insert(s).second) into.push_back(s);
  }
}

// Op families are named by the corpus (elementwise, reduce) and by the shape files (pointwise,
// reduction, as FlagGems' core_shapes.yaml names them); either spelling finds the other's list.
const std::vector<Shape>* family_list(const std::map<std::string, std::vector<Shape>>& families,
                                      const std::string& family) {
  static const std::map<std::string, std::string> aliases = {{"elementwise", "pointwise"},
                                                             {"pointwise", "elementwise"},
                                                             {"reduce", "reduction"},
                                                             {"reduction", "reduce"}};
  if (auto it = families.find(family); it != families.end()) return &it->second;
  if (auto a = aliases.find(family); a != aliases.end()) {
    if (auto it = families.find(a->second); it != families.end()) return &it->second;
  }
  return nullptr;
}

}  // namespace

// The files being included (a cycle check) and those read already (each is read once), and the
// shapes given so far by the file and its includes (kMaxShapesPerFile).
struct Includes {
  std::vector<std::filesystem::path> stack;
  std::set<std::filesystem::path> done;
  std::size_t shapes = 0;
};

class ShapeLoader {
 public:
  static ShapeSet parse(const std::string& text, const std::filesystem::path& base_dir,
                        const std::string& source) {
    ShapeSet set;
    const YAML::Node root = parse_yaml(text, source);
    if (!root.IsDefined() || root.IsNull()) throw ShapeError(source + ": empty shape file");
    if (!root.IsMap()) fail(source, root, "a shape file must be a map (families, ops, ...)");
    Includes stack;
    for (const auto& kv : root) {
      const std::string key = key_of(kv.first, source);
      const YAML::Node& v = kv.second;
      if (key == "families") {
        read_families(v, set.core_, source, stack.shapes);
      } else if (key == "ops") {
        read_ops(v, set.core_, source, stack.shapes);
      } else if (key == "comprehensive") {
        read_additions(v, set, base_dir, source, stack);
      } else if (key == "level") {
        const auto l = v.IsScalar() ? parse_word<Level>(v.Scalar()) : std::nullopt;
        if (!l) fail(source, v, "level must be core or comprehensive");
        set.declared_level_ = l;
      } else if (key == "source") {
        if (!v.IsScalar()) fail(source, v, "source must be a file name");
      } else {
        fail(source, kv.first,
             "unknown key " + quoted(key) +
                 " (allowed: families, ops, comprehensive, level, source)");
      }
    }
    return set;
  }

 private:
  using Table = ShapeSet::Table;

  static void read_families(const YAML::Node& n, Table& t, const std::string& source,
                            std::size_t& total) {
    if (!n.IsMap()) fail(source, n, "families must be a map of family name to shape list");
    for (const auto& kv : n) {
      const std::string fam = key_of(kv.first, source);
      append_unique(t.families[fam], parse_shape_list(kv.second, source, "family " + fam, total));
    }
  }

  static void read_ops(const YAML::Node& n, Table& t, const std::string& source,
                       std::size_t& total) {
    if (!n.IsMap()) fail(source, n, "ops must be a map of op name to a shape list or {family: F}");
    for (const auto& kv : n) {
      const std::string op = key_of(kv.first, source);
      const YAML::Node& v = kv.second;
      if (v.IsMap()) {
        if (v.size() != 1 || !v["family"] || !v["family"].IsScalar()) {
          fail(source, v, "op " + op + ": expected a shape list or {family: NAME}");
        }
        const std::string fam = v["family"].Scalar();
        if (auto it = t.op_family.find(op); it != t.op_family.end() && it->second != fam) {
          fail(source, v, "op " + op + " is mapped to both " + it->second + " and " + fam);
        }
        t.op_family[op] = fam;
      } else {
        append_unique(t.ops[op], parse_shape_list(v, source, "op " + op, total));
      }
    }
  }

  // `comprehensive:` and every file it includes share one layout: families, ops, include.
  static void read_additions(const YAML::Node& n, ShapeSet& set,
                             const std::filesystem::path& base_dir, const std::string& source,
                             Includes& stack) {
    if (n.IsNull()) return;
    if (!n.IsMap()) fail(source, n, "comprehensive must be a map (families, ops, include)");
    for (const auto& kv : n) {
      const std::string key = key_of(kv.first, source);
      const YAML::Node& v = kv.second;
      if (key == "families") {
        read_families(v, set.extra_, source, stack.shapes);
      } else if (key == "ops") {
        read_ops(v, set.extra_, source, stack.shapes);
      } else if (key == "include") {
        if (!v.IsSequence()) fail(source, v, "include must be a list of file names");
        for (const auto& f : v) {
          if (!f.IsScalar()) fail(source, f, "include: expected a file name");
          include(confined(base_dir, f, source), set, stack);
        }
      } else {
        fail(source, kv.first,
             "unknown key " + quoted(key) + " in the additions (allowed: families, ops, include)");
      }
    }
  }

  // An included file lies in the including file's directory tree: a relative name without
  // `..`, and no symbolic link on the way out of the tree, unless CALIBER_SHAPES_INCLUDE_ANY=1
  // allows any path (a shape file from elsewhere must not read /etc/shadow as a shape list).
  static std::filesystem::path confined(const std::filesystem::path& base_dir, const YAML::Node& f,
                                        const std::string& source) {
    const std::filesystem::path name = f.Scalar();
    const std::filesystem::path file = base_dir / name;
    const char* any = std::getenv("CALIBER_SHAPES_INCLUDE_ANY");
    if (any != nullptr && std::string(any) == "1") return file;
    const auto refuse = [&](const std::string& why) {
      fail(source, f,
           "include: '" + name.string().substr(0, 200) + "' " + why +
               "; allowed: a file in this file's folder or below (CALIBER_SHAPES_INCLUDE_ANY=1 "
               "allows any path)");
    };
    if (name.is_absolute()) refuse("is an absolute path");
    for (const auto& part : name)
      if (part == "..") refuse("leaves this file's folder (..)");
    std::error_code ec;
    const auto dir = std::filesystem::weakly_canonical(base_dir.empty() ? "." : base_dir, ec);
    const auto real = std::filesystem::weakly_canonical(file, ec);
    auto d = dir.begin();
    auto r = real.begin();
    for (; d != dir.end(); ++d, ++r)
      if (r == real.end() || *r != *d) refuse("leads out of this file's folder (a symbolic link)");
    return file;
  }

  static void include(const std::filesystem::path& file, ShapeSet& set, Includes& inc) {
    const std::filesystem::path norm = file.lexically_normal();
    if (std::find(inc.stack.begin(), inc.stack.end(), norm) != inc.stack.end()) {
      throw ShapeError(file.string() + ": included again from itself (include cycle)");
    }
    // A file read once has added all it adds (duplicates are dropped): reading it again for a
    // second includer only costs time, exponential in a fan-out of includes.
    if (inc.done.count(norm)) return;
    if (inc.stack.size() >= kMaxIncludeDepth)
      throw ShapeError(file.string() + ": includes nested more than " +
                       std::to_string(kMaxIncludeDepth) + " deep");
    if (inc.done.size() >= kMaxIncludeFiles)
      throw ShapeError(file.string() + ": more than " + std::to_string(kMaxIncludeFiles) +
                       " files included");
    const std::string source = file.string();
    const YAML::Node root = parse_yaml(read_text(file), source);
    inc.done.insert(norm);
    if (!root.IsDefined() || root.IsNull()) return;
    inc.stack.push_back(norm);
    read_additions(root, set, file.parent_path(), source, inc);
    inc.stack.pop_back();
  }
};

ShapeSet ShapeSet::load(const std::filesystem::path& file) {
  return ShapeLoader::parse(read_text(file), file.parent_path(), file.string());
}

ShapeSet ShapeSet::parse(const std::string& yaml_text, const std::filesystem::path& base_dir) {
  return ShapeLoader::parse(yaml_text, base_dir, "<text>");
}

ShapeSet ShapeSet::parse(const std::string& yaml_text, const std::filesystem::path& base_dir,
                         const std::string& source_name) {
  return ShapeLoader::parse(yaml_text, base_dir, source_name);
}

std::vector<Shape> ShapeSet::shapes_for(const std::string& op, const std::string& family,
                                        Level level) const {
  std::string fam = family;
  if (auto it = core_.op_family.find(op); it != core_.op_family.end()) fam = it->second;
  if (auto it = extra_.op_family.find(op); it != extra_.op_family.end()) fam = it->second;

  std::vector<Shape> out;
  if (auto it = core_.ops.find(op); it != core_.ops.end()) {
    append_unique(out, it->second);
  } else if (const auto* l = family_list(core_.families, fam)) {
    append_unique(out, *l);
  }
  if (level == Level::comprehensive) {
    if (auto it = extra_.ops.find(op); it != extra_.ops.end()) {
      append_unique(out, it->second);
    } else if (const auto* l = family_list(extra_.families, fam)) {
      append_unique(out, *l);
    }
  }
  return out;
}

std::string ShapeSet::archive_yaml(Level level, const std::string& source,
                                   const std::map<std::string, std::vector<Shape>>& used) {
  YAML::Emitter e;
  e << YAML::Comment("the shapes this run used; caliber reads this file back with --shapes");
  e << YAML::BeginMap;
  e << YAML::Key << "level" << YAML::Value << std::string(to_string(level));
  e << YAML::Key << "source" << YAML::Value << source;
  e << YAML::Key << "ops" << YAML::Value << YAML::BeginMap;
  for (const auto& [op, shapes] : used) {
    e << YAML::Key << op << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& s : shapes) {
      e << YAML::Flow << YAML::BeginSeq;
      for (auto d : s) e << static_cast<long long>(d);
      e << YAML::EndSeq;
    }
    e << YAML::EndSeq;
  }
  e << YAML::EndMap;
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace caliber::core
