// kselect tune over several GPUs: one worker process per device (a fault or a hang in one GPU's
// CUDA context ends that process only), GEMMs balanced by their budgets, a dead worker's GEMMs
// retried on the others. The parent never touches CUDA: the hardware comes from the workers.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/pipes.h"
#include "kselect/tuner.h"
#include "tuner/tune_internal.h"

namespace kselect {
namespace {

using json = nlohmann::json;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Reads one line from `fd` into `line` (blocking); false at the end of input.
bool ReadLine(int fd, std::string& pending, std::string& line) {
  char chunk[65536];
  while (pending.find('\n') == std::string::npos) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    pending.append(chunk, static_cast<size_t>(n));
  }
  const size_t newline = pending.find('\n');
  line = pending.substr(0, newline);
  pending.erase(0, newline + 1);
  return true;
}

// The parent's view of one worker process.
struct Worker {
  int device = 0;
  TuneWorkerProcess process;
  std::string pending;           // bytes read, not yet a whole line
  std::vector<size_t> assigned;  // jobs sent, not yet done, in the order it runs them
  double load_s = 0;             // estimated seconds of the assigned jobs
  std::chrono::steady_clock::time_point last_heard = std::chrono::steady_clock::now();
  bool alive = false;
  TuneWorkerRecord record;
};

// Estimated wall time of a GEMM's tuning: its budget and the seeds, verification and interleaved
// runs around it.
constexpr double kOverheadPerGemmS = 1.5;

// Reaps `pid`, killing it when it has not ended within `grace_s` (a worker ends at the end of its
// input), and says how it ended.
std::string ReapReason(int pid, double grace_s = 10) {
  int status = 0;
  if (pid <= 0) return "exited";
  const auto start = std::chrono::steady_clock::now();
  pid_t reaped = 0;
  while ((reaped = ::waitpid(pid, &status, WNOHANG)) == 0 && Seconds(start) < grace_s) {
    ::usleep(10000);
  }
  if (reaped == 0) {
    ::kill(pid, SIGKILL);
    reaped = ::waitpid(pid, &status, 0);
    if (reaped == pid) return "killed: did not end within " + std::to_string(grace_s) + " s";
  }
  if (reaped != pid) return "exited";
  if (WIFSIGNALED(status)) {
    return "died: signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) +
           ")";
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  return "finished";
}

void CloseWorker(Worker& w) {
  if (w.process.to_worker >= 0) ::close(w.process.to_worker);
  if (w.process.from_worker >= 0) ::close(w.process.from_worker);
  w.process.to_worker = w.process.from_worker = -1;
}

// Waits up to `timeout_s` for a whole line from a worker.
StatusOr<std::string> ReadLineWithin(Worker& w, double timeout_s) {
  const auto start = std::chrono::steady_clock::now();
  char chunk[65536];
  while (w.pending.find('\n') == std::string::npos) {
    const double left = timeout_s - Seconds(start);
    if (left <= 0) return TimeoutError("no answer within " + std::to_string(timeout_s) + " s");
    pollfd fd{w.process.from_worker, POLLIN, 0};
    const int ready = ::poll(&fd, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (ready < 0 && errno != EINTR) return InternalError(std::string("poll: ") + strerror(errno));
    if (ready <= 0) continue;
    const ssize_t n = ::read(w.process.from_worker, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return InternalError("the worker closed its output");
    w.pending.append(chunk, static_cast<size_t>(n));
  }
  const size_t newline = w.pending.find('\n');
  std::string line = w.pending.substr(0, newline);
  w.pending.erase(0, newline + 1);
  return line;
}

}  // namespace

TuneWorkerLauncher ExecTuneWorkerLauncher(std::vector<std::string> command) {
  return [command = std::move(command)](int device) -> StatusOr<TuneWorkerProcess> {
    if (command.empty()) return InvalidArgumentError("tune: no worker command");
    int down[2], up[2];
    if (::pipe2(down, O_CLOEXEC) != 0) return IoError(std::string("pipe: ") + strerror(errno));
    if (::pipe2(up, O_CLOEXEC) != 0) {
      ::close(down[0]);
      ::close(down[1]);
      return IoError(std::string("pipe: ") + strerror(errno));
    }
    std::vector<std::string> args = command;
    args.push_back("--worker-device");
    args.push_back(std::to_string(device));
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) return IoError(std::string("fork: ") + strerror(errno));
    if (pid == 0) {
      // dup2 clears close-on-exec on the copies: the child keeps exactly stdin and stdout.
      if (::dup2(down[0], 0) < 0 || ::dup2(up[1], 1) < 0) _exit(127);
      ::execv(argv[0], argv.data());
      _exit(127);
    }
    ::close(down[0]);
    ::close(up[1]);
    return TuneWorkerProcess{pid, down[1], up[0]};
  };
}

int ServeTuneWorker(int in_fd, int out_fd, int device, const TuneWorkerHooks& hooks) {
  // A parent that is gone shows as a failed write (EPIPE), not as a signal.
  ::signal(SIGPIPE, SIG_IGN);
  auto send = [&](const json& message) { return WriteAll(out_fd, message.dump() + "\n"); };
  StatusOr<HardwareProfile> hardware =
      hooks.hardware ? hooks.hardware(device) : QueryHardwareProfile(device);
  if (!hardware.ok()) {
    send({{"event", "hello"}, {"ok", false}, {"reason", hardware.status().ToString()}});
    return 1;
  }
  if (!send({{"event", "hello"},
             {"ok", true},
             {"hardware", json::parse(HardwareProfileToJson(*hardware, -1))}})) {
    return 1;
  }
  std::string pending, line;
  while (ReadLine(in_fd, pending, line)) {
    const json request = json::parse(line, nullptr, false);
    if (request.is_discarded() || request.value("cmd", "") != "tune" || !request.contains("jobs") ||
        !request["jobs"].is_array()) {
      send({{"event", "error"}, {"reason", "unreadable request"}});
      continue;
    }
    StatusOr<TuneOptions> options = TuneOptionsFromJson(request.value("options", json()));
    std::vector<size_t> jobs;
    std::vector<LoggedGemm> gemms;
    std::vector<double> budgets;
    Status read = options.status();
    for (const json& job : request["jobs"]) {
      if (!read.ok()) break;
      StatusOr<LoggedGemm> gemm = LoggedGemmFromJson(job.value("gemm", json()));
      if (!gemm.ok()) {
        read = gemm.status();
        break;
      }
      jobs.push_back(job.value("job", size_t{0}));
      gemms.push_back(std::move(*gemm));
      budgets.push_back(job.value("budget_s", 1.0));
    }
    auto done = [&](size_t i, TunedGemm t) {
      send({{"event", "done"}, {"job", jobs[i]}, {"result", TunedGemmToJson(t)}});
    };
    std::string provider_version;
    std::set<size_t> finished;
    if (read.ok()) {
      options->devices = {device};
      if (hooks.tune) {
        for (size_t i = 0; i < gemms.size(); ++i) {
          done(i, hooks.tune(gemms[i], budgets[i], device));
          finished.insert(i);
        }
      } else {
        std::vector<const LoggedGemm*> queue;
        for (const LoggedGemm& g : gemms) queue.push_back(&g);
        read = TuneQueueInProcess(
            queue, budgets, *options,
            [&](size_t i, TunedGemm t) {
              done(i, std::move(t));
              finished.insert(i);
            },
            &provider_version);
      }
    }
    // Whatever could not be tuned is answered too, so the parent never waits for it.
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (finished.contains(i)) continue;
      TunedGemm t;
      if (i < gemms.size()) t.gemm = gemms[i];
      t.device = device;
      t.outcome = "failed: " + read.ToString();
      done(i, std::move(t));
    }
    send({{"event", "batch_end"}, {"provider_version", provider_version}});
  }
  return 0;
}

StatusOr<TuneResult> TuneInWorkerProcesses(const std::string& log_source,
                                           std::span<const LoggedGemm* const> queue,
                                           const TuneOptions& options,
                                           const TuneProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  const TuneWorkerLauncher launch = options.worker_launcher
                                        ? options.worker_launcher
                                        : ExecTuneWorkerLauncher(options.worker_command);
  TuneResult result;
  result.run_id = options.run_id.empty() ? DefaultTuneRunId() : options.run_id;
  result.log_source = log_source;
  result.device_kind = options.device_kind;
  result.options = options;
  result.options.run_id = result.run_id;

  // Start every worker and read its hello; the first one's hardware is the run's.
  std::vector<Worker> workers(options.devices.size());
  std::optional<HardwareProfile> hardware;
  Status first_error;
  for (size_t w = 0; w < workers.size(); ++w) {
    Worker& worker = workers[w];
    worker.device = options.devices[w];
    worker.record.device = worker.device;
    StatusOr<TuneWorkerProcess> process = launch(worker.device);
    if (!process.ok()) {
      worker.record.ended = "failed to start: " + process.status().ToString();
      if (first_error.ok()) first_error = process.status();
      continue;
    }
    worker.process = *process;
    worker.record.pid = process->pid;
    StatusOr<std::string> line = ReadLineWithin(worker, 300);
    json hello = line.ok() ? json::parse(*line, nullptr, false) : json();
    if (!line.ok() || hello.is_discarded() || !hello.value("ok", false)) {
      const std::string reason = !line.ok()             ? line.status().ToString()
                                 : hello.is_discarded() ? "an unreadable hello"
                                                        : hello.value("reason", "");
      ::kill(worker.process.pid, SIGKILL);
      CloseWorker(worker);
      ReapReason(worker.process.pid);
      worker.record.ended = "failed to start: " + reason;
      if (first_error.ok())
        first_error = UnavailableError("tune worker on device " + std::to_string(worker.device) +
                                       ": " + reason);
      continue;
    }
    worker.alive = true;
    if (!hardware) {
      StatusOr<HardwareProfile> profile =
          HardwareProfileFromJson(hello["hardware"].dump(), "the worker's hello");
      if (profile.ok()) hardware = *profile;
    }
  }
  auto alive = [&] {
    return std::count_if(workers.begin(), workers.end(), [](const Worker& w) { return w.alive; });
  };
  if (alive() == 0 || !hardware) {
    for (Worker& w : workers) {
      if (w.alive) {
        CloseWorker(w);
        ReapReason(w.process.pid);
      }
    }
    return first_error.ok() ? UnavailableError("tune: no worker process started") : first_error;
  }
  result.hardware = *hardware;
  result.hardware.device_kind = options.device_kind;
  KSELECT_ASSIGN_OR_RETURN(const HardwareConstants constants,
                           HardwareConstantsFor(result.hardware));
  const std::vector<double> budgets = SearchBudgets(queue, options, constants);
  const json options_json = TuneOptionsToJson(result.options);

  // Longest first, each to the least loaded live worker.
  auto assign = [&](std::vector<size_t> jobs) -> bool {
    std::sort(jobs.begin(), jobs.end(), [&](size_t a, size_t b) {
      return budgets[a] > budgets[b] || (budgets[a] == budgets[b] && a < b);
    });
    std::map<size_t, json> batches;  // worker -> jobs
    for (const size_t job : jobs) {
      std::optional<size_t> best;
      for (size_t w = 0; w < workers.size(); ++w) {
        if (workers[w].alive && (!best || workers[w].load_s < workers[*best].load_s)) best = w;
      }
      if (!best) return false;
      workers[*best].load_s += budgets[job] + kOverheadPerGemmS;
      workers[*best].assigned.push_back(job);
      batches[*best].push_back(
          {{"job", job}, {"gemm", LoggedGemmToJson(*queue[job])}, {"budget_s", budgets[job]}});
    }
    for (auto& [w, batch] : batches) {
      const json request = {{"cmd", "tune"}, {"options", options_json}, {"jobs", batch}};
      // A failed write shows as the worker's end of output, handled below.
      WriteAllIgnoringSigpipe(workers[w].process.to_worker, request.dump() + "\n");
      workers[w].last_heard = std::chrono::steady_clock::now();
    }
    return true;
  };

  std::vector<TunedGemm> tuned(queue.size());
  std::vector<bool> finished(queue.size(), false);
  std::vector<int> deaths(queue.size(), 0);  // workers that died running the job
  size_t finished_count = 0;
  auto finish = [&](size_t job, TunedGemm t) {
    if (job >= queue.size() || finished[job]) return;
    finished[job] = true;
    tuned[job] = std::move(t);
    ++finished_count;
    if (progress) progress(TuneProgressLine(tuned[job], finished_count, queue.size()));
  };
  std::vector<size_t> all(queue.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  assign(all);
  const double max_budget = budgets.empty() ? 0 : *std::max_element(budgets.begin(), budgets.end());

  // A worker runs its jobs in the order sent, so the first unfinished one is what it died on:
  // that one is retried once more, and fails alone when it kills a second worker; the rest go
  // to the others as they were.
  auto bury = [&](Worker& w, const std::string& why) {
    if (w.process.pid > 0) ::kill(w.process.pid, SIGKILL);
    CloseWorker(w);
    const std::string reaped = ReapReason(w.process.pid);
    w.alive = false;
    w.record.ended = why.empty() ? reaped : why + "; " + reaped;
    std::vector<size_t> retry;
    bool suspect = true;
    for (const size_t job : w.assigned) {
      if (finished[job]) continue;
      if (suspect && ++deaths[job] >= 2) {
        TunedGemm t;
        t.gemm = *queue[job];
        t.device = w.device;
        t.outcome = "failed: its worker died twice (" + w.record.ended + ")";
        finish(job, std::move(t));
      } else {
        retry.push_back(job);
      }
      suspect = false;
    }
    w.assigned.clear();
    w.load_s = 0;
    if (!retry.empty() && !assign(retry)) {
      for (const size_t job : retry) {
        TunedGemm t;
        t.gemm = *queue[job];
        t.outcome = "failed: no worker left (" + w.record.ended + ")";
        finish(job, std::move(t));
      }
    }
  };

  while (finished_count < queue.size()) {
    std::vector<pollfd> fds;
    std::vector<size_t> owners;
    for (size_t w = 0; w < workers.size(); ++w) {
      if (!workers[w].alive) continue;
      fds.push_back({workers[w].process.from_worker, POLLIN, 0});
      owners.push_back(w);
    }
    if (fds.empty()) break;  // nothing alive: bury() has failed what was left
    const int ready = ::poll(fds.data(), fds.size(), 1000);
    if (ready < 0 && errno != EINTR) return InternalError(std::string("poll: ") + strerror(errno));
    for (size_t f = 0; f < fds.size(); ++f) {
      Worker& w = workers[owners[f]];
      if (!w.alive) continue;
      if ((fds[f].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        // A worker silent far past its longest GEMM's budget is hung: kill it.
        if (!w.assigned.empty() &&
            Seconds(w.last_heard) > options.worker_timeout_s + 2 * max_budget) {
          bury(w, "killed: silent for " + std::to_string(static_cast<int>(Seconds(w.last_heard))) +
                      " s");
        }
        continue;
      }
      char chunk[65536];
      const ssize_t n = ::read(w.process.from_worker, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        bury(w, "");
        continue;
      }
      w.last_heard = std::chrono::steady_clock::now();
      w.pending.append(chunk, static_cast<size_t>(n));
      size_t newline;
      while ((newline = w.pending.find('\n')) != std::string::npos) {
        const json message = json::parse(w.pending.substr(0, newline), nullptr, false);
        w.pending.erase(0, newline + 1);
        if (message.is_discarded()) continue;
        const std::string event = message.value("event", "");
        if (event == "done") {
          const size_t job = message.value("job", queue.size());
          StatusOr<TunedGemm> t = TunedGemmFromJson(message.value("result", json()));
          const auto at = std::find(w.assigned.begin(), w.assigned.end(), job);
          if (job >= queue.size() || at == w.assigned.end()) continue;
          w.assigned.erase(at);
          if (!t.ok()) {
            TunedGemm failed;
            failed.gemm = *queue[job];
            failed.device = w.device;
            failed.outcome = "failed: an unreadable result: " + t.status().ToString();
            finish(job, std::move(failed));
            continue;
          }
          ++w.record.gemms_done;
          w.record.busy_s += t->wall_s;
          w.load_s -= budgets[job] + kOverheadPerGemmS;
          finish(job, std::move(*t));
        } else if (event == "batch_end") {
          const std::string version = message.value("provider_version", "");
          if (result.provider_version.empty()) result.provider_version = version;
        }
      }
    }
  }
  // End of input ends each live worker: its last lines (batch_end) are read to its end of output
  // before its pipes close, so it never writes into a closed pipe.
  for (Worker& w : workers) {
    if (!w.alive) continue;
    ::close(w.process.to_worker);
    w.process.to_worker = -1;
    for (StatusOr<std::string> line = ReadLineWithin(w, 10); line.ok();
         line = ReadLineWithin(w, 10)) {
      const json message = json::parse(*line, nullptr, false);
      if (!message.is_discarded() && message.value("event", "") == "batch_end" &&
          result.provider_version.empty()) {
        result.provider_version = message.value("provider_version", "");
      }
    }
    CloseWorker(w);
    w.record.ended = ReapReason(w.process.pid);
    w.alive = false;
  }
  for (size_t i = 0; i < queue.size(); ++i) {
    if (!finished[i]) {
      tuned[i].gemm = *queue[i];
      tuned[i].outcome = "failed: no worker left";
    }
  }
  for (const Worker& w : workers) result.workers.push_back(w.record);
  result.gemms = std::move(tuned);
  result.seconds = Seconds(start);
  return result;
}

}  // namespace kselect
