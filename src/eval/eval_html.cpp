// The self-contained HTML evaluation report: tables and inline SVG plots, no scripts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include "core/text.h"
#include "kselect/eval_report.h"
#include "kselect/version.h"

namespace kselect {
namespace {

// Problems whose efficiency rounds to 1 picked the oracle (or a config exactly as fast).
constexpr double kOracleTolerance = 1e-12;

// One colour per selector, the same in every plot and the legend.
struct Method {
  const char* id;     // data-method attribute, stable for tests and styling
  std::string label;  // shown to readers: the peers are named by provider (PeerNamesOf)
  const char* colour;
};
const Method kModel = {"model", "kselect model", "#1f77b4"};

std::string Pct(double v) {
  return text::Percent(v);
}

// Compact number for axis ticks: 0.5, 10, 1000, 1e+04.
std::string Tick(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// A plot area mapping data coordinates to SVG pixels, linear or log10 per axis.
class Plot {
 public:
  static constexpr double kWidth = 640, kHeight = 400;
  static constexpr double kLeft = 70, kRight = 20, kTop = 20, kBottom = 56;

  Plot(double x_lo, double x_hi, bool x_log, double y_lo, double y_hi, bool y_log)
      : x_lo_(x_lo), x_hi_(x_hi), y_lo_(y_lo), y_hi_(y_hi), x_log_(x_log), y_log_(y_log) {}

  double X(double x) const {
    return kLeft + (kWidth - kLeft - kRight) * Unit(x, x_lo_, x_hi_, x_log_);
  }
  double Y(double y) const {
    return kHeight - kBottom - (kHeight - kTop - kBottom) * Unit(y, y_lo_, y_hi_, y_log_);
  }

  // Frame, grid lines, tick labels and axis titles.
  std::string Axes(const std::string& x_title, const std::string& y_title) const {
    std::ostringstream svg;
    svg << "<g class=\"axes\" font-size=\"12\" fill=\"#333\">";
    for (double t : Ticks(x_lo_, x_hi_, x_log_)) {
      svg << "<line x1=\"" << text::Fixed(X(t), 1) << "\" x2=\"" << text::Fixed(X(t), 1)
          << "\" y1=\"" << kTop << "\" y2=\"" << kHeight - kBottom << "\" stroke=\"#e5e5e5\"/>"
          << "<text x=\"" << text::Fixed(X(t), 1) << "\" y=\"" << kHeight - kBottom + 16
          << "\" text-anchor=\"middle\">" << Tick(t) << "</text>";
    }
    for (double t : Ticks(y_lo_, y_hi_, y_log_)) {
      svg << "<line x1=\"" << kLeft << "\" x2=\"" << kWidth - kRight << "\" y1=\""
          << text::Fixed(Y(t), 1) << "\" y2=\"" << text::Fixed(Y(t), 1) << "\" stroke=\"#e5e5e5\"/>"
          << "<text x=\"" << kLeft - 6 << "\" y=\"" << text::Fixed(Y(t) + 4, 1)
          << "\" text-anchor=\"end\">" << Tick(t) << "</text>";
    }
    svg << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kWidth - kLeft - kRight
        << "\" height=\"" << kHeight - kTop - kBottom << "\" fill=\"none\" stroke=\"#888\"/>";
    svg << "<text x=\"" << (kLeft + kWidth - kRight) / 2 << "\" y=\"" << kHeight - 14
        << "\" text-anchor=\"middle\">" << HtmlEscape(x_title) << "</text>";
    svg << "<text transform=\"translate(16," << (kTop + kHeight - kBottom) / 2
        << ") rotate(-90)\" text-anchor=\"middle\">" << HtmlEscape(y_title) << "</text>";
    svg << "</g>";
    return svg.str();
  }

 private:
  static double Unit(double v, double lo, double hi, bool log) {
    if (log) {
      v = std::log10(v);
      lo = std::log10(lo);
      hi = std::log10(hi);
    }
    return hi > lo ? (v - lo) / (hi - lo) : 0.5;
  }

  // Powers of ten on a log axis; 5 or so round steps on a linear one.
  static std::vector<double> Ticks(double lo, double hi, bool log) {
    std::vector<double> ticks;
    if (log) {
      for (double t = std::pow(10.0, std::ceil(std::log10(lo) - 1e-9)); t <= hi * (1 + 1e-9);
           t *= 10) {
        ticks.push_back(t);
      }
      return ticks;
    }
    const double raw = (hi - lo) / 5;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    double step = magnitude;
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
      step = m * magnitude;
      if (step >= raw) break;
    }
    for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) {
      ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
    }
    return ticks;
  }

