#include "batch/slurm_job.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "batch/batch.hpp"
#include "proc/process.hpp"

namespace fs = std::filesystem;

namespace caliber::run::slurm {

namespace {

bool plain_word(const std::string& s) {
  if (s.empty()) return false;
  return std::none_of(s.begin(), s.end(), [](unsigned char c) { return c <= ' ' || c == 127; });
}

std::string first_word(const std::string& s) {
  const auto b = s.find_first_not_of(' ');
  if (b == std::string::npos) return "";
  return s.substr(b, s.find(' ', b) - b);
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// "2:0" -> {2, 0}; "0:9" -> {0, 9}.
std::pair<int, int> parse_exit_pair(const std::string& s) {
  const auto colon = s.find(':');
  try {
    const int code = std::stoi(s.substr(0, colon));
    const int sig = colon == std::string::npos ? 0 : std::stoi(s.substr(colon + 1));
    return {code, sig};
  } catch (...) {
    return {0, 0};
  }
}

std::string on_node(const TaskState& s) {
  return s.node.empty() ? std::string() : " on node " + s.node;
}

}  // namespace

bool valid_time_limit(const std::string& s) {
  static const std::regex re(
      R"(^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d{1,2}|\d+-\d{1,2}:\d{1,2}|\d+-\d{1,2}:\d{1,2}:\d{1,2})$)");
  const std::string u = upper(s);
  return u == "UNLIMITED" || u == "INFINITE" || std::regex_match(s, re);
}

std::optional<long> time_limit_seconds(const std::string& s) {
  if (s.empty() || !valid_time_limit(s) || std::isalpha(static_cast<unsigned char>(s[0])))
    return std::nullopt;
  long days = 0;
  std::string rest = s;
  const bool has_days = rest.find('-') != std::string::npos;
  if (has_days) {
    days = std::stol(rest.substr(0, rest.find('-')));
    rest = rest.substr(rest.find('-') + 1);
  }
  std::vector<long> parts;
  std::stringstream in(rest);
  std::string p;
  while (std::getline(in, p, ':')) parts.push_back(std::stol(p));
  long secs = 0;
  if (has_days) {
    // D-H, D-H:M, D-H:M:S
    const long mult[] = {3600, 60, 1};
    for (std::size_t i = 0; i < parts.size(); ++i) secs += parts[i] * mult[i];
  } else if (parts.size() == 1) {
    secs = parts[0] * 60;  // minutes
  } else if (parts.size() == 2) {
    secs = parts[0] * 60 + parts[1];  // M:S
  } else {
    secs = parts[0] * 3600 + parts[1] * 60 + parts[2];
  }
  return days * 86400 + secs;
}

void check_options(const SlurmOptions& o) {
  auto word = [](const char* flag, const std::string& v) {
    if (!v.empty() && !plain_word(v))
      throw std::invalid_argument(std::string(flag) + ": '" + v +
                                  "' is not a Slurm name (no spaces or control characters)");
  };
  word("--partition", o.partition);
  word("--account", o.account);
  if (o.gpus_per_task < 0)
    throw std::invalid_argument("--gpus-per-task: '" + std::to_string(o.gpus_per_task) +
                                "' is negative; give 0 (none) or a count of GPUs");
  if (!o.time_limit.empty() && !valid_time_limit(o.time_limit))
    throw std::invalid_argument("--time-limit: '" + o.time_limit +
                                "' is not a Slurm time; allowed: MINUTES, MM:SS, HH:MM:SS, D-HH, "
                                "D-HH:MM, D-HH:MM:SS, UNLIMITED");
  for (const auto& a : o.sbatch_args) {
    if (a.empty() || a.find('\n') != std::string::npos)
      throw std::invalid_argument("--sbatch-arg: '" + a +
                                  "' is empty or holds a newline; give one sbatch argument each");
    for (const char* ours : {"--array", "-a", "--parsable", "--output", "-o", "--job-name", "-J"})
      if (a == ours || a.rfind(std::string(ours) + "=", 0) == 0)
        throw std::invalid_argument("--sbatch-arg: '" + a +
                                    "' is set by caliber batch itself (the array, its output and "
                                    "its name); give other sbatch arguments");
  }
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

namespace {

// The #SBATCH lines every script of a batch shares.
void sbatch_header(std::ostream& o, const std::string& job_name, std::size_t tasks,
                   const fs::path& output, const SlurmOptions& slurm, bool gpus,
                   const std::string& after) {
  o << "#SBATCH --job-name=" << job_name << "\n"
    << "#SBATCH --array=0-" << (tasks == 0 ? 0 : tasks - 1) << "\n"
    << "#SBATCH --output=" << output.string() << "\n"
    << "#SBATCH --open-mode=append\n"
    << "#SBATCH --ntasks=1\n"
    << "#SBATCH --no-requeue\n";
  if (!after.empty()) o << "#SBATCH --dependency=afterany:" << after << "\n";
  if (!slurm.partition.empty()) o << "#SBATCH --partition=" << slurm.partition << "\n";
  if (!slurm.account.empty()) o << "#SBATCH --account=" << slurm.account << "\n";
  if (gpus && slurm.gpus_per_task > 0)
    o << "#SBATCH --gpus-per-task=" << slurm.gpus_per_task << "\n";
  if (!slurm.time_limit.empty()) o << "#SBATCH --time=" << slurm.time_limit << "\n";
}

// After the command: its exit code, node, job and times into "$record" (written whole, by rename).
void exit_record_tail(std::ostream& o) {
  o << "rc=$?\n"
    << "printf 'rc=%d node=%s job=%s start_ns=%s end_ns=%s\\n' \"$rc\" "
       "\"${SLURMD_NODENAME:-$(hostname -s)}\" \"${SLURM_JOB_ID:-}\" \"$start\" "
       "\"$(date +%s%N)\" > \"$record.tmp\" && mv \"$record.tmp\" \"$record\"\n"
    << "exit $rc\n";
}

void args(std::ostream& o, const std::vector<std::string>& a) {
  for (const auto& x : a) o << " " << shell_quote(x);
}

}  // namespace

std::string sbatch_script(const ArraySpec& spec) {
  std::ostringstream o;
  const fs::path logs = spec.batch_dir / "logs";
  o << "#!/bin/bash\n"
    << "# Written by `caliber batch --scheduler slurm` (docs/cluster.md): array task i runs op i\n"
    << "# of this batch with `caliber run`, into the batch directory on shared storage.\n";
  sbatch_header(o, spec.job_name, spec.ops.size(), logs / "slurm-%A_%a.out", spec.slurm, true,
                spec.after);
  o << "set -u\n"
    << "ops=(";
  for (std::size_t i = 0; i < spec.ops.size(); ++i) o << (i ? " " : "") << shell_quote(spec.ops[i]);
  o << ")\n"
    << "op=${ops[$SLURM_ARRAY_TASK_ID]}\n"
    << "batch=" << shell_quote(spec.batch_dir.string()) << "\n"
    << "# The batch chose this task's op: a caller's OP / OP_FILE must not add others, and the\n"
    << "# batch's parallel warmup (if any) ran before this array.\n"
    << "unset OP OP_FILE PARALLEL_WARMUP_GPUS\n"
    << "record=\"$batch/" << kSlurmDir << "/$op.exit\"\n"
    << "rm -f \"$record\"\n"
    << "start=$(date +%s%N)\n"
    << "# Slurm's gres sets the visible devices: the task's first is its device 0.\n"
    << shell_quote(spec.caliber.string()) << " run \"$op\" --out \"$batch\" --name \"$op\""
    << " --backend " << shell_quote(spec.backend) << " --devices 0";
  args(o, spec.run_args);
  o << " >> \"$batch/logs/$op.log\" 2>&1\n";
  exit_record_tail(o);
  return o.str();
}

std::string warmup_script(const WarmupSpec& spec) {
  std::ostringstream o;
  o << "#!/bin/bash\n"
    << "# Written by `caliber batch --scheduler slurm --parallel-warmup N` (docs/cluster.md):\n"
    << "# array task i tunes shard i of the sweep over the batch's ops; it measures nothing.\n";
  sbatch_header(o, spec.job_name, static_cast<std::size_t>(spec.shards),
                spec.dir / "slurm-%A_%a.out", spec.slurm, true, "");
  o << "set -u\n"
    << "i=$SLURM_ARRAY_TASK_ID\n"
    << "dir=" << shell_quote(spec.dir.string()) << "\n"
    << "# The arguments carry the whole selection; no task starts a warmup of its own.\n"
    << "unset OP OP_FILE TEST_NODE REPLAY_FROM PARALLEL_WARMUP_GPUS\n"
    << "record=\"$dir/shard-$i.exit\"\n"
    << "rm -f \"$record\"\n"
    << "start=$(date +%s%N)\n"
    << shell_quote(spec.caliber.string()) << " run";
  args(o, spec.ops);
  o << " --backend " << shell_quote(spec.backend);
  args(o, spec.run_args);
  o << " --devices 0 --tune-shard \"$i/" << spec.shards << "\" --shard-cache \"$dir/shard-$i.db\""
    << " --quiet >> \"$dir/shard-$i.log\" 2>&1\n";
  exit_record_tail(o);
  return o.str();
}

std::string merge_script(const WarmupSpec& spec, const std::string& shards_job) {
  std::ostringstream o;
  o << "#!/bin/bash\n"
    << "# Written by `caliber batch --scheduler slurm --parallel-warmup N` (docs/cluster.md):\n"
    << "# once every shard task has ended, merge their caches into the tune cache and count the\n"
    << "# keys whose winners differ; the batch's op array waits for this job.\n";
  sbatch_header(o, spec.job_name, 1, spec.dir / "slurm-%A_%a.out", spec.slurm, false, shards_job);
  o << "set -u\n"
    << "dir=" << shell_quote(spec.dir.string()) << "\n"
    << "record=\"$dir/merge.exit\"\n"
    << "rm -f \"$record\"\n"
    << "start=$(date +%s%N)\n"
    << shell_quote(spec.caliber.string()) << " run --backend " << shell_quote(spec.backend);
  args(o, spec.run_args);
  o << " --merge-warmup \"$dir\" --merge-shards " << spec.shards << " >> \"$dir/merge.log\" 2>&1\n";
  exit_record_tail(o);
  return o.str();
}

std::vector<std::string> without_parallel_warmup(std::vector<std::string> a) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].rfind("--parallel-warmup=", 0) == 0) continue;
    if (a[i] == "--parallel-warmup") {
      ++i;  // and its value
      continue;
    }
    out.push_back(std::move(a[i]));
  }
  return out;
}

