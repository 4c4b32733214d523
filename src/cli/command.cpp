#include "cli/command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

namespace kselect::cli {

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      // clang-format off
      VersionCommand(),
      HwCommand(),
      IngestCommand(),
      DataCommand(),
      ShapesCommand(),
      CatalogueCommand(),
      BenchCommand(),
      TileCommand(),
      ConvCommand(),
      SearchCommand(),
      LogCommand(),
      FeaturesCommand(),
      TrainCommand(),
      EvalCommand(),
      PredictCommand(),
      ModelCommand(),
      CompareCommand(),
      TuneCommand(),
      ReplayCommand(),
      // clang-format on
  };
  return commands;
}

const std::vector<PlannedCommand>& PlannedCommands() {
  static const std::vector<PlannedCommand> planned = {};
  return planned;
}

int ReportError(const char* command, const Status& status) {
  std::cerr << "kselect " << command << ": error: " << status.ToString() << "\n";
  return kExitFailure;
}

bool StderrIsTerminal() {
  return ::isatty(STDERR_FILENO) == 1;
}

namespace {
double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)),
      total_(total),
      enabled_(StderrIsTerminal()),
      start_s_(NowSeconds()) {}

Progress::~Progress() {
  Finish();
}

void Progress::Update(int64_t done) {
  if (!enabled_ || finished_) return;
  const double now = NowSeconds();
  if (last_draw_s_ >= 0 && now - last_draw_s_ < 0.1 && done < total_) return;
  last_draw_s_ = now;
  const double elapsed = now - start_s_;
  const double fraction = total_ > 0 ? static_cast<double>(done) / static_cast<double>(total_) : 0;
  const double eta = fraction > 0 ? elapsed * (1 - fraction) / fraction : 0;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  std::fprintf(stderr, "\r%s [%s%s] %lld/%lld  %.1f/s  ETA %.0fs ", label_.c_str(),
               std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(),
               static_cast<long long>(done), static_cast<long long>(total_),
               elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0, eta);
  std::fflush(stderr);
}

void Progress::Finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  std::fprintf(stderr, "\n");
}

}  // namespace kselect::cli
