/* The C API from C (compiled as C99): opens a shipped model, selects on the CPU (a GPU is used
 * where present), and checks that bad input comes back as a status and a message, never a crash.
 *   kselect_c_api_test <model dir> <scratch dir> [<cross-provider model dir>]
 */
#define _DEFAULT_SOURCE /* symlink() */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselect/c_api.h"

static int failures = 0;

#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                         \
    }                                                                     \
  } while (0)

/* A call expected to fail with `code` and a last-error message containing `needle`. */
#define EXPECT_ERROR(call, code, needle)                                                           \
  do {                                                                                             \
    int status_ = (call);                                                                          \
    if (status_ != (code) || strstr(kselect_last_error(), (needle)) == NULL) {                     \
      fprintf(stderr,                                                                              \
              "%s:%d: %s returned %d (expected %d), last error '%s' (expected to contain '%s')\n", \
              __FILE__, __LINE__, #call, status_, (code), kselect_last_error(), (needle));         \
      ++failures;                                                                                  \
    }                                                                                              \
  } while (0)

#define EXPECT_OK(call)                                                                  \
  do {                                                                                   \
    int status_ = (call);                                                                \
    if (status_ != KSELECT_OK) {                                                         \
      fprintf(stderr, "%s:%d: %s returned %d: %s\n", __FILE__, __LINE__, #call, status_, \
              kselect_last_error());                                                     \
      ++failures;                                                                        \
    }                                                                                    \
  } while (0)

static int IsDecisionPath(const char* path) {
  static const char* const kPaths[] = {"solution_library", "cache",     "model",
                                       "analytical",       "heuristic", "first_implementable"};
  for (size_t i = 0; i < sizeof(kPaths) / sizeof(kPaths[0]); ++i) {
    if (strcmp(path, kPaths[i]) == 0) return 1;
  }
  return 0;
}

static void TestBadOpen(const char* scratch_dir) {
  char missing[4096];
  snprintf(missing, sizeof(missing), "%s/no_such_model", scratch_dir);
  kselect_selector* selector = (kselect_selector*)0x1; /* must be reset to NULL */
  int status = kselect_selector_open(missing, NULL, &selector);
  EXPECT(status != KSELECT_OK);
  EXPECT(selector == NULL);
  EXPECT(strstr(kselect_last_error(), missing) != NULL);
  if (strstr(kselect_last_error(), missing) == NULL) {
    fprintf(stderr, "  the message does not name %s: '%s'\n", missing, kselect_last_error());
  }

  EXPECT_ERROR(kselect_selector_open(NULL, NULL, &selector), KSELECT_INVALID_ARGUMENT,
               "model_dir is NULL");
  EXPECT_ERROR(kselect_selector_open(missing, NULL, NULL), KSELECT_INVALID_ARGUMENT, "out is NULL");
  kselect_selector_options options;
  EXPECT_OK(kselect_selector_options_init(&options));
  options.top_k = 0;
  EXPECT_ERROR(kselect_selector_open(missing, &options, &selector), KSELECT_INVALID_ARGUMENT,
               "top_k");
  EXPECT_OK(kselect_selector_options_init(&options));
  EXPECT(options.time_top_k == 0); /* first-use timing is off unless asked for */
  options.time_top_k = -1;
  EXPECT_ERROR(kselect_selector_open(missing, &options, &selector), KSELECT_INVALID_ARGUMENT,
               "time_top_k");
  EXPECT_ERROR(kselect_selector_options_init(NULL), KSELECT_INVALID_ARGUMENT, "options is NULL");
  EXPECT_ERROR(kselect_gemm_problem_init(NULL), KSELECT_INVALID_ARGUMENT, "problem is NULL");
  /* Closing and freeing nothing is allowed. */
  EXPECT_OK(kselect_selector_close(NULL));
  EXPECT_OK(kselect_selection_free(NULL));
}

static void TestSelect(kselect_selector* selector, int top_k) {
  kselect_gemm_problem problem;
  EXPECT_OK(kselect_gemm_problem_init(&problem));
  EXPECT(problem.batch == 1 && strcmp(problem.layout, "rcc") == 0);
  /* PyTorch's nn.Linear at decode: m = out features, n = tokens, k = in features, cuBLAS TN. */
  problem.m = 4096;
  problem.n = 16;
  problem.k = 4096;

  kselect_selection* selection = NULL;
  EXPECT_OK(kselect_selector_select_gemm(selector, &problem, &selection));
  if (selection == NULL) return;
  size_t count = 0;
  EXPECT_OK(kselect_selection_count(selection, &count));
  EXPECT(count >= 1 && count <= (size_t)top_k);
  const char* path = NULL;
  const char* decided_by = NULL;
  const char* note = NULL;
  int checked = -1;
  EXPECT_OK(kselect_selection_path(selection, &path));
  EXPECT_OK(kselect_selection_decided_by(selection, &decided_by));
  EXPECT_OK(kselect_selection_note(selection, &note));
  EXPECT_OK(kselect_selection_can_implement_checked(selection, &checked));
  EXPECT(path != NULL && IsDecisionPath(path) && strcmp(path, "cache") != 0);
  EXPECT(decided_by != NULL && path != NULL && strcmp(decided_by, path) == 0);
  EXPECT(note != NULL);
  EXPECT(checked == 0 || checked == 1);
  printf("m=4096 n=16 k=4096 bf16 rcc: path %s, %zu configs%s%s\n", path ? path : "?", count,
         note && *note ? ", note: " : "", note ? note : "");
  for (size_t i = 0; i < count; ++i) {
    const char* key = NULL;
    const char* name = NULL;
    const char* provider = NULL;
    double score = NAN, tflops = 0, latency = 0;
    EXPECT_OK(kselect_selection_config_key(selection, i, &key));
    EXPECT_OK(kselect_selection_config_name(selection, i, &name));
    EXPECT_OK(kselect_selection_provider(selection, i, &provider));
    EXPECT_OK(kselect_selection_score(selection, i, &score));
    EXPECT_OK(kselect_selection_predicted_tflops(selection, i, &tflops));
    EXPECT_OK(kselect_selection_predicted_latency_ms(selection, i, &latency));
    EXPECT(provider != NULL && strcmp(provider, "cublaslt") == 0);
    EXPECT(key != NULL && strncmp(key, "cublaslt:", 9) == 0);
    EXPECT(name != NULL && *name != '\0');
    EXPECT(isfinite(score));
    EXPECT(isnan(tflops) || tflops > 0);
    EXPECT(isnan(latency) || latency > 0);
    printf("  %zu. %s  score %.4g  predicted %.4g TFLOPS\n", i + 1, name ? name : "?", score,
           tflops);
  }
  /* Best first. */
  for (size_t i = 1; i < count; ++i) {
    double previous = 0, current = 0;
    kselect_selection_score(selection, i - 1, &previous);
    kselect_selection_score(selection, i, &current);
    EXPECT(previous >= current);
  }
  const char* key = NULL;
  EXPECT_ERROR(kselect_selection_config_key(selection, count, &key), KSELECT_INVALID_ARGUMENT,
               "past the selection");
  EXPECT_ERROR(kselect_selection_count(selection, NULL), KSELECT_INVALID_ARGUMENT, "out is NULL");
  EXPECT_ERROR(kselect_selection_count(NULL, &count), KSELECT_INVALID_ARGUMENT,
               "selection is NULL");

  /* The same problem again comes from the cache, decided by the same stage. */
  kselect_selection* again = NULL;
  EXPECT_OK(kselect_selector_select_gemm(selector, &problem, &again));
  if (again != NULL) {
    const char* again_path = NULL;
    const char* again_decided_by = NULL;
    const char* first_key = NULL;
    const char* again_key = NULL;
    EXPECT_OK(kselect_selection_path(again, &again_path));
    EXPECT_OK(kselect_selection_decided_by(again, &again_decided_by));
    EXPECT(again_path != NULL && strcmp(again_path, "cache") == 0);
    EXPECT(again_decided_by != NULL && path != NULL && strcmp(again_decided_by, path) == 0);
    EXPECT_OK(kselect_selection_config_key(selection, 0, &first_key));
    EXPECT_OK(kselect_selection_config_key(again, 0, &again_key));
    EXPECT(first_key != NULL && again_key != NULL && strcmp(first_key, again_key) == 0);
    EXPECT_OK(kselect_selection_free(again));
  }
  EXPECT_OK(kselect_selection_free(selection));

  size_t cached = 0;
  EXPECT_OK(kselect_selector_cache_size(selector, &cached));
  EXPECT(cached >= 1);
}

static void TestBadProblems(kselect_selector* selector) {
  kselect_gemm_problem problem;
  kselect_gemm_problem_init(&problem);
  problem.m = 4096;
  problem.n = 16;
  problem.k = 4096;
  kselect_selection* selection = (kselect_selection*)0x1; /* must be reset to NULL */

  EXPECT_ERROR(kselect_selector_select_gemm(NULL, &problem, &selection), KSELECT_INVALID_ARGUMENT,
               "selector is NULL");
  EXPECT(selection == NULL);
  EXPECT_ERROR(kselect_selector_select_gemm(selector, NULL, &selection), KSELECT_INVALID_ARGUMENT,
               "problem is NULL");
  EXPECT_ERROR(kselect_selector_select_gemm(selector, &problem, NULL), KSELECT_INVALID_ARGUMENT,
               "out is NULL");

  kselect_gemm_problem bad = problem;
  bad.m = 0;
  EXPECT_ERROR(kselect_selector_select_gemm(selector, &bad, &selection), KSELECT_INVALID_ARGUMENT,
               "problem: m must be positive, got 0");
  bad = problem;
  bad.k = -7;
  EXPECT_ERROR(kselect_selector_select_gemm(selector, &bad, &selection), KSELECT_INVALID_ARGUMENT,
               "problem: k must be positive, got -7");
  bad = problem;
  bad.m = (int64_t)1 << 40;
  bad.k = (int64_t)1 << 40;
  EXPECT(kselect_selector_select_gemm(selector, &bad, &selection) == KSELECT_INVALID_ARGUMENT);
  bad = problem;
  bad.batch = 0;
  EXPECT(kselect_selector_select_gemm(selector, &bad, &selection) == KSELECT_INVALID_ARGUMENT);
  bad = problem;
  bad.dtype_b = "bf17";
  EXPECT_ERROR(kselect_selector_select_gemm(selector, &bad, &selection), KSELECT_INVALID_ARGUMENT,
               "problem->dtype_b: unknown data type 'bf17'");
  bad = problem;
  bad.dtype_a = NULL;
  EXPECT_ERROR(kselect_selector_select_gemm(selector, &bad, &selection), KSELECT_INVALID_ARGUMENT,
               "problem->dtype_a is NULL");
  bad = problem;
  bad.layout = "rxc";
  EXPECT_ERROR(kselect_selector_select_gemm(selector, &bad, &selection), KSELECT_INVALID_ARGUMENT,
               "problem->layout");
  EXPECT(selection == NULL);

  /* Dispatch checks its pointers before it needs a GPU. */
  char buffer[16];
  EXPECT_ERROR(kselect_gemm_run(selector, &problem, NULL, buffer, buffer, NULL, 0, NULL, NULL),
               KSELECT_INVALID_ARGUMENT, "a is NULL");
  EXPECT_ERROR(kselect_gemm_run(selector, &problem, buffer, buffer, buffer, NULL, 64, NULL, NULL),
               KSELECT_INVALID_ARGUMENT, "workspace is NULL");
  EXPECT_ERROR(kselect_gemm_run(selector, &bad, buffer, buffer, buffer, NULL, 0, NULL, NULL),
               KSELECT_INVALID_ARGUMENT, "problem->layout");
}

/* A selection is the caller's until kselect_selection_free, however many problems the selector
 * decides meanwhile: with a cache of one decision, the second problem's selection is one the cache
 * could not keep, and later selections must not disturb it (under ASan or valgrind a read of freed
 * memory fails here). */
static void TestSelectionOutlivesTheCache(const char* model_dir) {
  kselect_selector_options options;
  kselect_selector_options_init(&options);
  EXPECT(options.cache_capacity == 65536);
  options.cache_capacity = 0;
  kselect_selector* selector = NULL;
  EXPECT_ERROR(kselect_selector_open(model_dir, &options, &selector), KSELECT_INVALID_ARGUMENT,
               "cache_capacity");
  options.cache_capacity = 1;
  options.top_k = 3;
  EXPECT_OK(kselect_selector_open(model_dir, &options, &selector));
  if (selector == NULL) return;
  kselect_gemm_problem problem;
  kselect_gemm_problem_init(&problem);
  problem.m = 4096;
  problem.n = 16;
  problem.k = 4096;
  kselect_selection* first = NULL;
  EXPECT_OK(kselect_selector_select_gemm(selector, &problem, &first)); /* cached */
  problem.n = 8;
  kselect_selection* held = NULL;
  EXPECT_OK(kselect_selector_select_gemm(selector, &problem, &held)); /* not kept by the cache */
  char held_name[256] = "";
  const char* name = NULL;
  if (held != NULL && kselect_selection_config_name(held, 0, &name) == KSELECT_OK) {
    snprintf(held_name, sizeof(held_name), "%s", name);
  }
  for (int64_t i = 0; i < 200; ++i) {
    kselect_selection* other = NULL;
    problem.n = 17 + i;
    EXPECT_OK(kselect_selector_select_gemm(selector, &problem, &other));
    kselect_selection_free(other);
  }
  size_t count = 0;
  EXPECT_OK(kselect_selection_count(held, &count));
  EXPECT(count >= 1 && count <= 3);
  EXPECT_OK(kselect_selection_config_name(held, 0, &name));
  EXPECT(name != NULL && strcmp(name, held_name) == 0);
  kselect_selection_free(first);
  EXPECT_OK(kselect_selection_free(held));
  /* Stale handles are refused, not a crash: a double free, a use after free, a double close and
   * a use after close. */
  EXPECT_ERROR(kselect_selection_free(held), KSELECT_INVALID_ARGUMENT, "not an open handle");
  EXPECT_ERROR(kselect_selection_count(held, &count), KSELECT_INVALID_ARGUMENT,
               "not an open handle");
  EXPECT_OK(kselect_selection_free(NULL));
  EXPECT_OK(kselect_selector_close(selector));
  EXPECT_ERROR(kselect_selector_close(selector), KSELECT_INVALID_ARGUMENT, "not an open handle");
  kselect_selection* after = NULL;
  EXPECT_ERROR(kselect_selector_select_gemm(selector, &problem, &after), KSELECT_INVALID_ARGUMENT,
               "not an open handle");
  EXPECT_OK(kselect_selector_close(NULL));
}

/* NaN or infinite scalars make a problem that never equals itself (a new cache entry per call):
 * refused. Dispatch without a GPU says so (KSELECT_UNAVAILABLE), as c_api.h promises. */
static void TestScalarsAndNoGpu(kselect_selector* selector) {
  kselect_gemm_problem problem;
  kselect_gemm_problem_init(&problem);
  problem.m = 4096;
  problem.n = 16;
  problem.k = 4096;
  problem.alpha = NAN;
  kselect_selection* selection = NULL;
  EXPECT_ERROR(kselect_selector_select_gemm(selector, &problem, &selection),
               KSELECT_INVALID_ARGUMENT, "finite");
  problem.alpha = 1;
  problem.beta = INFINITY;
  EXPECT_ERROR(kselect_selector_select_gemm(selector, &problem, &selection),
               KSELECT_INVALID_ARGUMENT, "finite");
  problem.beta = 0;
  const char* no_gpu = getenv("KSELECT_TEST_HOST_HAS_NO_GPU");
  if (no_gpu != NULL && strcmp(no_gpu, "1") == 0) {
    char buffer[16];
    EXPECT_ERROR(kselect_gemm_run(selector, &problem, buffer, buffer, buffer, NULL, 0, NULL, NULL),
                 KSELECT_UNAVAILABLE, "no GPU");
  }
}

/* Paths a user gets wrong are user errors, never KSELECT_INTERNAL: a cache "file" that is a
 * folder, a path too long for the file system, a symlink loop. */
static void TestBadPathsAreUserErrors(kselect_selector* selector, const char* scratch_dir) {
  int status = kselect_selector_cache_load(selector, scratch_dir);
  EXPECT(status != KSELECT_OK && status != KSELECT_INTERNAL);
  if (status == KSELECT_INTERNAL) fprintf(stderr, "folder: %s\n", kselect_last_error());
  static char long_path[70001];
  memset(long_path, 'a', sizeof(long_path) - 1);
  long_path[0] = '/';
  long_path[sizeof(long_path) - 1] = '\0';
  kselect_selector* opened = NULL;
  status = kselect_selector_open(long_path, NULL, &opened);
  EXPECT(status != KSELECT_OK && status != KSELECT_INTERNAL);
  EXPECT(strlen(kselect_last_error()) < 5000); /* the path is cut in the message */
  status = kselect_selector_cache_load(selector, long_path);
  EXPECT(status != KSELECT_OK && status != KSELECT_INTERNAL);

  char loop[4096];
  snprintf(loop, sizeof(loop), "%s/loop", scratch_dir);
  remove(loop);
  if (symlink(loop, loop) == 0) {
    status = kselect_selector_open(loop, NULL, &opened);
    EXPECT(status != KSELECT_OK && status != KSELECT_INTERNAL);
    if (status == KSELECT_INTERNAL) fprintf(stderr, "loop: %s\n", kselect_last_error());
    status = kselect_selector_cache_load(selector, loop);
    EXPECT(status != KSELECT_OK && status != KSELECT_INTERNAL);
    if (status == KSELECT_INTERNAL) fprintf(stderr, "loop cache: %s\n", kselect_last_error());
    remove(loop);
  }
}

static void TestCacheFile(kselect_selector* selector, const char* scratch_dir) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/decisions.json", scratch_dir);
  EXPECT_OK(kselect_selector_cache_save(selector, path));
  EXPECT_OK(kselect_selector_cache_load(selector, path));
  EXPECT_ERROR(kselect_selector_cache_save(selector, NULL), KSELECT_INVALID_ARGUMENT,
               "path is NULL");
  char missing[4096];
  snprintf(missing, sizeof(missing), "%s/no_such_cache.json", scratch_dir);
  int status = kselect_selector_cache_load(selector, missing);
  EXPECT(status != KSELECT_OK && strstr(kselect_last_error(), "no_such_cache.json") != NULL);
}

