#include "core/identity.hpp"

#include <unistd.h>

#include <climits>
#include <fstream>
#include <stdexcept>

#include "core/rundir.hpp"
#include "core/runlog.hpp"

#ifndef CALIBER_VERSION
#define CALIBER_VERSION "0.0.0"
#endif
#ifndef CALIBER_GIT_COMMIT
#define CALIBER_GIT_COMMIT "unknown"
#endif

namespace caliber::core {

namespace {

// The value of a caliber key as text; an absent key is "" so that absent on both sides agrees.
std::string key_text(const nlohmann::json& identity, const std::string& key) {
  if (!identity.is_object()) return "";
  const nlohmann::json* v = nullptr;
  if (key == "device_model") {
    const auto dev = identity.find("device");
    if (dev == identity.end() || !dev->is_object()) return "";
    const auto name = dev->find("name");
    if (name == dev->end()) return "";
    v = &*name;
  } else {
    const auto it = identity.find(key);
    if (it == identity.end()) return "";
    v = &*it;
  }
  if (v->is_null()) return "";
  if (v->is_string()) return v->get<std::string>();
  return v->dump();
}

}  // namespace

const std::vector<std::string>& caliber_keys() {
  static const std::vector<std::string> keys = {"level", "timer",  "backend", "device_model",
                                                "tune",  "repeat", "l2",      "clock"};
  return keys;
}

std::vector<IdentityDiff> diff_identity(const nlohmann::json& a, const nlohmann::json& b) {
  std::vector<IdentityDiff> out;
  for (const auto& key : caliber_keys()) {
    std::string va = key_text(a, key);
    std::string vb = key_text(b, key);
    if (va != vb) out.push_back({key, std::move(va), std::move(vb)});
  }
  return out;
}

nlohmann::json read_identity(const std::filesystem::path& run_dir) {
  const auto file = run_dir / identity_file;
  std::error_code ec;
  if (std::filesystem::exists(file, ec) && !std::filesystem::is_regular_file(file, ec))
    throw std::runtime_error("cannot read " + file.string() + ": not a regular file");
  if (std::filesystem::file_size(file, ec) > kMaxIdentityBytes)
    throw std::runtime_error("cannot read " + file.string() + ": larger than " +
                             std::to_string(kMaxIdentityBytes) + " bytes");
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    throw std::runtime_error(file.string() + ": not a JSON object");
  }
  (void)check_schema(j, file.string());
  return j;
}

void write_identity(const std::filesystem::path& run_dir, const nlohmann::json& identity) {
  write_file_atomic(run_dir / identity_file,
                    identity.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

std::string run_header_text(const nlohmann::json& identity) {
  const auto text = [&](const std::string& key) {
    std::string v = key_text(identity, key);
    return v.empty() ? std::string("?") : v;
  };
  std::string device = "?";
  if (identity.is_object()) {
    if (const auto d = identity.find("device"); d != identity.end() && d->is_object()) {
      const auto index = d->find("index");
      const auto name = d->find("name");
      device.clear();
      if (index != d->end() && !index->is_null()) {
        device = index->is_string() ? index->get<std::string>() : index->dump();
      }
      if (name != d->end() && name->is_string()) {
        if (!device.empty()) device += " ";
        device += "(" + name->get<std::string>() + ")";
      }
      if (device.empty()) device = "?";
    }
  }
  return "caliber run: backend " + text("backend") + " | device " + device + " | timer " +
         text("timer") + " | level " + text("level") + " | tune " + text("tune") + " | repeat " +
         text("repeat") + " | l2 " + text("l2") + " | clock " + text("clock");
}

std::string caliber_version() {
  return CALIBER_VERSION;
}

std::string caliber_git_commit() {
  return CALIBER_GIT_COMMIT;
}

std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

nlohmann::json slurm_identity(
    const std::function<std::optional<std::string>(const std::string&)>& env) {
  const auto job = env("SLURM_JOB_ID");
  if (!job || job->empty()) return nullptr;
  nlohmann::json j = nlohmann::json::object();
  const std::pair<const char*, const char*> vars[] = {{"node", "SLURMD_NODENAME"},
                                                      {"job_id", "SLURM_JOB_ID"},
                                                      {"array_job_id", "SLURM_ARRAY_JOB_ID"},
                                                      {"array_task_id", "SLURM_ARRAY_TASK_ID"},
                                                      {"cluster", "SLURM_CLUSTER_NAME"}};
  for (const auto& [key, var] : vars)
    if (const auto v = env(var); v && !v->empty()) j[key] = *v;
  return j;
}

std::string node_of(const nlohmann::json& identity) {
  if (!identity.is_object()) return "";
  if (const auto s = identity.find("slurm"); s != identity.end() && s->is_object()) {
    const auto n = s->find("node");
    if (n != s->end() && n->is_string() && !n->get<std::string>().empty())
      return n->get<std::string>();
  }
  const auto h = identity.find("host");
  if (h != identity.end() && h->is_string()) return h->get<std::string>();
  return "";
}

}  // namespace caliber::core
