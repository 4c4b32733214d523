// The bench's worker process: the only process of a sweep that touches CUDA. The coordinator
// talks to it over two pipes, one JSON object per line, and kills it when it crashes or hangs.
//
// Requests and replies:
//   {"cmd":"hello"}                       -> {"ok":true,"hardware":{...HardwareProfile...}}
//   {"cmd":"plan","problem":{...}}        ->
//   {"ok":true,"configs":[...],"peers":[...],"peers_b":[...],"enumerated":N}
//        (configs: the enumerated space filtered by the rule set; enumerated = their count;
//        peers, peers_b: the provider's first and second heuristic's picks, best first)
//   {"cmd":"time","problem":{...},"config":{...},"abort_bound_ms":B,"inject":"",
//    "reference":{...},"reference_ms":R}   (reference: optional, drift control)
//        -> {"ok":true,"latency_ms":..,"cv":..,"samples":..,"aborted":..,"method":{...},
//            "reference_latency_ms":..}   (the reference's batches, each right after the config's)
//   any failure -> {"ok":false,"reason":"...","fatal":bool}; fatal: the worker exits after it
//   (a sticky CUDA error leaves its context unusable).
#pragma once

#include <sys/types.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "kselect/bench.h"

namespace kselect::bench {

// A worker process and the coordinator's end of its pipes.
class WorkerClient {
 public:
  WorkerClient(const BenchOptions& options, int device) : options_(options), device_(device) {}
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;
  ~WorkerClient() { Kill(); }

  // Sends `request` (starting a worker first when none runs) and waits up to `timeout_s` for the
  // reply. kTimeout when the watchdog fires (the worker is killed); kInternal "worker died:
  // signal 11 (Segmentation fault)" when it crashed. Either way the next Request starts a fresh
  // one.
  StatusOr<nlohmann::json> Request(const nlohmann::json& request, double timeout_s);
  // Request in two halves, so the coordinator can work while the worker answers (the planner
  // enumerates the next problem while the timer times this one). Send starts a worker when none
  // runs; a failed Send is reported by the next Receive.
  void Send(const nlohmann::json& request);
  StatusOr<nlohmann::json> Receive(double timeout_s);
  // Kills and reaps the worker, if one runs.
  void Kill();
  int64_t restarts() const { return restarts_; }

 private:
  Status Start();
  std::string ReapReason();

  const BenchOptions& options_;
  int device_;
  pid_t pid_ = -1;
  int to_worker_ = -1, from_worker_ = -1;
  std::string pending_;
  std::string send_error_;  // a failed Send's reason, returned by the next Receive
  int64_t restarts_ = 0;
  bool started_once_ = false;
};

// Environment variable naming a config to fail on purpose, for isolation tests:
// "crash:I" or "hang:I" makes the worker crash (SIGSEGV) or hang while timing the I-th config
// (0-based) of every problem's list.
inline constexpr const char* kFaultInjectionEnv = "KSELECT_BENCH_FAULT";

}  // namespace kselect::bench
