/* Embedding kselect through its C API (kselect/c_api.h): open a model directory, ask it for the
 * kernel of a few LLM GEMMs and print the top 3 with the stage that decided. Every call returns a
 * status; kselect_last_error() says what went wrong.
 *
 *   select_gemm_c <model dir>
 *
 * Running a GEMM is one more call on device buffers the application owns:
 *   kselect_gemm_run(selector, &problem, a, b, c, workspace, workspace_bytes, stream, &info);
 */
#include <math.h>
#include <stdio.h>

#include "kselect/c_api.h"

/* PyTorch's nn.Linear reaches cuBLASLt as TN (layout "rcc"): m = out features, n = tokens,
 * k = in features. Llama-3-8B's projections. */
struct llm_gemm {
  const char* what;
  int64_t m, n, k;
};
static const struct llm_gemm kGemms[] = {
    {"decode, attention q/o projection, 16 tokens", 4096, 16, 4096},
    {"decode, MLP down projection, 1 token", 4096, 1, 14336},
    {"prefill, MLP gate/up projection, 2048 tokens", 14336, 2048, 4096},
    {"prefill, MLP down projection, 2048 tokens", 4096, 2048, 14336},
};

static int PrintSelection(const struct llm_gemm* gemm, const kselect_selection* selection) {
  size_t count = 0;
  const char* decided_by = NULL;
  const char* note = NULL;
  if (kselect_selection_count(selection, &count) != KSELECT_OK ||
      kselect_selection_decided_by(selection, &decided_by) != KSELECT_OK ||
      kselect_selection_note(selection, &note) != KSELECT_OK) {
    return 1;
  }
  printf("%s: m=%lld n=%lld k=%lld bf16 rcc\n  decided by: %s\n", gemm->what, (long long)gemm->m,
         (long long)gemm->n, (long long)gemm->k, decided_by);
  if (note[0] != '\0') printf("  note: %s\n", note);
  for (size_t i = 0; i < count; ++i) {
    const char* name = NULL;
    double score = 0, tflops = 0;
    if (kselect_selection_config_name(selection, i, &name) != KSELECT_OK ||
        kselect_selection_score(selection, i, &score) != KSELECT_OK ||
        kselect_selection_predicted_tflops(selection, i, &tflops) != KSELECT_OK) {
      return 1;
    }
    printf("  %zu. %-56s score %9.4g", i + 1, name, score);
    if (!isnan(tflops)) printf("  predicted %6.1f TFLOPS", tflops);
    printf("\n");
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <model dir>\n", argv[0]);
    return 2;
  }
  printf("kselect %s\n", kselect_version());

  kselect_selector_options options;
  kselect_selector_options_init(&options);
  options.top_k = 3;
  kselect_selector* selector = NULL;
  if (kselect_selector_open(argv[1], &options, &selector) != KSELECT_OK) {
    fprintf(stderr, "%s\n", kselect_last_error());
    return 1;
  }

  int failed = 0;
  for (size_t i = 0; i < sizeof(kGemms) / sizeof(kGemms[0]); ++i) {
    kselect_gemm_problem problem;
    kselect_gemm_problem_init(&problem); /* bf16, layout "rcc", batch 1, alpha 1, beta 0 */
    problem.m = kGemms[i].m;
    problem.n = kGemms[i].n;
    problem.k = kGemms[i].k;
    kselect_selection* selection = NULL;
    if (kselect_selector_select_gemm(selector, &problem, &selection) != KSELECT_OK ||
        PrintSelection(&kGemms[i], selection) != 0) {
      fprintf(stderr, "%s: %s\n", kGemms[i].what, kselect_last_error());
      ++failed;
    }
    kselect_selection_free(selection);
  }

  /* Bad input is a status and a message, never a crash. */
  kselect_gemm_problem bad;
  kselect_gemm_problem_init(&bad);
  bad.m = 4096;
  bad.n = 16;
  bad.k = 4096;
  bad.dtype_a = "bf17";
  kselect_selection* selection = NULL;
  const int status = kselect_selector_select_gemm(selector, &bad, &selection);
  printf("an unknown dtype: status %d, \"%s\"\n", status, kselect_last_error());
  if (status != KSELECT_INVALID_ARGUMENT) ++failed;

  kselect_selector_close(selector);
  printf("%s\n", failed == 0 ? "PASS" : "FAIL");
  return failed == 0 ? 0 : 1;
}
