//go:build !amd64 && !arm64

package main

// Unknown here: the watcher refuses to start, and checkpoints walk everything.
const sysOpenByHandleAt = 0