std::vector<std::string> sbatch_argv(const ArraySpec& spec, const fs::path& script) {
  std::vector<std::string> argv = {"sbatch", "--parsable"};
  argv.insert(argv.end(), spec.slurm.sbatch_args.begin(), spec.slurm.sbatch_args.end());
  argv.push_back(script.string());
  return argv;
}

std::vector<std::string> sbatch_test_argv(const SlurmOptions& o) {
  std::vector<std::string> argv = {"sbatch", "--test-only", "--ntasks=1",
                                   "--job-name=caliber-check"};
  if (!o.partition.empty()) argv.push_back("--partition=" + o.partition);
  if (!o.account.empty()) argv.push_back("--account=" + o.account);
  if (o.gpus_per_task > 0) argv.push_back("--gpus-per-task=" + std::to_string(o.gpus_per_task));
  if (!o.time_limit.empty()) argv.push_back("--time=" + o.time_limit);
  argv.insert(argv.end(), o.sbatch_args.begin(), o.sbatch_args.end());
  argv.push_back("--wrap=true");
  return argv;
}

std::optional<std::string> parse_sbatch_job_id(const std::string& out) {
  static const std::regex re(R"(^\s*(\d+)(;\S+)?\s*$)");
  std::optional<std::string> id;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_match(line, m, re)) id = m[1].str();
  }
  return id;
}

