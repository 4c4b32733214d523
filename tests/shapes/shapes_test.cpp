#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include <set>

#include "core/text.h"
#include "kselect/shapes.h"

namespace kselect {
namespace {

TEST(ShapesTest, ParsesRowsAndFillsRegimes) {
  auto rows = ParseShapeCsv("# origin\nm,n,k\n1,4096,4096\n\n4096, 4096 ,64\n", "s.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].regime, "m1.n_large.k_mid");
  EXPECT_EQ((*rows)[1].regime, "m2049+.n_large.k_shallow");
  EXPECT_EQ((*rows)[1].batch, 1);
}

void ExpectError(const std::string& text, const std::string& needle) {
  auto rows = ParseShapeCsv(text, "bad.csv");
  ASSERT_FALSE(rows.ok()) << text;
  EXPECT_EQ(rows.status().code(), StatusCode::kParseError);
  EXPECT_NE(rows.status().message().find(needle), std::string::npos) << rows.status().message();
}

TEST(ShapesTest, ErrorsNameFileAndLine) {
  ExpectError("m,n,k\n1,2,abc\n", "bad.csv:2: k: 'abc' is not an integer");
  ExpectError("m,n,k\n1,2,3\n0,2,3\n", "bad.csv:3: m: 0 must be positive");
  ExpectError("m,n,k\n-5,2,3\n", "bad.csv:2: m: -5 must be positive");
  ExpectError("m,n,k\n1,99999999999999999999,3\n",
              "bad.csv:2: n: '99999999999999999999' overflows int64");
  ExpectError("m,n,k\n4000000000,4000000000,3\n", "bad.csv:2:");  // m*n overflows int64
  ExpectError("m,n,k\n1,2\n", "bad.csv:2: expected 3 fields, got 2");
  ExpectError("m,n,k\n1.5,2,3\n", "bad.csv:2: m: '1.5' is not an integer");
  ExpectError("x,y\n", "bad.csv:1: expected the header");
  ExpectError("m,n,k,regime\n1,2,3,m1.n1.k1\n", "does not match the dims");
  ExpectError("# only a comment\n", "no header line");
}

TEST(ShapesTest, GeneratedSetsCoverEveryRegime) {
  auto wide = GenerateShapeSet("wide");
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide->size(), 700u);
  std::set<std::string> m_buckets, families;
  for (const ShapeRow& r : *wide) {
    m_buckets.insert(r.regime.substr(0, r.regime.find('.')));
    families.insert(r.family.substr(0, r.family.find('.')));
    EXPECT_EQ(r.regime, ShapeRegime(r.m, r.n, r.k));
  }
  EXPECT_EQ(m_buckets.size(), 5u);
  for (const char* f : {"llm", "square", "tall", "wide", "deep_k", "shallow_k", "n1", "k1", "prime",
                        "npot", "random"}) {
    EXPECT_EQ(families.count(f), 1u) << f;
  }
  auto edge = GenerateShapeSet("edge");
  ASSERT_TRUE(edge.ok());
  EXPECT_GE(edge->size(), 40u);
  EXPECT_FALSE(GenerateShapeSet("nope").ok());
}

TEST(ShapesTest, CoreIsAProportionalSubsetOfWide) {
  const auto wide = GenerateShapeSet("wide").value();
  const auto core = GenerateShapeSet("core").value();
  EXPECT_GE(core.size(), 150u);
  std::map<std::string, int> wide_m, core_m;
  for (const ShapeRow& r : core) {
    EXPECT_NE(std::find(wide.begin(), wide.end(), r), wide.end()) << r.m << "," << r.n;
    ++core_m[r.regime.substr(0, r.regime.find('.'))];
  }
  for (const ShapeRow& r : wide) ++wide_m[r.regime.substr(0, r.regime.find('.'))];
  // Every M regime keeps its share within a few points.
  for (const auto& [regime, count] : wide_m) {
    const double share_wide = static_cast<double>(count) / static_cast<double>(wide.size());
    const double share_core =
        static_cast<double>(core_m[regime]) / static_cast<double>(core.size());
    EXPECT_NEAR(share_core, share_wide, 0.04) << regime;
  }
}

TEST(ShapesTest, Fp8IsCorePlusAnotherNinthOfWide) {
  const auto wide = GenerateShapeSet("wide").value();
  const auto core = GenerateShapeSet("core").value();
  const auto fp8 = GenerateShapeSet("fp8").value();
  EXPECT_GT(fp8.size(), core.size() + 70);
  for (const ShapeRow& r : core) EXPECT_NE(std::find(fp8.begin(), fp8.end(), r), fp8.end());
  for (const ShapeRow& r : fp8) EXPECT_NE(std::find(wide.begin(), wide.end(), r), wide.end());
  // Shapes cuBLASLt runs in fp8 (k % 16 == 0, m == 1 or m % 8 == 0): at least 150.
  const auto runnable = std::count_if(fp8.begin(), fp8.end(), [](const ShapeRow& r) {
    return r.k % 16 == 0 && (r.m == 1 || r.m % 8 == 0);
  });
  EXPECT_GE(runnable, 150);
}

// The holdout set tests models trained on wide-set data: no shape of it may be a wide shape.
TEST(ShapesTest, HoldoutSharesNoShapeWithWide) {
  const auto wide = GenerateShapeSet("wide").value();
  const auto holdout = GenerateShapeSet("holdout").value();
  EXPECT_GE(holdout.size(), 150u);
  for (const ShapeRow& r : holdout) {
    EXPECT_EQ(
        std::count_if(wide.begin(), wide.end(),
                      [&](const ShapeRow& w) { return w.m == r.m && w.n == r.n && w.k == r.k; }),
        0)
        << r.m << "x" << r.n << "x" << r.k;
    EXPECT_EQ(r.family.rfind("holdout.", 0), 0u) << r.family;
  }
}

// The committed shape files are exactly what the generator writes (rows, not the comment line).
TEST(ShapesTest, CommittedFilesMatchTheGenerator) {
  for (const char* set : {"wide", "core", "fp8", "edge", "holdout", "core_framework",
                          "holdout_framework", "wide_framework", "fp8_framework", "drift_framework",
                          "h100_framework", "holdout_h100_framework"}) {
    auto committed = LoadShapeFile(std::string(KSELECT_SOURCE_DIR) + "/shapes/" + set + ".csv");
    ASSERT_TRUE(committed.ok()) << committed.status().ToString();
    EXPECT_EQ(*committed, GenerateShapeSet(set).value())
        << "shapes/" << set << ".csv drifted: run 'kselect shapes generate --set " << set
        << " -o shapes/" << set << ".csv'";
  }
}

TEST(ShapesTest, CsvRoundTrips) {
  const auto rows = GenerateShapeSet("edge").value();
  EXPECT_EQ(ParseShapeCsv(ShapeCsv(rows, "test"), "rt.csv").value(), rows);
}

}  // namespace
}  // namespace kselect

