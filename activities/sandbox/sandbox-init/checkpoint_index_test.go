package main

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestAnIndexReadsBackInPathOrderWithTheWatchersState(t *testing.T) {
	file := filepath.Join(t.TempDir(), "index")
	w := &walker{next: map[string]treeStat{
		"workspace/b":   {Kind: 'f', Size: 2, Ino: 9},
		"workspace":     {Kind: 'd', Mode: 0755},
		"workspace/a/x": {Kind: kindRecheck},
		"workspace/a":   {Kind: 'd'},
	}}
	w.watch = &indexEntry{path: watchKey("g1"), st: treeStat{Kind: kindWatch, Size: 7, Mtime: 3}}
	w.saveIndex(file)
	ix, state := readIndex(file)
	if state != (watchState{gen: "g1", epoch: 7, deltas: 3}) {
		t.Fatalf("state %+v", state)
	}
	var paths []string
	for _, e := range ix.entries {
		paths = append(paths, e.path)
	}
	if !reflect.DeepEqual(paths, []string{"workspace", "workspace/a", "workspace/a/x", "workspace/b"}) {
		t.Fatalf("paths %v", paths)
	}
	if st, ok := ix.get("workspace/b"); !ok || st.Ino != 9 {
		t.Fatalf("get: %+v %v", st, ok)
	}
	if below := ix.below("workspace/a"); len(below) != 1 || below[0].path != "workspace/a/x" {
		t.Fatalf("below: %v", below)
	}
	// An index written before indexes had an order is sorted when read.
	iw := &indexWriter{}
	iw.add("workspace/z", treeStat{Kind: 'f'})
	iw.add("workspace/a", treeStat{Kind: 'd'})
	iw.save(file)
	if ix, _ := readIndex(file); ix.entries[0].path != "workspace/a" {
		t.Fatalf("not sorted: %v", ix.entries)
	}
}
