package main

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

func inodeOf(t *testing.T, path string) (uint64, uint64) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino, st.Dev
}

func TestInodesOpenForWriting(t *testing.T) {
	dir := t.TempDir()
	written, read, mapped := filepath.Join(dir, "w"), filepath.Join(dir, "r"), filepath.Join(dir, "m")
	for _, path := range []string{written, read, mapped} {
		if err := os.WriteFile(path, make([]byte, 4096), 0600); err != nil {
			t.Fatal(err)
		}
	}
	w, err := os.OpenFile(written, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := os.Open(read)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m, err := os.OpenFile(mapped, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	region, err := syscall.Mmap(int(m.Fd()), 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(region)
	// Only the mapping holds it now.
	m.Close()

	wIno, dev := inodeOf(t, written)
	rIno, _ := inodeOf(t, read)
	mIno, _ := inodeOf(t, mapped)
	inos, ok := inodesOpenForWriting([]int{os.Getpid()}, dev)
	if !ok {
		t.Fatal("this process's files could not be read")
	}
	if !slices.Contains(inos, wIno) || !slices.Contains(inos, mIno) || slices.Contains(inos, rIno) {
		t.Fatalf("inodes %v: want %d (open for writing) and %d (mapped), not %d (read only)", inos, wIno, mIno, rIno)
	}
	// Another device: nothing.
	if inos, _ := inodesOpenForWriting([]int{os.Getpid()}, dev+1); len(inos) != 0 {
		t.Fatalf("inodes on another device: %v", inos)
	}
	// A process gone meanwhile holds nothing and is no reason to doubt.
	if inos, ok := inodesOpenForWriting([]int{1 << 30}, dev); !ok || len(inos) != 0 {
		t.Fatalf("a gone process: %v %v", inos, ok)
	}
}