std::vector<int> expand_task_ids(const std::string& in) {
  std::string s = in;
  if (const auto pct = s.find('%'); pct != std::string::npos) s = s.substr(0, pct);
  static const std::regex part(R"(^(\d+)(?:-(\d+))?(?::(\d+))?$)");
  std::vector<int> out;
  std::stringstream parts(s);
  std::string p;
  while (std::getline(parts, p, ',')) {
    std::smatch m;
    if (!std::regex_match(p, m, part)) return {};
    const int a = std::stoi(m[1].str());
    const int b = m[2].matched ? std::stoi(m[2].str()) : a;
    const int step = m[3].matched ? std::max(1, std::stoi(m[3].str())) : 1;
    if (b < a || b - a > 1000000) return {};
    for (int i = a; i <= b; i += step) out.push_back(i);
  }
  return out;
}

double parse_duration(const std::string& s) {
  static const std::regex re(R"(^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$)");
  std::smatch m;
  if (!std::regex_match(s, m, re)) return -1;
  const double d = m[1].matched ? std::stod(m[1].str()) : 0;
  const double h = m[2].matched ? std::stod(m[2].str()) : 0;
  return d * 86400 + h * 3600 + std::stod(m[3].str()) * 60 + std::stod(m[4].str());
}

std::vector<TaskState> parse_scontrol(const std::string& text) {
  std::vector<TaskState> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("JobId=", 0) != 0) continue;
    // Key=Value pairs separated by spaces; a value may hold spaces only in fields we do not read
    // (Command, WorkDir, ...): take each key's value up to the next " Key=".
    std::map<std::string, std::string> kv;
    static const std::regex pair(R"((?:^| )([A-Za-z][A-Za-z0-9/:_]*)=)");
    std::vector<std::pair<std::string, std::size_t>> keys;  // key, value start
    for (auto it = std::sregex_iterator(line.begin(), line.end(), pair);
         it != std::sregex_iterator(); ++it)
      keys.emplace_back((*it)[1].str(), static_cast<std::size_t>(it->position(0) + it->length(0)));
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const std::size_t end =
          i + 1 < keys.size() ? keys[i + 1].second - keys[i + 1].first.size() - 2 : line.size();
      std::string v = line.substr(keys[i].second, end > keys[i].second ? end - keys[i].second : 0);
      while (!v.empty() && v.back() == ' ') v.pop_back();
      kv.emplace(keys[i].first, v);
    }
    if (!kv.count("ArrayTaskId")) continue;  // not an array task
    TaskState t;
    t.state = first_word(kv["JobState"]);
    std::tie(t.exit_code, t.exit_signal) = parse_exit_pair(kv["ExitCode"]);
    const std::string node = kv["NodeList"];
    t.node = (node.empty() || node == "(null)") ? kv["BatchHost"] : node;
    if (t.node == "(null)") t.node.clear();
    t.reason = kv["Reason"] == "None" ? "" : kv["Reason"];
    t.run_s = kv.count("RunTime") ? parse_duration(kv["RunTime"]) : -1;
    t.time_limit = kv["TimeLimit"];
    const auto ids = expand_task_ids(kv["ArrayTaskId"]);
    if (ids.size() == 1) t.job_id = kv["JobId"];
    for (int id : ids) {
      TaskState one = t;
      one.task = id;
      out.push_back(std::move(one));
    }
  }
  return out;
}

