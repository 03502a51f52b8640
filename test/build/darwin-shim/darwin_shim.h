// Force-included by scripts/check-darwin.sh: the macOS-only names native/core/darwin/ uses
// that Linux headers lack, with the values and signatures of Apple's headers.
#pragma once

#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/statfs.h>  // macOS declares struct statfs and fstatfs in <sys/mount.h>

#define F_GETPATH 50
#define F_FULLFSYNC 51
#define RENAME_EXCL 0x00000004
#define MNT_LOCAL 0x00001000

extern "C" int renameatx_np(int fromfd, const char* from, int tofd, const char* to, unsigned int flags);
