package main

// open_by_handle_at, which package syscall does not number on this architecture.
const sysOpenByHandleAt = 304
