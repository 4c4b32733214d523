/* A selection held across 100,000 distinct problems stays valid (issue 44): built with
 * AddressSanitizer, so a read of freed memory (the selection's strings, read here by strcmp and
 * strlen, which ASan checks) fails the test. The selector's cache holds one decision, so every
 * later problem is decided, handed out and freed while the held ones stay in use.
 *   kselect_held_selection_test <model dir> [problems]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselect/c_api.h"

static int failures = 0;

#define CHECK(cond)                                                       \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      fprintf(stderr, "  last error: %s\n", kselect_last_error());        \
      ++failures;                                                         \
    }                                                                     \
  } while (0)

/* What a held selection said when it was made, to compare with what it says later. */
typedef struct {
  size_t count;
  char path[64];
  char note[1024];
  char keys[8][512];
} Snapshot;

static void Take(const kselect_selection* selection, Snapshot* out) {
  const char* text = NULL;
  CHECK(kselect_selection_count(selection, &out->count) == KSELECT_OK);
  CHECK(out->count >= 1 && out->count <= 8);
  CHECK(kselect_selection_path(selection, &text) == KSELECT_OK);
  snprintf(out->path, sizeof(out->path), "%s", text);
  CHECK(kselect_selection_note(selection, &text) == KSELECT_OK);
  snprintf(out->note, sizeof(out->note), "%s", text);
  for (size_t i = 0; i < out->count && i < 8; ++i) {
    CHECK(kselect_selection_config_key(selection, i, &text) == KSELECT_OK);
    snprintf(out->keys[i], sizeof(out->keys[i]), "%s", text);
  }
}

static void Compare(const kselect_selection* selection, const Snapshot* then) {
  const char* text = NULL;
  size_t count = 0;
  CHECK(kselect_selection_count(selection, &count) == KSELECT_OK && count == then->count);
  CHECK(kselect_selection_path(selection, &text) == KSELECT_OK && strcmp(text, then->path) == 0);
  CHECK(kselect_selection_note(selection, &text) == KSELECT_OK &&
        strncmp(text, then->note, sizeof(then->note) - 1) == 0);
  for (size_t i = 0; i < count && i < 8; ++i) {
    CHECK(kselect_selection_config_key(selection, i, &text) == KSELECT_OK &&
          strcmp(text, then->keys[i]) == 0);
    CHECK(kselect_selection_config_name(selection, i, &text) == KSELECT_OK && strlen(text) > 0);
  }
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: %s <model dir> [problems]\n", argv[0]);
    return 2;
  }
  const long problems = argc == 3 ? strtol(argv[2], NULL, 10) : 100000;
  kselect_selector_options options;
  kselect_selector_options_init(&options);
  options.top_k = 3;
  options.cache_capacity = 1;
  options.first_stage_candidates = 4; /* cheap decisions: the lifetime is what is tested */
  kselect_selector* selector = NULL;
  if (kselect_selector_open(argv[1], &options, &selector) != KSELECT_OK) {
    fprintf(stderr, "cannot open %s: %s\n", argv[1], kselect_last_error());
    return 1;
  }
  kselect_gemm_problem problem;
  kselect_gemm_problem_init(&problem);
  problem.m = 4096;
  problem.k = 4096;
  problem.n = 1;
  kselect_selection* cached = NULL; /* the one decision the cache keeps */
  CHECK(kselect_selector_select_gemm(selector, &problem, &cached) == KSELECT_OK);
  problem.n = 2;
  kselect_selection* uncached = NULL; /* made when the cache was full */
  CHECK(kselect_selector_select_gemm(selector, &problem, &uncached) == KSELECT_OK);
  if (cached == NULL || uncached == NULL) return 1;
  Snapshot cached_then, uncached_then;
  Take(cached, &cached_then);
  Take(uncached, &uncached_then);

  for (long i = 0; i < problems && failures == 0; ++i) {
    problem.n = 3 + i % 50000;
    problem.m = i < 50000 ? 4096 : 2048;
    kselect_selection* other = NULL;
    CHECK(kselect_selector_select_gemm(selector, &problem, &other) == KSELECT_OK);
    if (i % 10000 == 0) { /* read the held ones now and then, not only at the end */
      Compare(cached, &cached_then);
      Compare(uncached, &uncached_then);
    }
    CHECK(kselect_selection_free(other) == KSELECT_OK);
  }
  Compare(cached, &cached_then);
  Compare(uncached, &uncached_then);
  CHECK(kselect_selection_free(cached) == KSELECT_OK);
  CHECK(kselect_selection_free(uncached) == KSELECT_OK);
  CHECK(kselect_selector_close(selector) == KSELECT_OK);
  if (failures > 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("2 selections held across %ld distinct problems: unchanged\n", problems);
  return 0;
}
