/*
** fuzz_replay.c -- main() for the fuzz targets when built without
** libFuzzer (any compiler): feeds every file named on the command line, or
** every regular file of a directory named there, to LLVMFuzzerTestOneInput
** once. ctest runs the committed corpora through it (fuzz_*_replay), so CI
** replays them with gcc, under ASan in test.sh and under valgrind.
*/
#define _POSIX_C_SOURCE 200809L /* opendir, stat */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf;
  long n;
  if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0) {
    fprintf(stderr, "cannot read %s\n", path);
    if (f != NULL) fclose(f);
    return 1;
  }
  buf = (uint8_t *)malloc((size_t)n + 1); /* +1: never malloc(0) */
  if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "cannot read %s\n", path);
    free(buf);
    fclose(f);
    return 1;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  int files = 0, bad = 0;
  for (int i = 1; i < argc; i++) {
    struct stat sb;
    if (stat(argv[i], &sb) != 0) {
      fprintf(stderr, "cannot stat %s\n", argv[i]);
      return 1;
    }
    if (S_ISDIR(sb.st_mode)) {
      DIR *d = opendir(argv[i]);
      struct dirent *ent;
      if (d == NULL) return 1;
      while ((ent = readdir(d)) != NULL) {
        char path[4096];
        struct stat fb;
        snprintf(path, sizeof path, "%s/%s", argv[i], ent->d_name);
        if (stat(path, &fb) != 0 || !S_ISREG(fb.st_mode)) continue;
        bad |= replay_file(path);
        files++;
      }
      closedir(d);
    } else {
      bad |= replay_file(argv[i]);
      files++;
    }
  }
  printf("replayed %d inputs\n", files);
  if (files == 0) {
    fprintf(stderr, "no inputs\n");
    return 1;
  }
  return bad;
}
