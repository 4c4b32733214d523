// Peak memory and time of the data commands on the committed datasets, as a user runs them:
// each command is the real `kselect` binary in a child process, measured by wait4's rusage
// (ru_maxrss: the child's peak resident set) and a wall clock. Prints one line per command and
// whether issue 19's targets hold; exits 1 when one is missed.
//   build/bin/kselect_bench_data_layer [--kselect PATH] [--source DIR]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Figures {
  double seconds = 0;
  double peak_gb = 0;
  int exit_code = -1;
};

// Runs `argv` with stdout sent to /dev/null; its peak RSS and wall time.
Figures RunChild(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  std::fflush(stdout);  // else the child's copy of the buffer is printed again
  const pid_t pid = fork();
  if (pid == 0) {
    if (std::freopen("/dev/null", "w", stdout) == nullptr) _exit(126);
    execv(args[0], args.data());
    _exit(127);
  }
  Figures f;
  int status = 0;
  rusage usage{};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid) return f;
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  f.peak_gb = static_cast<double>(usage.ru_maxrss) * 1024.0 / 1e9;  // ru_maxrss is in KiB
  f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return f;
}

struct Target {
  std::optional<double> max_gb, max_seconds;
};

bool Report(const std::string& label, const Figures& f, const Target& target) {
  bool met = f.exit_code == 0;
  std::string verdict;
  if (target.max_gb) {
    met = met && f.peak_gb <= *target.max_gb;
    char text[64];
    std::snprintf(text, sizeof(text), " (target <= %.1f GB", *target.max_gb);
    verdict += text;
  }
  if (target.max_seconds) {
    met = met && f.seconds <= *target.max_seconds;
    char text[64];
    std::snprintf(text, sizeof(text), ", <= %.0f s", *target.max_seconds);
    verdict += text;
  }
  if (!verdict.empty()) verdict += met ? ": met)" : ": MISSED)";
  std::printf("%-58s %6.2f GB peak %7.1f s  exit %d%s\n", label.c_str(), f.peak_gb, f.seconds,
              f.exit_code, verdict.c_str());
  std::fflush(stdout);
  return met || (!target.max_gb && !target.max_seconds && f.exit_code == 0);
}

}  // namespace

int main(int argc, char** argv) {
  std::string kselect = KSELECT_BINARY;
  std::string source = KSELECT_SOURCE_DIR;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--kselect") == 0) kselect = argv[i + 1];
    if (std::strcmp(argv[i], "--source") == 0) source = argv[i + 1];
  }
  const fs::path data = fs::path(source) / "data" / "h200";
  std::vector<std::string> cublaslt;
  for (const auto& entry : fs::directory_iterator(data)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("cublaslt_") && name.ends_with(".parquet")) {
      cublaslt.push_back(entry.path().string());
    }
  }
  std::sort(cublaslt.begin(), cublaslt.end());
  // The largest bf16 TN cuBLASLt file: the 1.2 M-row wide set.
  std::string largest;
  for (const std::string& path : cublaslt) {
    if (path.find("bf16_tn") == std::string::npos) continue;
    if (largest.empty() || fs::file_size(path) > fs::file_size(largest)) largest = path;
  }
  const fs::path out =
      fs::temp_directory_path() / ("kselect_data_layer_" + std::to_string(getpid()));
  fs::create_directories(out);

  std::printf("kselect data layer on %zu committed cuBLASLt files (%s), %ld CPU cores\n",
              cublaslt.size(), data.c_str(), sysconf(_SC_NPROCESSORS_ONLN));
  bool ok = true;
  ok &= Report("data info " + fs::path(largest).filename().string(),
               RunChild({kselect, "data", "info", largest}), {.max_gb = 1.5});
  std::vector<std::string> merge = {kselect, "data", "merge"};
  merge.insert(merge.end(), cublaslt.begin(), cublaslt.end());
  merge.insert(merge.end(), {"-o", (out / "all.parquet").string()});
  ok &= Report("data merge (all " + std::to_string(cublaslt.size()) + " cuBLASLt files)",
               RunChild(merge), {.max_gb = 4.0, .max_seconds = 60.0});
  ok &= Report("data info (the merged file)",
               RunChild({kselect, "data", "info", (out / "all.parquet").string()}), {});
  ok &= Report("data filter --m 16 --valid-only (largest)",
               RunChild({kselect, "data", "filter", largest, "-o", (out / "f.parquet").string(),
                         "--m", "16", "--valid-only"}),
               {});
  ok &= Report(
      "data report (largest)",
      RunChild({kselect, "data", "report", largest, "--markdown", (out / "report.md").string()}),
      {});
  std::error_code ec;
  fs::remove_all(out, ec);
  return ok ? 0 : 1;
}
