/* Widens the moments a kill can cut a trajectory's writes, for the kill-loop tests
 * (tests/test_kill_loop.cpp): loaded with LD_PRELOAD, it splits every write to a file in one
 * directory whose name ends in ".h5" or ".gsd" at page boundaries and sleeps before each piece.
 * A SIGKILL then lands between two writes of a flush, or between two pages of one write (where
 * the kernel may cut a write that a fatal signal interrupts), far more often than it would.
 *
 *   PAIRMD_TEST_SLOW_DIR       the directory
 *   PAIRMD_TEST_SLOW_US        microseconds to sleep before each page-sized piece
 *   PAIRMD_TEST_SLOW_SPLIT_US  microseconds before each piece after a write's first, instead
 *                              (default: PAIRMD_TEST_SLOW_US): cuts inside one write
 *   PAIRMD_TEST_KILL_AT_PIECE  N > 0: the process kills itself (SIGKILL) instead of writing the
 *                              N-th piece (counted from 1 over all such files): a cut at a chosen
 *                              point, so that a test can cut a run at every point in turn
 *   PAIRMD_TEST_KILL_INSIDE    1: count only the pieces after a write's first (cuts inside writes)
 *
 * pwrite, pwrite64 and write are intercepted (what HDF5's and GSD's drivers and pairmd call).
 * Without the variables, everything passes straight through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static char dir[PATH_MAX];
static size_t dir_len = 0;
static long sleep_us = 0, split_us = 0, kill_at = 0, pieces = 0;
static int kill_inside = 0;
static const long kPage = 4096;

__attribute__((constructor)) static void init(void) {
  const char* d = getenv("PAIRMD_TEST_SLOW_DIR");
  const char* us = getenv("PAIRMD_TEST_SLOW_US");
  if (!d || !us || !realpath(d, dir)) return;
  dir_len = strlen(dir);
  sleep_us = atol(us);
  const char* split = getenv("PAIRMD_TEST_SLOW_SPLIT_US");
  split_us = split && *split ? atol(split) : sleep_us;
  const char* k = getenv("PAIRMD_TEST_KILL_AT_PIECE");
  kill_at = k && *k ? atol(k) : 0;
  const char* inside = getenv("PAIRMD_TEST_KILL_INSIDE");
  kill_inside = inside && atoi(inside) == 1;
}

static int ends_with(const char* s, size_t n, const char* suffix) {
  const size_t k = strlen(suffix);
  return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static int slowed(int fd) {
  if (dir_len == 0 || (sleep_us <= 0 && kill_at <= 0)) return 0;
  char link[64], path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  if (strncmp(path, dir, dir_len) != 0 || path[dir_len] != '/') return 0;
  return ends_with(path, (size_t)n, ".h5") || ends_with(path, (size_t)n, ".gsd");
}

static void pause_a_while(long us) {
  if (us <= 0) return;
  struct timespec t = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

/* Writes [buf, buf + n) at `off` a page at a time (pages of the file), pausing before each. */
static ssize_t slow_pwrite(ssize_t (*real)(int, const void*, size_t, off64_t), int fd, const void* buf, size_t n,
                           off64_t off) {
  size_t done = 0;
  while (done < n) {
    const off64_t at = off + (off64_t)done;
    size_t piece = (size_t)(kPage - at % kPage);
    if (piece > n - done) piece = n - done;
    if (kill_at > 0 && (done > 0 || !kill_inside) && __atomic_add_fetch(&pieces, 1, __ATOMIC_SEQ_CST) == kill_at)
      raise(SIGKILL);
    pause_a_while(done == 0 ? sleep_us : split_us);
    const ssize_t w = real(fd, (const char*)buf + done, piece, at);
    if (w < 0) return done > 0 ? (ssize_t)done : w;
    done += (size_t)w;
    if ((size_t)w < piece) break;
  }
  return (ssize_t)done;
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  if (!slowed(fd)) return REAL(pwrite64)(fd, buf, n, off);
  return slow_pwrite(REAL(pwrite64), fd, buf, n, off);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  if (!slowed(fd)) return REAL(pwrite)(fd, buf, n, off);
  return slow_pwrite(REAL(pwrite64), fd, buf, n, (off64_t)off);
}

ssize_t write(int fd, const void* buf, size_t n) {
  if (!slowed(fd)) return REAL(write)(fd, buf, n);
  const off64_t at = lseek64(fd, 0, SEEK_CUR);
  if (at < 0) return REAL(write)(fd, buf, n);
  const ssize_t w = slow_pwrite(REAL(pwrite64), fd, buf, n, at);
  if (w > 0) lseek64(fd, at + w, SEEK_SET);
  return w;
}
