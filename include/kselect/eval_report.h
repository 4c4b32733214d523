// The evaluation report as one self-contained HTML file: the summary against the peers, an
// efficiency CDF per selector, a predicted-vs-measured scatter, the worst problems and the
// slices. Plots are inline SVG generated here; the file loads nothing (no scripts, no fonts, no
// network), so it can be mailed, attached to CI runs or opened offline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/eval.h"

namespace kselect {

struct ScatterPoint {
  double x = 0;
  double y = 0;
};

// What the model predicted for the candidates it was evaluated on, as a scatter plot.
struct PredictionScatter {
  enum class Kind {
    kNone,                   // nothing to plot; `omitted_reason` says why
    kPredictedVsMeasured,    // regression: x = predicted TFLOPS, y = measured TFLOPS
    kScoreRankVsEfficiency,  // ranker: x = rank by score within the problem (1 = the pick),
                             // y = measured TFLOPS / the problem's oracle TFLOPS
  };
  Kind kind = Kind::kNone;
  std::vector<ScatterPoint> points;  // an evenly strided, deterministic sample
  int64_t total_points = 0;          // candidates before sampling
  std::string omitted_reason;
};

// Builds the scatter from per-candidate scores: scores[p][c] belongs to
// data.problems[p].candidates[c]. `ranker` says the scores order candidates but are not TFLOPS.
// Keeps at most `max_points` points (every k-th candidate) so the file stays small. Scores that
// are not finite, and regression predictions that are not positive, are left out.
PredictionScatter BuildPredictionScatter(const CandidateSet& data,
                                         std::span<const std::vector<double>> scores, bool ranker,
                                         size_t max_points = 4000);

struct HtmlReportOptions {
  std::string model_dir;
  std::string data_path;
  size_t worst_count = 20;   // rows of the worst-problems table
  bool in_sample = false;    // the data is the model's training data: the report says so
  bool out_of_fold = false;  // scores are the model's out-of-fold predictions: held out
};

// The whole report, one HTML5 document. Every piece of text from inputs is escaped.
std::string EvalSummaryToHtml(const EvalSummary& summary, const PredictionScatter& scatter,
                              const HtmlReportOptions& options);

// Escapes & < > " ' so `text` is safe in HTML text and in quoted attribute values.
std::string HtmlEscape(std::string_view text);

}  // namespace kselect
