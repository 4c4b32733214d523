// RunBench: the coordinator side of the sweep (see kselect/bench.h). Never touches CUDA itself,
// so forking workers (and per-device coordinators) is safe.
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <set>

#include "bench/worker.h"
#include "core/json_codec.h"
#include "core/text.h"
#include "kselect/bench.h"
#include "kselect/hardware.h"
#include "kselect/version.h"

namespace kselect {
namespace {

using nlohmann::json;

Status AppendLine(int fd, const std::string& line, const std::string& path) {
  // One write(2) per record on an O_APPEND descriptor: a record is either whole in the file or
  // (if the process dies mid-write) a torn last line that --resume removes.
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError(path + ": write failed: " + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

struct FaultInjection {
  std::string kind;  // "crash" or "hang"
  int64_t index = -1;
};

FaultInjection FaultFromEnvironment() {
  FaultInjection fault;
  const char* text = std::getenv(bench::kFaultInjectionEnv);
  if (text == nullptr) return fault;
  const std::string value = text;
  const size_t colon = value.find(':');
  if (colon == std::string::npos) return fault;
  fault.kind = value.substr(0, colon);
  fault.index = std::atoll(value.c_str() + colon + 1);
  return fault;
}

MeasurementMethod DefaultMethod(const BenchOptions& o) {
  MeasurementMethod m;
  m.name = "kselect.bench";
  m.timer = "cuda_events";
  m.statistic = "median";
  m.warmup_iters = o.warmup_iters;
  m.repeats = o.repeats;
  m.iters_per_repeat = 0;  // chosen per config (batch_ms); each row's method says what was used
  m.rotating_buffer_bytes = o.rotate_bytes;
  return m;
}

json PlanRequest(const Problem& problem) {
  return json{{"cmd", "plan"}, {"problem", json_codec::ProblemToJson(problem)}};
}

// The problem's timing order and the heuristics' ranks from the planner's reply (PlanTimingOrder).
TimingOrder TimingOrderOf(const json& plan, int64_t max_catalogue_configs) {
  auto configs_of = [&](const char* field) {
    std::vector<KernelConfig> configs;
    if (!plan.contains(field)) return configs;  // a planner of an older kselect: no peers_b
    for (const json& c : plan[field])
      configs.push_back(*json_codec::KernelConfigFromJson(c, std::string("plan.") + field));
    return configs;
  };
  return PlanTimingOrder(configs_of("peers"), configs_of("peers_b"), configs_of("configs"),
                         max_catalogue_configs);
}

// Sweeps `problems` on one device, appending to `fd`. Planner workers enumerate the next
// problems while the timer worker times this one; `progress` counts them (BenchOptions::progress).
BenchSummary SweepDevice(const BenchOptions& options, const RunInfo& run, const ResumeState& state,
                         const std::vector<Problem>& all_problems, int device, int fd,
                         double start_seconds, const ProgressCallback& progress) {
  BenchSummary summary;
  auto report = [&](int64_t done, std::string detail) {
    if (progress) {
      progress({.done = done,
                .total = static_cast<int64_t>(all_problems.size()),
                .unit = "problems",
                .detail = std::move(detail)});
    }
  };
  std::vector<Problem> problems;
  for (const Problem& problem : all_problems) {
    if (state.completed.count(ProblemToString(problem)) != 0) {
      ++summary.problems_skipped;  // finished in an earlier invocation: not enumerated again
      continue;
    }
    problems.push_back(problem);
  }
  bench::WorkerClient timer(options, device);
  // Several GPUs share one run record (the first GPU's profile): each row then names its GPU.
  std::string device_uuid;
  if (options.devices.size() > 1) {
    auto hello = timer.Request(json{{"cmd", "hello"}}, options.watchdog_s);
    if (hello.ok() && (*hello).value("ok", false)) {
      device_uuid = (*hello)["hardware"].value("uuid", "");
    } else {
      std::cerr << "kselect bench: device " << device << ": cannot read its UUID ("
                << (hello.ok() ? (*hello).value("reason", "") : hello.status().ToString())
                << "); its rows carry the run's\n";
    }
  }
  // Problem i is planned by planners[i % count], sent `count` problems ahead.
  std::vector<std::unique_ptr<bench::WorkerClient>> planners;
  for (int i = 0; i < std::max(1, options.planners); ++i)
    planners.push_back(std::make_unique<bench::WorkerClient>(options, device));
  auto restarts = [&] {
    int64_t total = timer.restarts();
    for (const auto& planner : planners) total += planner->restarts();
    return total;
  };
  const FaultInjection fault = FaultFromEnvironment();
  std::vector<double> plan_sent(problems.size(), 0);
  auto send_plan = [&](size_t index) {
    if (index >= problems.size()) return;
    plan_sent[index] = NowSeconds();
    planners[index % planners.size()]->Send(PlanRequest(problems[index]));
  };
  for (size_t i = 0; i < planners.size(); ++i) send_plan(i);
  if (summary.problems_skipped > 0) report(summary.problems_skipped, "");
  // Problems finished when the loop leaves problem `index` (however it leaves it).
  auto finished = [&](size_t index) {
    return summary.problems_skipped + static_cast<int64_t>(index);
  };
  for (size_t index = 0; index < problems.size(); ++index) {
    const Problem& p = problems[index];
    ++summary.problems;
    auto plan = planners[index % planners.size()]->Receive(options.plan_watchdog_s);
    const double plan_wait_seconds = NowSeconds() - plan_sent[index];
    send_plan(index + planners.size());
    if (!plan.ok() || !(*plan).value("ok", false)) {
      ++summary.problems_failed;
      std::cerr << "kselect bench: device " << device << ": " << ProblemToString(p)
                << ": enumeration failed: "
                << (plan.ok() ? (*plan).value("reason", "") : plan.status().ToString()) << "\n";
      report(finished(index + 1), "");
      continue;
    }
    const double problem_start = NowSeconds();
    const TimingOrder order = TimingOrderOf(*plan, options.max_configs_per_problem);
    const std::vector<KernelConfig>& configs = order.configs;
    const std::map<std::string, int32_t>& peer_rank = order.peer_rank;
    const std::map<std::string, int32_t>& peer_rank_b = order.peer_rank_b;
    report(finished(index), "device " + std::to_string(device) + ": " + ProblemToString(p) + ": " +
                                std::to_string((*plan).value("enumerated", 0)) + " enumerated, " +
                                std::to_string(configs.size()) + " to time (" +
                                std::to_string(peer_rank.size()) + " heuristic picks" +
                                (peer_rank_b.empty() ? std::string()
                                                     : ", " + std::to_string(peer_rank_b.size()) +
                                                           " from the second heuristic") +
                                ")");
    ProblemDone done;
    done.run_id = run.run_id;
    done.problem = p;
    done.configs = static_cast<int64_t>(configs.size());
    done.enumerated = (*plan).value("enumerated", int64_t{0});
    // The planner's own enumeration time (the request's wall time when the reply lacks it).
    done.plan_seconds = (*plan).value("seconds", plan_wait_seconds);
    const auto best_it = state.best_ms.find(ProblemToString(p));
    double best =
        best_it == state.best_ms.end() ? std::numeric_limits<double>::infinity() : best_it->second;
    // (latency, PairKey) of the problem's valid rows, for the confirmation pass.
    std::vector<std::pair<double, std::string>> valid_rows;
    if (const auto it = state.unfinished_valid.find(ProblemToString(p));
        it != state.unfinished_valid.end()) {
      valid_rows = it->second;
    }
    // Drift control: the problem's reference config (its first valid config, the heuristic's
    // pick where there is one), timed interleaved with every later config.
    std::optional<size_t> reference;
    double reference_ms = 0;
    // Times one config and appends its row; false when the output cannot be written.
    auto measure = [&](size_t i, double abort_bound_ms) -> bool {
      const KernelConfig& config = configs[i];
      const bool is_reference = reference && *reference == i;
      json request{{"cmd", "time"},
                   {"problem", json_codec::ProblemToJson(p)},
                   {"config", json_codec::KernelConfigToJson(config)},
                   {"abort_bound_ms", abort_bound_ms}};
      if (reference && !is_reference) {
        request["reference"] = json_codec::KernelConfigToJson(configs[*reference]);
        request["reference_ms"] = reference_ms;
      }
      if (fault.index == static_cast<int64_t>(i)) request["inject"] = fault.kind;
      auto reply = timer.Request(request, options.watchdog_s);
      Measurement m;
      m.run_id = run.run_id;
      m.op_type = std::holds_alternative<GemmProblem>(p) ? "gemm" : "grouped_conv";
      m.problem = p;
      m.config = config;
      m.kernel_name = DescribeConfig(config);
      m.method = run.method;
      m.timestamp = text::UtcNowIso8601();
      m.device_uuid = device_uuid;
      if (const auto it = peer_rank.find(ConfigKey(config)); it != peer_rank.end())
        m.peer_rank = it->second;
      if (const auto it = peer_rank_b.find(ConfigKey(config)); it != peer_rank_b.end())
        m.peer_rank_b = it->second;
      if (!reply.ok()) {
        m.invalid_reason = reply.status().ToString();
      } else if (!(*reply).value("ok", false)) {
        m.invalid_reason = (*reply).value("reason", "unknown worker failure");
      } else {
        const json& r = *reply;
        m.latency_ms = r.value("latency_ms", 0.0);
        m.cv = r.value("cv", 0.0);
        m.samples = r.value("samples", 0);
        if (r.contains("method")) {
          if (auto method = json_codec::MethodFromJson(r["method"], "reply.method"); method.ok())
            m.method = *method;
        }
        m.aborted = r.value("aborted", false);
        m.reference_latency_ms = r.value("reference_latency_ms", 0.0);
        if (m.aborted) {
          m.abort_bound_ms = r.value("abort_bound_ms", 0.0);
          m.invalid_reason =
              "aborted: slower than " + std::to_string(options.abort_factor) + "x the best so far";
        } else {
          m.is_valid = true;
          DeriveRates(m);
          m.Validate();
        }
      }
      if (m.is_valid && options.interleave_reference && (!reference || is_reference)) {
        reference = i;  // the first valid config; its own rows are its reference times
        m.is_drift_reference = true;
        m.reference_latency_ms = m.latency_ms;
      }
      if (m.is_valid && m.reference_latency_ms > 0) reference_ms = m.reference_latency_ms;
      if (m.is_valid) {
        ++summary.valid;
        best = std::min(best, m.latency_ms);
        valid_rows.emplace_back(m.latency_ms, PairKey(p, config));
      } else if (m.aborted) {
        ++summary.aborted;
      } else {
        ++summary.invalid;
      }
      if (Status s = AppendLine(fd, MeasurementLine(m), options.output_path); !s.ok()) {
        std::cerr << "kselect bench: " << s.ToString() << "\n";
        return false;
      }
      ++summary.rows;
      ++done.rows;
      return true;
    };
    for (size_t i = 0; i < configs.size(); ++i) {
      if (options.time_limit_s > 0 && NowSeconds() - start_seconds > options.time_limit_s) {
        summary.time_limited = true;
        summary.worker_restarts = restarts();
        return summary;
      }
      if (state.done.count(PairKey(p, configs[i])) != 0) {
        ++summary.skipped;
        ++done.skipped;
        continue;
      }
      if (!measure(i, std::isfinite(best) ? best * options.abort_factor : 0.0)) return summary;
    }
    // Confirmation: the fastest configs and the heuristic's pick, timed again (no abort).
    const std::vector<size_t> confirm =
        ConfirmationSet(p, configs, peer_rank, valid_rows, options.confirm_top, peer_rank_b);
    if (options.confirm_rounds > 0) {
      for (int round = 0; round < options.confirm_rounds; ++round) {
        for (const size_t i : confirm) {
          if (!measure(i, 0.0)) return summary;
        }
      }
      done.confirmed = static_cast<int64_t>(confirm.size());
      done.confirm_rounds = options.confirm_rounds;
    }
    done.seconds = NowSeconds() - problem_start;
    if (Status s = AppendLine(fd, ProblemDoneLine(done), options.output_path); !s.ok()) {
      std::cerr << "kselect bench: " << s.ToString() << "\n";
      return summary;
    }
    ++summary.problems_done;
    report(finished(index + 1), "");
  }
  summary.worker_restarts = restarts();
  return summary;
}

// A device coordinator's summary as it crosses the pipe to the parent (plain integers).
struct SummaryWire {
  int64_t problems, problems_failed, rows, valid, invalid, aborted, skipped, worker_restarts,
      problems_done, problems_skipped, time_limited;
};

SummaryWire ToWire(const BenchSummary& s) {
  return {s.problems,
          s.problems_failed,
          s.rows,
          s.valid,
          s.invalid,
          s.aborted,
          s.skipped,
          s.worker_restarts,
          s.problems_done,
          s.problems_skipped,
          s.time_limited ? 1 : 0};
}

void AddWire(const SummaryWire& w, BenchSummary& s) {
  s.problems += w.problems;
  s.problems_failed += w.problems_failed;
  s.rows += w.rows;
  s.valid += w.valid;
  s.invalid += w.invalid;
  s.aborted += w.aborted;
  s.skipped += w.skipped;
  s.worker_restarts += w.worker_restarts;
  s.problems_done += w.problems_done;
  s.problems_skipped += w.problems_skipped;
  s.time_limited = s.time_limited || w.time_limited != 0;
}

}  // namespace

StatusOr<BenchSummary> RunBench(const BenchOptions& options) {
  const double start = NowSeconds();
  if (options.output_path.empty()) return InvalidArgumentError("no output file (-o)");
  if (options.devices.empty()) return InvalidArgumentError("no devices");
  KSELECT_ASSIGN_OR_RETURN(ResumeState state, LoadResumeState(options.output_path, options.resume));
  if (!options.resume && (state.has_run_record || state.measurements > 0 || state.torn_bytes > 0)) {
    return FailedPreconditionError(
        options.output_path +
        " already holds bench records: pass --resume to continue it, or choose another -o");
  }
  if (state.torn_bytes > 0) {
    std::cerr << "kselect bench: removed a torn last line (" << state.torn_bytes << " bytes) from "
              << options.output_path << "\n";
  }
  RunInfo run;
  int fd = -1;
  if (state.has_run_record) {
    run = state.run;
    fd = ::open(options.output_path.c_str(), O_WRONLY | O_APPEND);
    if (fd < 0)
      return IoError(options.output_path + ": cannot open for appending: " + std::strerror(errno));
  } else {
    bench::WorkerClient probe(options, options.devices.front());
    auto hello = probe.Request(json{{"cmd", "hello"}}, options.watchdog_s);
    probe.Kill();
    if (!hello.ok() || !(*hello).value("ok", false)) {
      return UnavailableError(
          "cannot read the GPU's profile: " +
          (hello.ok() ? (*hello).value("reason", "") : hello.status().ToString()));
    }
    auto profile = HardwareProfileFromJson((*hello)["hardware"].dump(), "worker hardware");
    if (!profile.ok()) return profile.status();
    run.hardware = *profile;
    run.hardware.device_kind = options.device_kind;
    run.tool = ToolDescription();
    run.started_at = text::UtcNowIso8601();
    run.method = DefaultMethod(options);
    run.run_id = !options.run_id.empty()
                     ? options.run_id
                     : (options.device_kind.empty() ? std::string("gpu") : options.device_kind) +
                           "-" + text::UtcNowIso8601(/*compact=*/true) + "-shard" +
                           std::to_string(options.shard.index) + "of" +
                           std::to_string(options.shard.count);
    // The file is created only now, once a GPU has answered: a failed start leaves nothing.
    fd = ::open(options.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
      return IoError(options.output_path + ": cannot open for writing: " + std::strerror(errno));
    if (Status s = AppendLine(fd, RunRecordLine(run), options.output_path); !s.ok()) {
      ::close(fd);
      return s;
    }
  }
  std::vector<Problem> mine;
  for (const size_t i : ShardIndices(options.problems.size(), options.shard))
    mine.push_back(options.problems[i]);

  BenchSummary summary;
  if (options.devices.size() == 1) {
    summary = SweepDevice(options, run, state, mine, options.devices.front(), fd, start,
                          options.progress);
  } else {
    // One coordinator process per device, each with its own workers, sharing the O_APPEND file;
    // each sends its summary back through a pipe.
    struct Child {
      pid_t pid;
      int summary_fd;
    };
    std::vector<Child> children;
    const int count = static_cast<int>(options.devices.size());
    // Problems the coordinators have finished, in memory they share; the parent reports it.
    void* shared = ::mmap(nullptr, sizeof(std::atomic<int64_t>), PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) return IoError(std::string("mmap: ") + std::strerror(errno));
    auto* finished = new (shared) std::atomic<int64_t>(0);
    for (int d = 0; d < count; ++d) {
      std::vector<Problem> part;
      for (const size_t i : ShardIndices(mine.size(), ShardSpec{d, count})) part.push_back(mine[i]);
      int pipe_fds[2];
      if (::pipe(pipe_fds) != 0) return IoError(std::string("pipe: ") + std::strerror(errno));
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::close(pipe_fds[0]);
        int64_t counted = 0;  // this coordinator's problems already added to `finished`
        const ProgressCallback count_finished = [finished, &counted](const ProgressCount& p) {
          finished->fetch_add(p.done - counted);
          counted = p.done;
        };
        const BenchSummary s =
            SweepDevice(options, run, state, part, options.devices[static_cast<size_t>(d)], fd,
                        start, count_finished);
        const SummaryWire wire = ToWire(s);
        const bool sent = ::write(pipe_fds[1], &wire, sizeof(wire)) == sizeof(wire);
        _exit(sent && s.problems_failed == 0 ? 0 : 1);
      }
      ::close(pipe_fds[1]);
      if (pid < 0) {
        ::close(pipe_fds[0]);
        return InternalError(std::string("fork: ") + std::strerror(errno));
      }
      children.push_back({pid, pipe_fds[0]});
    }
    // Each coordinator's summary as it ends (a pipe closed without one: it died first), and
    // the shared count about once a second meanwhile.
    std::vector<std::optional<SummaryWire>> wires(children.size());
    std::vector<bool> open(children.size(), true);
    int64_t reported = -1;
    for (size_t remaining = children.size(); remaining > 0;) {
      std::vector<pollfd> fds;
      std::vector<size_t> which;
      for (size_t c = 0; c < children.size(); ++c) {
        if (!open[c]) continue;
        fds.push_back({children[c].summary_fd, POLLIN, 0});
        which.push_back(c);
      }
      const int ready = ::poll(fds.data(), fds.size(), 1000);
      for (size_t i = 0; ready > 0 && i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        const size_t c = which[i];
        SummaryWire wire{};
        if (::read(children[c].summary_fd, &wire, sizeof(wire)) == sizeof(wire)) wires[c] = wire;
        ::close(children[c].summary_fd);
        open[c] = false;
        --remaining;
      }
      const int64_t now_finished = finished->load();
      if (options.progress && now_finished != reported) {
        reported = now_finished;
        options.progress(
            {.done = now_finished, .total = static_cast<int64_t>(mine.size()), .unit = "problems"});
      }
    }
    ::munmap(shared, sizeof(std::atomic<int64_t>));
    for (size_t c = 0; c < children.size(); ++c) {
      int status = 0;
      ::waitpid(children[c].pid, &status, 0);
      if (wires[c]) {
        AddWire(*wires[c], summary);
      } else {
        ++summary.problems_failed;  // the coordinator died before reporting
      }
    }
  }
  ::close(fd);
  summary.seconds = NowSeconds() - start;
  return summary;
}

}  // namespace kselect
