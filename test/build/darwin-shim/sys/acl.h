// Declarations transcribed from macOS <sys/acl.h> (the subset native/core/darwin/ uses), so
// scripts/check-darwin.sh can syntax-check the macOS files on Linux. Not Apple's header:
// a mismatch with the real one is only caught by a build on macOS.
#pragma once

#include <sys/types.h>

extern "C" {
typedef struct _acl* acl_t;
typedef struct _acl_entry* acl_entry_t;
typedef enum { ACL_TYPE_EXTENDED = 0x00000100 } acl_type_t;
#define ACL_FIRST_ENTRY 0
#define ACL_NEXT_ENTRY (-1)
acl_t acl_get_fd_np(int fd, acl_type_t type);
int acl_get_entry(acl_t acl, int entry_id, acl_entry_t* entry_p);
acl_t acl_init(int count);
int acl_set_fd_np(int fd, acl_t acl, acl_type_t type);
int acl_free(void* obj_p);
}
