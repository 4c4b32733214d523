#include "cli/command.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

#include "core/clock.h"

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
int g_verbosity = 0;

std::string Duration(double seconds) {
  char buf[32];
  if (seconds < 90) {
    std::snprintf(buf, sizeof(buf), "%.0fs", seconds);
  } else if (seconds < 5400) {
    std::snprintf(buf, sizeof(buf), "%.0fm%02.0fs", std::floor(seconds / 60),
                  std::fmod(seconds, 60.0));
  } else {
    std::snprintf(buf, sizeof(buf), "%.0fh%02.0fm", std::floor(seconds / 3600),
                  std::floor(std::fmod(seconds, 3600.0) / 60));
  }
  return buf;
}
}  // namespace

int Verbosity() {
  return g_verbosity;
}

void SetVerbosity(int verbosity) {
  g_verbosity = verbosity;
}

Progress::Progress(std::string label, int64_t total, double plain_every_s,
                   double plain_every_fraction, double started_s_ago)
    : label_(std::move(label)),
      total_(total),
      terminal_(StderrIsTerminal()),
      enabled_(!Quiet()),
      plain_every_s_(plain_every_s),
      plain_every_fraction_(plain_every_fraction),
      start_s_(NowSeconds() - started_s_ago) {}

Progress::~Progress() {
  Finish();
}

void Progress::Update(int64_t done) {
  if (!enabled_ || finished_) return;
  last_done_ = done;
  const double now = NowSeconds();
  if (terminal_) {
    if (last_draw_s_ >= 0 && now - last_draw_s_ < 0.1 && done < total_) return;
  } else {
    const double since = now - (last_draw_s_ >= 0 ? last_draw_s_ : start_s_);
    bool new_step = false;
    if (plain_every_fraction_ > 0 && total_ > 0) {
      const auto steps = static_cast<int64_t>(
          static_cast<double>(done) / static_cast<double>(total_) / plain_every_fraction_ + 1e-9);
      new_step = steps > plain_fraction_steps_;
      if (new_step) plain_fraction_steps_ = steps;
    }
    if (since < plain_every_s_ && !new_step) return;
  }
  Draw(done, now);
}

void Progress::Note(const std::string& line) {
  if (!enabled_) return;
  const bool redraw = terminal_ && drawn_ && !finished_;
  if (redraw) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s\n", line.c_str());
  if (redraw) Draw(last_done_, NowSeconds());
  std::fflush(stderr);
}

void Progress::Draw(int64_t done, double now) {
  last_draw_s_ = now;
  last_drawn_done_ = done;
  drawn_ = true;
  const double elapsed = now - start_s_;
  const double fraction = total_ > 0 ? static_cast<double>(done) / static_cast<double>(total_) : 0;
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0;
  const std::string eta = fraction > 0 && done < total_
                              ? "ETA " + Duration(elapsed * (1 - fraction) / fraction)
                              : "in " + Duration(elapsed);
  if (terminal_) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(std::min(fraction, 1.0) * kWidth);
    std::fprintf(stderr, "\r%s [%s%s] %lld/%lld  %.1f/s  %s ", label_.c_str(),
                 std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(),
                 static_cast<long long>(done), static_cast<long long>(total_), rate, eta.c_str());
  } else {
    std::fprintf(stderr, "%s: %lld/%lld (%.0f %%), %.1f/s, %s\n", label_.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total_), 100 * fraction, rate,
                 eta.c_str());
  }
  std::fflush(stderr);
}

void Progress::Finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  if (!drawn_) return;  // work that ended before the first line needs no closing one
  if (terminal_) {
    Draw(last_done_, NowSeconds());
    std::fprintf(stderr, "\n");
  } else if (last_drawn_done_ != last_done_ || last_done_ < total_) {
    Draw(last_done_, NowSeconds());  // a finished count already printed needs no second line
  }
}

ProgressCallback ShowProgress(std::string label) {
  struct State {
    std::string label;
    std::unique_ptr<Progress> bar;
    int64_t total = -1;
    double start_s = 0;  // the work began when the callback was made, before the first report
  };
  auto state = std::make_shared<State>();
  state->label = std::move(label);
  state->start_s = NowSeconds();
  return [state](const ProgressCount& report) {
    if (Quiet()) return;
    if (!state->bar || report.total != state->total) {
      if (state->bar) state->bar->Finish();
      state->total = report.total;
      state->bar = std::make_unique<Progress>(state->label + " (" + std::string(report.unit) + ")",
                                              report.total, 10, 0.1, NowSeconds() - state->start_s);
    }
    if (!report.detail.empty() && Verbose()) state->bar->Note(state->label + ": " + report.detail);
    state->bar->Update(report.done);
    if (report.done >= report.total) state->bar->Finish();
  };
}

