// The CLI's subcommand table. Each subcommand lives in its own cmd_*.cpp and is one row of
// Commands(): a name, a one-line summary, and a function that declares its options on a CLI11
// sub-app and returns what to run once the options are parsed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kselect/progress.h"
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

// How much a subcommand prints, from the -q/--quiet and -v/--verbose switches every subcommand
// takes: -1 quiet (results and errors only, no progress), 0 normal, 1 or more verbose.
int Verbosity();
void SetVerbosity(int verbosity);
inline bool Quiet() {
  return Verbosity() < 0;
}
inline bool Verbose() {
  return Verbosity() > 0;
}

// Progress of long work on stderr: counts, rate and ETA. On a terminal one line redrawn in place
// at most ~10x/s; otherwise a plain line at most every `plain_every_s` seconds (none for work
// that ends sooner) or, with `plain_every_fraction` > 0, also each time another such fraction of
// the total is done, and a closing line when any was printed. Nothing with -q. The rate and ETA
// count from `started_s_ago` seconds before it is made (work begun before the total was known).
class Progress {
 public:
  Progress(std::string label, int64_t total, double plain_every_s = 10,
           double plain_every_fraction = 0, double started_s_ago = 0);
  ~Progress();
  void Update(int64_t done);
  // Prints `line` on stderr above the bar (a terminal's bar is cleared and redrawn below it).
  void Note(const std::string& line);
  void Finish();

 private:
  void Draw(int64_t done, double now);

  std::string label_;
  int64_t total_;
  bool terminal_;
  bool enabled_;
  double plain_every_s_;
  double plain_every_fraction_;
  int64_t plain_fraction_steps_ = 0;  // fraction steps already printed
  double start_s_;
  double last_draw_s_ = -1;
  int64_t last_done_ = 0;
  int64_t last_drawn_done_ = -1;
  bool drawn_ = false;
  bool finished_ = false;
};

// A library progress callback (kselect/progress.h) drawn as a Progress labelled "<label>
// (<unit>)": counts, rate and ETA, on a terminal redrawn in place, otherwise a plain line every
// 10 % or 10 s. Reports' details are printed as lines with -v. Nothing with -q.
ProgressCallback ShowProgress(std::string label);

// The example each subcommand's --help ends with, keyed by its path ("data merge"); "" when
// there is none (a test checks every subcommand has one).
const std::string& ExampleFor(const std::string& path);

// Declares an older spelling of an option, accepted but not listed in --help, bound to the same
// value (scripts written against it keep working).
template <typename T>
CLI::Option* AddHiddenAlias(CLI::App& app, const std::string& name, T& value) {
  return app.add_option(name, value, "alias")->group("");
}

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
