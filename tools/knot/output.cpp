#include "output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace knot::cli {
namespace fs = std::filesystem;

namespace {

std::string failure(const std::string& what, const std::string& path, int err) {
  return what + " '" + path + "': " + std::strerror(err);
}

// write(2) until everything is out; false with errno set on failure.
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::string write_output(const std::string& path, std::string_view contents) {
  if (path == "-") {
    if (std::fwrite(contents.data(), 1, contents.size(), stdout) != contents.size() || std::fflush(stdout) != 0)
      return failure("cannot write to", "stdout", errno);
    return {};
  }
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  // mkstemp in the target's folder: rename() is atomic only within one file system.
  std::string tmpl = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return failure("cannot create a file in", dir.string(), errno);
  int err = 0;
  if (!write_all(fd, contents) || ::fsync(fd) != 0) err = errno;
  // Created files get the usual permissions (mkstemp makes them 0600).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (err == 0 && ::fchmod(fd, 0666 & ~mask) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && std::rename(tmpl.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    std::remove(tmpl.c_str());
    return failure("cannot write", path, err);
  }
  return {};
}

std::string make_output_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return "cannot create the folder '" + dir + "': " + ec.message();
  if (!fs::is_directory(dir, ec)) return "cannot use '" + dir + "' as a folder: it is a file";
  return {};
}

}  // namespace knot::cli