std::vector<TaskState> parse_sacct(const std::string& text) {
  std::vector<TaskState> out;
  static const std::regex task_id(R"(^\d+_(\[?)([0-9,\-%:]+)\]?$)");
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    std::stringstream fields(line);
    std::string x;
    while (std::getline(fields, x, '|')) f.push_back(x);
    if (f.size() < 5) continue;
    std::smatch m;
    if (!std::regex_match(f[1], m, task_id)) continue;
    TaskState t;
    t.state = first_word(f[2]);
    std::tie(t.exit_code, t.exit_signal) = parse_exit_pair(f[3]);
    t.node = (f[4] == "None assigned" || f[4] == "(null)") ? "" : f[4];
    if (f.size() > 5) {
      try {
        t.run_s = std::stod(f[5]);
      } catch (...) {
        t.run_s = -1;
      }
    }
    const auto ids = expand_task_ids(m[2].str());
    if (ids.size() == 1 && m[1].str().empty()) t.job_id = f[0];
    for (int id : ids) {
      TaskState one = t;
      one.task = id;
      out.push_back(std::move(one));
    }
  }
  return out;
}

bool is_terminal(const std::string& state) {
  static const char* const terminal[] = {"COMPLETED",     "FAILED",    "TIMEOUT",   "NODE_FAIL",
                                         "OUT_OF_MEMORY", "CANCELLED", "PREEMPTED", "BOOT_FAIL",
                                         "DEADLINE",      "REVOKED"};
  const std::string s = first_word(upper(state));
  return std::any_of(std::begin(terminal), std::end(terminal),
                     [&](const char* t) { return s == t; });
}