const std::string& ExampleFor(const std::string& path) {
  // One example per subcommand, as a user would type it; `kselect <path> --help` ends with it.
  static const std::map<std::string, std::string> examples = {
      // clang-format off
      {"version", "kselect version --json"},
      {"hw", "kselect hw --save h200.json      # on the GPU host; kselect hw --load h200.json elsewhere"},
      {"ingest", "kselect ingest sweep.jsonl -o sweep.parquet\n"
                 "  kselect ingest tile.log --arch gfx950 -o ck.parquet    # an AMD CK Tile log"},
      {"data", "kselect data info data/h200/cublaslt_default_bf16_tn_holdout.parquet"},
      {"data info", "kselect data info data/h200/cublaslt_default_bf16_tn_holdout.parquet --json"},
      {"data merge", "kselect data merge a.parquet b.parquet -o ab.parquet"},
      {"data filter", "kselect data filter sweep.parquet -o decode.parquet --n 1:16 --valid-only"},
      {"data schema", "kselect data schema --markdown      # = docs/dataset_schema.md"},
      {"data report", "kselect data report data/h200/cublaslt_default_bf16_tn_wide.parquet "
                      "--markdown-output report.md"},
      {"shapes", "kselect shapes generate --set holdout_framework -o holdout_framework.csv"},
      {"shapes generate", "kselect shapes generate --set wide -o wide.csv"},
      {"shapes check", "kselect shapes check shapes/wide.csv"},
      {"catalogue", "kselect catalogue --provider cublaslt --rules default -m 4096 -n 16 -k 4096 "
                    "--ops TN   # GPU"},
      {"bench", "kselect bench --shapes shapes/holdout_framework.csv --provider cublaslt "
                "--rules default --device-kind nvidia-h200 -o sweep.jsonl --resume   # GPU\n"
                "  kselect bench --shapes shapes/conv_train.csv --conv-direction fwd --dry-run"},
      {"tile", "kselect tile list --rules tiny"},
      {"tile list", "kselect tile list --rules tiny --stats"},
      {"tile source", "kselect tile source --rules tiny --index 0"},
      {"tile build", "kselect tile build --rules default -j 2"},
      {"tile verify", "kselect tile verify --rules tests   # GPU"},
      {"tile time", "kselect tile time --rules tiny --shape 4096,4096,4096   # GPU"},
      {"tile bench", "kselect tile bench --rules default --shape 4096,16,4096 --layout rcc "
                     "-o h2h.json   # GPU"},
      {"tile cross", "kselect tile cross --model models/h200_cross_bf16_tn --screened "
                     "data/h200/head_to_head_holdout_framework_screened.json.gz"},
      {"conv", "kselect conv select --model models/h200_cudnn_conv_fwd --n 8 --c 64 --k 64 "
               "--hi 56 --wi 56 --y 3 --x 3 --pad 1"},
      {"conv list", "kselect conv list --n 8 --c 64 --k 64 --hi 56 --wi 56 --y 3 --x 3 --pad 1 "
                    "--direction fwd   # GPU"},
      {"conv select", "kselect conv select --model models/h200_cudnn_conv_fwd --shapes "
                      "shapes/conv_validation.csv --peer-data "
                      "data/h200/cudnn_conv_fwd_validation.parquet --top 3"},
      {"search", "kselect search --model models/h200_tile_default_bf16_tn --shape 8192,512,4096 "
                 "--strategy de --budget 300 -o search.json"},
      {"log", "kselect log summarize app_trace.log.gz --thr 0.01"},
      {"log summarize", "kselect log summarize gemms.csv --thr 0.01 --json -o summary.json"},
      {"features", "kselect features --data sweep.parquet --peer-rank -o features.parquet"},
      {"train", "kselect train --data sweep.parquet -o models/mine --objective lambdarank "
                "--peer-rank --param min_data_in_leaf=50 -v"},
      {"eval", "kselect eval --model models/h200_cublaslt_default_rank --data "
               "data/h200/cublaslt_default_bf16_tn_framework_test.parquet --html-output "
               "report.html"},
      {"predict", "kselect predict --model models/h200_cublaslt_default --m 4096 --n 16 --k 4096"
                  "   # nn.Linear 4096->4096, 16 tokens"},
      {"model", "kselect model candidates --model models/old --data its_training.parquet"},
      {"model candidates", "kselect model candidates --model models/old --data its_training.parquet"},
      {"model score", "kselect model score --ck-model ck_models/gemm_universal_fp16_gfx950 "
                      "--rows rows.csv --target tflops"},
      {"compare", "kselect compare models/old models/new --data train.parquet --oof"},
      {"tune", "kselect tune gemms.csv --model models/h200_cublaslt_default_rank -o tuned/   # GPU"},
      {"tune merge", "kselect tune merge lib.json tuned/solutions.json -o lib.json.new"},
      {"replay", "kselect replay gemms.csv --library tuned/solutions.json   # GPU"},
      // clang-format on
  };
  static const std::string none;
  const auto it = examples.find(path);
  return it == examples.end() ? none : it->second;
}

}  // namespace kselect::cli
