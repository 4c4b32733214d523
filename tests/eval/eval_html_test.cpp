// The HTML evaluation report: content and escaping checked on the text, and the same document
// parsed by a real browser (headless Chromium, skipped where none is installed).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "kselect/eval_report.h"
#include "testing_util.h"

namespace kselect {
namespace {

using testing_util::Contains;

// Text that must come out escaped wherever it appears.
constexpr const char* kHostileModelDir = "models/<b>x</b>&'\"";
constexpr const char* kHostileConfig = "cfg<i>&";

ProblemCandidates MakeProblem(int64_t m, int64_t k, const std::vector<double>& tflops,
                              const std::vector<std::optional<int32_t>>& peer_ranks) {
  ProblemCandidates p;
  p.problem = GemmProblem{.m = m, .n = 1024, .k = k};
  p.problem_key = ProblemToString(p.problem);
  for (size_t i = 0; i < tflops.size(); ++i) {
    Candidate c;
    TileConfig t;
    t.tile_m = 16 * static_cast<int32_t>(i + 1);
    c.config = t;
    c.config_key = i == 0 ? std::string(kHostileConfig) : "c" + std::to_string(i);
    c.tflops = tflops[i];
    if (i < peer_ranks.size()) c.peer_rank = peer_ranks[i];
    p.candidates.push_back(c);
  }
  return p;
}

// Four problems, one per M family, with peers on three of them. The scores pick efficiencies
// 1.0, 0.5, 0.9 and 300/310.
struct Fixture {
  CandidateSet data;
  std::vector<std::vector<double>> scores;
};
Fixture MakeFixture() {
  Fixture f;
  f.data.problems.push_back(MakeProblem(16, 256, {100, 50, 80}, {2, 1, std::nullopt}));
  f.data.problems.push_back(MakeProblem(64, 1024, {40, 20}, {std::nullopt, 1}));
  f.data.problems.push_back(MakeProblem(512, 8192, {10, 9, 8}, {}));
  f.data.problems.push_back(MakeProblem(8192, 4096, {300, 310}, {std::nullopt, 1}));
  f.scores = {{3, 1, 2}, {0.1, 0.2}, {1, 5, 2}, {9, 8}};
  return f;
}

std::string Pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f%%", 100.0 * v);
  return buf;
}

size_t Count(std::string_view haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string_view::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

// Opening tags of `name` ("<td>" or "<td ...>", not "<tdx") against its closing tags.
void ExpectBalanced(const std::string& html, const std::string& name) {
  const size_t open = Count(html, "<" + name + ">") + Count(html, "<" + name + " ");
  EXPECT_GT(open, 0u) << name;
  EXPECT_EQ(open, Count(html, "</" + name + ">")) << "unbalanced <" << name << ">";
}

// The element `<tag id="id" ...>...</tag>` (no nesting of the same tag inside).
std::string Element(const std::string& html, const std::string& tag, const std::string& id) {
  const size_t start = html.find("<" + tag + " id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  const std::string close = "</" + tag + ">";
  const size_t end = html.find(close, start);
  return end == std::string::npos ? "" : html.substr(start, end + close.size() - start);
}

std::string RenderFixture(bool ranker, bool in_sample = false, bool out_of_fold = false) {
  const Fixture f = MakeFixture();
  const EvalSummary summary = EvaluateScores(f.data, f.scores);
  const PredictionScatter scatter = BuildPredictionScatter(f.data, f.scores, ranker);
  return EvalSummaryToHtml(summary, scatter,
                           {.model_dir = kHostileModelDir,
                            .data_path = "data/x.parquet",
                            .worst_count = 3,
                            .in_sample = in_sample,
                            .out_of_fold = out_of_fold});
}

TEST(HtmlEscape, EscapesMarkupAndQuotes) {
  EXPECT_EQ(HtmlEscape("a<b>&\"'c"), "a&lt;b&gt;&amp;&quot;&#39;c");
  EXPECT_EQ(HtmlEscape("plain"), "plain");
}

TEST(PredictionScatter, RegressionPointsArePredictedAgainstMeasured) {
  const Fixture f = MakeFixture();
  const PredictionScatter s = BuildPredictionScatter(f.data, f.scores, /*ranker=*/false);
  EXPECT_EQ(s.kind, PredictionScatter::Kind::kPredictedVsMeasured);
  EXPECT_EQ(s.total_points, 10);
  ASSERT_EQ(s.points.size(), 10u);
  EXPECT_DOUBLE_EQ(s.points[0].x, 3);    // predicted
  EXPECT_DOUBLE_EQ(s.points[0].y, 100);  // measured
}

TEST(PredictionScatter, RankerPointsAreRankAgainstEfficiency) {
  const Fixture f = MakeFixture();
  const PredictionScatter s = BuildPredictionScatter(f.data, f.scores, /*ranker=*/true);
  EXPECT_EQ(s.kind, PredictionScatter::Kind::kScoreRankVsEfficiency);
  ASSERT_EQ(s.points.size(), 10u);
  // Problem 0: scores 3, 1, 2 order the candidates 100, 80, 50 TFLOPS.
  EXPECT_DOUBLE_EQ(s.points[0].x, 1);
  EXPECT_DOUBLE_EQ(s.points[0].y, 1.0);
  EXPECT_DOUBLE_EQ(s.points[1].x, 2);
  EXPECT_DOUBLE_EQ(s.points[1].y, 0.8);
  EXPECT_DOUBLE_EQ(s.points[2].x, 3);
  EXPECT_DOUBLE_EQ(s.points[2].y, 0.5);
}

TEST(PredictionScatter, SamplesEvenlyAndDropsUnusablePredictions) {
  Fixture f = MakeFixture();
  const PredictionScatter sampled = BuildPredictionScatter(f.data, f.scores, false, 4);
  EXPECT_EQ(sampled.total_points, 10);
  EXPECT_EQ(sampled.points.size(), 4u);  // every third of 10
  f.scores[0] = {NAN, -1, 0};
  EXPECT_EQ(BuildPredictionScatter(f.data, f.scores, false).total_points, 7);
  for (auto& s : f.scores) std::fill(s.begin(), s.end(), NAN);
  const PredictionScatter none = BuildPredictionScatter(f.data, f.scores, false);
  EXPECT_EQ(none.kind, PredictionScatter::Kind::kNone);
  EXPECT_FALSE(none.omitted_reason.empty());
}

TEST(EvalHtml, IsOneBalancedDocumentThatLoadsNothing) {
  const std::string html = RenderFixture(false);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_TRUE(Contains(html, "</html>"));
  for (const char* tag : {"html", "head", "body", "table", "thead", "tbody", "tr", "td", "th",
                          "svg", "g", "text", "path", "title", "code", "dl"}) {
    ExpectBalanced(html, tag);
  }
  EXPECT_TRUE(Contains(html, "Content-Security-Policy"));
  EXPECT_EQ(Count(html, "<script"), 0u);
  EXPECT_EQ(Count(html, "http://"), Count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(Count(html, "https://"), 0u);
}

TEST(EvalHtml, EscapesEveryInputText) {
  const std::string html = RenderFixture(false);
  EXPECT_TRUE(Contains(html, "models/&lt;b&gt;x&lt;/b&gt;&amp;&#39;&quot;"));
  EXPECT_TRUE(Contains(html, "cfg&lt;i&gt;&amp;"));
  EXPECT_EQ(Count(html, "<b>"), 0u);
  EXPECT_EQ(Count(html, "<i>"), 0u);
  EXPECT_TRUE(Contains(html, "m: tiny (&lt;32)"));  // slice names carry '<' too
}

TEST(EvalHtml, SummaryRowsCarryTheModelAndPeerFigures) {
  const Fixture f = MakeFixture();
  const EvalSummary summary = EvaluateScores(f.data, f.scores);
  const std::string html = RenderFixture(false);
  const std::string table = Element(html, "table", "summary");
  ASSERT_FALSE(table.empty());
  const EfficiencyStats& m = summary.model;
  EXPECT_TRUE(Contains(table,
                       "<tr data-selector=\"model\"><th>kselect model</th><td "
                       "class=\"num\">4</td><td class=\"num\">" +
                           Pct(m.mean) + "</td><td class=\"num\">" + Pct(m.median) +
                           "</td><td class=\"num\">" + Pct(m.p10) + "</td><td class=\"num\">" +
                           Pct(m.min) + "</td>"));
  EXPECT_EQ(Pct(m.min), "50.00%");
  // Peer rank 1 picks 50, 20 and 310 TFLOPS: efficiencies 0.5, 0.5, 1.0, one oracle of three.
  EXPECT_TRUE(Contains(table,
                       "<tr data-selector=\"peer_top1\"><th>peer heuristic (rank 1)</th>"
                       "<td class=\"num\">3</td><td class=\"num\">66.67%</td>"));
  EXPECT_TRUE(Contains(table, "<td class=\"num\">33.33%</td>"));
  EXPECT_TRUE(Contains(table, "<tr data-selector=\"peer_best_of_8\">"));
  // Model top-1: problems 0 only (ties count): 25 %.
  EXPECT_DOUBLE_EQ(summary.top1, 0.25);
  EXPECT_TRUE(Contains(table, "<td class=\"num\">25.00%</td>"));
}

TEST(EvalHtml, CdfHasOneStepPerProblemPerSelector) {
  const std::string html = RenderFixture(false);
  const std::string svg = Element(html, "svg", "efficiency-cdf");
  ASSERT_FALSE(svg.empty());
  EXPECT_EQ(Count(svg, "<path class=\"cdf\""), 3u);
  for (const auto& [method, problems] : std::vector<std::pair<std::string, size_t>>{
           {"model", 4}, {"peer_top1", 3}, {"peer_best_of_8", 3}}) {
    const size_t at = svg.find("data-method=\"" + method + "\"");
    ASSERT_NE(at, std::string::npos) << method;
    const size_t d = svg.find(" d=\"", at) + 4;
    const std::string path = svg.substr(d, svg.find('"', d) - d);
    EXPECT_EQ(Count(path, " V"), problems) << method << ": " << path;
    // Every curve ends at share 1 (the top edge, y = 20) and efficiency 1 (the right edge).
    EXPECT_TRUE(Contains(path, "V20.0 H620.0")) << method << ": " << path;
  }
}

// The report reads like the CLI: configs named as `kselect predict` names them (the key beside
// it), the headline speedup over the vendor's pick and the timed-at-first-use rows in the
// summary, and a caption on every plot.
TEST(EvalHtml, NamesConfigsAsTheCliDoesAndHeadsTheSummaryWithTheGain) {
  const std::string html = RenderFixture(false);
  const std::string worst = Element(html, "table", "worst");
  TileConfig named;
  named.tile_m = 32;  // the second candidate: the pick of the 0.5-efficiency problem
  EXPECT_TRUE(Contains(worst, "<code>" + HtmlEscape(DescribeConfig(named)) + "</code>")) << worst;
  EXPECT_TRUE(Contains(worst, "<small class=\"key\">c1</small>"));
  const std::string headline = Element(html, "p", "headline");
  ASSERT_FALSE(headline.empty());
  EXPECT_TRUE(Contains(headline, "x</strong> with the model's pick alone"));
  EXPECT_TRUE(Contains(headline, "with its top 2 timed at first use"));
  const std::string summary = Element(html, "table", "summary");
  EXPECT_TRUE(Contains(summary, "<tr data-selector=\"timed_top2\">"));
  EXPECT_TRUE(Contains(summary, "top 5 timed at first use"));
  EXPECT_EQ(Count(html, "<svg "), Count(html, "<figcaption"));
  EXPECT_EQ(Count(html, "<figcaption"), 2u);
}

TEST(EvalHtml, WorstTableListsTheWorstFirstAndSlicesAreThere) {
  const std::string html = RenderFixture(false);
  const std::string worst = Element(html, "table", "worst");
  EXPECT_EQ(Count(worst, "<tr><td class=\"num\">"), 3u);  // worst_count = 3
  const size_t first = worst.find("50.00%");
  const size_t second = worst.find("90.00%");
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(second, std::string::npos);
  EXPECT_LT(first, second);
  const std::string slices = Element(html, "table", "slices");
  for (const char* slice :
       {"m: tiny (&lt;32)", "m: small (32-255)", "m: medium (256-4095)", "m: large (&gt;=4096)",
        "k: shallow (&lt;512)", "k: deep (&gt;=4096)"}) {
    EXPECT_TRUE(Contains(slices, slice));
  }
}

TEST(EvalHtml, ScatterMatchesTheModelKind) {
  const std::string regression = RenderFixture(false);
  EXPECT_EQ(Count(Element(regression, "svg", "prediction-scatter"), "<circle "), 10u);
  EXPECT_TRUE(Contains(regression, "predicted TFLOPS"));
  EXPECT_TRUE(Contains(regression, "class=\"diagonal\""));
  const std::string ranker = RenderFixture(true);
  EXPECT_EQ(Count(Element(ranker, "svg", "prediction-scatter"), "<circle "), 10u);
  EXPECT_TRUE(Contains(ranker, "rank by the model&#39;s score"));
  EXPECT_FALSE(Contains(ranker, "class=\"diagonal\""));

  const Fixture f = MakeFixture();
  PredictionScatter none;
  none.omitted_reason = "no <predictions>";
  const std::string omitted = EvalSummaryToHtml(EvaluateScores(f.data, f.scores), none, {});
  EXPECT_TRUE(Contains(omitted, "Scatter omitted: no &lt;predictions&gt;"));
  EXPECT_FALSE(Contains(omitted, "id=\"prediction-scatter\""));
}

TEST(EvalHtml, InSampleDataIsFlagged) {
  EXPECT_FALSE(Contains(RenderFixture(false, false), "id=\"in-sample\""));
  EXPECT_TRUE(Contains(RenderFixture(false, true), "id=\"in-sample\""));
  // Out-of-fold scores are held out: said so, and never flagged in-sample.
  const std::string oof = RenderFixture(false, false, true);
  EXPECT_TRUE(Contains(oof, "id=\"out-of-fold\""));
  EXPECT_FALSE(Contains(oof, "id=\"in-sample\""));
}

// --- the same report in a real browser -------------------------------------------------------

// Chromium from KSELECT_CHROMIUM or PATH; "" when there is none.
std::string FindChromium() {
  if (const char* env = std::getenv("KSELECT_CHROMIUM"); env != nullptr && *env != '\0') {
    return env;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
      const std::filesystem::path candidate = std::filesystem::path(dir) / name;
      if (std::filesystem::exists(candidate)) return candidate.string();
    }
  }
  return "";
}

// The DOM Chromium built from `html_path`, serialized (--dump-dom).
std::string DumpDom(const std::string& chromium, const std::filesystem::path& dir,
                    const std::filesystem::path& html_path) {
  const std::string command = "timeout 120 '" + chromium +
                              "' --headless --disable-gpu --no-sandbox --no-first-run "
                              "--disable-dev-shm-usage --user-data-dir='" +
                              (dir / "profile").string() + "' --dump-dom 'file://" +
                              html_path.string() + "' 2>'" + (dir / "stderr.txt").string() + "'";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "";
  std::string out;
  char buf[65536];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe)) > 0;) out.append(buf, n);
  pclose(pipe);
  return out;
}