Mapped map_state(const TaskState& s, const std::optional<ExitRecord>& record,
                 const std::string& time_limit) {
  const std::string state = upper(s.state);
  const std::string where = on_node(s);
  if (state == "TIMEOUT") {
    std::string limit = "its time limit";
    if (!s.time_limit.empty() && !time_limit.empty() && s.time_limit != time_limit)
      limit += " (" + s.time_limit + " as Slurm applied --time-limit " + time_limit + ")";
    else if (!s.time_limit.empty() || !time_limit.empty())
      limit += " (" + (s.time_limit.empty() ? time_limit : s.time_limit) + ")";
    return {core::OpStatus::timeout,
            "Slurm TIMEOUT: the task ran past " + limit + " and Slurm ended it" + where};
  }
  if (state == "DEADLINE")
    return {core::OpStatus::timeout, "Slurm DEADLINE: the job's deadline passed" + where};
  if (state == "NODE_FAIL")
    return {core::OpStatus::crashed,
            "Slurm NODE_FAIL: node failure" + where + "; the task's rows so far are kept"};
  if (state == "OUT_OF_MEMORY")
    return {core::OpStatus::crashed, "Slurm OUT_OF_MEMORY: out of memory (OOM)" + where};
  if (state == "BOOT_FAIL")
    return {core::OpStatus::crashed, "Slurm BOOT_FAIL: the node failed to boot" + where};
  if (state == "CANCELLED")
    return {core::OpStatus::interrupted,
            "Slurm CANCELLED: the task was cancelled (scancel)" + where};
  if (state == "PREEMPTED")
    return {core::OpStatus::interrupted,
            "Slurm PREEMPTED: a higher-priority job took the node" + where};
  if (state == "COMPLETED" || state == "FAILED") {
    if (record) {
      ExitStatus st;
      st.kind = ExitKind::exited;
      st.code = record->rc;
      const Classified c = classify_exit(st, 0);
      return {c.status, c.reason.empty() ? c.reason : c.reason + where};
    }
    if (s.exit_signal != 0) {
      ExitStatus st;
      st.kind = ExitKind::signaled;
      st.signal = s.exit_signal;
      return {core::OpStatus::crashed, "crashed: the task ended by " + st.describe() + " (Slurm " +
                                           state + ", no exit record)" + where};
    }
    ExitStatus st;
    st.kind = ExitKind::exited;
    st.code = s.exit_code;
    Classified c = classify_exit(st, 0);
    if (state == "COMPLETED" || c.status == core::OpStatus::ok) return {c.status, c.reason};
    return {c.status, c.reason + " (Slurm " + state + ", no exit record)" + where};
  }
  return {core::OpStatus::crashed, "Slurm state " +
                                       (state.empty() ? std::string("unknown") : state) +
                                       (s.reason.empty() ? "" : " (" + s.reason + ")") + where};
}

}  // namespace caliber::run::slurm