/* A cross-provider model directory opens as a selector too; its decisions are made live, so
 * without a GPU selecting says so, and it keeps no cache file. */
static void TestCrossProvider(const char* cross_dir, const char* scratch_dir) {
  kselect_selector_options options;
  kselect_selector_options_init(&options);
  options.time_top_k = 3;
  kselect_selector* selector = NULL;
  EXPECT_OK(kselect_selector_open(cross_dir, &options, &selector));
  if (selector == NULL) return;
  kselect_gemm_problem p;
  kselect_gemm_problem_init(&p);
  p.m = 4096;
  p.n = 1;
  p.k = 4096;
  kselect_selection* s = NULL;
  const int status = kselect_selector_select_gemm(selector, &p, &s);
  if (status == KSELECT_OK) {
    /* A GPU here: the decision ranks both providers' configs, the decision first. */
    size_t count = 0;
    EXPECT_OK(kselect_selection_count(s, &count));
    EXPECT(count >= 2);
    const char* note = NULL;
    EXPECT_OK(kselect_selection_note(s, &note));
    EXPECT(note != NULL && strstr(note, "cross-provider") != NULL);
    EXPECT_OK(kselect_selection_free(s));
  } else {
    EXPECT(status == KSELECT_UNAVAILABLE);
    EXPECT(s == NULL);
  }
  char path[4096];
  snprintf(path, sizeof(path), "%s/cross_decisions.json", scratch_dir);
  EXPECT_ERROR(kselect_selector_cache_save(selector, path), KSELECT_FAILED_PRECONDITION,
               "no decision cache");
  size_t cached = 1;
  EXPECT_OK(kselect_selector_cache_size(selector, &cached));
  EXPECT(cached == 0);
  EXPECT_OK(kselect_selector_close(selector));
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: %s <model dir> <scratch dir> [<cross-provider model dir>]\n", argv[0]);
    return 2;
  }
  EXPECT(kselect_version() != NULL && strlen(kselect_version()) > 0);
  EXPECT(kselect_last_error() != NULL);
  printf("kselect %s\n", kselect_version());

  TestBadOpen(argv[2]);

  kselect_selector_options options;
  kselect_selector_options_init(&options);
  EXPECT(options.top_k == 8 && options.check_can_implement == 1);
  options.top_k = 3;
  kselect_selector* selector = NULL;
  EXPECT_OK(kselect_selector_open(argv[1], &options, &selector));
  if (selector == NULL) {
    fprintf(stderr, "cannot open %s: %s\n", argv[1], kselect_last_error());
    return 1;
  }
  TestSelect(selector, options.top_k);
  TestBadProblems(selector);
  TestScalarsAndNoGpu(selector);
  TestCacheFile(selector, argv[2]);
  TestBadPathsAreUserErrors(selector, argv[2]);
  EXPECT_OK(kselect_selector_close(selector));
  TestSelectionOutlivesTheCache(argv[1]);
  if (argc == 4) TestCrossProvider(argv[3], argv[2]);

  if (failures > 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