TEST(EvalHtmlInChromium, BrowserParsesTablesAndPlotsAsWritten) {
  const std::string chromium = FindChromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "no chromium on PATH (apt-get install chromium, or set KSELECT_CHROMIUM)";
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("kselect_html_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
       std::to_string(reinterpret_cast<uintptr_t>(&dir)));
  std::filesystem::create_directories(dir);
  const std::filesystem::path html_path = dir / "report.html";
  const std::string html = RenderFixture(/*ranker=*/false);
  std::ofstream(html_path) << html;

  const std::string dom = DumpDom(chromium, dir, html_path);
  ASSERT_TRUE(Contains(dom, "</html>")) << "chromium printed no DOM; see " << dir / "stderr.txt";
  // Tables the parser would have re-arranged (a stray tag, text outside a cell) serialize
  // differently, so byte equality with the source means the browser read them as written.
  for (const char* id : {"summary", "ranking", "slices"}) {
    const std::string written = Element(html, "table", id);
    ASSERT_FALSE(written.empty()) << id;
    EXPECT_EQ(Element(dom, "table", id), written) << id;
  }
  // The plots are SVG elements in the DOM, with the CDF paths and every scatter dot.
  EXPECT_TRUE(Contains(dom, "<svg id=\"efficiency-cdf\""));
  EXPECT_EQ(Count(dom, "<path class=\"cdf\""), 3u);
  EXPECT_TRUE(Contains(dom, "data-method=\"peer_best_of_8\""));
  EXPECT_EQ(Count(Element(dom, "svg", "prediction-scatter"), "<circle "), 10u);
  // The worst table's three rows, the hostile texts stayed text (no <b>, <i> elements).
  EXPECT_EQ(Count(Element(dom, "table", "worst"), "<tr><td class=\"num\">"), 3u);
  EXPECT_TRUE(Contains(dom, "models/&lt;b&gt;x&lt;/b&gt;&amp;'\""));
  EXPECT_TRUE(Contains(dom, "cfg&lt;i&gt;&amp;"));
  EXPECT_EQ(Count(dom, "<b>"), 0u);
  EXPECT_EQ(Count(dom, "<i>"), 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kselect
