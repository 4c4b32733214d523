// The CLI's subcommand table. Each subcommand lives in its own cmd_*.cpp and is one row of
// Commands(): a name, a one-line summary, and a function that declares its options on a CLI11
// sub-app and returns what to run once the options are parsed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kselect/status.h"

namespace kselect::cli {

// Exit codes of every subcommand: 0 ok, 1 failure, 2 usage error.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

using RunFunction = std::function<int()>;

struct Command {
  const char* name;
  const char* summary;
  // Declares options on `app` (bound to state the returned function captures) and returns the
  // function that runs the subcommand after parsing.
  std::function<RunFunction(CLI::App& app)> setup;
};

// Every subcommand, in the order `kselect --help` lists them.
const std::vector<Command>& Commands();

// Stages of the pipeline that later work fills in; `kselect --help` lists them as planned so a
// reader sees the whole shape, but they are not registered and do not pretend to run.
struct PlannedCommand {
  const char* name;
  const char* summary;
};
const std::vector<PlannedCommand>& PlannedCommands();

// Prints "kselect <command>: error: <status>" to stderr and returns kExitFailure.
int ReportError(const char* command, const Status& status);

// True when stderr is a terminal (progress bars are drawn only then).
bool StderrIsTerminal();

// A progress line with rate and ETA on stderr, drawn only on a terminal and at most ~10x/s.
class Progress {
 public:
  Progress(std::string label, int64_t total);
  ~Progress();
  void Update(int64_t done);
  void Finish();

 private:
  std::string label_;
  int64_t total_;
  bool enabled_;
  double start_s_;
  double last_draw_s_ = -1;
  bool finished_ = false;
};

// One row per subcommand file.
Command VersionCommand();
Command HwCommand();
Command IngestCommand();
Command DataCommand();
Command ShapesCommand();
Command CatalogueCommand();
Command BenchCommand();
Command TileCommand();
Command ConvCommand();
Command SearchCommand();
Command LogCommand();
Command FeaturesCommand();
Command TrainCommand();
Command EvalCommand();
Command PredictCommand();
Command ModelCommand();
Command CompareCommand();
Command TuneCommand();
Command ReplayCommand();

}  // namespace kselect::cli