  double x_lo_, x_hi_, y_lo_, y_hi_;
  bool x_log_, y_log_;
};

std::string SvgOpen(const char* id, const std::string& description) {
  std::ostringstream svg;
  svg << "<svg id=\"" << id << "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << Plot::kWidth
      << "\" height=\"" << Plot::kHeight << "\" viewBox=\"0 0 " << Plot::kWidth << " "
      << Plot::kHeight << "\" role=\"img\" aria-label=\"" << HtmlEscape(description) << "\">";
  return svg.str();
}

struct CdfSeries {
  const Method* method;
  std::vector<double> values;
};

// Share of problems with efficiency <= x, as a step function per selector.
std::string EfficiencyCdfSvg(const std::vector<CdfSeries>& series) {
  double lowest = 1;
  for (const CdfSeries& s : series) {
    for (double v : s.values) lowest = std::min(lowest, v);
  }
  // Start at a round tenth below the worst problem so the interesting part fills the plot.
  const double x_lo = std::clamp(std::floor(lowest * 10 - 1e-9) / 10, 0.0, 0.9);
  const Plot plot(x_lo, 1.0, false, 0.0, 1.0, false);
  std::ostringstream svg;
  svg << SvgOpen("efficiency-cdf", "efficiency CDF per selector")
      << plot.Axes("efficiency (measured TFLOPS of the pick / oracle)",
                   "share of problems at or below");
  double legend_y = Plot::kTop + 16;
  for (const CdfSeries& s : series) {
    std::vector<double> sorted = s.values;
    std::sort(sorted.begin(), sorted.end());
    const double n = static_cast<double>(sorted.size());
    std::ostringstream d;
    d << "M" << text::Fixed(plot.X(x_lo), 1) << " " << text::Fixed(plot.Y(0), 1);
    for (size_t i = 0; i < sorted.size(); ++i) {
      const double x = std::clamp(sorted[i], x_lo, 1.0);
      d << " H" << text::Fixed(plot.X(x), 1) << " V" << text::Fixed(plot.Y((i + 1) / n), 1);
    }
    d << " H" << text::Fixed(plot.X(1.0), 1);
    svg << "<path class=\"cdf\" data-method=\"" << s.method->id << "\" data-problems=\""
        << sorted.size() << "\" d=\"" << d.str() << "\" fill=\"none\" stroke=\"" << s.method->colour
        << "\" stroke-width=\"2\"><title>" << HtmlEscape(s.method->label) << ": " << sorted.size()
        << " problems</title></path>";
    // Legend in the upper left, where a CDF of good selectors stays empty.
    const double lx = Plot::kLeft + 12;
    svg << "<line x1=\"" << lx << "\" x2=\"" << lx + 22 << "\" y1=\"" << legend_y << "\" y2=\""
        << legend_y << "\" stroke=\"" << s.method->colour << "\" stroke-width=\"3\"/>"
        << "<text x=\"" << lx + 28 << "\" y=\"" << legend_y + 4 << "\" font-size=\"12\">"
        << HtmlEscape(s.method->label) << " (" << sorted.size() << ")</text>";
    legend_y += 18;
  }
  svg << "</svg>";
  return svg.str();
}

std::string ScatterSvg(const PredictionScatter& scatter) {
  std::ostringstream svg;
  if (scatter.kind == PredictionScatter::Kind::kPredictedVsMeasured) {
    double lo = INFINITY, hi = 0;
    for (const ScatterPoint& p : scatter.points) {
      lo = std::min({lo, p.x, p.y});
      hi = std::max({hi, p.x, p.y});
    }
    // One range for both axes so the diagonal is "predicted = measured".
    lo = std::pow(10.0, std::floor(std::log10(lo)));
    hi = std::pow(10.0, std::ceil(std::log10(hi)));
    if (hi <= lo) hi = lo * 10;
    const Plot plot(lo, hi, true, lo, hi, true);
    svg << SvgOpen("prediction-scatter", "predicted versus measured TFLOPS")
        << plot.Axes("predicted TFLOPS", "measured TFLOPS") << "<line class=\"diagonal\" x1=\""
        << text::Fixed(plot.X(lo), 1) << "\" y1=\"" << text::Fixed(plot.Y(lo), 1) << "\" x2=\""
        << text::Fixed(plot.X(hi), 1) << "\" y2=\"" << text::Fixed(plot.Y(hi), 1)
        << "\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>";
    svg << "<g class=\"points\" fill=\"" << kModel.colour << "\" fill-opacity=\"0.45\">";
    for (const ScatterPoint& p : scatter.points) {
      svg << "<circle cx=\"" << text::Fixed(plot.X(p.x), 1) << "\" cy=\""
          << text::Fixed(plot.Y(p.y), 1) << "\" r=\"2\"/>";
    }
    svg << "</g></svg>";
  } else {
    double max_rank = 1;
    for (const ScatterPoint& p : scatter.points) max_rank = std::max(max_rank, p.x);
    const double x_hi = std::pow(10.0, std::ceil(std::log10(max_rank) + 1e-9));
    const Plot plot(1, std::max(10.0, x_hi), true, 0.0, 1.0, false);
    svg << SvgOpen("prediction-scatter", "measured efficiency by predicted rank")
        << plot.Axes("rank by the model's score within the problem (1 = the pick)",
                     "measured TFLOPS / oracle");
    svg << "<g class=\"points\" fill=\"" << kModel.colour << "\" fill-opacity=\"0.45\">";
    for (const ScatterPoint& p : scatter.points) {
      svg << "<circle cx=\"" << text::Fixed(plot.X(p.x), 1) << "\" cy=\""
          << text::Fixed(plot.Y(std::clamp(p.y, 0.0, 1.0)), 1) << "\" r=\"2\"/>";
    }
    svg << "</g></svg>";
  }
  return svg.str();
}

// Median of |predicted / measured - 1|: how far a regression model's TFLOPS are off, typically.
std::optional<double> MedianRelativeError(const PredictionScatter& scatter) {
  if (scatter.kind != PredictionScatter::Kind::kPredictedVsMeasured || scatter.points.empty()) {
    return std::nullopt;
  }
  std::vector<double> errors;
  for (const ScatterPoint& p : scatter.points) errors.push_back(std::abs(p.x / p.y - 1));
  return ComputeStats(std::move(errors)).median;
}

// Share of `values` that reached the oracle; nullopt without values.
std::optional<double> OracleShare(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  const auto hits = std::count_if(values.begin(), values.end(),
                                  [](double v) { return v >= 1 - kOracleTolerance; });
  return static_cast<double>(hits) / static_cast<double>(values.size());
}

std::string Cell(const std::optional<double>& share) {
  return share ? "<td class=\"num\">" + Pct(*share) + "</td>"
               : "<td class=\"na\" title=\"the peer ranks only its top 8\">n/a</td>";
}

// A config as the CLI names it (`kselect predict`'s "cublaslt algo66 tile64x16 ..."), with its
// on-disk key beside it in small type (what the JSON report and the datasets hold).
std::string ConfigCell(const std::string& name, const std::string& key) {
  if (name.empty() || name == key) return "<code>" + HtmlEscape(key) + "</code>";
  return "<code>" + HtmlEscape(name) + "</code> <small class=\"key\">" + HtmlEscape(key) +
         "</small>";
}

std::string StatsCells(const EfficiencyStats& s) {
  return "<td class=\"num\">" + std::to_string(s.count) + "</td><td class=\"num\">" + Pct(s.mean) +
         "</td><td class=\"num\">" + Pct(s.median) + "</td><td class=\"num\">" + Pct(s.p10) +
         "</td><td class=\"num\">" + Pct(s.min) + "</td>";
}

constexpr const char* kStyle = R"css(
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.na { color: #999; text-align: center; }
code { font-size: 0.85em; word-break: break-all; }
.note { background: #fff4d6; border: 1px solid #e0c060; padding: 0.5em 1em; }
.caption { color: #555; max-width: 640px; }
figure { margin: 1em 0; }
figcaption { color: #555; max-width: 640px; margin-top: 0.3em; }
.headline { font-size: 1.1em; max-width: 760px; }
small.key { color: #777; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 2px 1em; }
dl.meta dt { font-weight: bold; } dl.meta dd { margin: 0; }
)css";

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

PredictionScatter BuildPredictionScatter(const CandidateSet& data,
                                         std::span<const std::vector<double>> scores, bool ranker,
                                         size_t max_points) {
  KSELECT_CHECK(scores.size() == data.problems.size());
  PredictionScatter scatter;
  scatter.kind = ranker ? PredictionScatter::Kind::kScoreRankVsEfficiency
                        : PredictionScatter::Kind::kPredictedVsMeasured;
  std::vector<ScatterPoint> all;
  for (size_t p = 0; p < data.problems.size(); ++p) {
    const std::vector<Candidate>& candidates = data.problems[p].candidates;
    const std::vector<double>& s = scores[p];
    KSELECT_CHECK(s.size() == candidates.size());
    if (!ranker) {
      for (size_t c = 0; c < candidates.size(); ++c) {
        if (std::isfinite(s[c]) && s[c] > 0) all.push_back({s[c], candidates[c].tflops});
      }
      continue;
    }
    double oracle = 0;
    for (const Candidate& c : candidates) oracle = std::max(oracle, c.tflops);
    // The same order EvaluateProblem uses: descending score, ties by candidate index.
    std::vector<size_t> order;
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (std::isfinite(s[c])) order.push_back(c);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] > s[b]; });
    for (size_t r = 0; r < order.size(); ++r) {
      all.push_back({static_cast<double>(r + 1), candidates[order[r]].tflops / oracle});
    }
  }
  scatter.total_points = static_cast<int64_t>(all.size());
  if (all.empty()) {
    scatter.kind = PredictionScatter::Kind::kNone;
    scatter.omitted_reason = "the model gave no usable prediction for any candidate";
    return scatter;
  }
  const size_t stride = max_points == 0 ? all.size() : (all.size() + max_points - 1) / max_points;
  for (size_t i = 0; i < all.size(); i += stride) scatter.points.push_back(all[i]);
  return scatter;
}

std::string EvalSummaryToHtml(const EvalSummary& s, const PredictionScatter& scatter,
                              const HtmlReportOptions& options) {
  const PeerNames& names = s.peer_names;
  const Method kPeerTop1 = {"peer_top1", names.a.name + " (rank 1)", "#d62728"};
  const Method kPeerBestOf8 = {"peer_best_of_8", names.a.short_name + " best of top 8", "#2ca02c"};
  const Method kPeerBTop1 = {"peer_b_top1", names.b.name + " (rank 1)", "#ff7f0e"};
  const Method kPeerBBestOf8 = {"peer_b_best_of_8", names.b.short_name + " best of top 8",
                                "#9467bd"};
  std::vector<double> model, peer1, peer8, peer_b1, peer_b8;
  for (const ProblemOutcome& o : s.problems) {
    model.push_back(o.efficiency);
    if (o.peer_top1_efficiency) peer1.push_back(*o.peer_top1_efficiency);
    if (o.peer_best_of_8_efficiency) peer8.push_back(*o.peer_best_of_8_efficiency);
    if (o.peer_b_top1_efficiency) peer_b1.push_back(*o.peer_b_top1_efficiency);
    if (o.peer_b_best_of_8_efficiency) peer_b8.push_back(*o.peer_b_best_of_8_efficiency);
  }
  int64_t model_top8 = 0;
  for (const ProblemOutcome& o : s.problems) model_top8 += o.oracle_predicted_rank <= 8 ? 1 : 0;
  const double problems = std::max<double>(1.0, static_cast<double>(s.problems.size()));

  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    // Nothing may load from anywhere: the report is one file.
    << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
       "style-src 'unsafe-inline'\">\n"
    << "<title>kselect evaluation: " << HtmlEscape(options.model_dir) << "</title>\n<style>"
    << kStyle << "</style>\n</head>\n<body>\n<h1>kselect evaluation</h1>\n";
  h << "<dl class=\"meta\"><dt>model</dt><dd><code>" << HtmlEscape(options.model_dir)
    << "</code></dd><dt>data</dt><dd><code>" << HtmlEscape(options.data_path)
    << "</code></dd><dt>problems</dt><dd id=\"problem-count\">" << s.problems.size()
    << "</dd><dt>tool</dt><dd>" << HtmlEscape(ToolDescription()) << "</dd></dl>\n";
  if (options.out_of_fold) {
    h << "<p class=\"note\" id=\"out-of-fold\">Out of fold: every problem is scored with the "
         "predictions of the fold model that never saw its shape (GroupKFold by shape, early "
         "stopping on an inner split): the held-out figures.</p>\n";
  } else if (options.in_sample) {
    h << "<p class=\"note\" id=\"in-sample\">This is the model's training data, so these "
         "figures are in-sample; <code>cv_metrics.json</code> in the model directory holds the "
         "honest ones.</p>\n";
  }
  h << "<p class=\"caption\">Per problem (a shape with its layout and dtypes), efficiency = "
       "measured TFLOPS of the selected config / the best measured config (the oracle).</p>\n";

  // Summary: the headline (the speedup over the vendor's own pick), then the model against the
  // peer heuristic recorded in the data, and the model's top k timed at first use.
  h << "<h2>Summary</h2>\n";
  if (s.speedup_problems > 0) {
    h << "<p id=\"headline\" class=\"headline\">Speedup over the vendor's own pick ("
      << HtmlEscape(names.a.name) << ", rank 1), geomean over " << s.speedup_problems
      << " problems: <strong>" << text::Fixed(s.speedup_over_peer_top1, 4)
      << "x</strong> with the model's pick alone (faster on " << s.faster_than_peer_top1
      << ", slower on " << s.slower_than_peer_top1 << ")";
    for (const EvalSummary::TimedTopK& timed : s.timed) {
      if (timed.k > 3 || timed.efficiency.count == 0) continue;
      h << "; <strong>" << text::Fixed(timed.speedup_over_peer_top1, 4)
        << "x</strong> with its top " << timed.k << " timed at first use";
    }
    h << ".</p>\n";
  }
  h << "<table id=\"summary\">\n<thead><tr><th>selector</th><th>problems</th>"
       "<th>mean</th><th>median</th><th>P10</th><th>min</th><th>top-1</th>"
       "<th>oracle in top 8</th><th>NDCG@10</th></tr></thead>\n<tbody>\n";
  h << "<tr data-selector=\"" << kModel.id << "\"><th>" << kModel.label << "</th>"
    << StatsCells(s.model) << Cell(s.top1) << Cell(static_cast<double>(model_top8) / problems)
    << Cell(s.ndcg_at_10) << "</tr>\n";
  if (!peer1.empty()) {
    h << "<tr data-selector=\"" << kPeerTop1.id << "\"><th>" << HtmlEscape(kPeerTop1.label)
      << "</th>" << StatsCells(s.peer_top1) << Cell(OracleShare(peer1)) << Cell(OracleShare(peer8))
      << Cell(std::nullopt) << "</tr>\n";
  }
  if (!peer8.empty()) {
    // Autotuning the peer's top 8 picks the oracle exactly when the oracle is among them.
    h << "<tr data-selector=\"" << kPeerBestOf8.id << "\"><th>" << HtmlEscape(kPeerBestOf8.label)
      << "</th>" << StatsCells(s.peer_best_of_8) << Cell(OracleShare(peer8))
      << Cell(OracleShare(peer8)) << Cell(std::nullopt) << "</tr>\n";
  }
  // The provider's second heuristic (cuDNN's mode B), where the rows carry its ranks.
  if (!peer_b1.empty()) {
    h << "<tr data-selector=\"" << kPeerBTop1.id << "\"><th>" << HtmlEscape(kPeerBTop1.label)
      << "</th>" << StatsCells(s.peer_b.top1) << Cell(OracleShare(peer_b1))
      << Cell(OracleShare(peer_b8)) << Cell(std::nullopt) << "</tr>\n";
  }
  if (!peer_b8.empty()) {
    h << "<tr data-selector=\"" << kPeerBBestOf8.id << "\"><th>" << HtmlEscape(kPeerBBestOf8.label)
      << "</th>" << StatsCells(s.peer_b.best_of_8) << Cell(OracleShare(peer_b8))
      << Cell(OracleShare(peer_b8)) << Cell(std::nullopt) << "</tr>\n";
  }
  // The model's top k timed at first use (kselect::Gemm with time_top_k = k): the best measured
  // of its first k, as stdout and the Markdown report give them.
  for (const EvalSummary::TimedTopK& timed : s.timed) {
    if (timed.efficiency.count == 0) continue;
    h << "<tr data-selector=\"timed_top" << timed.k << "\"><th>kselect model, top " << timed.k
      << " timed at first use</th>" << StatsCells(timed.efficiency) << Cell(std::nullopt)
      << Cell(std::nullopt) << Cell(std::nullopt) << "</tr>\n";
  }
  h << "</tbody></table>\n";
  h << "<p class=\"caption\">Timed at first use: the selector times the model's first k configs "
       "the first time it meets a problem and runs the fastest (here the best measured of "
       "them).</p>\n";
  if (s.peer_b.speedup_problems > 0) {
    h << "<p class=\"caption\" id=\"peer-b-speedup\">Geomean speedup of the model's picks over "
      << HtmlEscape(names.b.name)
      << "'s rank-1 pick: " << text::Fixed(s.peer_b.speedup_over_top1, 4) << "x (faster on "
      << s.peer_b.faster_than_top1 << ", slower on " << s.peer_b.slower_than_top1 << " of "
      << s.peer_b.speedup_problems << " problems).</p>\n";
  }
  if (peer1.empty() && peer8.empty()) {
    h << "<p class=\"caption\">The data records no peer ranking (no <code>peer_rank</code> "
         "values), so there is no peer to compare with.</p>\n";
  }
  h << "<table id=\"ranking\">\n<thead><tr><th>ranking (model)</th><th>value</th></tr></thead>\n"
       "<tbody>\n"
    << "<tr><th>top-1 accuracy</th>" << Cell(s.top1) << "</tr>\n"
    << "<tr><th>top-3 hit rate</th>" << Cell(s.top3) << "</tr>\n"
    << "<tr><th>top-5 hit rate</th>" << Cell(s.top5) << "</tr>\n"
    << "<tr><th>top-10 hit rate</th>" << Cell(s.top10) << "</tr>\n"
    << "<tr><th>NDCG@5 (graded)</th>" << Cell(s.ndcg_at_5) << "</tr>\n"
    << "<tr><th>NDCG@10 (graded)</th>" << Cell(s.ndcg_at_10) << "</tr>\n"
    << "</tbody></table>\n";

  // Plots.
  std::vector<CdfSeries> series;
  if (!model.empty()) series.push_back({&kModel, model});
  if (!peer1.empty()) series.push_back({&kPeerTop1, peer1});
  if (!peer8.empty()) series.push_back({&kPeerBestOf8, peer8});
  if (!peer_b1.empty()) series.push_back({&kPeerBTop1, peer_b1});
  if (!peer_b8.empty()) series.push_back({&kPeerBBestOf8, peer_b8});
  h << "<h2>Efficiency distribution</h2>\n";
  if (series.empty()) {
    h << "<p>No problems were evaluated.</p>\n";
  } else {
    h << "<figure>\n"
      << EfficiencyCdfSvg(series) << "\n"
      << "<figcaption id=\"cdf-caption\">Figure 1. Efficiency per problem, as a cumulative "
         "distribution: each curve is one selector, and a point (x, y) says that a share y of "
         "the problems got at most x of the best measured config. The further right and lower "
         "a curve stays, the better the selector.</figcaption>\n</figure>\n";
  }
  h << "<h2>Predictions</h2>\n";
  if (scatter.kind == PredictionScatter::Kind::kNone) {
    h << "<p id=\"scatter-omitted\">Scatter omitted: " << HtmlEscape(scatter.omitted_reason)
      << ".</p>\n";
  } else {
    h << "<figure>\n" << ScatterSvg(scatter) << "\n<figcaption id=\"scatter-caption\">Figure 2. ";
    if (scatter.kind == PredictionScatter::Kind::kPredictedVsMeasured) {
      h << "Each dot is a measured candidate: the model's predicted TFLOPS against the measured "
           "TFLOPS (dashed: predicted = measured).";
      if (const auto error = MedianRelativeError(scatter)) {
        h << " Median |predicted / measured - 1|: " << Pct(*error) << ".";
      }
    } else {
      h << "The TFLOPS model is a ranker, so its scores are not TFLOPS and a predicted-vs-"
           "measured plot would mean nothing. Instead each dot is a measured candidate at its "
           "rank by score within its problem (1 = the pick), against its measured TFLOPS over "
           "the problem's oracle: a good ranker keeps the high dots on the left.";
    }
    h << " Showing " << scatter.points.size() << " of " << scatter.total_points
      << " candidates.</figcaption>\n</figure>\n";
  }

  // Worst problems.
  std::vector<const ProblemOutcome*> worst;
  for (const ProblemOutcome& o : s.problems) worst.push_back(&o);
  std::stable_sort(worst.begin(), worst.end(),
                   [](const ProblemOutcome* a, const ProblemOutcome* b) {
                     return a->efficiency < b->efficiency;
                   });
  worst.resize(std::min(worst.size(), options.worst_count));
  h << "<h2>Worst " << worst.size() << " problems</h2>\n<table id=\"worst\">\n<thead><tr>"
    << "<th>#</th><th>problem</th><th>efficiency</th><th>peer rank 1</th>"
    << (s.HasPeerB() ? "<th>" + HtmlEscape(names.b.short_name) + " rank 1</th>" : std::string())
    << "<th>oracle's "
       "predicted rank</th><th>candidates</th><th>selected config</th><th>oracle config</th>"
       "</tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < worst.size(); ++i) {
    const ProblemOutcome& o = *worst[i];
    h << "<tr><td class=\"num\">" << i + 1 << "</td><td>" << HtmlEscape(o.problem_key)
      << "</td><td class=\"num\">" << Pct(o.efficiency) << "</td>"
      << (o.peer_top1_efficiency ? "<td class=\"num\">" + Pct(*o.peer_top1_efficiency) + "</td>"
                                 : std::string("<td class=\"na\">-</td>"))
      << (!s.HasPeerB() ? std::string()
          : o.peer_b_top1_efficiency
              ? "<td class=\"num\">" + Pct(*o.peer_b_top1_efficiency) + "</td>"
              : std::string("<td class=\"na\">-</td>"))
      << "<td class=\"num\">" << o.oracle_predicted_rank << "</td><td class=\"num\">"
      << o.candidates << "</td><td>" << ConfigCell(o.selected_name, o.selected_config)
      << "</td><td>" << ConfigCell(o.oracle_name, o.oracle_config) << "</td></tr>\n";
  }
  h << "</tbody></table>\n";

  // Slices, with the peer's rank-1 pick over the same problems for comparison.
  std::map<std::string, std::vector<double>> peer_by_slice;
  for (const ProblemOutcome& o : s.problems) {
    if (!o.peer_top1_efficiency) continue;
    for (const std::string& slice : SlicesOf(o.m, o.k)) {
      peer_by_slice[slice].push_back(*o.peer_top1_efficiency);
    }
  }
  h << "<h2>Slices</h2>\n<p class=\"caption\">M family and K regime; efficiency stays relative to "
       "each problem's overall oracle.</p>\n<table id=\"slices\">\n<thead><tr><th>slice</th>"
       "<th>problems</th><th>mean</th><th>median</th><th>P10</th><th>min</th>"
       "<th>peer rank 1 mean</th></tr></thead>\n<tbody>\n";
  for (const auto& [name, stats] : s.slices) {
    const auto peer = peer_by_slice.find(name);
    h << "<tr><th>" << HtmlEscape(name) << "</th>" << StatsCells(stats)
      << (peer == peer_by_slice.end()
              ? std::string("<td class=\"na\">-</td>")
              : "<td class=\"num\">" + Pct(ComputeStats(peer->second).mean) + "</td>")
      << "</tr>\n";
  }
  h << "</tbody></table>\n</body>\n</html>\n";
  return h.str();
}

}  // namespace kselect
