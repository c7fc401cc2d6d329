// plot_files: tools/plot.py as a child process (posix_spawn, no shell), its stdout read as the PNG paths.
#include "plot.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "knot/plot_config.hpp"

extern char** environ;

namespace knot::cli {
namespace {

namespace fs = std::filesystem;

// The script installed beside the program (bin/knot -> share/knot/plot.py), else the source tree's.
std::string find_script(std::string& looked) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = (exe.parent_path() / build::kPlotScriptFromBin).lexically_normal();
    if (fs::is_regular_file(installed, ec)) return installed.string();
    looked = installed.string() + " and ";
  }
  if (fs::is_regular_file(build::kPlotScriptSource, ec)) return build::kPlotScriptSource;
  looked += build::kPlotScriptSource;
  return "";
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  void close(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

// Runs argv[0] with argv, collecting stdout and stderr (both read as they come, so neither pipe
// fills up and stalls the child). Returns "" or the reason it could not run.
std::string run(const std::vector<std::string>& args, std::string& out, std::string& err, int& status) {
  Pipe o, e;
  if (::pipe2(o.fd, O_CLOEXEC) != 0 || ::pipe2(e.fd, O_CLOEXEC) != 0)
    return std::string("cannot create a pipe: ") + std::strerror(errno);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, o.fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, e.fd[1], STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return "cannot run " + args[0] + ": " + std::strerror(rc);
  o.close(1);
  e.close(1);
  pollfd fds[2] = {{o.fd[0], POLLIN, 0}, {e.fd[0], POLLIN, 0}};
  std::string* sinks[2] = {&out, &err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;  // end of file (the Pipe closes it)
        --open_fds;
      }
    }
  }
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return std::string("cannot wait for the plot script: ") + std::strerror(errno);
  return "";
}

}  // namespace

std::string plot_files(const std::vector<std::string>& csv_files, const std::string& out_dir,
                       std::vector<std::string>& pngs) {
  if (std::string(build::kPlotPython).empty())
    return "plotting needs python3-matplotlib (apt-get install python3-matplotlib); the CSV files are written";
  if (csv_files.empty()) return "no CSV file to plot";
  std::string looked;
  const std::string script = find_script(looked);
  if (script.empty()) return "the plot script is missing (looked for " + looked + ")";

  // "--" ends the options, so a CSV whose name starts with '-' is still a file.
  std::vector<std::string> args = {build::kPlotPython, script};
  if (!out_dir.empty()) args.insert(args.end(), {"--out", out_dir});
  args.push_back("--");
  args.insert(args.end(), csv_files.begin(), csv_files.end());
  std::string out, err;
  int status = 0;
  if (std::string why = run(args, out, err, status); !why.empty()) return why;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (!trimmed(err).empty()) return trimmed(err);
    if (WIFSIGNALED(status)) return "the plot script was stopped by signal " + std::to_string(WTERMSIG(status));
    return "the plot script exited with status " + std::to_string(WEXITSTATUS(status));
  }
  if (!err.empty()) std::fputs(err.c_str(), stderr);  // warnings, e.g. a stats.json of another problem
  std::size_t begin = 0;
  while (begin < out.size()) {
    std::size_t end = out.find('\n', begin);
    if (end == std::string::npos) end = out.size();
    if (std::string line = trimmed(out.substr(begin, end - begin)); !line.empty()) pngs.push_back(line);
    begin = end + 1;
  }
  return "";
}

}  // namespace knot::cli
