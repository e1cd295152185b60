/* A small disk for tests, where no tmpfs can be mounted (CI containers): loaded with LD_PRELOAD,
 * it makes writes into one directory fail with ENOSPC once the files there would take more than
 * a given number of bytes, as a full file system does.
 *
 *   PAIRMD_TEST_DISK_DIR    the directory that is the "disk"
 *   PAIRMD_TEST_DISK_BYTES  its capacity in bytes
 *   PAIRMD_TEST_DISK_RANK   (optional) only the MPI rank of this number (OMPI_COMM_WORLD_RANK)
 *                           finds the disk full: the others write on, as when a full disk
 *                           strikes one rank of an ensemble first
 *
 * Space in use is the sum of the allocated blocks (st_blocks) of the files in the directory
 * (a file of several hard links counted once);
 * a write or fallocate that would allocate past the end of a file's blocks needs that much
 * room. write, pwrite, writev and the fallocate family are intercepted (what HDF5, the
 * checkpoint writer, libstdc++ streams and coreutils call); stdio's internal writes are not
 * (glibc calls those without the symbol table), so a FILE* stream fills the disk unchecked but
 * still counts towards it. Without the variables, everything passes straight through. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static char disk[PATH_MAX];
static size_t disk_len = 0;
static long long capacity = 0;

__attribute__((constructor)) static void init(void) {
  const char* d = getenv("PAIRMD_TEST_DISK_DIR");
  const char* b = getenv("PAIRMD_TEST_DISK_BYTES");
  if (!d || !b || !realpath(d, disk)) return;
  const char* only = getenv("PAIRMD_TEST_DISK_RANK");
  const char* rank = getenv("OMPI_COMM_WORLD_RANK");
  if (only && (!rank || atoi(only) != atoi(rank))) return;
  disk_len = strlen(disk);
  capacity = atoll(b);
}

static int on_disk(int fd) {
  if (disk_len == 0) return 0;
  char link[64], path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  return strncmp(path, disk, disk_len) == 0 && path[disk_len] == '/';
}

static long long used(void) {
  DIR* d = opendir(disk);
  if (!d) return 0;
  long long sum = 0;
  ino_t linked[256]; /* files of several links seen so far (counted once) */
  int n_linked = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if (st.st_nlink > 1) {
      int seen = 0;
      for (int k = 0; k < n_linked && !seen; ++k) seen = linked[k] == st.st_ino;
      if (seen) continue;
      if (n_linked < 256) linked[n_linked++] = st.st_ino;
    }
    sum += (long long)st.st_blocks * 512;
  }
  closedir(d);
  return sum;
}

/* Whether making `fd` reach `end` bytes would take more room than the disk has left. */
static int no_room(int fd, long long end) {
  if (!on_disk(fd)) return 0;
  struct stat st;
  if (fstat(fd, &st) != 0) return 0;
  const long long grow = end - (long long)st.st_blocks * 512;
  return grow > 0 && used() + grow > capacity;
}

static long long offset_of(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0 && (flags & O_APPEND)) {
    struct stat st;
    return fstat(fd, &st) == 0 ? (long long)st.st_size : 0;
  }
  const off_t at = lseek(fd, 0, SEEK_CUR);
  return at < 0 ? 0 : (long long)at;
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

ssize_t write(int fd, const void* buf, size_t n) {
  if (n > 0 && no_room(fd, offset_of(fd) + (long long)n)) {
    errno = ENOSPC;
    return -1;
  }
  return REAL(write)(fd, buf, n);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  if (n > 0 && no_room(fd, (long long)off + (long long)n)) {
    errno = ENOSPC;
    return -1;
  }
  return REAL(pwrite)(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  if (n > 0 && no_room(fd, (long long)off + (long long)n)) {
    errno = ENOSPC;
    return -1;
  }
  return REAL(pwrite64)(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec* iov, int count) {
  long long n = 0;
  for (int k = 0; k < count; ++k) n += (long long)iov[k].iov_len;
  if (n > 0 && no_room(fd, offset_of(fd) + n)) {
    errno = ENOSPC;
    return -1;
  }
  return REAL(writev)(fd, iov, count);
}

int posix_fallocate(int fd, off_t off, off_t len) {
  if (no_room(fd, (long long)off + (long long)len)) return ENOSPC;
  return REAL(posix_fallocate)(fd, off, len);
}

int posix_fallocate64(int fd, off64_t off, off64_t len) {
  if (no_room(fd, (long long)off + (long long)len)) return ENOSPC;
  return REAL(posix_fallocate64)(fd, off, len);
}

int fallocate(int fd, int mode, off_t off, off_t len) {
  if (no_room(fd, (long long)off + (long long)len)) {
    errno = ENOSPC;
    return -1;
  }
  return REAL(fallocate)(fd, mode, off, len);
}

int fallocate64(int fd, int mode, off64_t off, off64_t len) {
  if (no_room(fd, (long long)off + (long long)len)) {
    errno = ENOSPC;
    return -1;
  }
  return REAL(fallocate64)(fd, mode, off, len);
}