namespace kselect {
namespace {

TEST(ShapesTest, FrameworkSetsPutTokensInN) {
  const auto core = GenerateShapeSet("core").value();
  const auto framework = GenerateShapeSet("core_framework").value();
  ASSERT_EQ(framework.size(), core.size());
  size_t decode = 0;
  for (size_t i = 0; i < core.size(); ++i) {
    EXPECT_EQ(framework[i].m, core[i].n);
    EXPECT_EQ(framework[i].n, core[i].m);
    EXPECT_EQ(framework[i].k, core[i].k);
    EXPECT_EQ(framework[i].family, core[i].family);
    EXPECT_EQ(framework[i].regime, ShapeRegime(framework[i].m, framework[i].n, framework[i].k));
    decode += framework[i].n <= 16 && framework[i].m >= 1024;
  }
  EXPECT_GE(decode, 30u);  // the decode GEMMs nn.Linear issues: n = 1-16 tokens
  EXPECT_TRUE(GenerateShapeSet("holdout_framework").ok());
  // The second device's sets: >= 300 training and >= 100 test shapes (issue 21), disjoint.
  const auto h100 = GenerateShapeSet("h100_framework").value();
  const auto h100_test = GenerateShapeSet("holdout_h100_framework").value();
  EXPECT_GE(h100.size(), 300u);
  EXPECT_GE(h100_test.size(), 100u);
  for (const ShapeRow& r : h100_test) {
    EXPECT_EQ(std::count(h100.begin(), h100.end(), r), 0) << r.m << "x" << r.n << "x" << r.k;
  }
  EXPECT_FALSE(GenerateShapeSet("edge_framework").ok());
  EXPECT_FALSE(GenerateShapeSet("_framework").ok());
  EXPECT_FALSE(GenerateShapeSet("nope_framework").ok());
}

}  // namespace
}  // namespace kselect
